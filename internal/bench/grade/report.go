package grade

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strings"

	"github.com/trussdev/truss/internal/bench"
)

// Verdicts maps test names to "passed" or "failed", as a test runner's
// structured output reported them.
type Verdicts map[string]string

// set records a verdict; a failure of a name wins over a pass of the same
// name (the same test name in two packages).
func (v Verdicts) set(name, verdict string) {
	if name == "" {
		return
	}
	if v[name] == bench.TestFailed {
		return
	}
	v[name] = verdict
}

// goEvent is one line of `go test -json` (test2json's TestEvent).
type goEvent struct {
	Action  string
	Package string
	Test    string
}

// verdict is what the event says of its test: passed, failed (a skip is
// a failure, as SWE-bench counts it), or "" for an event that ends no test.
func (ev goEvent) verdict() string {
	switch ev.Action {
	case "pass":
		return bench.TestPassed
	case "fail", "skip":
		return bench.TestFailed
	}
	return ""
}

// ParseGoTestJSON reads the verdicts of `go test -json` output: each test's
// pass, fail or skip event (a skipped test did not pass, so it counts as
// failed). Each test is recorded under its name (TestX, TestX/sub) and
// under PACKAGE.NAME. Lines that are not test2json events are ignored. ok
// reports whether any event was read.
func ParseGoTestJSON(out []byte) (v Verdicts, ok bool) {
	v = Verdicts{}
	evs := goTestEvents(string(out))
	for _, ev := range evs {
		verdict := ev.verdict()
		if verdict == "" || ev.Test == "" {
			continue
		}
		v.set(ev.Test, verdict)
		if ev.Package != "" {
			v.set(ev.Package+"."+ev.Test, verdict)
		}
	}
	ok = len(evs) > 0
	return v, ok
}

var (
	// pytest's -rA short summary: "PASSED tests/x.py::test_a",
	// "FAILED tests/x.py::test_b - AssertionError: ...".
	pytestSummary = regexp.MustCompile(`^(PASSED|FAILED|ERROR|XFAIL|XPASS) (.+)$`)
	// pytest -v: "tests/x.py::test_a PASSED  [ 50%]".
	pytestVerbose = regexp.MustCompile(`^(\S+::\S.*?) (PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)(?:\s+\[\s*\d+%\])?$`)
	// A section header of pytest's report: "===== ERRORS =====",
	// "_____ test_x _____" is not one.
	pytestSection = regexp.MustCompile(`^=+ (.+?) =+$`)
	// ansiSGR is a terminal's colour sequence (pytest --color=yes).
	ansiSGR = regexp.MustCompile("\x1b\\[[0-9;]*m")
	// The title of pytest's last line, its counts and time: "2 passed,
	// 1 warning in 0.12s", "no tests ran in 0.01s", "1 failed in 61.20s
	// (0:01:01)".
	pytestStats = regexp.MustCompile(`(?:^| )in [0-9]+(?:\.[0-9]+)?s(?: \([0-9:]+\))?$`)
)

// ParsePytest reads pytest's report: the short test summary that -rA
// prints (PASSED, FAILED, ERROR, XFAIL, XPASS lines) and -v's per-test
// lines. PASSED and XFAIL are passes; FAILED, ERROR, XPASS and SKIPPED
// failures, as SWE-bench counts them. ok reports whether any line was
// read.
//
// Unlike SWE-bench's parsers, which take such a line wherever it is, it
// reads summary lines only in the last "short test summary info" section
// (up to the next section header; in a log without one, before the first
// section), and -v lines only before the first
// section of the report (ERRORS, FAILURES, PASSES, warnings summary, the
// short summary): pytest prints what the tests and the code they import
// wrote (captured output) in those sections, where a line that looks
// like a verdict is the graded code's, not pytest's. A collection error
// is reported as "ERROR path.py", the module's path (see moduleError).
func ParsePytest(out []byte) (v Verdicts, ok bool) {
	v = Verdicts{}
	verdict := func(status string) string {
		if status == "PASSED" || status == "XFAIL" {
			return bench.TestPassed
		}
		return bench.TestFailed
	}
	lines := strings.Split(string(out), "\n")
	for i := range lines {
		// --color=yes (a task's own command) wraps words in SGR
		// sequences: read what they colour.
		lines[i] = strings.TrimRight(ansiSGR.ReplaceAllString(lines[i], ""), "\r ")
	}
	summary, report := -1, len(lines)
	summaries, stats, statsAt := 0, 0, -1
	for i, line := range lines {
		m := pytestSection.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch title := m[1]; {
		case pytestStats.MatchString(title):
			stats++
			statsAt = i
		case title == "short test summary info":
			summary = i
			summaries++
			report = min(report, i)
		case title == "ERRORS" || title == "FAILURES" || title == "PASSES" || title == "warnings summary" ||
			strings.HasPrefix(title, "XFAIL") || strings.HasPrefix(title, "XPASS"):
			report = min(report, i)
		}
	}
	// pytest prints one short summary and then one line of counts, last.
	// More of either, or a summary after the counts, is the graded code
	// printing (a test under -s, an atexit handler once pytest is done):
	// the log is read as a report with no verdict in it, so every listed
	// test is missing, never as one to read by the exit status.
	if summaries > 1 || stats > 1 || summaries == 1 && stats == 1 && summary > statsAt {
		return Verdicts{}, true
	}
	for _, line := range lines[:report] {
		if m := pytestVerbose.FindStringSubmatch(line); m != nil {
			v.set(m[1], verdict(m[2]))
			ok = true
		}
	}
	// Without a summary section (a runner that prints pytest's lines
	// and no header), summary lines count before the report's sections.
	from, to := summary+1, len(lines)
	if summary < 0 {
		from, to = 0, report
	}
	for _, line := range lines[from:to] {
		if summary >= 0 && pytestSection.MatchString(line) {
			break
		}
		if m := pytestSummary.FindStringSubmatch(line); m != nil {
			name := cutMessage(m[2])
			if !strings.Contains(name, "::") && !strings.HasSuffix(name, ".py") {
				continue
			}
			v.set(name, verdict(m[1]))
			ok = true
		}
	}
	return v, ok
}

// moduleError reports whether the pytest verdicts v fail the module of
// the node id name (tests/x.py::test_a): a collection error of the
// module, "ERROR tests/x.py", fails every test in it.
func moduleError(v Verdicts, name string) bool {
	mod, _, ok := strings.Cut(name, "::")
	return ok && v[mod] == bench.TestFailed
}

// cutMessage cuts the " - message" pytest appends to a summary line's test
// id, outside the brackets of a parametrized id (whose values may hold
// " - " themselves).
func cutMessage(s string) string {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth = max(0, depth-1)
		case ' ':
			if depth == 0 && strings.HasPrefix(s[i:], " - ") {
				return s[:i]
			}
		}
	}
	return s
}

// junitCase is a JUnit XML testcase.
type junitCase struct {
	Name      string    `xml:"name,attr"`
	Classname string    `xml:"classname,attr"`
	File      string    `xml:"file,attr"`
	Failure   *struct{} `xml:"failure"`
	Error     *struct{} `xml:"error"`
	Skipped   *struct{} `xml:"skipped"`
}

// ParseJUnit reads a JUnit XML report (pytest --junitxml, Maven Surefire,
// go-junit-report, …): every testcase at any depth, recorded under its
// name, CLASSNAME.NAME and CLASSNAME::NAME; a failure, error or skip is a
// failure. ok reports whether the document held a testcase.
func ParseJUnit(doc []byte) (v Verdicts, ok bool, err error) {
	v = Verdicts{}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, terr := dec.Token()
		if terr != nil {
			if errors.Is(terr, io.EOF) {
				return v, ok, nil
			}
			return v, ok, terr
		}
		se, isStart := tok.(xml.StartElement)
		if !isStart || se.Name.Local != "testcase" {
			continue
		}
		var c junitCase
		if err := dec.DecodeElement(&c, &se); err != nil {
			return v, ok, err
		}
		verdict := bench.TestPassed
		if c.Failure != nil || c.Error != nil || c.Skipped != nil {
			verdict = bench.TestFailed
		}
		ok = true
		v.set(c.Name, verdict)
		if c.Classname != "" {
			v.set(c.Classname+"."+c.Name, verdict)
			v.set(c.Classname+"::"+c.Name, verdict)
		}
	}
}

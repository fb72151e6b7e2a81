//go:build heavy

package grade_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/sandbox"
)

// A task that declares a JUnit report ("junit": true) has its verdicts
// from the report its test command wrote where $TRUSS_BENCH_JUNIT says,
// checked against the go test -json events of the same log: a test on
// which they disagree failed. A report planted as a link, a FIFO or past
// the size cap is refused without blocking the grader, as is one the
// setup commands wrote (removed before the test command starts), and a
// declared report that is absent: every listed test is then missing, and
// a note says why. A task that declares none has no variable set and no
// report read, whatever its commands write.
func TestSandboxedGradingReadsItsJUnitReport(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	set := generated(t)
	// Not under /tmp, which a grading's sandbox replaces with its own.
	base, err := os.MkdirTemp(".", ".junit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if base, err = filepath.Abs(base); err != nil {
		t.Fatal(err)
	}
	const report = `<?xml version="1.0"?><testsuites><testsuite name="s">` +
		`<testcase classname="c" name="TestOne"/>` +
		`<testcase classname="c" name="TestTwo"><failure message="no"/></testcase>` +
		`</testsuite></testsuites>`
	const passing = `<testsuite><testcase name="TestOne"/><testcase name="TestTwo"/></testsuite>`
	const writeReport = `printf '%s' '` + report + `' > "$TRUSS_BENCH_JUNIT"`
	// The log says both pass, or agrees with the report.
	const logBoth = `printf '%s\n' '{"Action":"pass","Test":"TestOne"}' '{"Action":"pass","Test":"TestTwo"}'`
	const logAgrees = `printf '%s\n' '{"Action":"pass","Test":"TestOne"}' '{"Action":"fail","Test":"TestTwo"}'`
	const p, f, m = bench.TestPassed, bench.TestFailed, bench.TestMissing
	for _, tc := range []struct {
		name     string
		junit    bool
		setup    string
		cmd      string
		source   string
		checked  string
		one, two string
		note     string
	}{
		{"report", true, "", writeReport + ` && ` + logAgrees, "junit", "go test -json", p, f, ""},
		{"report alone", true, "", writeReport, "junit", "", p, f, ""},
		{"disagrees with the log", true, "", writeReport + ` && ` + logBoth, "junit", "go test -json", p, f,
			"the JUnit report and the go test -json output disagree, so these failed: TestTwo (junit failed, go test -json passed)"},
		{"link", true, "", `printf '%s' '` + report + `' > real.xml && ln -s "$PWD/real.xml" "$TRUSS_BENCH_JUNIT" && ` + logBoth,
			"junit", "", m, m, "the JUnit report was refused: "},
		{"fifo", true, "", `mkfifo "$TRUSS_BENCH_JUNIT" && ` + logBoth, "junit", "", m, m, "the JUnit report was refused: "},
		{"too large", true, "", `truncate -s 65M "$TRUSS_BENCH_JUNIT" && ` + logBoth, "junit", "", m, m, "the JUnit report is larger than 64 MiB"},
		{"absent", true, "", logBoth, "junit", "", m, m, "no JUnit report was written to $TRUSS_BENCH_JUNIT"},
		{"written by the setup", true, `printf '%s' '` + passing + `' > "$TRUSS_BENCH_JUNIT"`, logBoth, "junit", "", m, m,
			"no JUnit report was written to $TRUSS_BENCH_JUNIT"},
		{"not declared", false, "", `! env | grep -q _BENCH_JUNIT && ` + logAgrees, "go test -json", "", p, f, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := set.Tasks[0]
			task.FailToPass, task.PassToPass = bench.TestList{"TestOne"}, bench.TestList{"TestTwo"}
			task.SetupCmd, task.TestCmd, task.JUnit = nil, tc.cmd, tc.junit
			if tc.setup != "" {
				task.SetupCmd = bench.Commands{tc.setup}
			}
			g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: base}
			v, err := g.Grade(context.Background(), &task, task.Patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.Source != tc.source || v.CheckedAgainst != tc.checked {
				t.Fatalf("source %q checked against %q, want %q %q\n%s", v.Source, v.CheckedAgainst, tc.source, tc.checked, v.Log)
			}
			if v.Tests["TestOne"] != tc.one || v.Tests["TestTwo"] != tc.two {
				t.Fatalf("verdicts %v, want %s %s (notes %q)\n%s", v.Tests, tc.one, tc.two, v.Notes, v.Log)
			}
			if notes := strings.Join(v.Notes, "\n"); tc.note == "" && notes != "" || !strings.HasPrefix(notes, tc.note) {
				t.Fatalf("notes %q, want %q…", notes, tc.note)
			}
		})
	}
	// Commands that name the variable without the task declaring a
	// report: an error of the task.
	task := set.Tasks[0]
	task.TestCmd = writeReport
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: base}
	if _, err := g.Grade(context.Background(), &task, task.Patch); err == nil || !strings.Contains(err.Error(), `"junit": true`) {
		t.Fatalf("undeclared report: err %v", err)
	}
}

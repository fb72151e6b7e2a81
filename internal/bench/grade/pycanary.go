package grade

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"

	"github.com/trussdev/truss/internal/hostfs"
)

// pytest runs the patch's modules in its own process, where they can
// rewrite its reports (wrap TestReport.from_item_and_call, shadow a module
// pytest imports and rewrite its output). A forger that needs no test's
// name turns every failure into a pass; the grader's own test that fails
// by construction (the canary), in the same pytest run as the listed
// tests, is then reported passed and gives it away. It is shaped like the
// listed tests: a function named from the words of a listed test's name
// and a common word of test names (test_split_empty beside
// test_split_blueprint_path), with the listed test's first word (what
// python_functions matches), a body that compares two numbers that
// differ, at the end of that test's own file (the test patch's, where it
// has one), written before the setup commands, which may run the
// patch's code: none sees the test code without it. Only where the grader chose the command (the detected python
// -m pytest -rA), and not where the run's options would stop the session
// at its first failure (-x, --maxfail, --stepwise, in the root's
// configuration files or set by the setup commands): there the canary's
// failure would keep the later listed tests from running.

// detectedPytest is the test command the grader runs for a pytest project
// it detected.
const detectedPytest = "python -m pytest -rA"

// pyCanary is the canary written before the run: its node id and file.
type pyCanary struct {
	id, file string
}

// pyCanaryWords are words of Python test names.
var pyCanaryWords = []string{"empty", "none", "zero", "negative", "large", "small", "twice", "order", "basic", "edge",
	"invalid", "default", "error", "values", "unicode", "nested", "overflow", "reset", "missing", "multiple",
	"single", "long", "short", "limit", "bounds", "format", "parse", "string", "copy", "close", "timeout",
	"retry", "cache", "config", "options", "merge", "split", "equal", "compare", "round", "trip", "repr"}

// pytestConfigs are the files at the root whose pytest options apply to
// the detected command.
var pytestConfigs = []string{"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml", "tox.ini", "setup.cfg"}

// pytestStop returns the option that stops a pytest session at a failure
// among the words of text ("" when none): -x (alone or among other short
// flags), --exitfirst, --maxfail, --stepwise, --sw and their -skip forms.
func pytestStop(text string) string {
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '"' || r == '\'' || r == ',' || r == '[' || r == ']' || r == '='
	}) {
		if strings.HasPrefix(w, "--") {
			if slices.Contains([]string{"--exitfirst", "--maxfail", "--stepwise", "--sw", "--stepwise-skip", "--sw-skip"}, w) {
				return w
			}
			continue
		}
		if !strings.HasPrefix(w, "-") {
			continue
		}
		// Short flags up to the first one that takes a value (-rxs
		// reports xfails; it does not exit).
		for _, c := range w[1:] {
			if c == 'x' {
				return w
			}
			if !strings.ContainsRune("vqslh", c) {
				break
			}
		}
	}
	return ""
}

// pyNodeFile is a pytest node id's file and its test function's name
// (parameters cut), "" when the id names no function in a .py file.
func pyNodeFile(id string) (file, fn string) {
	parts := strings.Split(id, "::")
	if len(parts) < 2 || !strings.HasSuffix(parts[0], ".py") {
		return "", ""
	}
	fn, _, _ = strings.Cut(parts[len(parts)-1], "[")
	if !pyIdent.MatchString(fn) {
		return "", ""
	}
	return parts[0], fn
}

// pyIdent is a Python identifier as test names spell them.
var pyIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// plantPyCanary appends the canary, in the checkout at ws, to the test file
// of a listed test (one the test patch touches, in touched, where there is
// one), and not to a file that parametrizes every test of its module
// (parametrizesModule): another listed test's file then, or none, with a
// note; setup are the setup commands. It returns the canary (id "" when
// none was written) and a note saying why there is none where a listed
// test could have had one.
func plantPyCanary(ws string, listed, touched, setup []string) (pyCanary, string) {
	var c pyCanary
	// The listed tests' files, the test patch's first, each with the
	// first listed test function in it.
	type candidate struct{ file, fn string }
	var cands []candidate
	for _, id := range listed {
		f, n := pyNodeFile(id)
		if f == "" || slices.ContainsFunc(cands, func(c candidate) bool { return c.file == f }) {
			continue
		}
		cands = append(cands, candidate{f, n})
	}
	if len(cands) == 0 {
		return c, ""
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		ta, tb := slices.Contains(touched, a.file), slices.Contains(touched, b.file)
		switch {
		case ta == tb:
			return 0
		case ta:
			return -1
		}
		return 1
	})
	root, err := hostfs.OpenRoot(ws)
	if err != nil {
		return c, ""
	}
	defer root.Close()
	for _, name := range pytestConfigs {
		data, _, err := root.ReadHead(name, 1<<20)
		if err != nil {
			continue
		}
		if o := pytestStop(string(data)); o != "" {
			return c, fmt.Sprintf("the run was not checked for forged reports: %s has %s, which would stop the session at the grader's own failing test", name, o)
		}
	}
	for _, s := range setup {
		if strings.Contains(s, "PYTEST_ADDOPTS") {
			return c, "the run was not checked for forged reports: the setup commands set PYTEST_ADDOPTS, which could stop the session at the grader's own failing test"
		}
	}
	var file, fn string
	var info hostfs.Info
	var data []byte
	var parametrized []string
	for _, cand := range cands {
		i, ierr := root.Lstat(cand.file)
		d, err := root.ReadFile(cand.file, maxTestFile)
		if ierr != nil || err != nil || !i.Mode.IsRegular() {
			continue
		}
		if parametrizesModule(d) {
			parametrized = append(parametrized, cand.file)
			continue
		}
		file, fn, info, data = cand.file, cand.fn, i, d
		break
	}
	if file == "" {
		if len(parametrized) > 0 {
			return c, "the run was not checked for forged reports: the listed tests' files parametrize every test of their module (pytestmark or pytest_generate_tests), where the grader's own test would be a collection error: " + strings.Join(parametrized, ", ")
		}
		return c, "the run was not checked for forged reports: the listed tests' file " + cands[0].file + " is not a file of the checkout"
	}
	c.file = file
	name := newPyCanaryName(fn, func(n string) bool {
		return regexp.MustCompile(`(?m)^\s*(?:async\s+)?def\s+`+n+`\b`).Match(data) ||
			slices.ContainsFunc(listed, func(id string) bool { _, f := pyNodeFile(id); return f == n })
	})
	src := slices.Clip(data)
	if len(src) > 0 && src[len(src)-1] != '\n' {
		src = append(src, '\n')
	}
	a := 1 + rand.N(1000)
	b := a + 1 + rand.N(1000)
	src = fmt.Appendf(src, "\n\ndef %s():\n    got = %d\n    assert got == %d\n", name, a, b)
	if root.WriteFile(file, src, info.Mode.Perm()) != nil {
		return pyCanary{}, "the run was not checked for forged reports: the grader's own test could not be written to " + file
	}
	// Named as pytest names the listed test: its file as the id has it.
	c.id = file + "::" + name
	return c, ""
}

// newPyCanaryName returns a fresh test name shaped like the listed test
// function fn: its first word (test), one of its other words and a word
// of pyCanaryWords in either order, that taken does not hold.
func newPyCanaryName(fn string, taken func(string) bool) string {
	words := strings.FieldsFunc(fn, func(r rune) bool { return r == '_' })
	prefix := "test"
	if len(words) > 0 {
		prefix = words[0]
	}
	own := words
	if len(own) > 1 {
		own = own[1:]
	} else {
		own = pyCanaryWords
	}
	if strings.HasPrefix(fn, "_") {
		prefix = "_" + prefix
	}
	for i := 0; ; i++ {
		a, b := strings.ToLower(own[rand.N(len(own))]), pyCanaryWords[rand.N(len(pyCanaryWords))]
		if rand.N(2) == 0 {
			a, b = b, a
		}
		name := prefix + "_" + a + "_" + b
		if i >= 32 {
			name += fmt.Sprint(rand.N(1000))
		}
		if a != b && !taken(name) && name != fn {
			return name
		}
	}
}

// check reads the canary's outcome in the run's pytest verdicts: reported
// passed, the run's reports cannot be trusted; not reported, it says
// nothing (a note says so).
func (c pyCanary) check(v Verdicts) (forged bool, note string) {
	switch v[c.id] {
	case "passed":
		return true, ""
	case "":
		return false, fmt.Sprintf("the run was not checked for forged reports: %s, a test of the grader's that fails by construction, was not reported", c.id)
	}
	return false, ""
}

var (
	// pytestmarkLine is a module-level pytestmark assignment.
	pytestmarkLine = regexp.MustCompile(`(?m)^pytestmark\s*[:=+]`)
	// pyTopLevel is a line that starts a top-level statement other than
	// a continuation of an expression.
	pyTopLevel = regexp.MustCompile(`(?m)^[A-Za-z_@]`)
	// generateTests is a module-level pytest_generate_tests hook.
	generateTests = regexp.MustCompile(`(?m)^(?:async\s+)?def\s+pytest_generate_tests\b`)
)

// parametrizesModule reports whether the test module src parametrizes
// every test function in it: a module-level pytestmark whose statement
// names parametrize, or a pytest_generate_tests hook. A test function
// appended to it (the canary, which takes no argument) would be a
// collection error that stops the session.
func parametrizesModule(src []byte) bool {
	if generateTests.Match(src) {
		return true
	}
	for _, loc := range pytestmarkLine.FindAllIndex(src, -1) {
		stmt := src[loc[1]:]
		if next := pyTopLevel.FindIndex(stmt); next != nil {
			stmt = stmt[:next[0]]
		}
		if bytes.Contains(stmt, []byte("parametrize")) {
			return true
		}
	}
	return false
}

package grade

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/validate"
)

// TestPytestStop: the options that stop a pytest session at a failure,
// as configuration files and commands spell them; report characters and
// other options are not.
func TestPytestStop(t *testing.T) {
	for _, tc := range []struct {
		text, want string
	}{
		{"[pytest]\naddopts = -x\n", "-x"},
		{"[tool:pytest]\naddopts = -ra -vx --tb=short\n", "-vx"},
		{"[tool.pytest.ini_options]\naddopts = [\"--maxfail=2\", \"-q\"]\n", "--maxfail"},
		{"addopts = --sw", "--sw"},
		{"addopts = '--exitfirst'", "--exitfirst"},
		{"addopts = --stepwise-skip", "--stepwise-skip"},
		{"[pytest]\naddopts = -rxXs -p no:cacheprovider\n", ""},
		{"[pytest]\naddopts = -k 'not slow' --strict-markers\n", ""},
		{"[flake8]\nmax-line-length = 100\n", ""},
		{"[pytest]\naddopts = --exclude=x\n", ""},
	} {
		if got := pytestStop(tc.text); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.text, got, tc.want)
		}
	}
}

// pyShells opens shells that answer the detected pytest command as pytest
// -rA would for the pyproject fixture below: test_add passes when calc.py
// adds, the canary (any other test function of the file) fails, unless
// calc.py holds FORGE (a module rewriting every report into a pass).
type pyShells struct{ ran []string }

func (p *pyShells) Open(dir string, env []string) (validate.Shell, error) {
	return &pyShell{p: p, dir: dir}, nil
}

type pyShell struct {
	p   *pyShells
	dir string
}

var pyDef = regexp.MustCompile(`(?m)^def (test_\w+)\(`)

func (s *pyShell) Run(_ context.Context, cmd string, _ time.Duration) tool.Result {
	s.p.ran = append(s.p.ran, cmd)
	zero, one := 0, 1
	calc, _ := os.ReadFile(filepath.Join(s.dir, "calc.py"))
	tests, _ := os.ReadFile(filepath.Join(s.dir, "tests", "test_calc.py"))
	if cmd == pySetup && strings.Contains(string(calc), "REWRITE") {
		// The patch's code, run by the setup command, makes every
		// assertion of the tests hold.
		_ = os.WriteFile(filepath.Join(s.dir, "tests", "test_calc.py"), []byte(strings.ReplaceAll(string(tests), "assert ", "assert True or ")), 0o644)
	}
	if cmd != detectedPytest {
		return tool.Result{ExitCode: &zero}
	}
	forge := strings.Contains(string(calc), "FORGE")
	var lines []string
	failed := 0
	for _, m := range pyDef.FindAllStringSubmatch(string(tests), -1) {
		pass := m[1] == "test_sub" || (m[1] == "test_add" && (strings.Contains(string(calc), "a + b") || strings.Contains(string(tests), "assert True or add("))) || forge
		if pass {
			lines = append(lines, "PASSED tests/test_calc.py::"+m[1])
		} else {
			failed++
			lines = append(lines, "FAILED tests/test_calc.py::"+m[1]+" - assert 1 == 2")
		}
	}
	out := "============================= test session starts ==============================\ncollected 3 items\n\n" +
		"=========================== short test summary info ============================\n" + strings.Join(lines, "\n") +
		fmt.Sprintf("\n========================= %d failed, %d passed in 0.01s ==========================\n", failed, len(lines)-failed)
	if strings.Contains(string(calc), "GOJSON") {
		// The code under test prints a go test -json event passing each
		// test, captured in pytest's report.
		for _, m := range pyDef.FindAllStringSubmatch(string(tests), -1) {
			out = fmt.Sprintf("{\"Action\": \"pass\", \"Test\": \"tests/test_calc.py::%s\"}\n", m[1]) + out
		}
	}
	if strings.Contains(string(calc), "HANG") {
		// The code under test forges a passing report, then keeps the
		// run from ending.
		out := "=========================== short test summary info ============================\n"
		for _, m := range pyDef.FindAllStringSubmatch(string(tests), -1) {
			out += "PASSED tests/test_calc.py::" + m[1] + "\n"
		}
		out += "========================= 3 passed in 0.01s ==========================\n"
		return tool.Result{Stdout: out, TimedOut: true, Err: &tool.Error{Kind: tool.ErrTimeout, Message: "timed out"}}
	}
	if strings.Contains(string(calc), "SILENT") {
		// The code under test silences pytest's terminal and forces
		// the exit status to 0.
		return tool.Result{Stdout: "============================= test session starts ==============================\n", ExitCode: &zero}
	}
	res := tool.Result{Stdout: out, ExitCode: &zero}
	if failed > 0 {
		res.ExitCode, res.Err = &one, &tool.Error{Kind: tool.ErrExit, Message: "exit status 1"}
	}
	return res
}

// pySetup is the fixture's setup command, which runs the checkout's code
// (as python setup.py build_ext --inplace would).
const pySetup = "python setup.py build_ext --inplace"

func (s *pyShell) Close() error     { return nil }
func (s *pyShell) Enforced() string { return "fake" }

// The grader's own failing test goes at the end of the listed tests' file
// of the test patch, named like them, in the detected pytest run: a patch
// whose module rewrites every report into a pass has it reported passed,
// and every listed test fails; an honest fix is resolved, the canary
// failing beside it. A configuration that stops the session at a failure
// (-x) gets no canary and a note; a task's own command gets none.
func TestPythonCanary(t *testing.T) {
	pyproject := "[project]\nname = \"calc\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n"
	repo := func(t *testing.T, pyproject string) (dir, base string) {
		dir = writeTree(t, map[string]string{
			"pyproject.toml":     pyproject,
			"calc.py":            "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
			"tests/test_calc.py": "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n",
		})
		gitDiff(t, dir, "init", "-q")
		gitDiff(t, dir, "add", "-A")
		gitDiff(t, dir, "commit", "-qm", "base")
		return dir, strings.TrimSpace(gitDiff(t, dir, "rev-parse", "HEAD"))
	}
	testPatch := "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -1,5 +1,9 @@\n-from calc import sub\n+from calc import add, sub\n+\n+\n+def test_add():\n+    assert add(2, 3) == 5\n \n \n def test_sub():\n     assert sub(3, 1) == 2\n"
	fix := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
	goJSON := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n+# GOJSON: prints a go test -json pass event for the running test\n def add(a, b):\n     return a - b\n"
	silent := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n+# SILENT: silences pytest's output, exits 0\n def add(a, b):\n     return a - b\n"
	hang := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n+# HANG: forges every report passed, then never ends\n def add(a, b):\n     return a - b\n"
	rewrite := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n+# REWRITE: run by the setup command, rewrites the tests' assertions\n def add(a, b):\n     return a - b\n"
	forger := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n+# FORGE: rewrites every failed report into a pass\n def add(a, b):\n     return a - b\n"
	for _, tc := range []struct {
		name      string
		pyproject string
		testCmd   string
		patch     string
		resolved  bool
		canary    bool
		note      string
	}{
		{"gold", pyproject, "", fix, true, true, ""},
		{"wrong", pyproject, "", "", false, true, ""},
		{"go test -json events in pytest's output", pyproject, "", goJSON, false, true, ""},
		{"no report, exit status forced to 0", pyproject, "", silent, false, true, "a test of the grader's that fails by construction, was in it, so its listed tests failed"},
		{"no report, exit status 0, no canary under -x", pyproject + "addopts = \"-x\"\n", "", silent, true, false, "pyproject.toml has -x"},
		{"a forger that keeps the run from ending", pyproject, "", hang, false, true, "the test run timed out after 30m0s, so it resolves nothing"},
		{"a forger that keeps a task's own run from ending", pyproject, detectedPytest, hang, false, false, "the test run timed out after 30m0s, so it resolves nothing"},
		{"setup code that rewrites the tests", pyproject, "", rewrite, false, true, "the setup commands changed the test code the grader put in place (tests/test_calc.py), so the run cannot be trusted"},
		{"a forger", pyproject, "", forger, false, true, "a test of the grader's that fails by construction, passed), so its listed tests failed: tests/test_calc.py::test_add, tests/test_calc.py::test_sub"},
		{"gold under -x", pyproject + "addopts = \"-x\"\n", "", fix, true, false, "pyproject.toml has -x, which would stop the session"},
		{"a forger under -x", pyproject + "addopts = \"-x\"\n", "", forger, true, false, "pyproject.toml has -x"},
		{"a task's own command", pyproject, detectedPytest, forger, true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, base := repo(t, tc.pyproject)
			task := &bench.Task{InstanceID: "calc", Repo: dir, RepoDir: dir, BaseCommit: base, TestPatch: testPatch, TestCmd: tc.testCmd, SetupCmd: []string{pySetup},
				FailToPass: bench.TestList{"tests/test_calc.py::test_add"}, PassToPass: bench.TestList{"tests/test_calc.py::test_sub"}}
			sh := &pyShells{}
			g := &Grader{Shells: sh, Dir: t.TempDir()}
			p, err := g.Prepare(context.Background(), task)
			if err != nil {
				t.Fatal(err)
			}
			var seen, seenBySetup string
			p.g.Shells = seenShells{sh, func(cmd, dir string) {
				b, _ := os.ReadFile(filepath.Join(dir, "tests", "test_calc.py"))
				if cmd == pySetup {
					seenBySetup = string(b)
					return
				}
				seen = string(b)
			}}
			v, err := p.Grade(context.Background(), tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.Resolved != tc.resolved || (tc.note != "") != slices.ContainsFunc(v.Notes, func(n string) bool { return strings.Contains(n, tc.note) }) {
				t.Fatalf("resolved %v, tests %v, notes %q; want %v, a note with %q\n%s", v.Resolved, v.Tests, v.Notes, tc.resolved, tc.note, v.Log)
			}
			if tc.note == "" && len(v.Notes) != 0 {
				t.Errorf("notes %q", v.Notes)
			}
			defs := pyDef.FindAllStringSubmatch(seen, -1)
			if got := len(defs) == 3; got != tc.canary {
				t.Fatalf("canary written %v, want %v:\n%s", got, tc.canary, seen)
			}
			// The setup commands, which may run the patch's code, see
			// the test code as the test command does: the canary is
			// not told by when it appears.
			if tc.patch != rewrite && seenBySetup != seen {
				t.Fatalf("the setup command saw\n%s\nthe test command\n%s", seenBySetup, seen)
			}
			if tc.canary {
				// Shaped like the listed test: test_, a word of add, a word
				// of test names, at the end of the file.
				if name := defs[2][1]; !regexp.MustCompile(`^test_(add_[a-z]+|[a-z]+_add)$`).MatchString(name) || !strings.HasSuffix(seen, "\n\n\ndef "+name+"():\n"+seen[strings.LastIndex(seen, "    got"):]) {
					t.Errorf("canary %s:\n%s", name, seen)
				}
			}
			if wantUntrusted := strings.Contains(tc.note, "by construction") || strings.Contains(tc.note, "changed the test code"); wantUntrusted != slices.Equal(v.Untrusted, []string{"tests/test_calc.py"}) {
				t.Errorf("untrusted %v", v.Untrusted)
			}
		})
	}
}

// seenShells calls seen with the command and the checkout at the setup
// command and at the test command of each shell it opens.
type seenShells struct {
	s    *pyShells
	seen func(cmd, dir string)
}

func (s seenShells) Open(dir string, env []string) (validate.Shell, error) {
	sh, err := s.s.Open(dir, env)
	return seenShell{sh, dir, s.seen}, err
}

type seenShell struct {
	validate.Shell
	dir  string
	seen func(cmd, dir string)
}

func (s seenShell) Run(ctx context.Context, cmd string, timeout time.Duration) tool.Result {
	if cmd == detectedPytest || cmd == pySetup {
		s.seen(cmd, s.dir)
	}
	return s.Shell.Run(ctx, cmd, timeout)
}

// The canary takes no argument: it is not appended to a file that
// parametrizes every test of its module (a module-level pytestmark with
// parametrize, a pytest_generate_tests hook), where it would be a
// collection error stopping the session; another listed test's file takes
// it, or none does and a note says why. A class's pytestmark, or a module's
// that only marks, does not keep it out.
func TestPythonCanaryParametrizedModule(t *testing.T) {
	plain := "def test_sub():\n    assert 1\n"
	marked := "import pytest\n\npytestmark = pytest.mark.parametrize(\n    \"a,b\",\n    [(1, 2)],\n)\n\n\ndef test_add(a, b):\n    assert a < b\n"
	for _, tc := range []struct {
		name, add, other string
		want             string // the file that gets the canary, "" for none
		note             string
	}{
		{"module pytestmark", marked, plain, "tests/test_sub.py", ""},
		{"module pytestmark in a list", "import pytest\n\npytestmark = [\n    pytest.mark.slow,\n    pytest.mark.parametrize(\"a\", [1]),\n]\n\n\ndef test_add(a):\n    pass\n", plain, "tests/test_sub.py", ""},
		{"pytest_generate_tests", "def pytest_generate_tests(metafunc):\n    metafunc.parametrize(\"a\", [1])\n\n\ndef test_add(a):\n    pass\n", plain, "tests/test_sub.py", ""},
		{"every listed file", marked, marked, "", "would be a collection error: tests/test_add.py, tests/test_sub.py"},
		{"a marking pytestmark", "import pytest\n\npytestmark = pytest.mark.slow\n\n\ndef parametrize():\n    pass\n\n\ndef test_add():\n    pass\n", plain, "tests/test_add.py", ""},
		{"a class's pytestmark", "import pytest\n\n\nclass TestX:\n    pytestmark = pytest.mark.parametrize(\"a\", [1])\n\n\ndef test_add():\n    pass\n", plain, "tests/test_add.py", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := writeTree(t, map[string]string{"tests/test_add.py": tc.add, "tests/test_sub.py": tc.other})
			c, note := plantPyCanary(ws, []string{"tests/test_add.py::test_add", "tests/test_sub.py::test_sub"}, []string{"tests/test_add.py"}, nil)
			if c.file != tc.want || (c.id == "") != (tc.want == "") || !strings.Contains(note, tc.note) || (tc.note == "") != (note == "") {
				t.Fatalf("canary %+v, note %q; want it in %q, a note with %q", c, note, tc.want, tc.note)
			}
			for f, src := range map[string]string{"tests/test_add.py": tc.add, "tests/test_sub.py": tc.other} {
				b, _ := os.ReadFile(filepath.Join(ws, f))
				if (string(b) != src) != (f == tc.want) {
					t.Errorf("%s written %v, want %v", f, string(b) != src, f == tc.want)
				}
			}
		})
	}
}

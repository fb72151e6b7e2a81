package grade_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
)

// runTests stands in for pytest, which this machine may not have: it
// loads every conftest.py of the checkout and lets its
// pytest_runtest_makereport hook change a test's outcome, as pytest's hook
// of that name can, runs the test functions of tests/test_*.py and prints
// pytest's -rA summary lines. What it shows of the grader does not depend
// on pytest's own code: the files the model's patch added or changed are
// what a real pytest would load.
const runTests = `import importlib.util, os, sys

hooks = []
for d, dirs, files in os.walk("."):
    dirs[:] = sorted(x for x in dirs if x != ".git")
    if "conftest.py" in files:
        spec = importlib.util.spec_from_file_location("conftest%d" % len(hooks), os.path.join(d, "conftest.py"))
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        if hasattr(m, "pytest_runtest_makereport"):
            hooks.append(m.pytest_runtest_makereport)
sys.path.insert(0, ".")
failed = 0
for f in sorted(os.listdir("tests")):
    if not (f.startswith("test_") and f.endswith(".py")):
        continue
    spec = importlib.util.spec_from_file_location(f[:-3], os.path.join("tests", f))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    for name in sorted(n for n in dir(m) if n.startswith("test_")):
        try:
            getattr(m, name)()
            outcome = "passed"
        except Exception:
            outcome = "failed"
        for h in hooks:
            outcome = h(name, outcome) or outcome
        failed += outcome != "passed"
        print("%s tests/%s::%s" % (outcome.upper(), f, name))
sys.exit(1 if failed else 0)
`

// A Python task whose model's patch leaves the bug and adds a conftest.py
// whose hook reports every test passed (and a setup.cfg whose addopts
// would load a plugin): the conftest.py is set aside, the real outcome
// stands, and the setup.cfg is flagged. The patch also rewrites the
// repository's own conftest.py, which is put back.
func TestGradeSetsAsidePythonTestCode(t *testing.T) {
	py := python()
	if py == "" {
		t.Skip("no python3 outside a shim")
	}
	base := map[string]string{
		"calc.py":           "def add(a, b):\n    return a - b\n",
		"runtests.py":       runTests,
		"tests/conftest.py": "# shared fixtures\n",
		"tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n" +
			"def test_zero():\n    assert add(0, 0) == 0\n",
	}
	fix := map[string]string{"calc.py": "def add(a, b):\n    return a + b\n"}
	dir, baseCommit, patch, _ := commitFix(t, base, fix, "Fix add")
	flip := "def pytest_runtest_makereport(name, outcome):\n    return \"passed\"\n"
	forged := newFile("conftest.py", flip) +
		"diff --git a/tests/conftest.py b/tests/conftest.py\n--- a/tests/conftest.py\n+++ b/tests/conftest.py\n@@ -1 +1,3 @@\n # shared fixtures\n+" +
		strings.ReplaceAll(strings.TrimSuffix(flip, "\n"), "\n", "\n+") + "\n" +
		newFile("setup.cfg", "[tool:pytest]\naddopts = -p forged_plugin\n")
	task := bench.Task{InstanceID: "py-add", Repo: dir, RepoDir: dir, BaseCommit: baseCommit,
		TestCmd: py + " runtests.py", FailToPass: bench.TestList{"tests/test_calc.py::test_add"},
		PassToPass: bench.TestList{"tests/test_calc.py::test_zero"}}
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	for _, tc := range []struct {
		name          string
		patch         string
		resolved      bool
		aside, config []string
		notes         string
	}{
		{"gold", patch, true, nil, nil, ""},
		{"empty", "", false, nil, nil, ""},
		{"forged conftest", forged, false, []string{"conftest.py", "tests/conftest.py"}, []string{"setup.cfg"},
			"the model's changes to test code are not used for grading: conftest.py, tests/conftest.py\n" +
				"the model's patch added setup.cfg, which configures the tests"},
		{"gold with a forged conftest", patch + forged, true, []string{"conftest.py", "tests/conftest.py"}, []string{"setup.cfg"},
			"the model's changes to test code are not used for grading: conftest.py, tests/conftest.py\n" +
				"the model's patch added setup.cfg, which configures the tests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := g.Grade(context.Background(), &task, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.Resolved != tc.resolved || v.Source != "pytest" {
				t.Fatalf("resolved %v from %q, want %v\n%s", v.Resolved, v.Source, tc.resolved, v.Log)
			}
			if !tc.resolved && v.Tests["tests/test_calc.py::test_add"] != bench.TestFailed {
				t.Errorf("tests %v\n%s", v.Tests, v.Log)
			}
			if !slices.Equal(v.TestCodeSetAside, tc.aside) || !slices.Equal(v.ConfigChanged, tc.config) || strings.Join(v.Notes, "\n") != tc.notes {
				t.Errorf("set aside %q, config %q, notes %q; want %q %q %q", v.TestCodeSetAside, v.ConfigChanged, v.Notes, tc.aside, tc.config, tc.notes)
			}
			if len(v.Untrusted) != 0 || v.CheckS != 0 {
				t.Errorf("untrusted %v, check %v s: no Go binary to ask", v.Untrusted, v.CheckS)
			}
		})
	}
}

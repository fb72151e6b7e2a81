package grade_test

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/benchtest"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/validate"
)

var (
	setOnce sync.Once
	theSet  *benchtest.Set
	setErr  error
)

// generated is the generated task set, made once per test binary.
func generated(t *testing.T) *benchtest.Set {
	t.Helper()
	setOnce.Do(func() {
		dir, err := mkdirTemp()
		if err != nil {
			setErr = err
			return
		}
		theSet, setErr = benchtest.Make(context.Background(), dir, benchtest.Problems())
	})
	if setErr != nil {
		t.Fatal(setErr)
	}
	return theSet
}

func TestGradeGenerated(t *testing.T) {
	set := generated(t)
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	task := set.Tasks[0]
	id := task.InstanceID
	// A fix that also rewrites the existing test file so that it cannot
	// fail: the test patch's version of that file wins.
	cheat := task.Patch + "diff --git a/sub_test.go b/sub_test.go\n--- a/sub_test.go\n+++ b/sub_test.go\n@@ -3,7 +3,5 @@ package calc\n import \"testing\"\n \n func TestSub(t *testing.T) {\n-\tif Sub(3, 1) != 2 {\n-\t\tt.Fatal(\"Sub\")\n-\t}\n+\tt.Skip(\"no\")\n }\n"
	// Breaking Sub fails the PASS_TO_PASS test.
	breakSub := task.Patch + "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -8,1 +8,1 @@\n-func Sub(a, b int) int { return a - b }\n+func Sub(a, b int) int { return b - a }\n"
	// A fix that deletes the existing test file: the test patch's
	// version of it is there all the same.
	deleteTest := task.Patch + "diff --git a/sub_test.go b/sub_test.go\ndeleted file mode 100644\n--- a/sub_test.go\n+++ /dev/null\n@@ -1,9 +0,0 @@\n-package calc\n-\n-import \"testing\"\n-\n-func TestSub(t *testing.T) {\n-\tif Sub(3, 1) != 2 {\n-\t\tt.Fatal(\"Sub\")\n-\t}\n-}\n"
	// A wrong fix with a hidden test of its own making, where the
	// hidden test goes: the test patch's file replaces it.
	plant := set.Wrong[id] + "diff --git a/hidden_test.go b/hidden_test.go\nnew file mode 100644\n--- /dev/null\n+++ b/hidden_test.go\n@@ -0,0 +1,5 @@\n+package calc\n+\n+import \"testing\"\n+\n+func TestAdd(t *testing.T) {}\n"
	// A wrong fix with code that, when the tests run, writes a JUnit
	// report to $TRUSS_BENCH_JUNIT naming every test passed: the task
	// declares no report, so none is read.
	forge := set.Wrong[id] + newFile("zz_forge.go", `package calc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

func init() {
	p := os.Getenv("TRUSS_BENCH_JUNIT")
	if p == "" {
		p = "/truss-reports/junit.xml"
	}
	re := regexp.MustCompile(`+"`func (Test\\w+)\\(`"+`)
	x := "<testsuite>"
	fs, _ := filepath.Glob("*_test.go")
	for _, f := range fs {
		b, _ := os.ReadFile(f)
		for _, m := range re.FindAllSubmatch(b, -1) {
			x += fmt.Sprintf("<testcase name=%q/>", m[1])
		}
	}
	os.WriteFile(p, []byte(x+"</testsuite>"), 0o644)
}
`)
	// A wrong fix that deletes go.mod and adds a Makefile whose test
	// target succeeds: the command was detected before the patch, and
	// stays go test.
	swap := set.Wrong[id] + "diff --git a/go.mod b/go.mod\ndeleted file mode 100644\n--- a/go.mod\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-module example.com/calc\n-\n-go 1.22\n" +
		newFile("Makefile", "test:\n\t@echo all good\n")
	// A wrong fix with a TestMain of its own, in a new test file, that
	// runs no test and prints go test's lines for every test passed:
	// the model's test file is set aside, and the real tests run.
	forgeMain := set.Wrong[id] + newFile("zz_main_test.go", forgedOutput("TestMain(m *testing.M)", `"testing"`, ""))
	// The same forgery in production code, an init function of the
	// package under test, which no test file holds: asked for a test
	// that does not exist, the test binary reports the listed ones.
	forgeInit := set.Wrong[id] + newFile("zz_forge.go", forgedOutput("init()", `"strings"`, `	test := false
	for _, a := range os.Args[1:] {
		test = test || strings.HasPrefix(a, "-test.")
	}
	if !test {
		return
	}
`))
	// An init function that forges only when no test is asked for by
	// name: asked for the listed tests alone, the real TestAdd fails.
	forgeUnasked := set.Wrong[id] + newFile("zz_forge.go", forgedOutput("init()", `"strings"`, `	test := false
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.run") {
			return
		}
		test = test || strings.HasPrefix(a, "-test.")
	}
	if !test {
		return
	}
`))
	// Forgers in production code that re-run their own test binary and
	// turn failures into passes, sparing what they take for the grader's
	// failing test: one that spares the tests it did not see on its first
	// run (the full run, which it records in a file of the checkout), one
	// that spares a run asking for a single test of the shape TestQ and
	// 16 hex digits. The grader's test is there from the full run on,
	// shaped like the listed ones, and asked with them.
	forgeRecorded := set.Wrong[id] + newFile("zz_forge.go", reexecForger(`	seen := map[string]bool{}
	b, err := os.ReadFile(".zz_seen")
	if err != nil {
		c := exec.Command(os.Args[0], "-test.list", ".*")
		c.Env = append(os.Environ(), "ZZ_CHILD=1")
		b, _ = c.Output()
		os.WriteFile(".zz_seen", b, 0o644)
	}
	for _, n := range strings.Fields(string(b)) {
		seen[n] = true
	}
	keep := func(name string) bool {
		top, _, _ := strings.Cut(name, "/")
		return seen[top]
	}
`))
	forgeShape := set.Wrong[id] + newFile("zz_forge.go", reexecForger(`	for _, a := range os.Args[1:] {
		if regexp.MustCompile(`+"`"+`^-test\.run=\^TestQ[0-9a-f]{16}\$$`+"`"+`).MatchString(a) {
			return
		}
	}
	keep := func(string) bool { return true }
`))
	// A conftest.py in a test directory and a pytest.ini beside the code:
	// the first is test code (removed), the second configuration
	// (flagged). A pytest.ini under tests/ would be test code too.
	pyFiles := task.Patch + newFile("tests/conftest.py", "def pytest_runtest_makereport(item, call):\n    pass\n") +
		newFile("pkg/pytest.ini", "[pytest]\naddopts = -p forged\n")
	tests := []struct {
		name      string
		patch     string
		resolved  bool
		applied   bool
		want      map[string]string
		note      string
		aside     []string
		config    []string
		untrusted []string
	}{
		{"gold", task.Patch, true, true, map[string]string{"TestAdd": "passed", "TestSub": "passed"}, "", nil, nil, nil},
		{"wrong", set.Wrong[id], false, true, map[string]string{"TestAdd": "failed", "TestSub": "passed"}, "", nil, nil, nil},
		{"empty", "", false, true, map[string]string{"TestAdd": "failed", "TestSub": "passed"}, "", nil, nil, nil},
		{"not applying", set.NotApplying[id], false, false, map[string]string{}, "", nil, nil, nil},
		{"garbage", "this is not a patch\n", false, false, map[string]string{}, "", nil, nil, nil},
		{"test patch wins", cheat, true, true, map[string]string{"TestAdd": "passed", "TestSub": "passed"},
			"the model's changes to test code are not used for grading: sub_test.go", []string{"sub_test.go"}, nil, nil},
		{"breaks a passing test", breakSub, false, true, map[string]string{"TestAdd": "passed", "TestSub": "failed"}, "", nil, nil, nil},
		{"deletes a test file", deleteTest, true, true, map[string]string{"TestAdd": "passed", "TestSub": "passed"},
			"the model's changes to test code are not used for grading: sub_test.go", []string{"sub_test.go"}, nil, nil},
		{"plants the hidden test", plant, false, true, map[string]string{"TestAdd": "failed", "TestSub": "passed"},
			"the model's changes to test code are not used for grading: hidden_test.go", []string{"hidden_test.go"}, nil, nil},
		{"forges in a TestMain", forgeMain, false, true, map[string]string{"TestAdd": "failed", "TestSub": "passed"},
			"the model's changes to test code are not used for grading: zz_main_test.go", []string{"zz_main_test.go"}, nil, nil},
		{"forges in an init function", forgeInit, false, true, map[string]string{"TestAdd": "failed", "TestSub": "failed"},
			"the test binary of example.com/calc cannot be trusted (in the full run it did not report TestCanary…, a test of the grader's that fails by construction, as failed), so its listed tests failed: TestAdd, TestSub",
			nil, nil, []string{"example.com/calc"}},
		{"forges unless asked by name", forgeUnasked, false, true, map[string]string{"TestAdd": "failed", "TestSub": "failed"},
			"the test binary of example.com/calc cannot be trusted (in the full run it did not report TestCanary…, a test of the grader's that fails by construction, as failed), so its listed tests failed: TestAdd, TestSub",
			nil, nil, []string{"example.com/calc"}},
		{"forges the tests it saw first", forgeRecorded, false, true, map[string]string{"TestAdd": "failed", "TestSub": "failed"},
			"the test binary of example.com/calc cannot be trusted (in the full run it reported TestCanary…, a test of the grader's that fails by construction, as passed), so its listed tests failed: TestAdd, TestSub",
			nil, nil, []string{"example.com/calc"}},
		{"spares the canary's old shape", forgeShape, false, true, map[string]string{"TestAdd": "failed", "TestSub": "failed"},
			"the test binary of example.com/calc cannot be trusted (in the full run it reported TestCanary…, a test of the grader's that fails by construction, as passed), so its listed tests failed: TestAdd, TestSub",
			nil, nil, []string{"example.com/calc"}},
		{"adds Python test code and configuration", pyFiles, true, true, map[string]string{"TestAdd": "passed", "TestSub": "passed"},
			"the model's changes to test code are not used for grading: tests/conftest.py\nthe model's patch added pkg/pytest.ini, which configures the tests",
			[]string{"tests/conftest.py"}, []string{"pkg/pytest.ini"}, nil},
		{"forges a JUnit report", forge, false, true, map[string]string{"TestAdd": "failed", "TestSub": "passed"}, "", nil, nil, nil},
		{"changes go.mod", task.Patch + "diff --git a/go.mod b/go.mod\n--- a/go.mod\n+++ b/go.mod\n@@ -3 +3,2 @@\n go 1.22\n+// changed\n", true, true,
			map[string]string{"TestAdd": "passed", "TestSub": "passed"},
			"the model's patch changed go.mod, which the test command (go test -json ./...) was detected from", nil, []string{"go.mod"}, nil},
		{"swaps the test command", swap, false, true, map[string]string{"TestAdd": "missing", "TestSub": "missing"},
			"the model's patch deleted go.mod, which the test command (go test -json ./...) was detected from", nil, []string{"go.mod"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := g.Grade(context.Background(), &task, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.Resolved != tc.resolved || v.PatchApplied != tc.applied {
				t.Fatalf("resolved %v applied %v (%s), want %v %v\n%s", v.Resolved, v.PatchApplied, v, tc.resolved, tc.applied, v.Log)
			}
			if len(v.Tests) != len(tc.want) {
				t.Fatalf("tests %v, want %v", v.Tests, tc.want)
			}
			for k, w := range tc.want {
				if v.Tests[k] != w {
					t.Errorf("%s: %s, want %s\n%s", k, v.Tests[k], w, v.Log)
				}
			}
			if !tc.applied && v.String() != grade.NotResolvedPatchFailed {
				t.Errorf("verdict %q", v.String())
			}
			if tc.applied && (v.Source != "go test -json" || v.Command != "go test -json ./..." || v.Detected != "go.mod") {
				t.Errorf("source %q, command %q detected from %q", v.Source, v.Command, v.Detected)
			}
			// The absent test's name is random.
			notes := absentName.ReplaceAllString(strings.Join(v.Notes, "\n"), "TestTrussAbsent…")
			notes = canaryRef.ReplaceAllString(notes, "$1 TestCanary…, a test of the grader's")
			if tc.applied && notes != tc.note {
				t.Errorf("notes %q, want %q", notes, tc.note)
			}
			if !slices.Equal(v.TestCodeSetAside, tc.aside) || !slices.Equal(v.ConfigChanged, tc.config) || !slices.Equal(v.Untrusted, tc.untrusted) {
				t.Errorf("set aside %q, config changed %q, untrusted %q; want %q %q %q", v.TestCodeSetAside, v.ConfigChanged, v.Untrusted, tc.aside, tc.config, tc.untrusted)
			}
			if tc.applied && !strings.Contains(v.Sandbox, "workspace-write") {
				t.Errorf("sandbox %q", v.Sandbox)
			}
		})
	}
}

// absentName is the test goCheck asks for that does not exist; canaryRef
// names its failing test, whose name is random.
var (
	absentName = regexp.MustCompile(`TestTrussAbsent[0-9a-f]{16}`)
	canaryRef  = regexp.MustCompile(`(report|reported) Test\w+, a test of the grader's`)
)

// reexecForger is a Go file of package calc whose init function, in a
// test binary, re-runs it and prints its output with each --- FAIL of a
// test for which keep (which guard defines, or returns first) is true
// turned into --- PASS, and exits 0.
func reexecForger(guard string) string {
	return `package calc

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
)

var _ = regexp.MustCompile

func init() {
	if os.Getenv("ZZ_CHILD") != "" {
		return
	}
	test := false
	for _, a := range os.Args[1:] {
		test = test || strings.HasPrefix(a, "-test.")
	}
	if !test {
		return
	}
` + guard + `	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), "ZZ_CHILD=1")
	out, _ := cmd.Output()
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		t := strings.TrimLeft(l, "\x16")
		if rest, ok := strings.CutPrefix(t, "--- FAIL: "); ok {
			name, _, _ := strings.Cut(rest, " ")
			if keep(name) {
				l = l[:len(l)-len(t)] + "--- PASS: " + rest
			}
		}
		if t == "FAIL" {
			l = l[:len(l)-len(t)] + "PASS"
		}
		os.Stdout.WriteString(l + "\n")
	}
	os.Exit(0)
}
`
}

// forgedOutput is a Go file of package calc whose function fn (init() or
// TestMain(m *testing.M)), after guard, prints go test's lines for
// TestAdd and TestSub passed and exits 0, running no test; imp is one
// more import it needs.
func forgedOutput(fn, imp, guard string) string {
	return "package calc\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t" + imp + "\n)\n\nfunc " + fn + " {\n" + guard +
		"\tfor _, n := range []string{\"TestAdd\", \"TestSub\"} {\n\t\tfmt.Printf(\"=== RUN   %s\\n--- PASS: %s (0.00s)\\n\", n, n)\n\t}\n\tfmt.Println(\"PASS\")\n\tos.Exit(0)\n}\n"
}

// A listed test that does not exist is missing, and the task is not
// resolved; a missing repository commit is an error, not a verdict.
func TestGradeMissingAndErrors(t *testing.T) {
	set := generated(t)
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	task := set.Tasks[1]
	task.PassToPass = append(bench.TestList{"TestNoSuchThing"}, task.PassToPass...)
	v, err := g.Grade(context.Background(), &task, task.Patch)
	if err != nil {
		t.Fatal(err)
	}
	if v.Resolved || v.Tests["TestNoSuchThing"] != bench.TestMissing || v.Tests["TestMax"] != bench.TestPassed {
		t.Fatalf("%v %v", v.Resolved, v.Tests)
	}
	bad := set.Tasks[1]
	bad.BaseCommit = strings.Repeat("0", 40)
	if _, err := g.Grade(context.Background(), &bad, ""); err == nil {
		t.Fatal("no error for a missing commit")
	}
	bad = set.Tasks[1]
	bad.TestPatch = "diff --git a/nothere.go b/nothere.go\n--- a/nothere.go\n+++ b/nothere.go\n@@ -1 +1 @@\n-x\n+y\n"
	if _, err := g.Grade(context.Background(), &bad, ""); err == nil || !strings.Contains(err.Error(), "test_patch") {
		t.Fatalf("err = %v", err)
	}
	// A test command that reports nothing per test: its exit status
	// decides for every listed test.
	plain := set.Tasks[1]
	plain.TestCmd = "go test ./... >/dev/null"
	v, err = g.Grade(context.Background(), &plain, plain.Patch)
	if err != nil || !v.Resolved || v.Source != "exit status" {
		t.Fatalf("%v %+v", err, v)
	}
}

// A Prepared grades once: graded or closed, it is gone.
func TestPreparedOnce(t *testing.T) {
	set := generated(t)
	dir := t.TempDir()
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: dir}
	task := set.Tasks[0]
	ctx := context.Background()
	p, err := g.Prepare(ctx, &task)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := p.Grade(ctx, task.Patch); err != nil || !v.Resolved || v.PrepareS <= 0 || v.TestS <= 0 {
		t.Fatalf("%v %+v", err, v)
	}
	if _, err := p.Grade(ctx, task.Patch); err == nil {
		t.Fatal("graded twice")
	}
	p.Close()
	if p, err = g.Prepare(ctx, &task); err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.Close()
	if _, err := p.Grade(ctx, task.Patch); err == nil {
		t.Fatal("graded once closed")
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left: %v", left)
	}
}

// symlinkFile is a diff that adds name as a symbolic link to target.
func symlinkFile(name, target string) string {
	return "diff --git a/" + name + " b/" + name + "\nnew file mode 120000\n--- /dev/null\n+++ b/" + name + "\n@@ -0,0 +1 @@\n+" + target + "\n\\ No newline at end of file\n"
}

// What a model's patch does to the checkout is the model's doing: a patch
// that only GNU patch would apply and that writes .git (which git apply
// refuses), one GNU patch applies only in part, a file or link where the
// test patch needs a directory, each gives a verdict (not resolved, or
// graded as the fix alone is), never a grading error; and a filter driver
// it defines never runs.
func TestGradeModelsDoing(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("no GNU patch")
	}
	set := generated(t)
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	task := set.Tasks[0]
	mark := filepath.Join(t.TempDir(), "ran")
	// The test patch also adds a test in a new directory, newpkg.
	newDir := task
	newDir.TestPatch = task.TestPatch + newFile("newpkg/new_test.go", "package newpkg\n\nimport \"testing\"\n\nfunc TestNew(t *testing.T) {}\n")
	newDir.FailToPass = append(bench.TestList{"TestNew"}, task.FailToPass...)
	for _, tc := range []struct {
		name     string
		task     *bench.Task
		patch    string
		applied  bool
		resolved bool
		reason   string // in ApplyError
	}{
		{"defines a filter in .git/config", &task, task.Patch + "diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -5,1 +5,3 @@\n \tlogallrefupdates = true\n+[filter \"x\"]\n+\tclean = touch " + mark + "; cat\n" +
			"diff --git a/.gitattributes b/.gitattributes\nnew file mode 100644\n--- /dev/null\n+++ b/.gitattributes\n@@ -0,0 +1 @@\n+* filter=x\n", false, false, "the patch names a/.git/config b/.git/config, in a .git directory"},
		{"breaks .git/config", &task, task.Patch + "diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -0,0 +1,1 @@\n+[[[ this is not git configuration\n",
			false, false, "in a .git directory"},
		{"names .git in C quotes", &task, task.Patch + "--- \"a/\\056git/config\"\n+++ \"b/\\056git/config\"\n@@ -0,0 +1,1 @@\n+[[[ this is not git configuration\n",
			false, false, "it would write .git/config, in a .git directory"},
		{"names a nested .GIT", &task, task.Patch + "--- a/cmd/.GIT/hooks/x\n+++ b/cmd/.GIT/hooks/x\n@@ -0,0 +1,1 @@\n+x\n",
			false, false, "in a .git directory"},
		{"applies in part", &task, symlinkFile("l", "nowhere") + newFile("l/x", "escaped"), false, false, "GNU patch applied it only in part"},
		{"a file where a directory goes", &newDir, task.Patch + newFile("newpkg", "not a directory"), true, true, ""},
		{"a link where a directory goes", &newDir, task.Patch + symlinkFile("newpkg", "cmd"), true, true, ""},
		{"a link out where a directory goes", &newDir, task.Patch + symlinkFile("newpkg", "/tmp"), true, true, ""},
		{"a wrong fix and a file where a directory goes", &newDir, set.Wrong[task.InstanceID] + newFile("newpkg", "not a directory"), true, false, ""},
		{"a name that is not UTF-8", &task, task.Patch + "diff --git \"a/\\377dir/x.txt\" \"b/\\377dir/x.txt\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/\\377dir/x.txt\"\n@@ -0,0 +1 @@\n+x\n",
			false, false, "the checkout could not be read after the patch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := g.Grade(context.Background(), tc.task, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.PatchApplied != tc.applied || v.Resolved != tc.resolved || !strings.Contains(v.ApplyError, tc.reason) {
				t.Fatalf("applied %v resolved %v (%s: %q), want %v %v (%q)\n%s", v.PatchApplied, v.Resolved, v, v.ApplyError, tc.applied, tc.resolved, tc.reason, v.Log)
			}
			if !tc.applied && (v.String() != grade.NotResolvedPatchFailed || !slices.ContainsFunc(v.Notes, func(n string) bool { return strings.Contains(n, tc.reason) })) {
				t.Errorf("verdict %q, notes %q", v, v.Notes)
			}
			if tc.task == &newDir && (v.Tests["TestNew"] != bench.TestPassed || v.Tests["TestSub"] != bench.TestPassed) {
				t.Errorf("tests %v\n%s", v.Tests, v.Log)
			}
		})
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the filter the model's patch defined ran")
	}
}

// openOnly hides the Sandboxed's HidingShells: a grader sees only Open.
type openOnly struct{ s *grade.Sandboxed }

func (o openOnly) Open(dir string, env []string) (validate.Shell, error) { return o.s.Open(dir, env) }

// Checkouts made ahead hold other tasks' trees (a later commit's may hold
// this task's fix): the graded commands do not see them.
func TestGradeHidesCheckoutsMadeAhead(t *testing.T) {
	set := generated(t)
	ctx := context.Background()
	// Not under /tmp, which a grading's sandbox replaces with its own:
	// a --work directory on a disk.
	work, err := os.MkdirTemp(".", ".ahead-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	if work, err = filepath.Abs(work); err != nil {
		t.Fatal(err)
	}
	tp := &bench.Templates{Dir: t.TempDir()}
	other := set.Tasks[1]
	withdraw := tp.Plan(ctx, []bench.Want{{Repo: other.RepoDir, Commit: other.BaseCommit, Near: work}}, 1)
	defer withdraw()
	priv := tp.Private()
	if len(priv) != 1 {
		t.Fatalf("Private() = %v", priv)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(priv[0], "*", "repo", ".git", "index")); len(m) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing made ahead")
		}
	}
	task := set.Tasks[0]
	// The tests pass only where the checkout made ahead cannot be read.
	task.TestCmd = "if ls -A " + priv[0] + " | grep -q .; then exit 1; fi; go test ./... >/dev/null"
	for _, tc := range []struct {
		name   string
		shells grade.Shells
		hidden bool
	}{{"hiding", &grade.Sandboxed{}, true}, {"open only", openOnly{&grade.Sandboxed{}}, false}} {
		g := &grade.Grader{Shells: tc.shells, Dir: t.TempDir(), Checkouts: tp}
		v, err := g.Grade(ctx, &task, task.Patch)
		if err != nil {
			t.Fatal(err)
		}
		if v.Resolved != tc.hidden {
			t.Fatalf("%s: resolved %v, want %v\n%s", tc.name, v.Resolved, tc.hidden, v.Log)
		}
	}
}

// A task without test_cmd whose test patch brings the file its test
// command is detected from (here a Makefile with a test target, in a
// repository that has none at base): the command is detected on the base
// with the test patch, before the model's patch, so the model's own
// Makefile decides nothing.
func TestGradeDetectsWithTheTestPatch(t *testing.T) {
	r := gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q")
	r.write(map[string]string{"calc.sh": "add() { echo $(($1 - $2)); }\n", "README.md": "A calculator.\n"})
	r.git("add", "-A")
	r.git("commit", "-qm", "Initial import")
	base := r.git("rev-parse", "HEAD")
	r.write(map[string]string{"calc.sh": "add() { echo $(($1 + $2)); }\n", "Makefile": "test:\n\tsh tests/t.sh\n",
		"tests/t.sh": ". ./calc.sh\ntest \"$(add 2 3)\" = 5\n"})
	r.git("add", "-A")
	r.git("commit", "-qm", "Fix add")
	gold := r.git("diff", base, "HEAD", "--", "calc.sh") + "\n"
	testPatch := r.git("diff", base, "HEAD", "--", "Makefile", "tests") + "\n"
	task := bench.Task{InstanceID: "sh-add", Repo: r.dir, RepoDir: r.dir, BaseCommit: base, TestPatch: testPatch,
		FailToPass: bench.TestList{"add"}}
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	for _, tc := range []struct {
		name     string
		patch    string
		resolved bool
	}{
		{"gold", gold, true},
		{"empty", "", false},
		{"own Makefile", newFile("Makefile", "test:\n\ttrue\n"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := g.Grade(context.Background(), &task, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.Resolved != tc.resolved || v.Command != "make test" || v.Detected != "Makefile" || v.Source != "exit status" || len(v.Notes) != 0 {
				t.Fatalf("resolved %v, command %q from %q, source %q, notes %q\n%s", v.Resolved, v.Command, v.Detected, v.Source, v.Notes, v.Log)
			}
		})
	}
}

// A bare listed name counts only in the test patch's packages that
// declare it: a patch that keeps the target package from building is not
// resolved by another package's passing test of the same name. A name
// none of them declares (TestOther, elsewhere) counts where it runs.
func TestGradeBareNameInTheTestPatchsPackage(t *testing.T) {
	r := gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q")
	add := func(body string) string {
		return "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn " + body + "\n}\n"
	}
	r.write(map[string]string{
		"go.mod":              "module example.com/m\n\ngo 1.22\n",
		"calc/calc.go":        add("a - b"),
		"other/other.go":      "package other\n\n// Add adds.\nfunc Add(a, b float64) float64 { return a + b }\n",
		"other/other_test.go": "package other\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n\nfunc TestOther(t *testing.T) {}\n",
	})
	r.git("add", "-A")
	r.git("commit", "-qm", "Initial import")
	base := r.git("rev-parse", "HEAD")
	testPatch := newFile("calc/add_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n")
	diff := func(body string) string {
		return "diff --git a/calc/calc.go b/calc/calc.go\n--- a/calc/calc.go\n+++ b/calc/calc.go\n@@ -3,3 +3,3 @@\n // Add adds.\n-func Add(a, b int) int {\n-\treturn a - b\n+" + body + "\n }\n"
	}
	task := bench.Task{InstanceID: "calc-add", Repo: r.dir, RepoDir: r.dir, BaseCommit: base, TestPatch: testPatch,
		FailToPass: bench.TestList{"TestAdd"}, PassToPass: bench.TestList{"TestOther"}}
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	for _, tc := range []struct {
		name     string
		patch    string
		resolved bool
		add      string
	}{
		{"gold", diff("func Add(a, b int) int {\n+\treturn a + b"), true, bench.TestPassed},
		{"empty", "", false, bench.TestFailed},
		// calc's test binary does not build: no event of calc's TestAdd.
		{"breaks the build", diff("func Add(a, b int) (int, bool) {\n+\treturn a - b, false"), false, bench.TestMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := g.Grade(context.Background(), &task, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.Resolved != tc.resolved || v.Tests["TestAdd"] != tc.add || v.Tests["TestOther"] != bench.TestPassed {
				t.Fatalf("resolved %v, tests %v; want %v, TestAdd %s\n%s", v.Resolved, v.Tests, tc.resolved, tc.add, v.Log)
			}
		})
	}
}

// pytest's report is read where pytest writes it: a module that prints
// pytest's lines when imported, then fails to import (a collection error,
// no test ran), fails the listed tests under it; what it printed, in the
// ERRORS section, counts for nothing.
func TestGradePytestCollectionError(t *testing.T) {
	set := generated(t)
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	task := set.Tasks[1]
	log := `============================= test session starts ==============================
collected 1 item / 1 error

==================================== ERRORS ====================================
______________________ ERROR collecting tests/test_add.py ______________________
E   ImportError: not ready
------------------------------- Captured stdout --------------------------------
PASSED tests/test_add.py::test_add
PASSED tests/test_sub.py::test_sub
=========================== short test summary info ============================
ERROR tests/test_add.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.10s ===============================
`
	task.TestCmd = "printf '%s' '" + log + "'"
	task.FailToPass, task.PassToPass = bench.TestList{"tests/test_add.py::test_add"}, bench.TestList{"tests/test_sub.py::test_sub"}
	v, err := g.Grade(context.Background(), &task, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tests/test_add.py::test_add": bench.TestFailed, "tests/test_sub.py::test_sub": bench.TestMissing}
	if v.Resolved || v.Source != "pytest" || !maps.Equal(v.Tests, want) {
		t.Fatalf("resolved %v from %q, tests %v\n%s", v.Resolved, v.Source, v.Tests, v.Log)
	}
}

// A PASS_TO_PASS test listed by a bare name that no test-patch package
// declares counts in the packages whose test files declare it: a patch
// that breaks its package's build is not resolved by a passing namesake in
// another package. A home go test cannot run here (a file for another
// GOOS, a nested module ./... does not enter) does not fail an honest fix.
func TestGradeBareNameElsewhere(t *testing.T) {
	r := gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q")
	subTest := func(pkg, call string) string {
		return "package " + pkg + "\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tif " + call + " != 2 {\n\t\tt.Fatal(\"Sub\")\n\t}\n}\n"
	}
	r.write(map[string]string{
		"go.mod":                "module example.com/m\n\ngo 1.22\n",
		"calc/calc.go":          "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
		"sub/sub.go":            "package sub\n\n// Sub subtracts.\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n",
		"sub/sub_test.go":       subTest("sub", "Sub(3, 1)"),
		"other/other_test.go":   subTest("other", "3-1"),
		"win/x_windows_test.go": subTest("win", "3-1"),
		"tools/go.mod":          "module example.com/tools\n\ngo 1.22\n",
		"tools/t_test.go":       subTest("tools", "3-1"),
	})
	r.git("add", "-A")
	r.git("commit", "-qm", "Initial import")
	base := r.git("rev-parse", "HEAD")
	testPatch := newFile("calc/add_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n")
	fix := "diff --git a/calc/calc.go b/calc/calc.go\n--- a/calc/calc.go\n+++ b/calc/calc.go\n@@ -3,3 +3,3 @@\n // Add adds.\n func Add(a, b int) int {\n-\treturn a - b\n+\treturn a + b\n }\n"
	breakSub := "diff --git a/sub/sub.go b/sub/sub.go\n--- a/sub/sub.go\n+++ b/sub/sub.go\n@@ -3,3 +3,3 @@\n // Sub subtracts.\n-func Sub(a, b int) int {\n-\treturn a - b\n+func Sub(a, b int) (int, error) {\n+\treturn a - b, nil\n }\n"
	task := bench.Task{InstanceID: "calc-add", Repo: r.dir, RepoDir: r.dir, BaseCommit: base, TestPatch: testPatch,
		FailToPass: bench.TestList{"TestAdd"}, PassToPass: bench.TestList{"TestSub"}}
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	for _, tc := range []struct {
		name     string
		patch    string
		resolved bool
		sub      string
	}{
		{"gold", fix, true, bench.TestPassed},
		// sub's test binary does not build: no event of sub's TestSub;
		// other's passes.
		{"breaks the P2P package's build", fix + breakSub, false, bench.TestFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := g.Grade(context.Background(), &task, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.Resolved != tc.resolved || v.Tests["TestAdd"] != bench.TestPassed || v.Tests["TestSub"] != tc.sub {
				t.Fatalf("resolved %v, tests %v; want %v, TestSub %s\n%s", v.Resolved, v.Tests, tc.resolved, tc.sub, v.Log)
			}
		})
	}
}

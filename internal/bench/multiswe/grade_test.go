package multiswe_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/multiswe"
	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/testenv"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper()
	}
	os.Exit(testenv.Run(m))
}

// rocketBase is a Go module at the pull request's base: Launch accepts a
// negative countdown, and TestCountdownZero skips itself while Supported
// is false. orbit's test passes before and after.
var rocketBase = map[string]string{
	"go.mod":              "module example.com/rocket\n\ngo 1.22\n",
	"launch.go":           "package rocket\n\nfunc Launch(n int) error { return nil }\n\nfunc Supported() bool { return false }\n",
	"launch_test.go":      "package rocket\n\nimport \"testing\"\n\nfunc TestCountdownZero(t *testing.T) {\n\tif !Supported() {\n\t\tt.Skip(\"unsupported\")\n\t}\n\tif Launch(0) != nil {\n\t\tt.Fatal(\"Launch(0) failed\")\n\t}\n}\n",
	"orbit/orbit.go":      "package orbit\n\nfunc Period() int { return 90 }\n",
	"orbit/orbit_test.go": "package orbit\n\nimport \"testing\"\n\nfunc TestOrbit(t *testing.T) {\n\tif Period() != 90 {\n\t\tt.Fatal(Period())\n\t}\n}\n",
}

// rocketFix is the pull request: the fix (Launch refuses n < 0, Supported
// is true, countdown.Steps is new) and its tests (TestLaunchNegative fails
// on the base: f2p; TestCountdownZero is skipped there: s2p; countdown's
// test does not build without the fix, so it did not run: n2p).
var rocketFix = map[string]string{
	"launch.go":                   "package rocket\n\nimport \"errors\"\n\nfunc Launch(n int) error {\n\tif n < 0 {\n\t\treturn errors.New(\"negative countdown\")\n\t}\n\treturn nil\n}\n\nfunc Supported() bool { return true }\n",
	"countdown/countdown.go":      "package countdown\n\nfunc Steps(n int) int { return n + 1 }\n",
	"negative_test.go":            "package rocket\n\nimport \"testing\"\n\nfunc TestLaunchNegative(t *testing.T) {\n\tif Launch(-1) == nil {\n\t\tt.Fatal(\"Launch(-1) succeeded\")\n\t}\n}\n",
	"countdown/countdown_test.go": "package countdown\n\nimport \"testing\"\n\nfunc TestSteps(t *testing.T) {\n\tif Steps(3) != 4 {\n\t\tt.Fatal(Steps(3))\n\t}\n}\n",
}

// TestGradeImported grades an imported instance with Truss's grader in
// the host's sandbox: the record's fix resolves it, and a fix that leaves
// the s2p test skipped or no fix at all does not, as Multi-SWE-bench
// rules (every f2p, s2p, n2p and p2p test passes).
func TestGradeImported(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	repo := filepath.Join(dir, "repos", "acme", "rocket")
	writeFiles(t, repo, rocketBase)
	g := gitsafe.Git{Dir: repo}
	for _, s := range [][]string{
		{"init", "-q", "--initial-branch=main"},
		{"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@invalid", "commit", "-q", "--no-verify", "-m", "base"},
	} {
		if _, err := g.Output(ctx, s...); err != nil {
			t.Fatal(err)
		}
	}
	base, err := bench.Head(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	// The pull request's patches, from the fixed tree staged over the
	// base; then the repository back at its one commit.
	writeFiles(t, repo, rocketFix)
	diff := func(paths ...string) string {
		if _, err := g.Output(ctx, "add", "-A"); err != nil {
			t.Fatal(err)
		}
		out, err := g.Output(ctx, append([]string{"diff", "--cached", "--no-color", base, "--"}, paths...)...)
		if err != nil || out == "" {
			t.Fatalf("diff %v: %q %v", paths, out, err)
		}
		return out
	}
	fixPatch := diff("launch.go", "countdown/countdown.go")
	testPatch := diff("negative_test.go", "countdown/countdown_test.go")
	for _, s := range [][]string{{"reset", "-q", "--hard", base}, {"clean", "-q", "-fdx"}} {
		if _, err := g.Output(ctx, s...); err != nil {
			t.Fatal(err)
		}
	}
	st := func(run, test string) map[string]string {
		return map[string]string{"run": run, "test": test, "fix": "PASS"}
	}
	line := record(t, map[string]any{
		"base":       map[string]any{"label": "acme:main", "ref": "main", "sha": base},
		"fix_patch":  fixPatch,
		"test_patch": testPatch,
		"f2p_tests":  map[string]any{"TestLaunchNegative": st("NONE", "FAIL")},
		"s2p_tests":  map[string]any{"TestCountdownZero": st("SKIP", "SKIP")},
		"n2p_tests":  map[string]any{"TestSteps": st("NONE", "NONE")},
		"p2p_tests":  map[string]any{"TestOrbit": st("PASS", "PASS")},
		"fixed_tests": map[string]any{"TestLaunchNegative": st("NONE", "FAIL"), "TestCountdownZero": st("SKIP", "SKIP"),
			"TestSteps": st("NONE", "NONE")},
	})
	out := filepath.Join(dir, "set")
	sum, err := multiswe.Import(ctx, strings.NewReader(line), "rocket.jsonl", multiswe.Options{Out: out, Language: "go"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := bench.LoadTasks(sum.TaskFile, filepath.Join(dir, "repos"))
	if err != nil {
		t.Fatal(err)
	}
	task := tasks[0]
	if task.RepoDir != repo || len(task.FailToPass) != 3 || len(task.PassToPass) != 1 {
		t.Fatalf("%+v", task)
	}
	// The fix without Supported's change: TestCountdownZero stays skipped.
	partial := strings.Replace(fixPatch, "+func Supported() bool { return true }", "+func Supported() bool { return false }", 1)
	if partial == fixPatch {
		t.Fatal("the partial fix is the fix")
	}
	gr := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	for _, tc := range []struct {
		name, patch string
		resolved    bool
		// tests are the verdicts that are not "passed".
		tests map[string]string
	}{
		{"the record's fix", task.Patch, true, map[string]string{}},
		{"no fix", "", false, map[string]string{"TestLaunchNegative": bench.TestFailed, "TestCountdownZero": bench.TestFailed, "TestSteps": bench.TestMissing}},
		{"the s2p test still skipped", partial, false, map[string]string{"TestCountdownZero": bench.TestFailed}},
	} {
		v, err := gr.Grade(ctx, &task, tc.patch)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		notPassed := map[string]string{}
		for name, verdict := range v.Tests {
			if verdict != bench.TestPassed {
				notPassed[name] = verdict
			}
		}
		if v.Resolved != tc.resolved || !v.PatchApplied || len(v.Tests) != 4 || !maps.Equal(notPassed, tc.tests) {
			b, _ := json.Marshal(v)
			t.Errorf("%s: %s\n%s\n%s", tc.name, v, b, v.Log)
		}
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

package grade_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/container"
	"github.com/trussdev/truss/internal/container/containertest"
)

// testImage is the container package's test image: imgtool exists only in
// it. Without a working engine the test is skipped, except under CI=true.
var testImage = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := container.Find(ctx, os.Getenv("TRUSS_TEST_ENGINE"))
	if err != nil {
		return "", err
	}
	if _, err := e.Check(ctx); err != nil {
		return "", err
	}
	return containertest.Image(ctx, e)
})

// imageEngine is the container engine and the test image: the test is
// skipped without them, except under CI=true.
func imageEngine(t *testing.T) (*container.Engine, string) {
	t.Helper()
	ref, err := testImage()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("needs a working container engine under CI: %v", err)
		}
		t.Skipf("skipped: %v", err)
	}
	e, err := container.Find(context.Background(), os.Getenv("TRUSS_TEST_ENGINE"))
	if err != nil {
		t.Fatal(err)
	}
	return e, ref
}

// TestGradeInImage grades a task whose test needs a tool that only the
// image has: the gold patch resolves, a wrong one and an empty one do not,
// and the same gold patch graded on the host does not (the tool is
// missing there).
func TestGradeInImage(t *testing.T) {
	e, ref := imageEngine(t)
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=t@t", "-c", "user.name=t"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "app.txt"), []byte("broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-qm", "base")
	task := &bench.Task{InstanceID: "img-1", Repo: repo, RepoDir: repo, BaseCommit: git("rev-parse", "HEAD"),
		TestCmd: "imgtool check app.txt", FailToPass: bench.TestList{"app.txt"}}
	patch := func(to string) string {
		return "diff --git a/app.txt b/app.txt\n--- a/app.txt\n+++ b/app.txt\n@@ -1 +1 @@\n-broken\n+" + to + "\n"
	}
	inImage := &grade.Grader{Shells: &grade.InImage{Engine: e, Image: ref, Timeout: time.Minute}, Dir: t.TempDir()}
	for _, tc := range []struct {
		name, patch string
		resolved    bool
	}{
		{"gold", patch("fixed"), true},
		{"wrong", patch("still broken"), false},
		{"empty", "", false},
	} {
		v, err := inImage.Grade(context.Background(), task, tc.patch)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if v.Resolved != tc.resolved || !v.PatchApplied {
			t.Errorf("%s: resolved %v, applied %v (%s)", tc.name, v.Resolved, v.PatchApplied, v)
		}
		if !strings.Contains(v.Sandbox, "container from "+ref) {
			t.Errorf("%s: graded in %q, not in the image", tc.name, v.Sandbox)
		}
	}
	// What a setup command left running in a process group of its own
	// is ended before the tests, in the container as in the sandbox;
	// what it exported stays. (The image has bash alone.)
	daemon := *task
	daemon.SetupCmd = []string{"export GRADE_MARK=kept; set -m; bash -c 'while :; do :; done; : graded-daemon' >/dev/null 2>&1 </dev/null & set +m"}
	daemon.TestCmd = `test "$GRADE_MARK" = kept && for f in /proc/[0-9]*/cmdline; do [[ "$(< $f)" != *graded-daemon* ]] || exit 9; done 2>/dev/null && ` + task.TestCmd
	if v, err := inImage.Grade(context.Background(), &daemon, patch("fixed")); err != nil || !v.Resolved {
		t.Errorf("a setup command's daemon: %+v, %v", v, err)
	}
	// Each task's own image (--env task): the task names it, and a task
	// that names none is refused with its name.
	perTask := &grade.Grader{Shells: &grade.InImage{Engine: e, PerTask: true, Timeout: time.Minute}, Dir: t.TempDir()}
	own := *task
	own.Image = ref
	if v, err := perTask.Grade(context.Background(), &own, patch("fixed")); err != nil || !v.Resolved || !strings.Contains(v.Sandbox, "container from "+ref) {
		t.Errorf("in the task's own image: %+v, %v", v, err)
	}
	if _, err := perTask.Grade(context.Background(), task, patch("fixed")); err == nil || !strings.Contains(err.Error(), "img-1 has no image") {
		t.Errorf("a task without an image: %v", err)
	}
	onHost := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	if v, err := onHost.Grade(context.Background(), task, patch("fixed")); err != nil || v.Resolved {
		t.Errorf("on the host, without the image's tool: %+v, %v", v, err)
	}
}

// A task whose image is not in the engine's store and cannot be pulled is
// graded with a *container.MissingImageError naming the image and the
// engine's complaint, the whole of the grading's error (the runner
// writes it in the run's result as "grading: image X: …"). The engine is
// containertest.Fake: no container engine is needed.
func TestGradeMissingImage(t *testing.T) {
	fake, err := containertest.NewFake(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=t@t", "-c", "user.name=t"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "app.txt"), []byte("broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-qm", "base")
	const ref = "swebench/sweb.eval.x86_64.acme_1776_app-1:latest"
	task := &bench.Task{InstanceID: "acme__app-1", Repo: repo, RepoDir: repo, BaseCommit: git("rev-parse", "HEAD"),
		TestCmd: "imgtool check app.txt", FailToPass: bench.TestList{"app.txt"}, Image: ref}
	patch := "diff --git a/app.txt b/app.txt\n--- a/app.txt\n+++ b/app.txt\n@@ -1 +1 @@\n-broken\n+fixed\n"
	for _, noPull := range []bool{false, true} {
		e := &container.Engine{Name: container.Podman, Path: fake.Path, NoPull: noPull}
		g := &grade.Grader{Shells: &grade.InImage{Engine: e, PerTask: true, Timeout: time.Minute}, Dir: t.TempDir()}
		_, err := g.Grade(context.Background(), task, patch)
		me, ok := errors.AsType[*container.MissingImageError](err)
		if !ok || me.Image != ref || me.Pulled == noPull {
			t.Fatalf("NoPull %v: %T %v, want a *container.MissingImageError", noPull, err, err)
		}
		want := "image " + ref + ": not found locally and the pull failed: Error: initializing source docker://docker.io/" + ref + ": reading manifest latest in docker.io/" + ref + ": manifest unknown"
		if noPull {
			want = "image " + ref + ": not found locally, and pulls are off (run `podman pull " + ref + "` first)"
		}
		if err.Error() != want {
			t.Errorf("NoPull %v:\n%s\nwant\n%s", noPull, err, want)
		}
	}
	if n, err := fake.Pulls(); err != nil || n["docker.io/"+ref] != 1 {
		t.Errorf("pulls %v, %v; want one", n, err)
	}
}

// TestForTaskWorkdir: with each task's own image, the task's place for
// its repository (Multi-SWE-bench's /home/REPO) is where the checkout is
// mounted; a task that names none gets --env-workdir's.
func TestForTaskWorkdir(t *testing.T) {
	s := &grade.InImage{PerTask: true, Workdir: "/testbed"}
	for _, tc := range []struct {
		task bench.Task
		want string
	}{
		{bench.Task{InstanceID: "a", Image: "img:a", Workdir: "/home/cli"}, "/home/cli"},
		{bench.Task{InstanceID: "b", Image: "img:b"}, "/testbed"},
	} {
		sh, err := s.ForTask(&tc.task)
		if err != nil {
			t.Fatal(err)
		}
		if got := sh.(*grade.InImage); got.Workdir != tc.want || got.Image != tc.task.Image || got.PerTask {
			t.Errorf("%s: %+v, want workdir %s", tc.task.InstanceID, got, tc.want)
		}
	}
	if _, err := s.ForTask(&bench.Task{InstanceID: "c"}); err == nil {
		t.Error("a task without an image: no error")
	}
}

// TestGradeInImageReadsItsJUnitReport: a grading in an image of a task
// that declares a JUnit report writes it where $TRUSS_BENCH_JUNIT says, in
// the container; the grader reads it (the verdict's source is the report,
// which says one of the two tests failed although the log says both
// passed: they disagree, so that test failed, with a note). A task that
// declares none has neither the variable nor the report directory.
func TestGradeInImageReadsItsJUnitReport(t *testing.T) {
	e, ref := imageEngine(t)
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=t@t", "-c", "user.name=t"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	const report = `<?xml version="1.0"?><testsuites><testsuite name="s">` +
		`<testcase classname="c" name="TestOne"/>` +
		`<testcase classname="c" name="TestTwo"><failure message="no"/></testcase>` +
		`</testsuite></testsuites>`
	task := &bench.Task{InstanceID: "img-junit", Repo: repo, RepoDir: repo, BaseCommit: strings.TrimSpace(string(head)),
		TestCmd:    `printf '%s' '` + report + `' > "$TRUSS_BENCH_JUNIT" && printf '%s\n' '{"Action":"pass","Test":"TestOne"}' '{"Action":"pass","Test":"TestTwo"}'`,
		JUnit:      true,
		FailToPass: bench.TestList{"TestOne"}, PassToPass: bench.TestList{"TestTwo"}}
	g := &grade.Grader{Shells: &grade.InImage{Engine: e, Image: ref, Timeout: time.Minute}, Dir: t.TempDir()}
	v, err := g.Grade(context.Background(), task, "")
	if err != nil {
		t.Fatal(err)
	}
	if v.Source != "junit" || v.CheckedAgainst != "go test -json" || v.Tests["TestOne"] != bench.TestPassed || v.Tests["TestTwo"] != bench.TestFailed ||
		len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "TestTwo (junit failed, go test -json passed)") {
		t.Errorf("source %q checked against %q, verdicts %v, notes %q; want the report's (TestTwo failed, disagreeing with the log)\n%s",
			v.Source, v.CheckedAgainst, v.Tests, v.Notes, v.Log)
	}
	// A task that declares no report: no variable, no report directory
	// in the container, the verdicts from the log.
	task.JUnit = false
	task.TestCmd = `test ! -e /truss-reports && ! env | grep -q _BENCH_JUNIT && printf '%s\n' '{"Action":"pass","Test":"TestOne"}' '{"Action":"pass","Test":"TestTwo"}'`
	if v, err = g.Grade(context.Background(), task, ""); err != nil {
		t.Fatal(err)
	}
	if v.Source != "go test -json" || !v.Resolved {
		t.Errorf("undeclared: source %q, verdicts %v\n%s", v.Source, v.Tests, v.Log)
	}
}

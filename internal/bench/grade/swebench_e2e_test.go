package grade_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/container"
)

// pythonImage is the image the Python end-to-end test grades in: Debian
// with python3, python3-pytest and git, made offline by .ci/run's
// "Python task image" step (mmdebstrap piped into podman import).
const pythonImage = "localhost/truss-ci-python:latest"

// pythonEngine returns the container engine and the Python image's ID.
// Without a working engine or the image the test is skipped with the
// reason, except under CI=true, where .ci/run has made both.
func pythonEngine(t *testing.T) (*container.Engine, string) {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("under CI: "+format, args...)
		}
		t.Skipf(format, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := container.Find(ctx, os.Getenv("TRUSS_TEST_ENGINE"))
	if err != nil {
		skip("no container engine: %v", err)
	}
	if _, err := e.Check(ctx); err != nil {
		skip("the container engine does not work here: %v", err)
	}
	id, err := e.ImageID(ctx, pythonImage)
	var nf *container.ImageNotFoundError
	if errors.As(err, &nf) {
		skip("no image %s: .ci/run's \"Python task image\" step makes it (mmdebstrap --variant=apt --include=python3,python3-pytest,git bookworm - | podman import - %s)", pythonImage, pythonImage)
	}
	if err != nil {
		t.Fatalf("inspecting %s: %v", pythonImage, err)
	}
	return e, id
}

// A SWE-bench record of a Python project, as SWE-bench publishes it (no
// test_cmd, repo "pallets/flask", version 2.3), graded end to end in a
// container of an image with python3 and pytest, at /testbed as in
// SWE-bench's images: the harness's command for the version runs the test
// patch's file, its parser reads pytest's report, and v4.1's rules judge:
// the gold patch resolves, the empty patch does not (its FAIL_TO_PASS
// test fails, its PASS_TO_PASS tests pass). The verdict records the image
// the tests ran in.
func TestGradeSWEbenchPythonInImage(t *testing.T) {
	e, imageID := pythonEngine(t)
	task := flaskTask(t)
	g := &grade.Grader{Shells: &grade.InImage{Engine: e, Image: pythonImage, Workdir: "/testbed", Timeout: 2 * time.Minute}, Dir: t.TempDir()}
	checkPythonVerdicts(t, g, task, func(t *testing.T, v *grade.Verdict) {
		if !strings.Contains(v.Sandbox, "container from "+pythonImage) {
			t.Errorf("graded in %q, not in %s", v.Sandbox, pythonImage)
		}
		// The image's ID is recorded when the container shell says it
		// (InImage's shell implements Facts); it must then be the
		// image's.
		if v.ImageID != imageID {
			t.Errorf("image ID %q, want %q", v.ImageID, imageID)
		}
	})
}

// The same record graded in the host's sandbox, when the host has python3
// and pytest (Debian's python3-pytest): the same verdicts.
func TestGradeSWEbenchPythonOnHost(t *testing.T) {
	if out, err := exec.Command("pytest", "--version").CombinedOutput(); err != nil {
		t.Skipf("no working pytest on this host (apt-get install python3-pytest): %v %s", err, strings.TrimSpace(string(out)))
	}
	task := flaskTask(t)
	g := &grade.Grader{Shells: &grade.Sandboxed{CacheDir: t.TempDir(), Timeout: 2 * time.Minute}, Dir: t.TempDir()}
	checkPythonVerdicts(t, g, task, func(t *testing.T, v *grade.Verdict) {
		if v.ImageID != "" {
			t.Errorf("image ID %q on the host", v.ImageID)
		}
	})
}

// checkPythonVerdicts grades the flask fixture's gold and empty patches
// with g and checks the verdicts, then more with check.
func checkPythonVerdicts(t *testing.T, g *grade.Grader, task *bench.Task, check func(*testing.T, *grade.Verdict)) {
	t.Helper()
	f2p := task.FailToPass[0]
	for _, tc := range []struct {
		name, patch string
		resolved    bool
		f2p         string
	}{
		{"gold", task.Patch, true, bench.TestPassed},
		{"empty", "", false, bench.TestFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := g.Grade(context.Background(), task, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.Resolved != tc.resolved || !v.PatchApplied || v.Tests[f2p] != tc.f2p {
				t.Fatalf("resolved %v applied %v, %s %s (%s); tests %v\n%s", v.Resolved, v.PatchApplied, f2p, v.Tests[f2p], v, v.Tests, v.Log)
			}
			for _, name := range task.PassToPass {
				if v.Tests[name] != bench.TestPassed {
					t.Errorf("%s: %s, want passed\n%s", name, v.Tests[name], v.Log)
				}
			}
			if v.Command != "pytest -rA tests/test_helpers.py" || v.Source != "swebench:parse_log_flask" || v.Rules != "swebench-v4.1.0" {
				t.Errorf("command %q source %q rules %q", v.Command, v.Source, v.Rules)
			}
			check(t, v)
		})
	}
}

package grade_test

import (
	"context"
	"testing"

	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/sandbox"
)

// TestGradeEndsWhatSetupLeftRunning: a process a setup command left
// running, out of the shell's process group (setsid, as a build script's
// daemon would), is gone when the test command starts, while what the
// setup commands exported stays. With the process alive, the task's test
// command fails before its tests and nothing is resolved.
func TestGradeEndsWhatSetupLeftRunning(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	set := generated(t)
	task := set.Tasks[0]
	task.SetupCmd = []string{"export GRADE_MARK=kept; setsid sleep 600 >/dev/null 2>&1 </dev/null &"}
	task.TestCmd = `test "$GRADE_MARK" = kept && ! grep -qx sleep /proc/[0-9]*/comm && go test -json ./...`
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	v, err := g.Grade(context.Background(), &task, task.Patch)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Resolved {
		t.Fatalf("not resolved (%v, exit %d): the setup's daemon outlived it, or its variable did not\n%s", v.Tests, v.ExitCode, v.Log)
	}
}

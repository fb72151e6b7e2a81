package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/container/containertest"
)

// The verification boundary of a task environment, attacked as a
// prompt-injected model would: each test fails when the checks run in
// the container the model's commands ran in.

// TestBoundaryReplacedRunner: the model, root in the container when
// Truss runs as root, replaces the image's test runner with a script
// that prints a pass. The checks run in a fresh container from the
// session's image ID, where the runner is the image's: the task (a.txt
// has no "fixed") fails.
func TestBoundaryReplacedRunner(t *testing.T) {
	e, ref := testImage(t)
	o := fixture(t, `{"steps": [
 {"actions": [{"kind": "run", "command": "printf '#!/bin/busybox sh\\necho \"imgtool: 1 passed, 0 failed\"\\nexit 0\\n' >/opt/tool/bin/imgtool; echo planted"}]},
 {"say": "Done."}
]}`)
	o.SimDialect, o.Surface, o.SimRoot = "anthropic", "", "/testbed"
	o.Env = "image:" + ref
	o.Validation.TestCmd = `imgtool check a.txt`
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer noContainers(t, e, s.Info().SessionID+"-checks")
	defer noContainers(t, e, s.Info().SessionID)
	defer s.Close()
	out, err := s.Run(ctx, "Fix it.")
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict == nil || out.Verdict.OK {
		t.Fatalf("a.txt has no 'fixed', yet the verdict passes: %+v", out.Verdict)
	}
	if !strings.Contains(out.Verdict.Log, "0 passed, 1 failed") && !strings.Contains(out.Verdict.Log, "failed") {
		t.Errorf("the image's own runner did not run: %q", out.Verdict.Log)
	}
	// The session's container was started again: the model's next
	// command runs in it, with what the model changed there.
	r := s.w.shell.Run(ctx, "busybox head -2 /opt/tool/bin/imgtool; echo next-command", 0)
	if r.Err != nil || !strings.Contains(r.Stdout, "next-command") {
		t.Errorf("a command after the boundary: %v %q %q", r.Err, r.Stdout, r.Stderr)
	}
}

// TestBoundaryUntrustedWorkdir: an untrusted project configuration sets
// [env] workdir to a directory of the image's PATH, so that the
// workspace's files would replace the image's programs (its test runner
// among them). An untrusted configuration's workdir is ignored: the
// workspace is mounted at the image's working directory and the image's
// runner fails the task.
func TestBoundaryUntrustedWorkdir(t *testing.T) {
	e, ref := testImage(t)
	o := fixture(t, `{"steps": [{"say": "Done."}]}`)
	if err := os.MkdirAll(filepath.Join(o.Root, ".truss"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(o.Root, ".truss", "config.toml"), []byte("[env]\nworkdir = \"/opt/tool/bin\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(o.Root, "imgtool"), []byte("#!/bin/busybox sh\necho \"imgtool: 1 passed, 0 failed\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.SimDialect, o.Surface, o.SimRoot = "anthropic", "", "/testbed"
	o.Env = "image:" + ref
	o.Validation.TestCmd = `imgtool check a.txt`
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer noContainers(t, e, s.Info().SessionID+"-checks")
	defer noContainers(t, e, s.Info().SessionID)
	defer s.Close()
	if wd := s.w.envs.env.Workdir(); wd != "/testbed" {
		t.Errorf("the workspace is mounted at %s, not the image's working directory", wd)
	}
	out, err := s.Run(ctx, "Fix it.")
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict == nil || out.Verdict.OK {
		t.Fatalf("a.txt has no 'fixed', yet the verdict passes: %+v", out.Verdict)
	}
}

// TestBoundaryExitedLeader: TestImageBoundaryRunsAlone with a process
// whose main thread exited (SYS_exit) while another thread appends to a
// file: it shows as a zombie in /proc/PID/stat. The session's container
// is halted before the checks, so nothing writes while they read.
func TestBoundaryExitedLeader(t *testing.T) {
	e, ref := testImage(t)
	zl, err := os.ReadFile(containertest.AttackProgram(t, "zl"))
	if err != nil {
		t.Fatal(err)
	}
	o := fixture(t, `{"steps": [
 {"actions": [{"kind": "run", "command": "./zl /testbed/ticks; busybox usleep 50000; echo started"}]},
 {"say": "Done."}
]}`)
	if err := os.WriteFile(filepath.Join(o.Root, "zl"), zl, 0o755); err != nil {
		t.Fatal(err)
	}
	o.SimDialect, o.Surface, o.SimRoot = "anthropic", "", "/testbed"
	o.Env = "image:" + ref
	o.Validation.TestCmd = `a=$(busybox wc -c <ticks); busybox usleep 300000; b=$(busybox wc -c <ticks); echo "ticks $a then $b"; [ "$a" = "$b" ]`
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer noContainers(t, e, s.Info().SessionID+"-checks")
	defer noContainers(t, e, s.Info().SessionID)
	defer s.Close()
	out, err := s.Run(ctx, "Start the ticker.")
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict == nil || !out.Verdict.OK {
		t.Fatalf("a process the model left ran during the boundary's checks: %+v", out.Verdict)
	}
}

package container

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/container/containertest"
)

// plantProgram copies the attack program name into the workspace, as a
// command could write it there, and returns its path in the container.
func plantProgram(t *testing.T, env *Env, name string) string {
	t.Helper()
	b, err := os.ReadFile(containertest.AttackProgram(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env.Workspace(), name), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return env.Workdir() + "/" + name
}

// stillWrites reports whether the file at p grows within half a second.
func stillWrites(t *testing.T, p string) (bool, int64, int64) {
	t.Helper()
	before := size(t, p)
	time.Sleep(500 * time.Millisecond)
	after := size(t, p)
	return after != before, before, after
}

// TestStopAllKillsExitedLeader: a process whose main thread exited
// (SYS_exit) while another thread runs shows "Z" in /proc/PID/stat;
// StopAll looks at every thread, kills it and says "stopped" only when
// it is gone.
func TestStopAllKillsExitedLeader(t *testing.T) {
	_, env := startEnv(t, Config{})
	zl := plantProgram(t, env, "zl")
	sh := newShell(t, env)
	tick := filepath.Join(env.Workspace(), "tick")
	mustRun(t, sh, zl+" "+env.Workdir()+"/tick; echo planted")
	waitFor(t, func() bool { fi, err := os.Stat(tick); return err == nil && fi.Size() > 0 })
	if err := sh.Restart(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.StopAll(ctx); err != nil {
		t.Fatalf("StopAll: %v", err)
	}
	if w, b, a := stillWrites(t, tick); w {
		t.Errorf("StopAll returned nil and the process still writes: %d -> %d bytes", b, a)
	}
}

// TestStopAllIgnoresPlantedBash: the container's root puts a "bash"
// first on the image's PATH that answers for StopAll's script; StopAll
// runs /bin/bash by absolute path, so the loop left behind is killed.
func TestStopAllIgnoresPlantedBash(t *testing.T) {
	_, env := startEnv(t, Config{})
	sh := newShell(t, env)
	if id := mustRun(t, sh, "busybox id -u"); strings.TrimSpace(id) != "0" {
		t.Skipf("skipped: the container's user is %s, not root: it cannot write the image's PATH", strings.TrimSpace(id))
	}
	tick := filepath.Join(env.Workspace(), "tick")
	plant := `printf '#!/bin/busybox sh\n[ "$3" = truss-stop ] && { echo stopped; exit 0; }\nexec /bin/bash "$@"\n' >/opt/tool/bin/bash && busybox chmod 755 /opt/tool/bin/bash
busybox setsid sh -c 'while :; do echo x >>` + env.Workdir() + `/tick; busybox usleep 5000; done' >/dev/null 2>&1 </dev/null &
echo planted`
	mustRun(t, sh, plant)
	waitFor(t, func() bool { fi, err := os.Stat(tick); return err == nil && fi.Size() > 0 })
	if err := sh.Restart(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.StopAll(ctx); err != nil {
		t.Fatalf("StopAll: %v", err)
	}
	if w, b, a := stillWrites(t, tick); w {
		t.Errorf("StopAll returned nil and the loop still writes: %d -> %d bytes", b, a)
	}
}

// TestHaltEndsTracedInit: a command ptraces PID 1 (the supervisor,
// which StopAll spares) and makes it execve a loop that writes into the
// workspace (where the seccomp profile lets it: else the test skips). StopAll cannot see it; Halt kills the container, so nothing
// writes any more, and Resume gives a container whose shells work.
func TestHaltEndsTracedInit(t *testing.T) {
	_, env := startEnv(t, Config{})
	inj := plantProgram(t, env, "inj")
	sh := newShell(t, env)
	tick := filepath.Join(env.Workspace(), "tick")
	out := mustRun(t, sh, inj+` 1 /bin/busybox sh -c 'while :; do echo x >>`+env.Workdir()+`/tick; busybox usleep 5000; done'; true`)
	if !strings.Contains(out, "now execs") {
		t.Skipf("skipped: the init could not be traced here: %q", out)
	}
	waitFor(t, func() bool { fi, err := os.Stat(tick); return err == nil && fi.Size() > 0 })
	sh.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Halt(ctx); err != nil {
		t.Fatalf("Halt: %v", err)
	}
	if w, b, a := stillWrites(t, tick); w {
		t.Errorf("the traced init still writes after Halt: %d -> %d bytes", b, a)
	}
	if err := env.Resume(ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if w, b, a := stillWrites(t, tick); w {
		t.Errorf("the traced init's loop writes after Resume: %d -> %d bytes", b, a)
	}
	if o := mustRun(t, newShell(t, env), "echo fresh-shell-ok"); !strings.Contains(o, "fresh-shell-ok") {
		t.Errorf("a shell after Resume: %q", o)
	}
}

// TestHaltKillsEverything: after Halt no process of the container runs
// (an exited leader's thread, a detached loop), Halt twice is fine, and
// Resume starts shells again.
func TestHaltKillsEverything(t *testing.T) {
	_, env := startEnv(t, Config{})
	zl := plantProgram(t, env, "zl")
	sh := newShell(t, env)
	tick := filepath.Join(env.Workspace(), "tick")
	loop := filepath.Join(env.Workspace(), "loop")
	mustRun(t, sh, zl+" "+env.Workdir()+"/tick; busybox setsid sh -c 'while :; do echo x >>"+env.Workdir()+"/loop; busybox usleep 5000; done' >/dev/null 2>&1 </dev/null & echo planted")
	waitFor(t, func() bool { fi, err := os.Stat(tick); return err == nil && fi.Size() > 0 })
	waitFor(t, func() bool { fi, err := os.Stat(loop); return err == nil && fi.Size() > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 {
		if err := env.Halt(ctx); err != nil {
			t.Fatalf("Halt: %v", err)
		}
	}
	for _, p := range []string{tick, loop} {
		if w, b, a := stillWrites(t, p); w {
			t.Errorf("%s still grows after Halt: %d -> %d bytes", filepath.Base(p), b, a)
		}
	}
	sh.Close()
	if err := env.Resume(ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if o := mustRun(t, newShell(t, env), "echo resumed"); !strings.Contains(o, "resumed") {
		t.Errorf("a shell after Resume: %q", o)
	}
}

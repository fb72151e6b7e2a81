package container

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSupervisorIgnoresPlantedPreload: a command, root in the container,
// writes a library and /etc/ld.so.preload naming it; the next supervisor
// (Resume after a boundary's Halt), when the host's loader starts it, must
// not load it: the container's /etc/ld.so.preload is an empty read-only
// file. A static supervisor has no loader, and nothing to test.
func TestSupervisorIgnoresPlantedPreload(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	interp, err := interpreter(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if interp == "" {
		t.Skip("the supervisor is static: no loader reads /etc/ld.so.preload")
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build the planted library")
	}
	src := filepath.Join(t.TempDir(), "evil.c")
	if err := os.WriteFile(src, []byte(`#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void f(void) {
  FILE *o = fopen("/etc/pwned", "a");
  if (o) { fprintf(o, "constructor ran in pid %d\n", getpid()); fclose(o); }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, env := startEnv(t, Config{})
	so := filepath.Join(env.Workspace(), "evil.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", so, src).CombinedOutput(); err != nil {
		t.Skipf("gcc: %v: %s", err, out)
	}
	sh := newShell(t, env)
	// The file is the host's /dev/null, read-only: a write is refused or
	// goes nowhere, and the loader reads nothing.
	out := mustRun(t, sh, "cat "+env.Workdir()+"/evil.so > /etc/evil.so; echo /etc/evil.so > /etc/ld.so.preload; echo kept=$(wc -c < /etc/ld.so.preload); true")
	sh.Close()
	if !strings.Contains(out, "kept=0") {
		t.Errorf("the command wrote /etc/ld.so.preload: %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Halt(ctx); err != nil {
		t.Fatalf("Halt: %v", err)
	}
	if err := env.Resume(ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	out = mustRun(t, newShell(t, env), "cat /etc/pwned 2>&1; true")
	if strings.Contains(out, "constructor ran in pid 1") {
		t.Errorf("the model's library ran in the resumed supervisor (PID 1): %q", out)
	}
}

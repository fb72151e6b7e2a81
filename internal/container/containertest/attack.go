package containertest

import (
	"embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// attackSources are C programs a command could write into the workspace
// and run (any bytes can be written there): zl (a process whose main
// thread exits while another thread appends to a file), pt (ptrace a
// process), inj (ptrace a process and make it execve a program), tr
// (try every call that reaches into another process: ptrace, reading and
// writing its memory, taking its descriptor, comparing its objects) and
// pm (open another process's /proc/PID/mem read-write, read its
// environment and its descriptors through /proc, stop and kill it).
//
//go:embed attack/*.c
var attackSources embed.FS

// AttackProgram compiles the attack program name (zl, pt, inj, tr, pm) as a
// static binary in a temporary directory of tb's and returns its path.
// The test is skipped, with the reason, when gcc cannot build it.
func AttackProgram(tb testing.TB, name string) string {
	tb.Helper()
	src, err := attackSources.ReadFile("attack/" + name + ".c")
	if err != nil {
		tb.Fatalf("no attack program %q: %v", name, err)
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		tb.Skipf("skipped: gcc is needed to build the attack program %s", name)
	}
	dir := tb.TempDir()
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, src, 0o600); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command(gcc, "-static", "-O2", "-pthread", "-o", bin, c).CombinedOutput(); err != nil {
		tb.Skipf("skipped: gcc cannot build the static attack program %s (static libc missing?): %v: %s", name, err, out)
	}
	return bin
}

package container

import (
	"strings"
	"testing"
)

// TestTraceRefused: the container's processes share a user, and the
// kernel lets one trace another of its user's without CAP_SYS_PTRACE
// (no Yama here): a command traces another shell and makes it run what
// it likes. The containers' seccomp profile refuses every call that
// reaches into another process (TraceCalls), on a sibling and on the
// supervisor (the shell's parent, PID 1) alike, as the host's sandbox
// does.
func TestTraceRefused(t *testing.T) {
	_, env := startEnv(t, Config{})
	if f := env.Facts(); !strings.Contains(f.Seccomp, "refused") {
		t.Errorf("the facts do not say the profile refuses tracing: %q", f.Seccomp)
	}
	tr := plantProgram(t, env, "tr")
	sh := newShell(t, env)
	for _, target := range []struct{ name, pid string }{
		{"a sibling", "$s"},
		{"the supervisor", "$PPID"},
		{"the init", "1"},
	} {
		t.Run(target.name, func(t *testing.T) {
			out := mustRun(t, sh, "busybox sleep 30 & s=$!; "+tr+" "+target.pid+"; kill $s")
			for _, call := range []string{"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp"} {
				if !strings.Contains(out, call+": refused") {
					t.Errorf("%s on %s is not refused: %q", call, target.name, out)
				}
			}
		})
	}
	// Everything else still runs: a child is still waited for, signals
	// still reach a sibling.
	if out := mustRun(t, sh, "busybox sleep 30 & s=$!; kill $s; wait $s; echo waited $?"); !strings.Contains(out, "waited 143") {
		t.Errorf("a sibling could not be signalled and waited for: %q", out)
	}
}

package container

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStopAllLeavesNothingRunning: a command leaves processes behind in
// the container (a detached loop that writes a file, one that forks as
// it goes, and one that listens on the state directory's FIFOs for the
// next shell's input, as a process forging the verification's answer
// would). StopAll kills all of them, and the next shell starts and runs
// as before, with no process of the command's there to read its input.
func TestStopAllLeavesNothingRunning(t *testing.T) {
	_, env := startEnv(t, Config{})
	sh := newShell(t, env)
	tick := filepath.Join(env.Workspace(), "tick")
	left := `
busybox setsid sh -c 'while :; do echo x >>` + env.Workdir() + `/tick; busybox usleep 5000; done' >/dev/null 2>&1 </dev/null &
busybox setsid sh -c 'while :; do (busybox sleep 600 &) ; busybox usleep 50000; done' >/dev/null 2>&1 </dev/null &
` + findState + `
busybox setsid sh -c 'while :; do for f in "$0"/*.in; do busybox timeout 1 busybox cat "$f" >>` + env.Workdir() + `/stolen 2>/dev/null; done; done' "$S" >/dev/null 2>&1 </dev/null &
echo planted`
	if out := mustRun(t, sh, left); !strings.Contains(out, "planted") {
		t.Fatalf("plant: %q", out)
	}
	waitFor(t, func() bool { fi, err := os.Stat(tick); return err == nil && fi.Size() > 0 })
	if err := sh.Restart(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.StopAll(ctx); err != nil {
		t.Fatalf("StopAll: %v", err)
	}
	before := size(t, tick)
	time.Sleep(300 * time.Millisecond)
	if after := size(t, tick); after != before {
		t.Errorf("the loop still writes after StopAll: %d bytes, then %d", before, after)
	}
	// Only PID 1, the supervisor, and the new shell's processes are left.
	os.Remove(filepath.Join(env.Workspace(), "stolen"))
	fresh := newShell(t, env)
	mustRun(t, fresh, "echo secret-input-line >/dev/null")
	if b, _ := os.ReadFile(filepath.Join(env.Workspace(), "stolen")); strings.Contains(string(b), "secret-input-line") {
		t.Errorf("a process left behind read the new shell's input: %q", b)
	}
	ps := mustRun(t, fresh, `n=0; for d in /proc/[0-9]*; do c=; read -r c <"$d/comm" 2>/dev/null; case $c in busybox|sh|sleep|usleep|timeout|cat) n=$((n+1));; esac; done; echo "left=$n"`)
	if !strings.Contains(ps, "left=0") {
		t.Errorf("processes a command left are still running after StopAll: %q", ps)
	}
	// A second StopAll (the next boundary) works on the restarted
	// supervisor too.
	if err := env.StopAll(ctx); err != nil {
		t.Fatalf("second StopAll: %v", err)
	}
	if out := mustRun(t, newShell(t, env), "echo again"); !strings.Contains(out, "again") {
		t.Errorf("a shell after the second StopAll: %q", out)
	}
}

func size(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for range 2000 {
		if ok() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the condition never held")
}

// TestLockedDown: the container's processes cannot gain privileges by
// exec (no_new_privs) and have no CAP_MKNOD, CAP_NET_RAW, CAP_AUDIT_WRITE
// or CAP_SYS_PTRACE.
func TestLockedDown(t *testing.T) {
	_, env := startEnv(t, Config{})
	out := mustRun(t, newShell(t, env), `busybox grep -E '^(NoNewPrivs|CapEff)' /proc/self/status`)
	if !strings.Contains(out, "NoNewPrivs:\t1") {
		t.Errorf("no_new_privs is not set: %q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:\t"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			for name, bit := range map[string]uint{"CAP_MKNOD": 27, "CAP_NET_RAW": 13, "CAP_AUDIT_WRITE": 29, "CAP_SYS_PTRACE": 19} {
				if caps&(1<<bit) != 0 {
					t.Errorf("the container's processes have %s: CapEff %s", name, v)
				}
			}
		}
	}
}

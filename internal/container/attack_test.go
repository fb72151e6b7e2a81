package container

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool/shell"
)

// within runs f and fails the test when it has not returned after d: the
// host must never wait on what a command planted. f keeps running after a
// failure (the container's removal at the test's end releases it).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Errorf("%s: Truss still waits after %s", what, d)
	}
}

// findState is how a command in the container finds the state directory:
// its mount in the container's own mount table.
const findState = `S=$(busybox awk '$5 ~ /truss-env-/ {print $5; exit}' /proc/self/mountinfo); `

// TestStateAttacks: a command in the container attacks the host's side of
// the state directory as a prompt-injected model would: links planted
// where the host writes a shell's start script and where it sends its
// requests, a FIFO in place of a file the host reads, a shell's directory
// swapped for a link to a host directory, a process holding a shell's
// output open after the shell is killed. Files outside are unchanged, and
// the host neither waits nor writes anywhere but its own files.
func TestStateAttacks(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	ctlVictim := filepath.Join(outside, "ctl-victim")
	victimDir := filepath.Join(outside, "dir")
	for _, p := range []string{victim, ctlVictim} {
		if err := os.WriteFile(p, []byte("precious\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(victimDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victimDir, "env.sh"), []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unchanged := func(when string) {
		t.Helper()
		for _, p := range []string{victim, ctlVictim, filepath.Join(victimDir, "env.sh")} {
			b, err := os.ReadFile(p)
			if err != nil || string(b) != "precious\n" {
				t.Errorf("%s: %s outside the container is %q (%v), want it unchanged", when, p, b, err)
			}
		}
	}
	_, env := startEnv(t, Config{})
	sh := newShell(t, env)
	if got := strings.TrimSpace(mustRun(t, sh, findState+`echo "$S"`)); got != env.StateDir() {
		t.Fatalf("the container finds the state directory at %q, want %q", got, env.StateDir())
	}

	// Links where the host writes the next shells' start scripts, and in
	// place of the control FIFO; each shell directory swapped for a link
	// to a host directory; a FIFO in place of each status file, held open
	// by a process of its own session so that a reader waits forever.
	plant := findState + `
for n in $(busybox seq 1 60); do
  for d in "$S" "$S/rw"; do
    busybox ln -sf ` + victim + ` "$d/$n.env.tmp" 2>/dev/null
    busybox ln -sf ` + victim + ` "$d/$n.env" 2>/dev/null
    busybox rm -f "$d/$n.status" 2>/dev/null
    busybox mkfifo "$d/$n.status" "$d/$n.in" 2>/dev/null
  done
done
busybox mv "$S/ctl" "$S/ctl.old" 2>/dev/null && busybox ln -s ` + ctlVictim + ` "$S/ctl" 2>/dev/null
for d in "$S"/shell-* "$S"/rw/shell-*; do
  [ -d "$d" ] || continue
  busybox mv "$d" "$d.old" 2>/dev/null && busybox ln -s ` + victimDir + ` "$d" 2>/dev/null
done
for f in "$S"/*.status "$S"/rw/*.status; do
  [ -p "$f" ] && busybox setsid busybox sleep 600 3<>"$f" >/dev/null 2>&1 </dev/null &
done
busybox touch "$S/planted" 2>/dev/null && echo state-writable
busybox rm -f "$S/ctl" 2>/dev/null; [ -p "$S/ctl" ] || echo ctl-removed
true`
	out := mustRun(t, sh, plant)
	if strings.Contains(out, "state-writable") || strings.Contains(out, "ctl-removed") {
		t.Errorf("a command in the container can write the state directory: %q", out)
	}

	// The model's shell restarts (the host removes its saved state) and a
	// new shell starts (the host writes its start script and asks the
	// supervisor).
	within(t, 60*time.Second, "restart and a second shell", func() {
		if err := sh.Restart(); err != nil {
			t.Errorf("restart: %v", err)
		}
		if r := run(t, sh, "echo again"); r.Err != nil {
			t.Errorf("after the restart: %v", r.Err)
		}
		cfg, err := env.ShellConfig(shell.Config{})
		if err != nil {
			t.Errorf("shell config: %v", err)
			return
		}
		other := shell.New(cfg)
		defer other.Close()
		if r := other.Run(context.Background(), "echo other", 30*time.Second); r.Err != nil {
			t.Errorf("a second shell: %v", r.Err)
		}
	})
	unchanged("after new shells")

	// A process that escaped the shell's process group holds its output
	// open: a timed-out command's kill still ends the shell at once.
	within(t, 30*time.Second, "a timeout with the shell's output held open", func() {
		r := sh.Run(context.Background(), "busybox setsid busybox sleep 600 & busybox sleep 600", 300*time.Millisecond)
		if !r.TimedOut {
			t.Errorf("no timeout: %+v", r.Err)
		}
		if r := run(t, sh, "echo back"); r.Err != nil || strings.TrimSpace(r.Stdout) != "back" {
			t.Errorf("after the timeout: %q, %v", r.Stdout, r.Err)
		}
	})
	within(t, 30*time.Second, "closing the shell", func() { sh.Close() })
	unchanged("at the end")
}

// TestShellOutOfCommandsReach: a command cannot reach its shell's streams
// or memory: not through /proc/PPID (fd, the saved copy of its input,
// environ, mem: the shell is not dumpable), nor through the state
// directory's FIFOs (their names are gone once both ends are open). A
// command written into the shell's input that way would run as the
// shell's; read from it, the host's script gives away the token that
// ends each command's output. The shell itself still uses its own
// descriptors (process substitution), and a command started by it is an
// ordinary process.
func TestShellOutOfCommandsReach(t *testing.T) {
	_, env := startEnv(t, Config{})
	sh := newShell(t, env)
	// The shell is the command's parent: each probe prints what it got.
	// Not dumpable takes CAP_SETGID, which only a container whose user is
	// root has: in another's, only the FIFOs' names are checked.
	probe := `for f in /proc/$PPID/fd/0 /proc/$PPID/fd/1 /proc/$PPID/fd/10 /proc/$PPID/environ /proc/$PPID/mem; do
  if (exec 3<"$f") 2>/dev/null; then echo "open $f"; fi
done
(echo injected >/proc/$PPID/fd/0) 2>/dev/null && echo "wrote into the shell's input"
`
	if id := strings.TrimSpace(mustRun(t, sh, `echo "$EUID"`)); id != "0" {
		t.Logf("the container's user is %s, not root: the shell stays dumpable (docs/environments.md)", id)
		probe = ""
	}
	probe += findState + `for f in "$S"/*.in "$S"/*.out "$S"/*.err; do [ -p "$f" ] && echo "fifo $f"; done; true`
	out := mustRun(t, sh, "bash -c "+shellQuote(probe))
	if strings.TrimSpace(out) != "" {
		t.Errorf("a command reached its shell:\n%s", out)
	}
	if got := mustRun(t, sh, `cat <(echo substituted); ls /proc/self/fd >/dev/null && echo own`); got != "substituted\nown\n" {
		t.Errorf("the shell's own descriptors: %q", got)
	}
	if got := mustRun(t, sh, `bash -c 'ls /proc/$$/fd >/dev/null && echo child'`); got != "child\n" {
		t.Errorf("a command's own /proc: %q", got)
	}
}

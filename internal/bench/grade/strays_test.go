package grade_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/validate"
)

// TestGradeEndsWhatSetupLeftRunning: a process a setup command left
// running, out of the shell's process group (setsid, as a build script's
// daemon would), is gone when the test command starts, and what the setup
// commands wrote into the Go build cache is not in the one the tests use,
// while what they exported stays. With either left, the task's test
// command fails before its tests and nothing is resolved.
func TestGradeEndsWhatSetupLeftRunning(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	set := generated(t)
	task := set.Tasks[0]
	// It also writes into the Go build cache, where an entry could point
	// the tests' compile at a forged object: the tests get a fresh one.
	// So do pip's and npm's (a planted wheel or tarball), and, with the
	// network on, the module cache (planted module source).
	const caches = `"$GOCACHE" "$PIP_CACHE_DIR" "$npm_config_cache" "$GOMODCACHE"`
	// (Offline, the module cache is the host's, read-only.)
	task.SetupCmd = []string{`export GRADE_MARK=kept; for d in ` + caches + `; do echo x > "$d/planted" || [ "$d" = "$GOMODCACHE" ] || exit 1; done 2>/dev/null; setsid sleep 600 >/dev/null 2>&1 </dev/null &`}
	task.TestCmd = `test "$GRADE_MARK" = kept && ! grep -qx sleep /proc/[0-9]*/comm && for d in ` + caches + `; do test ! -e "$d/planted" || { echo "planted in $d"; exit 1; }; done && go test -json ./...`
	for _, network := range []bool{false, true} {
		g := &grade.Grader{Shells: &grade.Sandboxed{Network: network}, Dir: t.TempDir()}
		v, err := g.Grade(context.Background(), &task, task.Patch)
		if err != nil {
			t.Fatal(err)
		}
		if !v.Resolved {
			t.Errorf("network %v: not resolved (%v, exit %d): the setup's daemon outlived it, or a planted cache entry, or its variable did not\n%s", network, v.Tests, v.ExitCode, v.Log)
		}
	}
}

// TestGradeEndsWhatTheTestsLeftRunning: where the grader asks the test
// binaries again (goCheck), what the test run left running (the patch's
// code runs in it) is ended first.
func TestGradeEndsWhatTheTestsLeftRunning(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	set := generated(t)
	task := set.Tasks[0]
	task.TestCmd = ""
	var log []string
	g := &grade.Grader{Shells: recShells{&grade.Sandboxed{}, &log}, Dir: t.TempDir()}
	v, err := g.Grade(context.Background(), &task, task.Patch)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Resolved {
		t.Fatalf("gold not resolved: %v\n%s", v.Tests, v.Log)
	}
	test := slices.Index(log, "go test -json ./...")
	if test < 0 || len(log) < test+3 || log[test+1] != "kill" {
		t.Fatalf("ran %q: want the test command, the kill, then the binaries asked again", log)
	}
}

// recShells records the commands its shells run and their KillOthers
// ("kill") in log.
type recShells struct {
	s   grade.Shells
	log *[]string
}

func (r recShells) Open(dir string, env []string) (validate.Shell, error) {
	sh, err := r.s.Open(dir, env)
	if err != nil {
		return nil, err
	}
	return recShell{sh, r.log}, nil
}

type recShell struct {
	validate.Shell
	log *[]string
}

func (r recShell) Run(ctx context.Context, cmd string, timeout time.Duration) tool.Result {
	*r.log = append(*r.log, cmd)
	return r.Shell.Run(ctx, cmd, timeout)
}

func (r recShell) KillOthers(ctx context.Context) error {
	*r.log = append(*r.log, "kill")
	return r.Shell.(validate.StrayKiller).KillOthers(ctx)
}

// TestKillOthersLeavesNothingRunning: when KillOthers returns, every
// process the setup commands left is gone or a zombie, not merely sent
// SIGKILL: a killed process still holds its ports, locks and memory, and
// shows in /proc, until the kernel has run its exit. Busy processes with
// memory to give back, more of them than the machine has cores, make
// that exit slow enough to see. In the sandbox and, with an engine, in a
// container.
func TestKillOthersLeavesNothingRunning(t *testing.T) {
	// One busy process per line, each holding 64 MB; then every process
	// but the shell and the namespace's first that is not a zombie.
	// One more, orphaned to the namespace's first process, has a newline
	// in its name, which would cut /proc/PID/stat's line before its
	// state: KillOthers reads the state from /proc/PID/status.
	const setup = `for i in 1 2 3 4 5 6 7 8; do bash -c 'x=$(head -c 67108864 /dev/zero | tr "\0" x); while :; do :; done' >/dev/null 2>&1 </dev/null & done; ` +
		`(bash -c 'printf "x\ny" > /proc/self/comm; while :; do :; done' >/dev/null 2>&1 </dev/null &); sleep 2`
	const alive = `for p in /proc/[0-9]*; do p=${p#/proc/}; [ "$p" = $$ ] || [ "$p" = 1 ] && continue; s=$(grep '^State:' /proc/$p/status 2>/dev/null) || continue; case $s in *Z*|*X*) ;; *) echo "$p $s";; esac; done`
	check := func(t *testing.T, shells grade.Shells) {
		sh, err := shells.Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Close()
		if r := sh.Run(context.Background(), setup, time.Minute); r.Err != nil {
			t.Fatalf("setup: %v", r.Err)
		}
		if r := sh.Run(context.Background(), alive, time.Minute); r.Err != nil || strings.Count(r.Stdout, "\n") < 9 {
			t.Fatalf("before the kill, alive: %q %v; want the 9 processes", r.Stdout, r.Err)
		}
		if err := sh.(validate.StrayKiller).KillOthers(context.Background()); err != nil {
			t.Fatal(err)
		}
		if r := sh.Run(context.Background(), alive, time.Minute); r.Err != nil || r.Stdout != "" {
			t.Errorf("after KillOthers, still running (pid, state):\n%s%v", r.Stdout, r.Err)
		}
	}
	t.Run("sandbox", func(t *testing.T) {
		host := sandbox.Probe()
		if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
			t.Skip("this host cannot enforce the sandbox")
		}
		check(t, &grade.Sandboxed{})
	})
	t.Run("container", func(t *testing.T) {
		e, ref := imageEngine(t)
		check(t, &grade.InImage{Engine: e, Image: ref, Timeout: time.Minute})
	})
}

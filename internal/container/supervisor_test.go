package container

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/container/containertest"
	"github.com/trussdev/truss/internal/tool/shell"
)

// TestSupervisorOutOfReach: the container's processes share a user (and,
// as root, its capabilities), so without more a command opens the
// supervisor's or the init's /proc/PID/mem read-write (no ptrace needed:
// seccomp cannot refuse an open), writes into it and so answers for
// every other shell; it reads their environment and takes their
// descriptors (the control FIFO, other shells' streams) through /proc,
// and stops or kills them. A command here tries all of that on PID 1,
// its shell's parent and that one's parent — the supervisor, wherever it
// runs — as the container's root and as another user: everything is
// refused, and the supervisor still starts shells afterwards.
func TestSupervisorOutOfReach(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) Config
	}{
		{"the host user", func(*testing.T) Config { return Config{} }},
		{"another user", func(t *testing.T) Config {
			if os.Getuid() != 0 {
				t.Skip("giving the state directory to another user needs root")
			}
			ws := t.TempDir()
			os.Chmod(ws, 0o777)
			return Config{Workspace: ws, User: "1234:1234"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, env := startEnv(t, tc.cfg(t))
			pm := plantProgram(t, env, "pm")
			sh := newShell(t, env)
			r := run(t, sh, `pp=$(busybox awk '{print $4}' /proc/$PPID/stat); `+pm+` 1 $PPID $pp; echo "supervisor: $PPID $pp"`)
			out := r.Stdout
			var pids []string
			for _, l := range strings.Split(out, "\n") {
				if f, ok := strings.CutPrefix(l, "supervisor: "); ok {
					for _, p := range strings.Fields(f) {
						if p != "0" && p != "1" && !slices.Contains(pids, p) {
							pids = append(pids, p)
						}
					}
				}
			}
			if r.Err != nil || !strings.Contains(out, "supervisor: ") {
				t.Fatalf("the attack did not run to its end (%v): %q %q", r.Err, out, r.Stderr)
			}
			for _, pid := range append(pids, "1") {
				for _, want := range []string{"mem: refused", "environ: refused", "fd: refused", "stop: running", "kill: alive"} {
					if !strings.Contains(out, pid+" "+want) {
						t.Errorf("process %s: want %q:\n%s", pid, want, out)
					}
				}
			}
			// The supervisor still answers: a new shell starts and runs.
			sh2 := newShell(t, env)
			if got := strings.TrimSpace(mustRun(t, sh2, "echo answered")); got != "answered" {
				t.Errorf("a new shell after the attack says %q", got)
			}
			// The first shell still works: its parent waits for it.
			if got := strings.TrimSpace(mustRun(t, sh, "echo still")); got != "still" {
				t.Errorf("the attacking shell says %q", got)
			}
		})
	}
}

// TestSupervisorReapsAndKills: the supervisor, PID 1, reaps what a
// command left behind (an orphan's exit leaves no zombie), passes on a
// shell's exit status, and a killed shell's whole process group ends.
func TestSupervisorReapsAndKills(t *testing.T) {
	_, env := startEnv(t, Config{})
	sh := newShell(t, env)
	if got := strings.TrimSpace(mustRun(t, sh, "cat /proc/1/comm; echo $PPID")); !strings.HasSuffix(got, "\n1") {
		t.Errorf("the shell's parent is not PID 1: %q", got)
	}
	t.Logf("the supervisor: %s", strings.Join(strings.Fields(mustRun(t, sh, "busybox grep -E '^(Name|VmRSS|Threads)' /proc/1/status")), " "))
	// An orphan: its parent exits at once, it exits shortly after.
	mustRun(t, sh, "( busybox sleep 0.2 & ) ; busybox sleep 0.6")
	zombies := mustRun(t, sh, `for d in /proc/[0-9]*; do read -r s <"$d/stat" 2>/dev/null && case ${s##*) } in Z*) echo "zombie ${d#/proc/}";; esac; done; true`)
	if strings.Contains(zombies, "zombie") {
		t.Errorf("orphans are not reaped: %q", zombies)
	}
	// A timed-out command's background job ends with it.
	r := sh.Run(context.Background(), "busybox sleep 300 & echo $! >"+env.Workdir()+"/bg; busybox sleep 300", 500*time.Millisecond)
	if !r.TimedOut {
		t.Fatalf("no timeout: %+v", r)
	}
	b, err := os.ReadFile(env.Workspace() + "/bg")
	if err != nil {
		t.Fatal(err)
	}
	bg := strings.TrimSpace(string(b))
	waitFor(t, func() bool {
		out := mustRun(t, sh, fmt.Sprintf("[ -d /proc/%s ] && echo alive || echo gone", bg))
		return strings.TrimSpace(out) == "gone"
	})
	// A fresh shell's exit status comes through.
	sh3 := newShell(t, env)
	if r := sh3.Run(context.Background(), "exit 7", 10*time.Second); r.ExitCode == nil || *r.ExitCode != 7 {
		t.Errorf("exit 7: %+v", r)
	}
}

// TestFindSupervisor: the running program (this test binary, linked
// with the C library) is mounted with the host's loader and every
// library it needs, and started through the loader; a static program
// has no loader.
func TestFindSupervisor(t *testing.T) {
	l, err := findSupervisor()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	interp, err := interpreter(f)
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{}
	for _, m := range l.mounts {
		if !m.ReadOnly {
			t.Errorf("%s is mounted writable", m.Target)
		}
		if fi, err := os.Stat(m.Source); err != nil || !fi.Mode().IsRegular() && !(m.Source == os.DevNull && m.Target == "/etc/ld.so.preload") {
			t.Errorf("mount source %s: %v", m.Source, err)
		}
		targets[m.Target] = m.Source
	}
	if targets[supervisorProg] != exe {
		t.Errorf("%s is %q, want the running program %s", supervisorProg, targets[supervisorProg], exe)
	}
	if interp == "" {
		if !slices.Equal(l.argv, []string{supervisorProg}) {
			t.Errorf("a static program starts as %v", l.argv)
		}
		return
	}
	if want := []string{supervisorDir + "/ld.so", "--library-path", supervisorDir + "/lib", supervisorProg}; !slices.Equal(l.argv, want) {
		t.Errorf("argv %v, want %v", l.argv, want)
	}
	if targets["/etc/ld.so.preload"] != os.DevNull {
		t.Errorf("the container's /etc/ld.so.preload is %q, not an empty file", targets["/etc/ld.so.preload"])
	}
	if real, _ := filepath.EvalSymlinks(interp); targets[supervisorDir+"/ld.so"] != real {
		t.Errorf("the loader mounted is %q, want %s", targets[supervisorDir+"/ld.so"], real)
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range libs {
		if targets[supervisorDir+"/lib/"+lib] == "" {
			t.Errorf("the library %s is not mounted: %v", lib, targets)
		}
	}
}

// TestInterpreter: a static program (the attack programs are linked
// with -static) has no loader; the test binary has one.
func TestInterpreter(t *testing.T) {
	exe, _ := os.Executable()
	for _, tc := range []struct {
		name, path string
		static     bool
	}{
		{"static", containertest.AttackProgram(t, "pm"), true},
		{"this test binary", exe, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := elf.Open(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := interpreter(f)
			if err != nil {
				t.Fatal(err)
			}
			if (got == "") != tc.static {
				t.Errorf("interpreter %q, static %v", got, tc.static)
			}
		})
	}
}

// TestParseRequest: the supervisor acts only on "start N" and "kill N".
func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		line, op, id string
		ok           bool
	}{
		{"start 1", "start", "1", true},
		{"kill 42", "kill", "42", true},
		{"start", "", "", false},
		{"start ", "", "", false},
		{"start 1 2", "", "", false},
		{"start -1", "", "", false},
		{"start ../1", "", "", false},
		{"stop 1", "", "", false},
		{"kill 1234567890123456789", "", "", false},
		{"", "", "", false},
	} {
		op, id, ok := parseRequest(tc.line)
		if op != tc.op || id != tc.id || ok != tc.ok {
			t.Errorf("parseRequest(%q) = %q, %q, %v; want %q, %q, %v", tc.line, op, id, ok, tc.op, tc.id, tc.ok)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{"start 1", "kill 2", "start x", "kill", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		op, id, ok := parseRequest(line)
		if !ok {
			if op != "" || id != "" {
				t.Fatalf("refused %q but returned %q %q", line, op, id)
			}
			return
		}
		if line != op+" "+id || id == "" || strings.Trim(id, "0123456789") != "" {
			t.Fatalf("accepted %q as %q %q", line, op, id)
		}
	})
}

// BenchmarkFindSupervisor measures finding the supervisor's program and
// what it needs, once per container start.
func BenchmarkFindSupervisor(b *testing.B) {
	for b.Loop() {
		if _, err := findSupervisor(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSupervisorIgnoresForgedStart: any process of the container can
// write to the control FIFO. A command asks again for the start of every
// shell whose FIFOs are there (its own among them): a second shell on
// the same input would take the commands meant for the first. The
// supervisor starts each shell once, so the shell answers every command
// as before.
func TestSupervisorIgnoresForgedStart(t *testing.T) {
	_, env := startEnv(t, Config{})
	sh := newShell(t, env)
	other := newShell(t, env)
	mustRun(t, other, "true")
	out := mustRun(t, sh, findState+`for f in "$S"/*.in; do n=${f##*/}; echo "start ${n%.in}" >"$S/ctl"; echo "asked ${n%.in}"; done`)
	if !strings.Contains(out, "asked") {
		t.Fatalf("no shell's FIFOs found: %q", out)
	}
	time.Sleep(500 * time.Millisecond) // for a second shell to start, were it started
	for i := range 20 {
		for _, s := range []*shell.Session{sh, other} {
			want := fmt.Sprintf("answer-%d", i)
			r := s.Run(context.Background(), "echo "+want, 5*time.Second)
			if r.Err != nil || strings.TrimSpace(r.Stdout) != want {
				t.Fatalf("command %d: %q, %v (a second shell took the input?)", i, r.Stdout, r.Err)
			}
		}
	}
}

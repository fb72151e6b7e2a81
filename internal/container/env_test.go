package container

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/shell"
)

func run(t *testing.T, sh *shell.Session, cmd string) tool.Result {
	t.Helper()
	return sh.Run(context.Background(), cmd, 30*time.Second)
}

func mustRun(t *testing.T, sh *shell.Session, cmd string) string {
	t.Helper()
	r := run(t, sh, cmd)
	if r.Err != nil {
		t.Fatalf("%q: %v\nstdout: %s\nstderr: %s", cmd, r.Err, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

func newShell(t *testing.T, env *Env) *shell.Session { return newShellWith(t, env, env.Launcher()) }

func newShellWith(t *testing.T, env *Env, l shell.Starter) *shell.Session {
	t.Helper()
	cfg, err := env.ShellConfig(shell.Config{SetEnv: []string{"TASK=demo"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Launcher = l
	sh := shell.New(cfg)
	t.Cleanup(func() { sh.Close() })
	return sh
}

// TestCheck: the engine's settings start a container, and the report says
// which were chosen.
func TestCheck(t *testing.T) {
	e := testEngine(t)
	r, ok := e.Checked()
	if !ok {
		t.Fatal("no check report")
	}
	chosenOK := false
	for _, tr := range r.Trials {
		chosenOK = chosenOK || (tr.OK && tr.Settings.String() == r.Chosen.String())
	}
	if !chosenOK {
		t.Fatalf("no working trial with the chosen settings: %+v", r.Trials)
	}
	if r.Chosen.String() != e.Settings().String() {
		t.Errorf("chosen %s, engine runs with %s", r.Chosen, e.Settings())
	}
	s := r.String()
	for _, want := range []string{"engine   " + e.Name, "chosen   ", "trial    ok"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	t.Logf("\n%s", s)
}

// TestSession is a session's life in an image: the persistent shell keeps
// its state, the image's own tool runs and the host lacks it, a file
// written inside belongs to the host user, the network is off, the limits
// hold, a timed-out command leaves nothing running, and the facts name the
// image.
func TestSession(t *testing.T) {
	for _, tc := range []struct {
		name     string
		launcher func(*Env) shell.Starter
	}{
		{"supervisor", (*Env).Launcher},
		{"exec", (*Env).ExecLauncher},
	} {
		t.Run(tc.name, func(t *testing.T) { testSession(t, tc.launcher) })
	}
}

func testSession(t *testing.T, launcher func(*Env) shell.Starter) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "pkg"), 0o755)
	os.WriteFile(filepath.Join(ws, "pkg", "code.txt"), []byte("broken\n"), 0o644)
	e, env := startEnv(t, Config{Workspace: ws, Limits: Limits{Pids: 300, Memory: 256 << 20, CPUs: 1, OpenFiles: 4096}})
	if env.Workdir() != "/testbed" {
		t.Errorf("workdir %q, want the image's /testbed", env.Workdir())
	}
	sh := newShellWith(t, env, launcher(env))

	if got := strings.TrimSpace(mustRun(t, sh, "pwd")); got != "/testbed" {
		t.Errorf("the shell starts in %q, want /testbed", got)
	}
	// State persists between calls: directory and exported variables.
	mustRun(t, sh, "cd pkg && export STEP=two")
	if got := strings.TrimSpace(mustRun(t, sh, `echo "$PWD $STEP $TASK"`)); got != "/testbed/pkg two demo" {
		t.Errorf("state between calls: %q", got)
	}
	// The host's PATH stays out; the image's is in force.
	if got := strings.TrimSpace(mustRun(t, sh, `echo "$PATH"`)); got != "/opt/tool/bin:/bin" {
		t.Errorf("PATH in the container %q, want the image's", got)
	}
	// The tool exists only in the image.
	if _, err := exec.LookPath("imgtool"); err == nil {
		t.Fatal("imgtool is on the host's PATH; the test needs a tool only the image has")
	}
	if got := strings.TrimSpace(mustRun(t, sh, "imgtool")); got != "imgtool-ok" {
		t.Errorf("imgtool said %q", got)
	}
	// A file written inside is the host user's.
	mustRun(t, sh, "echo made-inside > made.txt && mkdir -p deep/er && touch deep/er/f")
	for _, p := range []string{"pkg/made.txt", "pkg/deep/er/f", "pkg/deep"} {
		fi, err := os.Stat(filepath.Join(ws, p))
		if err != nil {
			t.Fatalf("%s not on the host: %v", p, err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
			t.Errorf("%s belongs to %d:%d, want the host user %d:%d", p, st.Uid, st.Gid, os.Getuid(), os.Getgid())
		}
	}
	// The file tools' side: the host sees what the shell wrote, and the
	// shell sees what the host wrote.
	os.WriteFile(filepath.Join(ws, "pkg", "code.txt"), []byte("fixed\n"), 0o644)
	if got := mustRun(t, sh, "cat code.txt"); got != "fixed\n" {
		t.Errorf("the container reads %q", got)
	}
	// No network: only the loopback device.
	if out := mustRun(t, sh, "cat /proc/net/dev"); strings.Contains(out, "eth0") || !strings.Contains(out, "lo:") {
		t.Errorf("network devices:\n%s", out)
	}
	// Limits.
	if got := strings.TrimSpace(mustRun(t, sh, "ulimit -n")); got != "4096" {
		t.Errorf("open files limit %q, want 4096", got)
	}
	if got := strings.TrimSpace(mustRun(t, sh, "cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max")); got != "300" {
		t.Errorf("pids limit %q, want 300", got)
	}
	// A timed-out command is killed with everything it started, in the
	// container too; the shell comes back where it was.
	r := sh.Run(context.Background(), "sleep 301 & sleep 302", 300*time.Millisecond)
	if !r.TimedOut {
		t.Fatalf("no timeout: %+v", r)
	}
	if got := strings.TrimSpace(mustRun(t, sh, `echo "$STEP $PWD"`)); got != "two /testbed/pkg" {
		t.Errorf("after the restart: %q, want the variable and the directory kept", got)
	}
	if out := mustRun(t, sh, "ps -o args"); strings.Contains(out, "sleep 30") {
		t.Errorf("the timed-out command's processes still run:\n%s", out)
	}
	// A command that ends the shell: the next one gets a new shell.
	if r := run(t, sh, "exit 3"); r.Err == nil || r.Err.Kind != tool.ErrShell {
		t.Errorf("exit: %+v", r.Err)
	}
	if got := strings.TrimSpace(mustRun(t, sh, "echo back")); got != "back" {
		t.Errorf("after exit: %q", got)
	}
	// The shell that exited is reaped by the container's init, which may
	// take a moment on a busy machine: wait for it (a bound, not a
	// measure).
	out := ""
	for i := 0; i < 50; i++ {
		if out = strings.TrimSpace(mustRun(t, sh, "ps -o args | grep -c '^bash --noprofile' || true")); out == "1" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out != "1" {
		t.Errorf("shells running in the container: %s", out)
	}

	f := env.Facts()
	if f.Engine != e.Name || f.EngineVersion == "" || !strings.HasPrefix(f.ImageID, "sha256:") || f.ContainerID != env.ID() {
		t.Errorf("facts: %+v", f)
	}
	if f.Network || f.Workdir != "/testbed" || f.Limits.Pids != 300 || len(f.Mounts) != 3 || f.Mounts[0].Source != ws || f.Mounts[0].Target != "/testbed" ||
		!f.Mounts[1].ReadOnly || f.Mounts[1].Source != env.StateDir() || f.Mounts[2].ReadOnly || f.Mounts[2].Source != filepath.Join(env.StateDir(), stateRW) {
		t.Errorf("facts: %+v", f)
	}
	if f.Labels[LabelOwnerPID] != fmt.Sprint(os.Getpid()) || f.Labels[LabelSession] == "" {
		t.Errorf("labels: %v", f.Labels)
	}
	// Closing the shell leaves no host process behind (the stand-in).
	sh.Close()
	if n := standIns(t); n != 0 {
		t.Errorf("%d shell stand-ins still run on the host", n)
	}
	// Close removes the container, also with a cancelled context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := env.Close(ctx); err != nil {
		t.Fatalf("close after cancel: %v", err)
	}
	if _, err := os.Stat(env.StateDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state directory left: %v", err)
	}
	if _, err := e.output(context.Background(), "container", "inspect", env.ID()); err == nil {
		t.Error("the container is still there after Close")
	}
}

// TestValidation: a test command passes only inside the image, in a fresh
// shell that does not inherit the agent shell's state; gold and wrong
// workspaces grade as they should in fresh containers.
func TestValidation(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		pass          bool
	}{
		{"gold", "fixed\n", true},
		{"wrong", "still broken\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			os.WriteFile(filepath.Join(ws, "code.txt"), []byte(tc.content), 0o644)
			_, env := startEnv(t, Config{Workspace: ws, Workdir: "/work/repo"})
			agent := newShell(t, env)
			mustRun(t, agent, "export LEAK=agent")
			fresh := newShell(t, env)
			if got := strings.TrimSpace(mustRun(t, fresh, `echo "[$LEAK] $PWD"`)); got != "[] /work/repo" {
				t.Errorf("fresh shell: %q", got)
			}
			r := run(t, fresh, "imgtool check code.txt")
			if pass := r.Err == nil; pass != tc.pass {
				t.Errorf("pass=%v, want %v: %s%s", pass, tc.pass, r.Stdout, r.Stderr)
			}
			// The grader: a fresh container of its own, removed after.
			e, ref := testImage(t)
			gs := sessionName(t)
			res, facts, err := e.RunFresh(context.Background(), Config{Image: ref, Workspace: ws, Workdir: "/work/repo", Session: gs}, "imgtool check code.txt", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if pass := res.Err == nil; pass != tc.pass || !strings.Contains(res.Stdout, "passed") {
				t.Errorf("graded pass=%v, want %v: %s%s", pass, tc.pass, res.Stdout, res.Stderr)
			}
			if facts.ContainerID == env.ID() || facts.ImageID != env.Facts().ImageID {
				t.Errorf("the grader ran in %s (image %s), the agent in %s (image %s)", facts.ContainerID, facts.ImageID, env.ID(), env.Facts().ImageID)
			}
			assertNoContainers(t, e, gs)
			// The same command on the host fails: no imgtool there.
			host := shell.New(shell.Config{Dir: ws})
			defer host.Close()
			if r := host.Run(context.Background(), "imgtool check code.txt", 10*time.Second); r.Err == nil {
				t.Error("the test command passed on the host")
			}
		})
	}
}

// TestOtherUser: with the user given, the container runs as that user
// and what it writes in the workspace is that user's.
func TestOtherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("giving the state directory to another user needs root")
	}
	ws := t.TempDir()
	os.Chmod(ws, 0o777)
	_, env := startEnv(t, Config{Workspace: ws, User: "1234:1234"})
	sh := newShell(t, env)
	if got := strings.TrimSpace(mustRun(t, sh, "id -u; touch mine")); got != "1234" {
		t.Errorf("id -u = %q", got)
	}
	fi, err := os.Stat(filepath.Join(ws, "mine"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1234 {
		t.Errorf("owner %d, want 1234", st.Uid)
	}
	mustRun(t, sh, "cd / && export K=v")
	if r := sh.Run(context.Background(), "sleep 5", 100*time.Millisecond); !r.TimedOut {
		t.Fatalf("no timeout: %+v", r.Err)
	}
	if got := strings.TrimSpace(mustRun(t, sh, `echo "$K"`)); got != "v" {
		t.Errorf("after restart K=%q", got)
	}
}

// TestNetworkOn: with the network asked for, the container has more than
// the loopback device.
func TestNetworkOn(t *testing.T) {
	_, env := startEnv(t, Config{Network: true})
	sh := newShell(t, env)
	if out := mustRun(t, sh, "cat /proc/net/dev"); strings.Count(out, ":") < 2 {
		t.Errorf("no network device but lo:\n%s", out)
	}
	if !env.Facts().Network {
		t.Error("facts say no network")
	}
}

func TestImageNotFound(t *testing.T) {
	e := testEngine(t)
	for _, workdir := range []string{"", "/testbed"} {
		session := sessionName(t)
		_, err := e.Start(context.Background(), Config{Image: "localhost/truss-absent:never", Workspace: t.TempDir(), Session: session, Workdir: workdir})
		var nf *ImageNotFoundError
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), "pull") {
			t.Fatalf("workdir %q: err = %v, want an ImageNotFoundError that says to pull", workdir, err)
		}
		assertNoContainers(t, e, session)
	}
}

func TestStartErrors(t *testing.T) {
	e, ref := testImage(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no image", Config{Workspace: t.TempDir()}, "no image"},
		{"no workspace", Config{Image: ref, Workspace: "/nonexistent/truss"}, "not a directory"},
		{"relative workdir", Config{Image: ref, Workspace: t.TempDir(), Workdir: "rel"}, "not an absolute path"},
		{"no bash in the image", Config{Image: ProbeImage, Workspace: t.TempDir()}, "needs bash"},
		{"comma in the workspace", Config{Image: ref, Workspace: commaDir(t)}, "contains a comma"},
		{"flag as image", Config{Image: "--privileged", Workspace: t.TempDir()}, "starts with '-'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Session = sessionName(t)
			_, err := e.Start(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			assertNoContainers(t, e, tc.cfg.Session)
		})
	}
}

// TestReap: a child process (this test binary) starts an environment and
// is killed; Reap removes its container and state, and leaves a live
// process's container alone.
func TestReap(t *testing.T) {
	e, _ := testImage(t)
	_, live := startEnv(t, Config{})

	session := sessionName(t)
	t.Cleanup(func() { assertNoContainers(t, e, session) })
	cmd := exec.Command(os.Args[0], "-test.run=^TestReapOwner$", "-test.v")
	cmd.Env = append(os.Environ(), "TRUSS_REAP_OWNER="+session, "TRUSS_REAP_WS="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var id, state string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "CONTAINER" {
			id, state = f[1], f[2]
			break
		}
	}
	if id == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the owner process did not start a container")
	}
	// While the owner lives, Reap leaves its container alone.
	if reaped, err := e.Reap(context.Background()); err != nil || containsID(reaped, id) || containsID(reaped, live.ID()) {
		t.Fatalf("reap with the owner alive: %v %+v", err, reaped)
	}
	cmd.Process.Kill() // the owner crashes: no Close
	cmd.Wait()
	reaped, err := e.Reap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !containsID(reaped, id) {
		t.Fatalf("reap did not remove the dead owner's container %s: %+v", id, reaped)
	}
	if containsID(reaped, live.ID()) {
		t.Fatal("reap removed a live session's container")
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead owner's state directory is left: %v", err)
	}
	if _, err := e.output(context.Background(), "container", "inspect", live.ID()); err != nil {
		t.Errorf("the live container is gone: %v", err)
	}
}

func containsID(rs []Reaped, id string) bool {
	for _, r := range rs {
		if strings.HasPrefix(r.ID, id) || strings.HasPrefix(id, r.ID) {
			return true
		}
	}
	return false
}

// TestReapOwner is the owner process of TestReap; it does nothing unless
// started by it.
func TestReapOwner(t *testing.T) {
	session := os.Getenv("TRUSS_REAP_OWNER")
	if session == "" {
		t.Skip("the owner process of TestReap")
	}
	e, ref := testImage(t)
	env, err := e.Start(context.Background(), Config{Image: ref, Workspace: os.Getenv("TRUSS_REAP_WS"), Session: session})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("CONTAINER %s %s\n", env.ID(), env.StateDir())
	time.Sleep(time.Minute) // killed before this ends
	env.Close(context.Background())
}

// TestFind: an unknown name is refused; a missing binary is not found.
func TestFind(t *testing.T) {
	if _, err := Find(context.Background(), "lxc"); err == nil || !strings.Contains(err.Error(), "choose podman or docker") {
		t.Errorf("unknown engine: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err := Find(context.Background(), "")
	var nf *NotFoundError
	if !errors.As(err, &nf) || len(nf.Tried) != 2 || nf.Tried[0].Reason != "not on PATH" {
		t.Errorf("err = %v", err)
	}
}

// standIns counts this process's children that are shell stand-ins.
func standIns(t *testing.T) int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	n := 0
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 || f[1] != fmt.Sprint(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(st), "cmdline"))
		if strings.Contains(string(cmdline), "read -r s") {
			n++
		}
	}
	return n
}

func commaDir(t *testing.T) string {
	d := filepath.Join(t.TempDir(), "a,b")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestProtectedHidden: protected paths are read-only in the container,
// hidden ones unreadable (an empty file system over a directory, an empty
// file over a file), the rest of the workspace writable; the facts list
// the mounts.
func TestProtectedHidden(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{".git", "keys"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, body := range map[string]string{".git/HEAD": "ref\n", "keys/k": "secret-dir\n", "ledger.key": "secret-file\n"} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, env := startEnv(t, Config{Workspace: ws,
		Protected: []string{filepath.Join(ws, ".git"), filepath.Join(ws, "absent"), "/etc"},
		Hidden:    []string{filepath.Join(ws, "keys"), filepath.Join(ws, "ledger.key"), "/outside"}})
	sh := newShell(t, env)
	out := mustRun(t, sh, "cat .git/HEAD; touch .git/x 2>&1 || echo git-ro; ls keys | wc -l; cat ledger.key | wc -c; touch keys/y 2>&1 || echo keys-ro; touch ok && echo rw")
	for _, want := range []string{"ref", "git-ro", "keys-ro", "rw"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret") {
		t.Errorf("a hidden file was read:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "x")); err == nil {
		t.Error("a protected directory was written")
	}
	var ro []string
	for _, m := range env.Facts().Mounts {
		if m.ReadOnly {
			ro = append(ro, m.Source+"→"+m.Target)
		}
	}
	want := []string{env.StateDir() + "→" + env.StateDir(), filepath.Join(ws, ".git") + "→/testbed/.git", "tmpfs→/testbed/keys", "/dev/null→/testbed/ledger.key"}
	if strings.Join(ro, " ") != strings.Join(want, " ") {
		t.Errorf("read-only mounts %v, want %v", ro, want)
	}
}

//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/testenv"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/shell"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper() // the sandbox re-executes this test binary as its helper
	}
	if spec := os.Getenv(childEnv); spec != "" {
		runChild(spec) // a truss-like process for an attack (boundary_test.go)
	}
	os.Exit(testenv.Run(m))
}

// box is a sandboxed shell on a fresh workspace with a .git, beside a
// directory it must not write.
type box struct {
	ws, outside string
	sb          *sandbox.Sandbox
	sh          *shell.Session
}

func newBox(t *testing.T, mode sandbox.Mode, network bool) *box {
	t.Helper()
	return newBoxWith(t, mode, network, nil)
}

// newBoxWith is newBox with a policy adjusted by adjust.
func newBoxWith(t *testing.T, mode sandbox.Mode, network bool, adjust func(*sandbox.Policy)) *box {
	t.Helper()
	return newBoxIn(t, t.TempDir(), mode, network, adjust)
}

// newBoxIn is newBoxWith with the workspace, its temporary directory and
// the hidden files in base.
func newBoxIn(t *testing.T, base string, mode sandbox.Mode, network bool, adjust func(*sandbox.Policy)) *box {
	t.Helper()
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skipf("this host cannot enforce the sandbox: %+v", host)
	}
	b := &box{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{b.ws, filepath.Join(b.ws, ".git"), b.outside, filepath.Join(base, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(b.ws, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(b.ws, "a.txt"), []byte("a\n"), 0o644)
	p := sandbox.DefaultPolicy(b.ws, filepath.Join(base, "tmp"))
	p.Mode, p.Network = mode, network
	// The harness's signing key and saved sessions are hidden.
	os.MkdirAll(filepath.Join(base, "home", "sessions", "s1"), 0o700)
	os.WriteFile(filepath.Join(base, "home", "ledger.key"), []byte("PRIVATE+KEY+4711"), 0o600)
	os.WriteFile(filepath.Join(base, "home", "sessions", "s1", "transcript.jsonl"), []byte("SESSION-4711"), 0o600)
	p.Hidden = []string{filepath.Join(base, "home", "ledger.key"), filepath.Join(base, "home", "sessions")}
	p.Limits.Pids = 256
	if adjust != nil {
		adjust(&p)
	}
	pl, err := sandbox.MakePlan(p, host, sandbox.NoFallback)
	if err != nil {
		t.Fatal(err)
	}
	if b.sb, err = sandbox.New(pl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.sb.Close() })
	// The harness's own secret is in its environment; the shell's base
	// environment is the harness's.
	t.Setenv("OPENAI_API_KEY", "sk-harness-secret-4711")
	t.Setenv("TRUSS_MARKER_VALUE", "marker-4711")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "OPENAI_API_KEY=sk-harness-secret-4711"}
	b.sh = shell.New(shell.Config{Dir: b.ws, Env: env, TmpDir: filepath.Join(base, "tmp"), Launcher: b.sb, Guard: b.sb.Guard, Timeout: 20 * time.Second})
	t.Cleanup(func() { b.sh.Close() })
	return b
}

func (b *box) run(t *testing.T, cmd string, timeout time.Duration) tool.Result {
	t.Helper()
	return b.sh.Run(context.Background(), cmd, timeout)
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestEscapes runs each escape attempt in a workspace-write sandbox with the
// network off and asserts it was contained.
func TestEscapes(t *testing.T) {
	b := newBox(t, sandbox.WorkspaceWrite, false)
	// The sandbox is real: the workspace is writable.
	if r := b.run(t, "echo ok > inside.txt && cat inside.txt", 0); r.Err != nil || r.Stdout != "ok\n" {
		t.Fatalf("a write inside the workspace failed: %+v", r)
	}
	writes := []struct{ name, cmd, target string }{
		{"direct", "echo x > %s/direct.txt", "direct.txt"},
		{"symlink", "ln -s %s/link.txt link && echo x > link", "link.txt"},
		{"proc self root", "echo x > /proc/self/root%s/proc.txt", "proc.txt"},
		{"rename", "echo x > moved.txt && mv moved.txt %s/moved.txt", "moved.txt"},
		{"hard link", "ln a.txt %s/hard.txt", "hard.txt"},
		{"mkdir", "mkdir %s/dir", "dir"},
		{"cp", "cp a.txt %s/cp.txt", "cp.txt"},
	}
	for _, w := range writes {
		r := b.run(t, fmt.Sprintf(w.cmd, b.outside), 0)
		if exists(filepath.Join(b.outside, w.target)) {
			t.Errorf("%s: wrote outside the workspace (%q, %q)", w.name, r.Stdout, r.Stderr)
		}
		if r.Err == nil {
			t.Errorf("%s: the attempt reported success", w.name)
		}
	}
	// The host's shared memory is not the sandbox's.
	marker := "truss-escape-" + fmt.Sprint(os.Getpid())
	if r := b.run(t, "echo x > /dev/shm/"+marker, 0); r.Err != nil {
		t.Errorf("the sandbox's /dev/shm is not writable: %+v", r)
	}
	if exists("/dev/shm/" + marker) {
		os.Remove("/dev/shm/" + marker)
		t.Error("a file written to /dev/shm in the sandbox reached the host's /dev/shm")
	}
	// Metadata outside the workspace, which Landlock does not cover: the
	// read-only mounts refuse it.
	victim := filepath.Join(b.outside, "victim")
	os.WriteFile(victim, []byte("v"), 0o644)
	old, _ := os.Stat(victim)
	for _, cmd := range []string{"chmod 777 %s", "touch -d 2001-01-01 %s", "chown 1:1 %s", "setfattr -n user.x -v 1 %s 2>/dev/null || false"} {
		if r := b.run(t, fmt.Sprintf(cmd, victim), 0); r.Err == nil {
			t.Errorf("%q succeeded outside the workspace", cmd)
		}
	}
	if now, _ := os.Stat(victim); now.Mode() != old.Mode() || !now.ModTime().Equal(old.ModTime()) {
		t.Errorf("the metadata of a file outside the workspace changed: %v %v", now.Mode(), now.ModTime())
	}
	// Inside the workspace metadata changes work (builds set modes).
	if r := b.run(t, "chmod +x a.txt && touch -d 2001-01-01 a.txt", 0); r.Err != nil {
		t.Errorf("chmod inside the workspace: %+v", r)
	}
	// The workspace's .git is read-only, by path and through a symlink.
	for _, cmd := range []string{"echo x > .git/evil", "ln -s .git g && echo x > g/evil2", "rm .git/HEAD", "mv .git gone"} {
		if r := b.run(t, cmd, 0); r.Err == nil {
			t.Errorf("%q succeeded", cmd)
		}
	}
	if exists(filepath.Join(b.ws, ".git", "evil")) || exists(filepath.Join(b.ws, ".git", "evil2")) || !exists(filepath.Join(b.ws, ".git", "HEAD")) {
		t.Error(".git was changed")
	}
	// The harness's secrets: scrubbed from the environment, and the
	// harness's processes are not in the sandbox's /proc.
	r := b.run(t, "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; ls /proc", 0)
	if strings.Contains(r.Stdout, "sk-harness-secret-4711") || strings.Contains(r.Stdout, "marker-4711") {
		t.Error("the harness's environment is readable in the sandbox")
	}
	if strings.Contains(r.Stdout, fmt.Sprint(os.Getpid())+"\n") && exists(fmt.Sprintf("/proc/%d", os.Getpid())) {
		// A pid of the same number inside the namespace is possible; the
		// marker check above is the proof. Make sure the pid namespace
		// is new: the shell is its first process.
		if r := b.run(t, "echo $$", 0); strings.TrimSpace(r.Stdout) != "1" {
			t.Errorf("the shell is not the first process of a new PID namespace: %q", r.Stdout)
		}
	}
	// The signing key and the saved sessions cannot be read.
	home := filepath.Join(filepath.Dir(b.ws), "home")
	r = b.run(t, "cat "+home+"/ledger.key; cat "+home+"/sessions/s1/transcript.jsonl; ls "+home+"/sessions", 0)
	if strings.Contains(r.Stdout, "PRIVATE+KEY+4711") || strings.Contains(r.Stdout, "SESSION-4711") || strings.Contains(r.Stdout, "s1") {
		t.Errorf("hidden files are readable: %q", r.Stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "ledger.key")); string(b) != "PRIVATE+KEY+4711" {
		t.Error("the hidden key was changed")
	}
	// Raising a hard limit is refused.
	if r := b.run(t, `ulimit -Hn $(( $(ulimit -Hn) + 1 ))`, 0); r.Err == nil {
		t.Error("a hard limit was raised")
	}
}

// TestNetworkOff: TCP and UDP to a listener on the host's loopback do not
// arrive (the sandbox's 127.0.0.1 is its own loopback, where a datagram
// can be sent to nobody); with the network on, they do.
func TestNetworkOff(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	tcpPort, udpPort := ln.Addr().(*net.TCPAddr).Port, pc.LocalAddr().(*net.UDPAddr).Port
	attempt := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo tcp-open; echo hi > /dev/udp/127.0.0.1/%d && echo udp-sent", tcpPort, udpPort)
	received := func() bool {
		pc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		buf := make([]byte, 16)
		_, _, err := pc.ReadFrom(buf)
		return err == nil
	}

	off := newBox(t, sandbox.WorkspaceWrite, false)
	r := off.run(t, attempt, 0)
	if strings.Contains(r.Stdout, "tcp-open") {
		t.Errorf("the network is reachable with --network off: %q %q", r.Stdout, r.Stderr)
	}
	select {
	case <-accepted:
		t.Error("a TCP connection reached the host's loopback")
	case <-time.After(200 * time.Millisecond):
	}
	if received() {
		t.Error("a UDP datagram reached the host's loopback")
	}
	// Unix sockets still work (build tools use them).
	if r := off.run(t, "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"x\"); print(b.recv(1))' 2>&1 || echo no-python", 0); !strings.Contains(r.Stdout, "x") && !strings.Contains(r.Stdout, "no-python") {
		t.Errorf("Unix sockets do not work: %q %q", r.Stdout, r.Stderr)
	}

	on := newBox(t, sandbox.WorkspaceWrite, true)
	r = on.run(t, attempt, 0)
	if !strings.Contains(r.Stdout, "udp-sent") {
		t.Errorf("with --network on the attempt failed: %q %q", r.Stdout, r.Stderr)
	}
	if !received() {
		t.Error("with --network on no datagram arrived")
	}
}

// TestProcesses: a fork bomb, a runaway output and a process that
// double-forks out of its process group are each contained.
func TestProcesses(t *testing.T) {
	b := newBox(t, sandbox.WorkspaceWrite, false)
	if b.sb.Plan().Mechanisms.Cgroup == "" && os.Getuid() == 0 {
		t.Skip("no pids cgroup, and root ignores RLIMIT_NPROC: a fork bomb would not be bounded")
	}
	// A fork bomb: bounded by the pids limit, and killed for hitting it
	// (the timeout is only a backstop: on two loaded cores, at the weight
	// and niceness of commands, it took over 3 s to reach the limit).
	r := b.run(t, `bomb() { bomb | bomb & }; bomb; sleep 50; echo survived`, 60*time.Second)
	if r.Err == nil || !strings.Contains(r.Err.Message, "limit of 256 processes") {
		t.Errorf("the fork bomb was not stopped: %+v", r)
	}
	if r := b.run(t, "echo alive", 0); r.Stdout != "alive\n" {
		t.Fatalf("the shell did not come back after the fork bomb: %+v", r)
	}

	// Runaway output: captured head and tail only.
	r = b.run(t, "yes 0123456789 | head -c 50000000", 0)
	if !r.Truncated || len(r.Stdout) > 2<<20 {
		t.Errorf("runaway output: truncated %v, %d bytes kept", r.Truncated, len(r.Stdout))
	}

	// A process that leaves its process group and outlives its parent is
	// killed with the shell at the timeout.
	r = b.run(t, `setsid sh -c 'exec sleep 4243' </dev/null >/dev/null 2>&1 & sleep 30`, time.Second)
	if !r.TimedOut {
		t.Fatalf("the command did not time out: %+v", r)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		if !sleeperAlive("4243") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the double-forked process outlived the timeout")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sleeperAlive looks for "sleep ARG" among the host's processes.
func sleeperAlive(arg string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == "sleep\x00"+arg+"\x00" {
			return true
		}
	}
	return false
}

// TestReadOnly: in read-only mode the workspace cannot be written either,
// but the session's temporary directory can.
func TestReadOnly(t *testing.T) {
	b := newBox(t, sandbox.ReadOnly, false)
	if r := b.run(t, "echo x > new.txt", 0); r.Err == nil || exists(filepath.Join(b.ws, "new.txt")) {
		t.Errorf("read-only mode wrote the workspace: %+v", r)
	}
	if r := b.run(t, `echo x > "$TMPDIR/t" 2>/dev/null || echo x > `+filepath.Join(filepath.Dir(b.ws), "tmp", "t")+` && cat a.txt`, 0); r.Err != nil || r.Stdout != "a\n" {
		t.Errorf("read-only mode: %+v", r)
	}
}

func TestPlanRefusesWhatTheHostLacks(t *testing.T) {
	p := sandbox.DefaultPolicy("/ws", "/tmp/x")
	none := sandbox.Host{OS: "linux", UserNSErr: "operation not permitted", LandlockErr: "no landlock"}
	if _, err := sandbox.MakePlan(p, none, sandbox.NoFallback); err == nil || !strings.Contains(err.Error(), "--sandbox-fallback") {
		t.Errorf("no refusal: %v", err)
	}
	if _, err := sandbox.MakePlan(p, none, sandbox.FallbackLandlock); err == nil {
		t.Error("landlock-only accepted without Landlock")
	}
	pl, err := sandbox.MakePlan(p, none, sandbox.FallbackNone)
	if err != nil || pl.Active() || !strings.HasPrefix(pl.Enforced(), "none") {
		t.Errorf("fallback none: %v %+v", err, pl)
	}
	partial := sandbox.Host{OS: "linux", LandlockABI: 3, Seccomp: true, UserNSErr: "no userns"}
	pl, err = sandbox.MakePlan(p, partial, sandbox.FallbackLandlock)
	if err != nil || pl.Mechanisms.Namespaces || pl.Mechanisms.Landlock != 3 || !strings.Contains(pl.Enforced(), "weaker mode landlock-only accepted: no namespaces") {
		t.Errorf("landlock-only: %v %s", err, pl.Enforced())
	}
	full := sandbox.DefaultPolicy("/ws", "/tmp/x")
	full.Mode, full.Network = sandbox.FullAccess, true
	if pl, err := sandbox.MakePlan(full, none, sandbox.NoFallback); err != nil || pl.Active() {
		t.Errorf("full access with the network on needs nothing: %v", err)
	}
}

// TestWorkspaceInDevShm: a workspace on the host's /dev/shm (a tmpfs, for
// fast checkouts) is writable in the sandbox at its own path, though the
// sandbox has shared memory of its own; nothing else of the host's
// /dev/shm is visible, and the workspace's .git stays read-only.
func TestWorkspaceInDevShm(t *testing.T) {
	base, err := os.MkdirTemp("/dev/shm", "truss-sandbox-test-")
	if err != nil {
		t.Skipf("no /dev/shm to put a workspace in: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	secret, err := os.CreateTemp("/dev/shm", "truss-host-secret-")
	if err != nil {
		t.Fatal(err)
	}
	secret.WriteString("HOST-SHM-4711")
	secret.Close()
	t.Cleanup(func() { os.Remove(secret.Name()) })
	b := newBoxIn(t, base, sandbox.WorkspaceWrite, false, nil)
	if r := b.run(t, "echo ok > inside.txt && cat inside.txt a.txt && pwd", 0); r.Err != nil || r.Stdout != "ok\na\n"+b.ws+"\n" {
		t.Fatalf("the workspace in /dev/shm: %q %q %v", r.Stdout, r.Stderr, r.Err)
	}
	if got, err := os.ReadFile(filepath.Join(b.ws, "inside.txt")); err != nil || string(got) != "ok\n" {
		t.Errorf("the host does not see the command's file: %q %v", got, err)
	}
	if r := b.run(t, "cat "+secret.Name()+"; ls /dev/shm", 0); strings.Contains(r.Stdout, "HOST-SHM-4711") || strings.Contains(r.Stdout, filepath.Base(secret.Name())) {
		t.Errorf("the host's /dev/shm is visible: %q", r.Stdout)
	}
	if r := b.run(t, "echo x > .git/HEAD", 0); r.Err == nil && !strings.Contains(r.Stdout+r.Stderr, "Read-only") {
		if got, _ := os.ReadFile(filepath.Join(b.ws, ".git", "HEAD")); string(got) == "x\n" {
			t.Errorf(".git is writable in a workspace in /dev/shm")
		}
	}
	if r := b.run(t, "echo shared > /dev/shm/own && cat /dev/shm/own", 0); r.Stdout != "shared\n" {
		t.Errorf("the sandbox's own shared memory: %q %q", r.Stdout, r.Stderr)
	}
	if exists("/dev/shm/own") {
		t.Errorf("the sandbox's shared memory is the host's")
	}
}

// TestWorkspaceLinkedIntoDevShm: a workspace reached through a symbolic
// link into the host's /dev/shm is bound back too.
func TestWorkspaceLinkedIntoDevShm(t *testing.T) {
	target, err := os.MkdirTemp("/dev/shm", "truss-sandbox-test-")
	if err != nil {
		t.Skipf("no /dev/shm to put a workspace in: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(target) })
	link := filepath.Join(t.TempDir(), "work")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	b := newBoxIn(t, link, sandbox.WorkspaceWrite, false, nil)
	if r := b.run(t, "echo ok > inside.txt && cat inside.txt", 0); r.Err != nil || r.Stdout != "ok\n" {
		t.Fatalf("a workspace linked into /dev/shm: %q %q %v", r.Stdout, r.Stderr, r.Err)
	}
	if got, err := os.ReadFile(filepath.Join(target, "ws", "inside.txt")); err != nil || string(got) != "ok\n" {
		t.Errorf("the host does not see the command's file: %q %v", got, err)
	}
}

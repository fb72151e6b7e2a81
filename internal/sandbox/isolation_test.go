//go:build linux

package sandbox_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool/shell"
)

// needPython skips a test that makes its system calls with python3.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 to make the calls with")
	}
}

// TestLoopbackInside: with the network off, a command's servers on
// 127.0.0.1 and [::1] (as httptest makes them) work inside the sandbox,
// over TCP and UDP; the host's loopback stays out of reach (TestNetworkOff).
func TestLoopbackInside(t *testing.T) {
	needPython(t)
	b := newBox(t, sandbox.WorkspaceWrite, false)
	r := b.run(t, `python3 -c '
import http.server, socket, threading, urllib.request
for host, fam in (("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6)):
    class S(http.server.HTTPServer):
        address_family = fam
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"served")
        def log_message(self, *a):
            pass
    try:
        srv = S((host, 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        url = "http://" + (host if fam == socket.AF_INET else "[" + host + "]") + ":%d/" % srv.server_address[1]
        print("http", host, urllib.request.urlopen(url, timeout=5).read().decode())
        srv.shutdown()
        u = socket.socket(fam, socket.SOCK_DGRAM); u.bind((host, 0))
        c = socket.socket(fam, socket.SOCK_DGRAM); c.sendto(b"dgram", u.getsockname())
        print("udp", host, u.recv(16).decode())
    except OSError as e:
        print("refused", host, e)
'; exec 3<>/dev/tcp/127.0.0.1/1 || echo own-port-closed`, 0)
	for _, want := range []string{"http 127.0.0.1 served", "http ::1 served", "udp 127.0.0.1 dgram", "udp ::1 dgram", "own-port-closed"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("no %q with the network off: %q %q", want, r.Stdout, r.Stderr)
		}
	}
	// Packet and vsock sockets (vsock is not namespaced) stay refused.
	r = b.run(t, `python3 -c '
import socket
for name, fam, typ in (("packet", 17, socket.SOCK_RAW), ("vsock", 40, socket.SOCK_STREAM), ("raw", socket.AF_INET, socket.SOCK_RAW)):
    try:
        socket.socket(fam, typ); print("made", name)
    except OSError as e:
        print("refused", name, e.errno)
'`, 0)
	if strings.Contains(r.Stdout, "made") {
		t.Errorf("a socket of a refused family or type was made: %q %q", r.Stdout, r.Stderr)
	}
}

// TestPrivateTmp: a command binds a Unix socket at /tmp/unix_unit_test
// and connects to it, as a test suite does; what it writes in /tmp is
// the sandbox's own and never appears in the host's /tmp.
func TestPrivateTmp(t *testing.T) {
	needPython(t)
	base := t.TempDir()
	ro := filepath.Join(base, "ro")
	os.MkdirAll(ro, 0o755)
	os.WriteFile(filepath.Join(ro, "r.txt"), []byte("readable-4711"), 0o644)
	b := newBoxIn(t, base, sandbox.WorkspaceWrite, false, func(p *sandbox.Policy) { p.Readable = []string{ro} })
	name := fmt.Sprintf("truss-private-%d", os.Getpid())
	os.Remove("/tmp/unix_unit_test")
	r := b.run(t, `python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("/tmp/unix_unit_test"); s.listen(1)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.connect("/tmp/unix_unit_test")
a, _ = s.accept(); c.send(b"own"); print("unix", a.recv(3).decode())
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind("/tmp/dgram_unit_test")
socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"dg", "/tmp/dgram_unit_test"); print("dgram", d.recv(2).decode())
open("/tmp/" + sys.argv[1], "w").write("x")
print("wrote")
' `+name+` && echo ws > inside.txt && cat inside.txt && ls /tmp`, 0)
	for _, want := range []string{"unix own", "dgram dg", "wrote", "ws"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("no %q: %q %q", want, r.Stdout, r.Stderr)
		}
	}
	for _, p := range []string{"/tmp/" + name, "/tmp/unix_unit_test", "/tmp/dgram_unit_test"} {
		if exists(p) {
			os.Remove(p)
			t.Errorf("%s written inside the sandbox is in the host's /tmp", p)
		}
	}
	// The host's /tmp is not there: only the kept paths (here the test's
	// directory, which holds the workspace) are.
	if strings.Contains(r.Stdout, "bash_jobs") || len(strings.Fields(r.Stdout)) > 10 {
		t.Errorf("the host's /tmp is visible: %q", r.Stdout)
	}
	// What leads to the workspace in the sandbox's /tmp is read-only, as
	// it is outside.
	if r := b.run(t, "echo x > ../beside.txt; echo x > "+filepath.Join(b.outside, "o.txt"), 0); !strings.Contains(r.Stderr, "Read-only file system") || exists(filepath.Join(b.ws, "..", "beside.txt")) {
		t.Errorf("the directory holding the workspace is writable: %q %q", r.Stdout, r.Stderr)
	}
	// A readable root in /tmp stays, read-only.
	if r := b.run(t, "cat "+ro+"/r.txt; echo x > "+ro+"/w.txt", 0); !strings.Contains(r.Stdout, "readable-4711") || exists(filepath.Join(ro, "w.txt")) {
		t.Errorf("a readable root in /tmp: %q %q", r.Stdout, r.Stderr)
	}
	// A second shell does not see the first one's /tmp.
	b2 := newBox(t, sandbox.WorkspaceWrite, false)
	if r := b2.run(t, "ls /tmp/"+name+" 2>&1; true", 0); !strings.Contains(r.Stdout, "No such file") {
		t.Errorf("another sandbox sees this one's /tmp: %q", r.Stdout)
	}
}

// listenUnix listens on a Unix socket at path and reports accepted
// connections on the returned channel.
func listenUnix(t *testing.T, path string) <-chan string {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); os.Remove(path) })
	accepted := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- path
			c.Close()
		}
	}()
	return accepted
}

// hostDir makes a directory outside /tmp (where the host's sockets
// would be: /var/tmp, /run), removed at the end of the test.
func hostDir(t *testing.T, parent string) string {
	t.Helper()
	d, err := os.MkdirTemp(parent, "truss-test-")
	if err != nil {
		t.Skipf("cannot make a directory in %s: %v", parent, err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestHostUnixSocketsByPath: with the network off, the host's Unix
// sockets named in the file system — in /run (the Docker daemon, D-Bus),
// in another directory outside the sandbox, and the SSH agent's — cannot
// be connected to, on every Landlock ABI; the sandbox's own Unix servers
// can (TestPrivateTmp).
func TestHostUnixSocketsByPath(t *testing.T) {
	needPython(t)
	agent := filepath.Join(hostDir(t, "/var/tmp"), "agent.sock")
	t.Setenv("SSH_AUTH_SOCK", agent)
	daemon := filepath.Join(hostDir(t, "/var/tmp"), "daemon.sock")
	targets := []string{agent, daemon}
	if d, err := os.MkdirTemp("/run", "truss-test-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(d) })
		targets = append(targets, filepath.Join(d, "docker.sock"))
	}
	b := newBox(t, sandbox.WorkspaceWrite, false)
	var accepted []<-chan string
	for _, p := range targets {
		accepted = append(accepted, listenUnix(t, p))
	}
	// A socket that appears after the sandbox was made, outside the
	// covered directories, is covered by the next shell's helper: the
	// shell restarts (exit) so that a fresh helper is used.
	late := filepath.Join(hostDir(t, "/var/tmp"), "late.sock")
	accepted = append(accepted, listenUnix(t, late))
	// A host socket inside a writable root (a workspace or --add-dir that
	// holds the user's tmux or an IDE's socket) is the host's all the same.
	inWS := filepath.Join(b.ws, "ide.sock")
	accepted = append(accepted, listenUnix(t, inWS))
	targets = append(targets, inWS)
	b.run(t, "exit", 0)
	r := b.run(t, `python3 -c '
import socket, sys
for addr in sys.argv[1:]:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(addr)
        print("connected", addr)
    except OSError as e:
        print("refused", addr, e.errno)
' `+strings.Join(append(targets, late), " "), 0)
	if strings.Contains(r.Stdout, "connected") || !strings.Contains(r.Stdout, "refused") {
		t.Errorf("a Unix socket of the host was reached: %q %q", r.Stdout, r.Stderr)
	}
	for _, ch := range accepted {
		select {
		case a := <-ch:
			t.Errorf("the host's listener at %s accepted a connection", a)
		case <-time.After(50 * time.Millisecond):
		}
	}
	// The sandbox's own server in the workspace serves its commands: its
	// socket is not the host's.
	serve := `python3 -c '
import socket, os, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind("own.sock"); s.listen(1)
if os.fork() == 0:
    os.setsid(); c, _ = s.accept(); c.send(b"own"); time.sleep(1); os._exit(0)
' && echo serving`
	if r := b.run(t, serve, 0); !strings.Contains(r.Stdout, "serving") {
		t.Fatalf("the sandbox's own server: %q %q", r.Stdout, r.Stderr)
	}
	if r := b.run(t, `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("own.sock"); print(s.recv(8).decode())'`, 0); !strings.Contains(r.Stdout, "own") {
		t.Errorf("the sandbox's own socket in the workspace was not reached: %q %q", r.Stdout, r.Stderr)
	}
	// With the network on, the host's sockets are reachable, as before.
	on := newBox(t, sandbox.WorkspaceWrite, true)
	if r := on.run(t, `python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print("connected")' `+daemon, 0); !strings.Contains(r.Stdout, "connected") {
		t.Errorf("with the network on, the host's socket was not reached: %q %q", r.Stdout, r.Stderr)
	}
}

// TestUserTerminalByPath: truss holds a pseudo-terminal (the user's
// terminal is one); a command can neither write to it nor read what the
// user types by opening /dev/pts/N, and its own pseudo-terminals work.
func TestUserTerminalByPath(t *testing.T) {
	needPython(t)
	b := newBox(t, sandbox.WorkspaceWrite, false)
	master, slave, err := openPty()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	defer slave.Close()
	// What the user typed waits to be read on the terminal.
	master.Write([]byte("TYPED-4711\n"))
	var seen bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&seen, master); close(done) }()
	r := b.run(t, `python3 -c '
import os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    os.write(fd, b"SCREEN-4711\n")
    print("opened", sys.argv[1])
    try:
        print("read", os.read(fd, 64))
    except OSError as e:
        print("nothing to read", e.errno)
except OSError as e:
    print("refused", e.errno)
import pty
m, s = pty.openpty()
os.write(s, b"own\n")
print("own pty", os.read(m, 16), os.ttyname(s))
' `+slave.Name()+`; ls /dev/pts`, 0)
	slave.Close()
	master.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	<-done
	if strings.Contains(r.Stdout, "opened") || strings.Contains(r.Stdout, "TYPED-4711") || strings.Contains(seen.String(), "SCREEN-4711") {
		t.Errorf("a command reached truss's terminal %s by path: %q %q (terminal saw %q)", slave.Name(), r.Stdout, r.Stderr, seen.String())
	}
	if !strings.Contains(r.Stdout, "own pty b'own") {
		t.Errorf("a command's own pseudo-terminal does not work: %q %q", r.Stdout, r.Stderr)
	}
}

// coverAttack tries every way a command root in its user namespace has
// to take the covers off the hidden paths, then reads them.
const coverAttack = `umount %[1]s/home/ledger.key; umount -l %[1]s/home/sessions; umount -R %[1]s/home/sessions
mount --move %[1]s/home/sessions /mnt 2>&1
python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
for p in sys.argv[1:]:
    if libc.umount2(p.encode(), 2) == 0:
        print("unmounted", p)
' %[1]s/home/ledger.key %[1]s/home/sessions
cat %[1]s/home/ledger.key; cat %[1]s/home/sessions/s1/transcript.jsonl; ls %[1]s/home/sessions`

// TestCoversStay: no command — in the normal sandbox, nor in an approved
// escalation's (full access, the network on, no Landlock) — can unmount
// the covers over the signing key and the saved sessions.
func TestCoversStay(t *testing.T) {
	needPython(t)
	base := t.TempDir()
	b := newBoxIn(t, base, sandbox.WorkspaceWrite, false, nil)
	// An approved escalation's plan, as the harness makes it: the
	// session's policy in full access with the network on, the
	// session's mechanisms without Landlock and without seccomp.
	p := b.sb.Plan().Policy
	p.Mode, p.Network, p.Protected = sandbox.FullAccess, true, nil
	m := b.sb.Plan().Mechanisms
	m.Landlock, m.Seccomp = 0, false
	esc, err := sandbox.New(&sandbox.Plan{Policy: p, Mechanisms: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { esc.Close() })
	eb := *b
	eb.sb = esc
	eb.sh = newShell(t, b.ws, filepath.Join(base, "tmp"), esc)
	for name, bx := range map[string]*box{"sandbox": b, "escalation": &eb} {
		r := bx.run(t, fmt.Sprintf(coverAttack, base), 0)
		if strings.Contains(r.Stdout, "PRIVATE+KEY") || strings.Contains(r.Stdout, "SESSION-4711") || strings.Contains(r.Stdout, "unmounted") || strings.Contains(r.Stdout, "s1") {
			t.Errorf("%s: a cover came off: %q %q", name, r.Stdout, r.Stderr)
		}
	}
	// The escalation is one: it writes outside the workspace.
	if r := eb.run(t, "echo x > "+filepath.Join(b.outside, "esc.txt"), 0); r.Err != nil || !exists(filepath.Join(b.outside, "esc.txt")) {
		t.Errorf("the escalated shell cannot write outside the workspace: %+v", r)
	}
}

// newShell is a shell on ws in sandbox sb, closed at the end of the test.
func newShell(t *testing.T, ws, tmp string, sb *sandbox.Sandbox) *shell.Session {
	t.Helper()
	sh := shell.New(shell.Config{Dir: ws, Env: []string{"PATH=" + os.Getenv("PATH")}, TmpDir: tmp, Launcher: sb, Guard: sb.Guard, Timeout: 20 * time.Second})
	t.Cleanup(func() { sh.Close() })
	return sh
}

// TestCredentialsHidden: the user's credential files are hidden from
// commands by default: present or not, none can be read or listed.
func TestCredentialsHidden(t *testing.T) {
	base := t.TempDir()
	home := hostDir(t, "/var/tmp") // /tmp is the sandbox's own
	secrets := map[string]string{
		".ssh/id_ed25519":                       "SSH-KEY-4711",
		".aws/credentials":                      "AWS-4711",
		".config/gcloud/credentials.db":         "GCLOUD-4711",
		".config/sops/age/keys.txt":             "AGE-4711",
		".gemini/oauth_creds.json":              "GEMINI-4711",
		".config/google-chrome/Default/Cookies": "COOKIES-4711",
		".bash_history":                         "HISTORY-4711",
		".kaggle/kaggle.json":                   "KAGGLE-4711",
		".kube/config":                          "KUBE-4711",
		".netrc":                                "NETRC-4711",
		".git-credentials":                      "GITCRED-4711",
		".docker/config.json":                   "DOCKER-4711",
		".npmrc":                                "NPM-4711",
		".pgpass":                               "PG-4711",
		".config/gh/hosts.yml":                  "GH-4711",
		".cargo/credentials.toml":               "CARGO-4711",
		".terraform.d/credentials.tfrc.json":    "TF-4711",
		".gnupg/private-keys-v1.d/key":          "GPG-4711",
		".pypirc":                               "PYPI-4711",
		".azure/msal_token_cache.json":          "AZURE-4711",
		".config/git/credentials":               "XDGGIT-4711",
		".docker/contexts/meta/x/meta.json":     "", // not a credential: stays
		".config/unrelated/settings.json":       "", // stays
		".cargo/registry/index/x/config.json":   "", // stays
	}
	for rel, v := range secrets {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if v == "" {
			v = "VISIBLE"
		}
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hidden := sandbox.DefaultHiddenCredentials(home)
	for _, rel := range []string{".ssh", ".aws", ".netrc", ".docker/config.json", ".config/gh", ".kube", ".pgpass", ".nkeys", ".local/share/nats", ".config/nats"} {
		if !slices.Contains(hidden, filepath.Join(home, rel)) {
			t.Errorf("DefaultHiddenCredentials does not list ~/%s", rel)
		}
	}
	b := newBoxIn(t, base, sandbox.WorkspaceWrite, false, func(p *sandbox.Policy) { p.Hidden = append(p.Hidden, hidden...) })
	r := b.run(t, "cd "+home+" && cat .ssh/id_ed25519 .aws/credentials .config/gcloud/credentials.db .kube/config .netrc .git-credentials .docker/config.json .npmrc .pgpass .config/gh/hosts.yml .cargo/credentials.toml .terraform.d/credentials.tfrc.json .gnupg/private-keys-v1.d/key .pypirc .azure/msal_token_cache.json .config/git/credentials; ls -a .ssh .gnupg .aws; grep -r . "+home+"; cat .docker/contexts/meta/x/meta.json", 0)
	for rel, v := range secrets {
		if v != "" && strings.Contains(r.Stdout, v) {
			t.Errorf("~/%s was read: %q", rel, r.Stdout)
		}
	}
	if !strings.Contains(r.Stdout, "VISIBLE") {
		t.Errorf("files beside the credentials are hidden too: %q %q", r.Stdout, r.Stderr)
	}
}

// TestFallocatePastBudget: space allocated without being written
// (fallocate) cannot take the disk past the session's budget: a direct
// fallocate fails as on a file system without it, and posix_fallocate's
// fallback writes, which the budget counts.
func TestFallocatePastBudget(t *testing.T) {
	if _, err := exec.LookPath("fallocate"); err != nil {
		t.Skip("no fallocate(1)")
	}
	b := limitBox(t, sandbox.Limits{Pids: 256, FileSize: 1 << 30, DiskBudget: 32 << 20})
	allocated := func(name string) int64 {
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join(b.ws, name), &st) != nil {
			return 0
		}
		return st.Blocks * 512
	}
	r := b.run(t, "fallocate -l 257M big.bin; echo status $?; touch keep.bin && fallocate -n -l 257M keep.bin; echo status $?", 0)
	if n := allocated("big.bin") + allocated("keep.bin"); n > 32<<20 || strings.Contains(r.Stdout, "status 0") {
		t.Errorf("fallocate allocated %s under a budget of 32 MiB: %q %q", sandbox.FormatSize(n), r.Stdout, r.Stderr)
	}
	// Punching a hole (which frees space) works.
	if r := b.run(t, "head -c 64K /dev/urandom > holes.bin && fallocate -p -o 0 -l 32K holes.bin && echo punched", 0); !strings.Contains(r.Stdout, "punched") {
		t.Errorf("punching a hole failed: %q %q", r.Stdout, r.Stderr)
	}
	if b.sb.Plan().Mechanisms.Cgroup == "" {
		t.Skip("no cgroup to account the budget by on this host")
	}
	if _, err := os.ReadFile("/proc/self/io"); err != nil {
		t.Skip("no per-process I/O accounting on this kernel")
	}
	r = b.run(t, "fallocate -x -l 257M posix.bin; sleep 5; echo finished", 0)
	var le *sandbox.LimitError
	if r.Err == nil || !errors.As(r.Err.Err, &le) || le.Limit != "disk" || strings.Contains(r.Stdout, "finished") {
		t.Errorf("posix_fallocate past the budget: %+v %q", r.Err, r.Stdout)
	}
	os.Remove(filepath.Join(b.ws, "posix.bin"))
}

// TestEmptyFilesPastBudget: inodes that take (almost) no blocks and
// write no bytes still use up the session's budget (each takes a block
// of it), so a command cannot exhaust the file system's inodes. One
// touch makes them all: a process per file is slow on a loaded host.
func TestEmptyFilesPastBudget(t *testing.T) {
	b := limitBox(t, sandbox.Limits{Pids: 256, FileSize: 1 << 30, DiskBudget: 32 << 20})
	if b.sb.Plan().Mechanisms.Cgroup == "" {
		t.Skip("no cgroup to account the budget by on this host")
	}
	r := b.run(t, "mkdir many && cd many && touch $(seq -f f%g 1 16000); sleep 3; echo finished", 90*time.Second)
	var le *sandbox.LimitError
	if r.Err == nil || !errors.As(r.Err.Err, &le) || le.Limit != "disk" || strings.Contains(r.Stdout, "finished") {
		t.Errorf("16,000 empty files under a budget of 32 MiB: %+v %q %q", r.Err, r.Stdout, r.Stderr)
	}
	os.RemoveAll(filepath.Join(b.ws, "many"))
}

// TestSSHAgentCover: the SSH agent's directory is covered when it holds
// nothing else the sandbox needs; in home, or above a kept path, only its
// socket is.
func TestSSHAgentCover(t *testing.T) {
	keep := []string{"/home/u/proj", "/tmp/truss-session-1"}
	cases := []struct {
		sock, dir, socket string
	}{
		{"/var/tmp/ssh-x/agent.sock", "/var/tmp/ssh-x", ""},
		{"/home/u/.ssh/agent/s.sock", "/home/u/.ssh/agent", ""},
		{"/home/u/proj/.agent/s", "/home/u/proj/.agent", ""},
		{"/home/u/agent.sock", "", "/home/u/agent.sock"}, // home
		{"/srv/agent.sock", "", "/srv/agent.sock"},       // one component
		{"/home/agent.sock", "", "/home/agent.sock"},     // above a kept path
		{"/tmp/ssh-x/agent.1", "", ""},                   // /tmp is the sandbox's own
		{"/run/user/1000/keyring/ssh", "", ""},           // /run is covered
		{"agent.sock", "", ""},                           // relative: not used
	}
	for _, c := range cases {
		dirs, socket := sandbox.SocketDirs(c.sock, "/home/u", keep)
		if !slices.Contains(dirs, "/run") || !slices.Contains(dirs, "/var/run") {
			t.Errorf("%s: /run is not covered: %v", c.sock, dirs)
		}
		extra := ""
		if len(dirs) > 2 {
			extra = dirs[2]
		}
		if extra != c.dir || socket != c.socket {
			t.Errorf("%s: covers directory %q and socket %q, want %q and %q", c.sock, extra, socket, c.dir, c.socket)
		}
	}
}

// TestPrivateTmpBounded: the sandbox's own /tmp and /dev/shm are memory,
// which the disk budget's accounting of writes does not see; they hold no
// more than the memory limit or the disk budget, whichever is less.
func TestPrivateTmpBounded(t *testing.T) {
	b := newBoxWith(t, sandbox.WorkspaceWrite, false, func(p *sandbox.Policy) { p.Limits.DiskBudget = 32 << 20 })
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		r := b.run(t, "df -k --output=size "+dir+" | tail -1; head -c 40M /dev/zero 2>&1 >"+dir+"/fill; echo rc=$?; rm -f "+dir+"/fill", 0)
		fields := strings.Fields(r.Stdout)
		if len(fields) < 2 || fields[0] != "32768" || !strings.Contains(r.Stdout, "No space left") {
			t.Errorf("%s: not bounded by the disk budget: %q %q", dir, r.Stdout, r.Stderr)
		}
	}
}

// TestCPUWeight: an agent's commands get a tenth of the CPU against the
// user's own work by default; a policy may give them the default weight
// (a grading, which measures tests, does).
func TestCPUWeight(t *testing.T) {
	for _, tc := range []struct {
		weight, want int
	}{{0, 10}, {100, 100}} {
		b := newBoxWith(t, sandbox.WorkspaceWrite, false, func(p *sandbox.Policy) { p.Limits.CPUWeight = tc.weight })
		found := false
		for _, d := range b.sb.CgroupDirs() {
			file, want := "cpu.weight", strconv.Itoa(tc.want)
			data, err := os.ReadFile(filepath.Join(d, file))
			if err != nil {
				file, want = "cpu.shares", strconv.Itoa(tc.want*1024/100) // cgroup v1
				if data, err = os.ReadFile(filepath.Join(d, file)); err != nil {
					continue // not the cpu controller's group
				}
			}
			found = true
			if got := strings.TrimSpace(string(data)); got != want {
				t.Errorf("CPUWeight %d: %s %s, want %s", tc.weight, file, got, want)
			}
		}
		if !found {
			t.Skip("no cpu cgroup for the sandbox here")
		}
		// Niced below the default weight only.
		r := b.run(t, "cut -d' ' -f19 /proc/self/stat", 0)
		if want := map[int]string{10: "10", 100: "0"}[tc.want]; strings.TrimSpace(r.Stdout) != want {
			t.Errorf("CPUWeight %d: nice %q, want %s", tc.weight, r.Stdout, want)
		}
	}
}

// TestOverlay: a directory over a read-only lower layer reads the lower
// layer's files, and what commands write there (new files, changes,
// removals) goes to their own upper layer; the lower one is never
// written, whatever they do, even in its own place.
func TestOverlay(t *testing.T) {
	base := t.TempDir()
	lower := filepath.Join(base, "lower")
	os.MkdirAll(filepath.Join(lower, "ab"), 0o755)
	os.WriteFile(filepath.Join(lower, "ab", "entry"), []byte("warm-4711"), 0o644)
	// Made before the overlay is mounted (the box's shell may start at
	// once): a lower layer changed under a mounted overlay is undefined
	// behaviour, and a copy-up of a file that appeared since can fail.
	os.WriteFile(filepath.Join(lower, "ab", "used"), []byte("used-4711"), 0o644)
	priv := filepath.Join(base, "priv")
	o := sandbox.Overlay{Target: filepath.Join(priv, "cache"), Lower: lower, Upper: filepath.Join(priv, "cache.up"), Work: filepath.Join(priv, "cache.work")}
	for _, d := range []string{o.Target, o.Upper, o.Work} {
		os.MkdirAll(d, 0o700)
	}
	b := newBoxIn(t, base, sandbox.WorkspaceWrite, false, func(p *sandbox.Policy) {
		p.Writable = append(p.Writable, priv)
		p.Overlays = []sandbox.Overlay{o}
	})
	if r := b.run(t, "cat "+o.Target+"/ab/entry", 0); r.Stdout != "warm-4711" {
		if !strings.Contains(r.Stderr, "No such file") {
			t.Fatalf("the overlay: %q %q %v", r.Stdout, r.Stderr, r.Err)
		}
		t.Skip("this kernel does not mount overlayfs in a user namespace: the cache is cold")
	}
	// A copy-up of a lower file's times alone (what Go's build cache
	// does to an entry it uses).
	if r := b.run(t, "touch "+o.Target+"/ab/used && cat "+o.Target+"/ab/used", 0); r.Stdout != "used-4711" {
		t.Errorf("a copy-up of a lower file's times fails: %q %q", r.Stdout, r.Stderr)
	}
	if r := b.run(t, "echo planted > "+o.Target+"/ab/entry; echo new > "+o.Target+"/cd; rm -f "+o.Target+"/ab/entry; echo x > "+lower+"/ab/direct; cat "+o.Target+"/cd", 0); r.Stdout != "new\n" {
		t.Errorf("writes to the overlay: %q %q", r.Stdout, r.Stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(lower, "ab", "entry")); string(b) != "warm-4711" {
		t.Errorf("the lower layer was written: %q", b)
	}
	if exists(filepath.Join(lower, "cd")) || exists(filepath.Join(lower, "ab", "direct")) {
		t.Error("a file was made in the lower layer")
	}
	if b, _ := os.ReadFile(filepath.Join(o.Upper, "cd")); string(b) != "new\n" {
		t.Errorf("the upper layer holds %q, want the new file", b)
	}
}

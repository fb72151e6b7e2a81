//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool/shell"
)

// childEnv makes the test binary a truss-like process that runs one
// command in a sandboxed shell and writes what came back to a file: for
// attacks on what truss itself was started with (a terminal, open
// descriptors).
const childEnv = "TRUSS_SANDBOX_TEST_CHILD"

type childJob struct {
	Workspace, Tmp, Command, Out string
}

type childResult struct {
	Stdout, Stderr, Err string
}

// runChild is the child's whole life.
func runChild(spec string) {
	var job childJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		panic(err)
	}
	pl, err := sandbox.MakePlan(sandbox.DefaultPolicy(job.Workspace, job.Tmp), sandbox.Probe(), sandbox.NoFallback)
	if err != nil {
		panic(err)
	}
	sb, err := sandbox.New(pl)
	if err != nil {
		panic(err)
	}
	sh := shell.New(shell.Config{Dir: job.Workspace, Env: []string{"PATH=" + os.Getenv("PATH")}, TmpDir: job.Tmp, Launcher: sb, Guard: sb.Guard})
	r := sh.Run(context.Background(), job.Command, 20*time.Second)
	sh.Close()
	sb.Close()
	res := childResult{Stdout: r.Stdout, Stderr: r.Stderr}
	if r.Err != nil {
		res.Err = r.Err.Message
	}
	b, _ := json.Marshal(res)
	if err := os.WriteFile(job.Out, b, 0o644); err != nil {
		panic(err)
	}
	os.Exit(0)
}

// startChild starts the child on b's workspace; configure sets up how
// (its terminal, its descriptors). It returns the child and where its
// result will be.
func startChild(t *testing.T, b *box, command string, configure func(*exec.Cmd)) (*exec.Cmd, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "result.json")
	tmp := t.TempDir()
	spec, _ := json.Marshal(childJob{Workspace: b.ws, Tmp: tmp, Command: command, Out: out})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	configure(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

func readChild(t *testing.T, cmd *exec.Cmd, out string) childResult {
	t.Helper()
	err := cmd.Wait()
	b, rerr := os.ReadFile(out)
	if err != nil || rerr != nil {
		t.Fatalf("the child failed: %v %v", err, rerr)
	}
	var r childResult
	json.Unmarshal(b, &r)
	return r
}

// TestTerminal: truss runs in a terminal; a command can neither write to
// it nor type into it (TIOCSTI) — it has no controlling terminal — and
// TIOCSTI and TIOCLINUX are refused even on a terminal of its own.
func TestTerminal(t *testing.T) {
	b := newBox(t, sandbox.WorkspaceWrite, false)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 to make the ioctls with")
	}
	master, slave, err := openPty()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	var seen bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&seen, master); close(done) }()
	attack := `echo SCREEN-4711 > /dev/tty; echo tty-open-$?; ` +
		`python3 -c '
import fcntl, os, termios
for path in ("/dev/tty", "/proc/self/fd/0"):
    try:
        fd = os.open(path, os.O_RDWR)
        for c in b"INJECT-4711\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
        print("injected via", path)
    except OSError as e:
        print("refused", path, e)
fd = os.open("/dev/ptmx", os.O_RDWR)
try:
    fcntl.ioctl(fd, termios.TIOCSTI, b"x")
    print("TIOCSTI on own pty allowed")
except OSError as e:
    print("own pty TIOCSTI", e.errno)
try:
    fcntl.ioctl(fd, 0x541C, b"\x00")
    print("TIOCLINUX allowed")
except OSError as e:
    print("TIOCLINUX", e.errno)
'; tty; echo tty-$?`
	cmd, out := startChild(t, b, attack, func(c *exec.Cmd) {
		c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	})
	r := readChild(t, cmd, out)
	slave.Close()
	<-done
	if strings.Contains(seen.String(), "SCREEN-4711") {
		t.Error("a command wrote to truss's terminal")
	}
	if strings.Contains(seen.String(), "INJECT-4711") || strings.Contains(r.Stdout, "injected via") {
		t.Errorf("a command typed into truss's terminal: %q", r.Stdout)
	}
	if !strings.Contains(r.Stdout, "tty-open-1") || !strings.Contains(r.Stdout, "not a tty") {
		t.Errorf("the command has a terminal: %q %q", r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, fmt.Sprintf("own pty TIOCSTI %d", unix.EPERM)) || !strings.Contains(r.Stdout, fmt.Sprintf("TIOCLINUX %d", unix.EPERM)) {
		t.Errorf("TIOCSTI or TIOCLINUX not refused: %q %q", r.Stdout, r.Stderr)
	}
}

// openPty opens a pseudo-terminal pair.
func openPty() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, s, nil
}

// TestInheritedDescriptors: truss started with descriptor 7 open on a
// file outside the workspace (exec 7>>file in the user's shell); the
// command cannot write through it.
func TestInheritedDescriptors(t *testing.T) {
	b := newBox(t, sandbox.WorkspaceWrite, false)
	victim := filepath.Join(b.outside, "log")
	f, err := os.OpenFile(victim, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd, out := startChild(t, b, `echo PWNED-1 >&7; echo PWNED-2 >> /proc/self/fd/7; ls /proc/self/fd`, func(c *exec.Cmd) {
		c.ExtraFiles = []*os.File{nil, nil, nil, nil, f} // fd 7
	})
	r := readChild(t, cmd, out)
	if got, _ := os.ReadFile(victim); len(got) != 0 {
		t.Errorf("the command wrote through an inherited descriptor: %q", got)
	}
	if fds := strings.Fields(r.Stdout); len(fds) > 4 { // 0, 1, 2 and ls's own
		t.Errorf("the command has descriptors beyond its standard streams: %v", fds)
	}
}

// TestUnixSockets: with the network off, a Unix socket listening in a
// host directory outside the workspace, or in the host's abstract
// namespace, cannot be reached; a socketpair works.
func TestUnixSockets(t *testing.T) {
	b := newBox(t, sandbox.WorkspaceWrite, false)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 to make sockets with")
	}
	accepted := make(chan string, 4)
	listen := func(network, addr string) {
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- addr
				c.Close()
			}
		}()
	}
	path := filepath.Join(b.outside, "daemon.sock")
	abstract := fmt.Sprintf("@truss-test-%d", os.Getpid())
	listen("unix", path)
	listen("unix", abstract)
	dgram := filepath.Join(b.outside, "log.sock")
	pc, err := net.ListenPacket("unixgram", dgram)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	r := b.run(t, `python3 -c '
import socket, sys
for addr in (sys.argv[1], "\0" + sys.argv[2][1:]):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(addr)
        print("connected", repr(addr))
    except OSError as e:
        print("refused", e.errno)
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"LOG-4711", sys.argv[3])
    print("sent")
except OSError as e:
    print("dgram refused", e.errno)
a, b = socket.socketpair()
a.send(b"pair")
print(b.recv(4).decode())
' `+path+` `+abstract+` `+dgram, 0)
	if strings.Contains(r.Stdout, "connected") {
		t.Errorf("a Unix socket outside the sandbox was reached: %q %q", r.Stdout, r.Stderr)
	}
	select {
	case a := <-accepted:
		t.Errorf("the host's listener at %s accepted a connection", a)
	case <-time.After(100 * time.Millisecond):
	}
	if strings.Contains(r.Stdout, "sent") {
		t.Errorf("a datagram was sent to a Unix socket outside the sandbox: %q", r.Stdout)
	}
	pc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, _, err := pc.ReadFrom(make([]byte, 16)); err == nil {
		t.Error("a datagram reached the host's socket")
	}
	if !strings.Contains(r.Stdout, "pair") {
		t.Errorf("socketpair does not work: %q %q", r.Stdout, r.Stderr)
	}
}

// TestNewNamespaces: no new namespaces from inside, by unshare, clone
// or clone3.
func TestNewNamespaces(t *testing.T) {
	b := newBox(t, sandbox.WorkspaceWrite, false)
	if r := b.run(t, "unshare -U true", 0); r.Err == nil {
		t.Error("unshare -U succeeded")
	}
	if _, err := exec.LookPath("python3"); err != nil || runtime.GOARCH != "amd64" {
		t.Skip("no python3, or not x86-64: clone is not tried by number")
	}
	r := b.run(t, `python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for name, flags in (("user", 0x10000000), ("net", 0x40000000), ("mnt", 0x00020000)):
    pid = libc.syscall(56, flags | 17, 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
        print("clone", name, "created")
    else:
        print("clone", name, "errno", ctypes.get_errno())
print("clone3 errno", libc.syscall(435, 0, 0) and ctypes.get_errno())
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print("fork works")
'`, 0)
	if strings.Contains(r.Stdout, "created") {
		t.Errorf("clone made a namespace: %q", r.Stdout)
	}
	for _, want := range []string{"clone user errno 1", "clone net errno 1", "clone mnt errno 1", fmt.Sprintf("clone3 errno %d", unix.ENOSYS), "fork works"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("no %q in %q %q", want, r.Stdout, r.Stderr)
		}
	}
}

// int80Unshare is a static x86-64 program that calls unshare(CLONE_NEWUSER)
// through the IA-32 entry point (int 0x80) and exits with the call's
// negated result: 0 when it worked, the errno when it failed.
func int80Unshare() []byte {
	code := []byte{
		0xb8, 0x36, 0x01, 0x00, 0x00, // mov eax, 310 (i386 unshare)
		0xbb, 0x00, 0x00, 0x00, 0x10, // mov ebx, CLONE_NEWUSER
		0xcd, 0x80, // int 0x80
		0x89, 0xc3, // mov ebx, eax
		0xf7, 0xdb, // neg ebx
		0xb8, 0x01, 0x00, 0x00, 0x00, // mov eax, 1 (i386 exit)
		0xcd, 0x80, // int 0x80
	}
	const base, hdr = 0x400000, 64 + 56
	le := binary.LittleEndian
	b := make([]byte, hdr, hdr+len(code))
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 2)    // ET_EXEC
	le.PutUint16(b[18:], 0x3e) // EM_X86_64
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[24:], base+hdr) // entry
	le.PutUint64(b[32:], 64)       // program headers
	le.PutUint16(b[52:], 64)
	le.PutUint16(b[54:], 56)
	le.PutUint16(b[56:], 1)
	ph := b[64:]
	le.PutUint32(ph[0:], 1) // PT_LOAD
	le.PutUint32(ph[4:], 5) // R+X
	le.PutUint64(ph[16:], base)
	le.PutUint64(ph[24:], base)
	le.PutUint64(ph[32:], uint64(hdr+len(code)))
	le.PutUint64(ph[40:], uint64(hdr+len(code)))
	le.PutUint64(ph[48:], 0x1000)
	return append(b, code...)
}

// TestForeignArchitecture: a system call through int 0x80 (the IA-32
// entry, whose numbers the filter's x86-64 rules do not describe) kills
// the process instead of slipping past the filter.
func TestForeignArchitecture(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the int 0x80 attack is x86-64's")
	}
	b := newBox(t, sandbox.WorkspaceWrite, false)
	prog := filepath.Join(b.ws, "int80")
	if err := os.WriteFile(prog, int80Unshare(), 0o755); err != nil {
		t.Fatal(err)
	}
	// Outside the sandbox: does this kernel have IA-32 emulation?
	err := exec.Command(prog).Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Skipf("this kernel has no IA-32 emulation (int 0x80: %v)", ws.Signal())
		}
	}
	r := b.run(t, "./int80; echo status $?", 0)
	if !strings.Contains(r.Stdout, fmt.Sprintf("status %d", 128+int(syscall.SIGSYS))) {
		t.Errorf("the IA-32 system call was not killed: %q %q", r.Stdout, r.Stderr)
	}
}

// limitBox is a box with small limits.
func limitBox(t *testing.T, lim sandbox.Limits) *box {
	t.Helper()
	return newBoxWith(t, sandbox.WorkspaceWrite, false, func(p *sandbox.Policy) { p.Limits = lim })
}

// TestMemoryLimit: a command that touches more memory than the session's
// limit is killed, and the result says so.
func TestMemoryLimit(t *testing.T) {
	b := limitBox(t, sandbox.Limits{Pids: 256, Memory: 96 << 20})
	if b.sb.Plan().Mechanisms.MemoryCgroup == "" {
		t.Skip("no memory cgroup on this host: the limit is RLIMIT_DATA per process")
	}
	r := b.run(t, `python3 -c 'b = bytearray(b"x" * (400 << 20)); print("touched", len(b))' || head -c 400M /dev/zero | tail -c 1 >/dev/null; echo done`, 2*time.Minute) // slow only at low CPU weight on loaded cores
	if strings.Contains(r.Stdout, "touched") {
		t.Errorf("400 MiB were touched under a 96 MiB limit: %q", r.Stdout)
	}
	if r.Err == nil || !strings.Contains(r.Err.Message, "killed for exceeding the sandbox's memory limit of 96 MiB") {
		t.Errorf("the result does not say the memory limit killed it: %+v", r.Err)
	}
	if r := b.run(t, "echo alive", 0); r.Stdout != "alive\n" {
		t.Errorf("the shell did not come back: %+v", r)
	}
}

// TestForkBombEndsEarly: a fork bomb is ended as soon as it keeps hitting
// the pids limit, long before the command's timeout; sandboxed processes
// run at a lower CPU weight.
func TestForkBombEndsEarly(t *testing.T) {
	b := newBox(t, sandbox.WorkspaceWrite, false)
	m := b.sb.Plan().Mechanisms
	if m.Cgroup == "" {
		t.Skip("no pids cgroup on this host")
	}
	r := b.run(t, `nice; cat /proc/self/cgroup`, 0)
	if !strings.HasPrefix(r.Stdout, "10\n") {
		t.Errorf("sandboxed processes are not niced: %q", r.Stdout)
	}
	if m.CPUCgroup != "" && !strings.Contains(r.Stdout, "truss-") {
		t.Errorf("the shell is not in the session's cpu cgroup: %q", r.Stdout)
	}
	start := time.Now()
	r = b.run(t, `bomb() { bomb | bomb & }; bomb; sleep 60; echo survived`, 60*time.Second)
	if took := time.Since(start); took > 20*time.Second || r.TimedOut {
		t.Errorf("the fork bomb ran %s (timed out %v)", took, r.TimedOut)
	}
	var le *sandbox.LimitError
	if r.Err == nil || !errors.As(r.Err.Err, &le) || le.Limit != "processes" || !strings.Contains(r.Err.Message, "kept hitting the sandbox's limit of 256 processes") {
		t.Errorf("the result does not say why: %+v", r.Err)
	}
	if r := b.run(t, "echo alive", 0); r.Stdout != "alive\n" {
		t.Errorf("the shell did not come back: %+v", r)
	}
}

// TestDiskLimits: a file past the file size limit is cut off; writing
// past the session's budget kills the command and says so.
func TestDiskLimits(t *testing.T) {
	b := limitBox(t, sandbox.Limits{Pids: 256, FileSize: 1 << 20, DiskBudget: 32 << 20})
	r := b.run(t, "head -c 2M /dev/zero > big.bin", 0)
	if fi, err := os.Stat(filepath.Join(b.ws, "big.bin")); err != nil || fi.Size() > 1<<20 || r.Err == nil {
		t.Errorf("a file past the file size limit: %v %v %+v", fi.Size(), err, r)
	}
	if !strings.Contains(r.Stderr, "File size limit exceeded") {
		t.Errorf("the command's error does not say why: %q", r.Stderr)
	}
	if b.sb.Plan().Mechanisms.Cgroup == "" {
		t.Skip("no cgroup to account the budget by on this host")
	}
	if _, err := os.ReadFile("/proc/self/io"); err != nil {
		t.Skip("no per-process I/O accounting on this kernel")
	}
	r = b.run(t, "for i in $(seq 64); do head -c 1M /dev/zero > part$i.bin; done; sleep 5; echo finished", 0)
	var le *sandbox.LimitError
	if r.Err == nil || !errors.As(r.Err.Err, &le) || le.Limit != "disk" || !strings.Contains(r.Err.Message, "past the session's budget of 32 MiB") {
		t.Errorf("writing past the budget: %+v", r.Err)
	}
	if strings.Contains(r.Stdout, "finished") {
		t.Error("the command ran on past the budget")
	}
	if r := b.run(t, "echo reads still work", 0); r.Err != nil {
		t.Errorf("a command that writes nothing after the budget: %+v", r)
	}
}

// TestDiskBudgetSelfReaping: children whose parent reaps them
// automatically (SIGCHLD ignored, or SA_NOCLDWAIT) are gone before a poll
// sees them, and the kernel adds a child's write_bytes to its parent's
// only when the parent waits for it; their writes, kept in files or in a
// file deleted but held open, still count against the budget.
func TestDiskBudgetSelfReaping(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl(1)")
	}
	// 160 children write 1 MiB each, one after the other: 160 MiB, under
	// a budget of 32 MiB. Each lives a few milliseconds; the parent's wait
	// returns (ECHILD) once the child is gone, its count with it.
	const children = `for my $i (1..160) { my $p = fork; die "fork: $!" unless defined $p; if (!$p) { %s; POSIX::_exit(0) } wait } sleep 5; print "finished\n"`
	const toFile = `open(my $f, ">", "f$i.bin") or die; print $f "x" x (1 << 20); close $f`
	cases := []struct{ name, setup, child string }{
		{"SIGCHLD ignored", `$SIG{CHLD} = "IGNORE";`, toFile},
		{"SA_NOCLDWAIT", `POSIX::sigaction(POSIX::SIGCHLD, POSIX::SigAction->new(sub {}, POSIX::SigSet->new, POSIX::SA_NOCLDWAIT)) or die;`, toFile},
		// The parent holds a file the children write and that is no
		// longer in any directory.
		{"deleted file held open", `$SIG{CHLD} = "IGNORE"; open(our $held, ">", "held.bin") or die; unlink "held.bin"; $held->autoflush(1);`, `print $held "x" x (1 << 20)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := limitBox(t, sandbox.Limits{Pids: 256, FileSize: 1 << 30, DiskBudget: 32 << 20})
			if b.sb.Plan().Mechanisms.Cgroup == "" {
				t.Skip("no cgroup to account the budget by on this host")
			}
			script := "use POSIX; " + c.setup + " " + fmt.Sprintf(children, c.child)
			r := b.run(t, "perl -e '"+script+"'", 30*time.Second)
			var le *sandbox.LimitError
			if r.Err == nil || !errors.As(r.Err.Err, &le) || le.Limit != "disk" || !strings.Contains(r.Err.Message, "past the session's budget of 32 MiB") {
				t.Errorf("160 MiB written by self-reaped children under a budget of 32 MiB: %+v %q %q", r.Err, r.Stdout, r.Stderr)
			}
			if strings.Contains(r.Stdout, "finished") {
				t.Error("the command ran on past the budget")
			}
			if r.Err != nil {
				t.Log(r.Err.Message)
			}
			if r := b.run(t, "echo reads still work", 0); r.Err != nil {
				t.Errorf("a command that writes nothing after the budget: %+v; guard %v", r, b.sb.Guard())
			}
		})
	}
}

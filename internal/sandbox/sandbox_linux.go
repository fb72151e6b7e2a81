package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/sandbox/helper"
)

// maxLandlockABI is the newest Landlock ABI whose file system rights the
// helper asks for (V5: truncate and device ioctls); newer kernels are
// used at that level.
const maxLandlockABI = 5

// HelperArg is the first argument that makes the truss binary the sandbox
// helper (see RunHelper).
const HelperArg = helper.Arg

// nsFlags are the namespaces the helper is started in; a network namespace
// is added when the network is off.
const nsFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

// Probe reports what this host can enforce, cheaply: whether user
// namespaces are allowed is read from the kernel's settings, not tried (the
// shell's first start tries them, and fails clearly if they do not work).
// ProbeThorough tries.
func Probe() Host { return probe(false) }

// ProbeThorough is Probe, but it starts a short-lived process in new
// namespaces to find out whether they work.
func ProbeThorough() Host { return probe(true) }

func probe(thorough bool) Host {
	h := Host{OS: runtime.GOOS}
	if abi, err := llsyscall.LandlockGetABIVersion(); err != nil {
		h.LandlockErr = "the kernel has no Landlock (" + err.Error() + ")"
	} else {
		h.LandlockABI = abi
	}
	h.Seccomp = seccomp.Supported()
	check := userNSAllowed
	if thorough {
		check = probeUserNS
	}
	if err := check(); err != nil {
		h.UserNSErr = err.Error()
	} else {
		h.UserNS = true
	}
	h.Cgroup, h.CgroupErr = probeCgroup()
	return h
}

// userNSAllowed reads the settings that forbid user namespaces.
func userNSAllowed() error {
	read := func(p string) (string, bool) {
		b, err := os.ReadFile(p)
		return strings.TrimSpace(string(b)), err == nil
	}
	if v, ok := read("/proc/sys/user/max_user_namespaces"); ok && v == "0" {
		return errors.New("user.max_user_namespaces is 0")
	}
	if os.Getuid() != 0 {
		if v, ok := read("/proc/sys/kernel/unprivileged_userns_clone"); ok && v == "0" {
			return errors.New("kernel.unprivileged_userns_clone is 0")
		}
		if v, ok := read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && v == "1" {
			return errors.New("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns is 1)")
		}
	}
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return errors.New("the kernel has no user namespaces")
	}
	return nil
}

func probeUserNS() error {
	t, err := exec.LookPath("true")
	if err != nil {
		return fmt.Errorf("no true(1) to probe with: %w", err)
	}
	cmd := exec.Command(t)
	cmd.SysProcAttr = nsAttr(false)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cannot create user namespaces: %w", err)
	}
	return nil
}

// nsAttr starts a process in new namespaces as root of its user namespace,
// mapped to the caller's ids (so files it writes belong to the caller).
func nsAttr(network bool) *syscall.SysProcAttr {
	flags := uintptr(nsFlags)
	if !network {
		flags |= syscall.CLONE_NEWNET
	}
	return &syscall.SysProcAttr{
		Cloneflags:  flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Setpgid:     true,
		Pdeathsig:   syscall.SIGKILL,
	}
}

// probeCgroup finds a pids cgroup under which this process may make a
// child group: cgroup v2 with the pids controller enabled for children,
// else the v1 pids hierarchy. It returns the parent directory.
func probeCgroup() (string, string) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "cannot read /proc/self/cgroup: " + err.Error()
	}
	var candidates []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir := filepath.Join("/sys/fs/cgroup", parts[2])
			if c, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil && strings.Contains(string(c), "pids") {
				candidates = append(candidates, dir)
			}
		case hasField(parts[1], "pids"):
			candidates = append(candidates, filepath.Join("/sys/fs/cgroup/pids", parts[2]))
		}
	}
	var errs []string
	for _, dir := range candidates {
		probe := filepath.Join(dir, "truss-probe-"+randHex())
		if err := os.Mkdir(probe, 0o755); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		os.Remove(probe)
		return dir, ""
	}
	if len(candidates) == 0 {
		return "", "no pids cgroup controller is available to this process"
	}
	return "", "cannot make a pids cgroup: " + strings.Join(errs, "; ")
}

func hasField(list, name string) bool {
	for _, f := range strings.Split(list, ",") {
		if f == name {
			return true
		}
	}
	return false
}

func randHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Sandbox launches processes under a Plan. It implements the shell's
// Launcher interface.
type Sandbox struct {
	plan    *Plan
	self    string
	seccomp []byte // the assembled filter, when seccomp is enforced
	// cgroupFD is the cgroup directory, open, so that a v2 cgroup is
	// joined at clone time (CLONE_INTO_CGROUP); -1 when the helper joins
	// by writing cgroup.procs (v1).
	cgroupFD int
	cgroup   string // this sandbox's own pids cgroup, when there is one
	hits     int    // the cgroup's pids.events "max" count last seen

	// A confined helper started ahead of need (see Start).
	mu      sync.Mutex
	pending *pending // the helper being started, or ready; nil for none
	closed  bool
	stop    chan struct{} // closed by Close
}

// refillDelay is how long after a Start the next helper is started: a
// helper's start (namespaces, mounts, a Go runtime) competes for the
// machine with the program just started, and on two cores slowed a
// sandboxed `true` from 4 ms to 13 ms; 5 ms apart it did not.
const refillDelay = 20 * time.Millisecond

var errClosed = errors.New("sandbox: closed")

// warm is a helper that confined itself and awaits its Launch, with the
// parent's ends of its pipes.
type warm struct {
	cmd    *exec.Cmd
	launch *os.File // its LaunchFD
	stdin  *os.File
	stdout *os.File
	stderr *os.File
	ready  bool // it said so; false when it ended first
}

// pending is a helper being started in the background; w and err are set
// before done is closed. Whoever takes it from Sandbox.pending owns w.
type pending struct {
	done chan struct{}
	w    *warm
	err  error
	proc *os.Process // once started, under Sandbox.mu: Close kills it
}

// discard kills a warm helper that will not be used.
func (w *warm) discard() {
	w.launch.Close()
	w.cmd.Process.Kill()
	w.cmd.Wait()
	w.stdin.Close()
	w.stdout.Close()
	w.stderr.Close()
}

// Guard reports whether the processes started since the last call hit the
// sandbox's process limit (the pids cgroup refused a fork). The shell kills
// everything in the sandbox when it does, which is how a fork bomb ends.
func (s *Sandbox) Guard() error {
	if s.cgroup == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(s.cgroup, "pids.events"))
	if err != nil {
		return nil
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "max "); ok {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if n > s.hits {
		s.hits = n
		return fmt.Errorf("the command reached the sandbox's limit of %d processes", s.plan.Policy.Limits.Pids)
	}
	return nil
}

// HelperName is the small helper binary installed next to truss (built
// from cmd/truss-sandbox); it starts faster than truss itself.
const HelperName = "truss-sandbox"

// HelperPath returns the program the sandbox runs as its helper:
// $TRUSS_SANDBOX_HELPER when set, else truss-sandbox next to the running
// executable when it is there, else the running executable itself (which
// must call IsHelper and RunHelper first thing in main).
func HelperPath() (string, error) {
	if p := os.Getenv("TRUSS_SANDBOX_HELPER"); p != "" {
		if !filepath.IsAbs(p) {
			return "", fmt.Errorf("TRUSS_SANDBOX_HELPER must be an absolute path, not %q", p)
		}
		return p, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the truss binary to run as the helper: %w", err)
	}
	small := filepath.Join(filepath.Dir(self), HelperName)
	if fi, err := os.Stat(small); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 && filepath.Base(self) != HelperName {
		return small, nil
	}
	return self, nil
}

// Helper returns the helper program the sandbox runs.
func (s *Sandbox) Helper() string { return s.self }

// New prepares a sandbox for a plan: it finds the helper (HelperPath) and
// makes the sandbox's pids cgroup. Close removes the cgroup.
func New(pl *Plan) (*Sandbox, error) {
	s := &Sandbox{plan: pl, cgroupFD: -1, stop: make(chan struct{})}
	if !pl.Active() {
		return s, nil
	}
	self, err := HelperPath()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s.self = self
	if pl.Mechanisms.Seccomp {
		if s.seccomp, err = seccompProgram(pl.Policy.Network); err != nil {
			return nil, fmt.Errorf("sandbox: assemble the seccomp filter: %w", err)
		}
	}
	if pl.Mechanisms.Cgroup != "" {
		dir := filepath.Join(pl.Mechanisms.Cgroup, "truss-"+strconv.Itoa(os.Getpid())+"-"+randHex())
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: make the pids cgroup: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(pl.Policy.Limits.Pids)), 0o644); err != nil {
			os.Remove(dir)
			return nil, fmt.Errorf("sandbox: set pids.max: %w", err)
		}
		s.cgroup = dir
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			if fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
				s.cgroupFD = fd
			}
		}
	}
	return s, nil
}

// Plan returns the sandbox's plan.
func (s *Sandbox) Plan() *Plan { return s.plan }

// spec is what the helper is told, for argv (nil for an awaiting helper).
func (s *Sandbox) spec(argv []string) helper.Spec {
	pl := s.plan
	lim := pl.Policy.Limits
	cgroupByHelper := s.cgroup
	if s.cgroupFD >= 0 && pl.Mechanisms.Namespaces {
		cgroupByHelper = "" // joined at clone time (attr)
	}
	sp := helper.Spec{
		Format:     helper.Format,
		Argv:       argv,
		Await:      argv == nil,
		Namespaces: pl.Mechanisms.Namespaces,
		Network:    pl.Policy.Network,
		Landlock:   pl.Mechanisms.Landlock,
		ReadOnlyFS: pl.Policy.Mode == ReadOnly,
		Writable:   pl.Policy.writable(),
		Seccomp:    s.seccomp,
		Cgroup:     cgroupByHelper,
		Limits:     helper.Limits{Pids: lim.Pids, FileSize: lim.FileSize, OpenFiles: lim.OpenFiles},
	}
	if pl.Policy.Mode == WorkspaceWrite {
		sp.Protected = pl.Policy.Protected
	}
	sp.Hidden = pl.Policy.Hidden
	return sp
}

// attr is how the helper is started: in new namespaces, born in the pids
// cgroup when it can be.
func (s *Sandbox) attr() *syscall.SysProcAttr {
	pl := s.plan
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if pl.Mechanisms.Namespaces {
		attr = nsAttr(pl.Policy.Network)
		if s.cgroupFD >= 0 {
			attr.UseCgroupFD, attr.CgroupFD = true, s.cgroupFD
		}
	}
	return attr
}

// networkEnv is added to a sandboxed program's environment when it has no
// network.
const networkEnv = "TRUSS_SANDBOX_NETWORK_DISABLED=1"

// Prepare implements the shell's Launcher: cmd is rewritten to start the
// helper, which sets up the sandbox and then executes cmd's program with
// cmd's arguments and environment.
func (s *Sandbox) Prepare(cmd *exec.Cmd) error {
	pl := s.plan
	if !pl.Active() {
		return nil
	}
	argv := append([]string(nil), cmd.Args...)
	if len(argv) == 0 {
		argv = []string{cmd.Path}
	}
	argv[0] = cmd.Path
	b, err := json.Marshal(s.spec(argv))
	if err != nil {
		return err
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(append([]string(nil), env...), helper.SpecEnv+"="+string(b))
	if !pl.Policy.Network && pl.Mechanisms.Namespaces {
		cmd.Env = append(cmd.Env, networkEnv)
	}
	cmd.Path, cmd.Args = s.self, []string{s.self, HelperArg}
	cmd.SysProcAttr = s.attr()
	return nil
}

// Start implements the shell's Starter: it starts cmd's program (its Path,
// Args, Env and Dir; its standard streams and SysProcAttr are the
// sandbox's) in the sandbox and returns the started process and the
// parent's ends of its standard input, output and error. The program is
// handed to a helper that was started and confined ahead of need, so a
// start costs a pipe write and an exec; the helper for the next Start is
// started in the background refillDelay later. (The first Start starts
// its helper itself.) Every program still gets a helper, and so
// namespaces, of its own; a cmd.Dir that is relative is taken from the
// working directory of truss.
func (s *Sandbox) Start(cmd *exec.Cmd) (*exec.Cmd, io.WriteCloser, io.ReadCloser, io.ReadCloser, error) {
	if !s.plan.Active() {
		return startPiped(cmd)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, nil, nil, errClosed
	}
	p := s.pending
	s.pending = nil
	s.mu.Unlock()
	var w *warm
	if p != nil {
		if <-p.done; p.err == nil {
			w = p.w
		}
	}
	if w == nil {
		var err error
		if w, err = s.startWarm(nil); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	l := helper.Launch{Argv: append([]string{cmd.Path}, cmd.Args[min(1, len(cmd.Args)):]...), Env: cmd.Env, Dir: cmd.Dir}
	if l.Env == nil {
		l.Env = os.Environ()
	}
	if !s.plan.Policy.Network && s.plan.Mechanisms.Namespaces {
		l.Env = append(l.Env[:len(l.Env):len(l.Env)], networkEnv)
	}
	if l.Dir != "" && !filepath.IsAbs(l.Dir) {
		if abs, err := filepath.Abs(l.Dir); err == nil {
			l.Dir = abs
		}
	}
	b, err := json.Marshal(l)
	if err == nil {
		_, err = w.launch.Write(b)
	}
	if cerr := w.launch.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// The helper ended before it read its launch; its stderr says why.
		w.stdin.Close()
	}
	s.refill()
	return w.cmd, w.stdin, w.stdout, w.stderr, nil
}

// Ready waits for the helper the next Start will use, if one is being
// started, and reports whether it is confined and waiting.
func (s *Sandbox) Ready() bool {
	s.mu.Lock()
	p := s.pending
	s.mu.Unlock()
	if p == nil {
		return false
	}
	<-p.done
	return p.err == nil && p.w.ready
}

// refill starts the next helper in the background.
func (s *Sandbox) refill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.pending != nil {
		return
	}
	p := &pending{done: make(chan struct{})}
	s.pending = p
	go func() {
		defer close(p.done)
		t := time.NewTimer(refillDelay)
		defer t.Stop()
		select {
		case <-t.C:
			p.w, p.err = s.startWarm(p)
		case <-s.stop:
			p.err = errClosed
		}
	}()
}

// startWarm starts a helper that confines itself and awaits its launch;
// it returns once the helper is ready. When p is set, the helper's process
// is recorded in it as soon as it exists.
func (s *Sandbox) startWarm(p *pending) (*warm, error) {
	b, err := json.Marshal(s.spec(nil))
	if err != nil {
		return nil, err
	}
	var files [10]*os.File // child, parent: stdin, stdout, stderr, launch, ready
	for i := 0; i < 5; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range files[:2*i] {
				f.Close()
			}
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		if i == 0 || i == 3 { // the child reads stdin and its launch
			files[2*i], files[2*i+1] = r, w
		} else {
			files[2*i], files[2*i+1] = w, r
		}
	}
	cmd := exec.Command(s.self, HelperArg)
	cmd.Env = []string{helper.SpecEnv + "=" + string(b)}
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = files[0], files[2], files[4]
	cmd.ExtraFiles = []*os.File{files[6], files[8]} // LaunchFD, ReadyFD
	cmd.SysProcAttr = s.attr()
	err = cmd.Start()
	for i := 0; i < 10; i += 2 {
		files[i].Close()
	}
	if err != nil {
		for i := 1; i < 10; i += 2 {
			files[i].Close()
		}
		return nil, fmt.Errorf("sandbox: start the helper: %w", err)
	}
	w := &warm{cmd: cmd, stdin: files[1], stdout: files[3], stderr: files[5], launch: files[7]}
	if p != nil {
		s.mu.Lock()
		p.proc = cmd.Process
		closed := s.closed
		s.mu.Unlock()
		if closed {
			cmd.Process.Kill()
		}
	}
	// Ready once it says so; a helper that fails first is used all the
	// same: its stderr says why, to whoever starts a program with it.
	var b1 [1]byte
	_, err = io.ReadFull(files[9], b1[:])
	w.ready = err == nil
	files[9].Close()
	return w, nil
}

// startPiped starts cmd as it is, with pipes for its standard streams.
func startPiped(cmd *exec.Cmd) (*exec.Cmd, io.WriteCloser, io.ReadCloser, io.ReadCloser, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, nil, err
	}
	return cmd, stdin, stdout, stderr, nil
}

// Close stops the helper started ahead of need and removes the sandbox's
// cgroup (its processes are gone by then).
func (s *Sandbox) Close() error {
	s.mu.Lock()
	if !s.closed {
		close(s.stop)
	}
	s.closed = true
	p := s.pending
	s.pending = nil
	if p != nil && p.proc != nil {
		p.proc.Kill() // do not wait for a helper that will not be used
	}
	s.mu.Unlock()
	if p != nil {
		if <-p.done; p.err == nil {
			p.w.discard()
		}
	}
	if s.cgroup == "" {
		return nil
	}
	// Anything left in the group is killed first.
	if b, err := os.ReadFile(filepath.Join(s.cgroup, "cgroup.procs")); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if s.cgroupFD >= 0 {
		unix.Close(s.cgroupFD)
		s.cgroupFD = -1
	}
	err := os.Remove(s.cgroup)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sandbox: remove the cgroup: %w", err)
	}
	return nil
}

// IsHelper reports whether this process was started as the sandbox helper.
func IsHelper() bool { return helper.IsHelper() }

// RunHelper is the helper's whole life (see package helper); it never
// returns.
func RunHelper() { helper.Run() }

// seccompProgram assembles the seccomp filter the helper loads: the
// syscalls no sandboxed process needs refused with EPERM, and, with the
// network off, sockets other than Unix ones. It is assembled once, here,
// so that the helper carries no filter compiler.
func seccompProgram(network bool) ([]byte, error) {
	deny := seccomp.SyscallGroup{Action: seccomp.ActionErrno, Names: existing(
		"ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter", "io_uring_register",
		"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
		"unshare", "setns", "kexec_load", "init_module", "finit_module", "bpf", "perf_event_open", "userfaultfd")}
	if !network {
		deny.NamesWithCondtions = []seccomp.NameWithConditions{
			{Name: "socket", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
			{Name: "socketpair", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
		}
	}
	policy := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{deny}}
	insts, err := policy.Assemble()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, err
	}
	return helper.EncodeFilter(raw), nil
}

// existing keeps the syscall names this architecture has.
func existing(names ...string) []string {
	out := names[:0:0]
	for _, n := range names {
		p := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: []string{n}}}}
		if _, err := p.Assemble(); err == nil {
			out = append(out, n)
		}
	}
	return out
}

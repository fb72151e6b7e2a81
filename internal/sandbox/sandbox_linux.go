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
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/sandbox/helper"
)

// maxLandlockABI is the newest Landlock ABI whose rights the helper asks
// for (V6: scoped signals and abstract Unix sockets; V9: Unix sockets
// named in the file system); newer kernels are used at that level.
const maxLandlockABI = 9

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
	h.Cgroup, h.CgroupErr = probeController(ctrlPids)
	h.MemoryCgroup, h.MemoryCgroupErr = probeController(ctrlMemory)
	h.CPUCgroup, h.CPUCgroupErr = probeController(ctrlCPU)
	return h
}

// totalMemory is the machine's memory in bytes (0 when unknown).
func totalMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// freeSpace is the space available to this user on dir's file system (0
// when unknown).
func freeSpace(dir string) int64 {
	var st unix.Statfs_t
	if dir == "" || unix.Statfs(dir, &st) != nil {
		return 0
	}
	return int64(st.Bavail) * st.Bsize
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
	// The system's true(1), never one of PATH's: a directory an earlier
	// session's --add-dir made writable may be on it.
	t, err := hostfs.LookPath("true", "/usr/bin:/bin")
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
		Setsid:      true, // no controlling terminal
		Pdeathsig:   syscall.SIGKILL,
	}
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
	self    string   // the helper program, as chosen
	exe     *os.File // the helper, open; started as /proc/self/fd/N
	seccomp []byte   // the assembled filter, when seccomp is enforced
	// cgroupFD is the v2 cgroup directory, open, so that the helper is
	// born in it (CLONE_INTO_CGROUP); -1 when the helper joins by writing
	// cgroup.procs (v1).
	cgroupFD   int
	cgroupInto string   // the group cgroupFD is
	groups     []*group // the session's cgroups, removed by Close
	// joins are the cgroups of the sandbox a derived one's processes
	// join (Derive), which its Close leaves alone.
	joins []*group
	watch *watcher // nil without cgroups
	// kill is held for writing while the processes of the cgroups are
	// killed, and for reading while a helper is started into them: a
	// helper started during a kill (the shell restarting after its
	// command was killed for a limit) would be killed with the rest. It
	// is shared with the sandboxes derived from this one.
	kill *sync.RWMutex

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
// alive reports whether the helper has not exited, without reaping it.
func (w *warm) alive() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, w.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo == 0 // Linux zeroes info when no child has exited
}

func (w *warm) discard() {
	w.launch.Close()
	w.cmd.Process.Kill()
	w.cmd.Wait()
	w.stdin.Close()
	w.stdout.Close()
	w.stderr.Close()
}

// Helper returns the helper program the sandbox runs.
func (s *Sandbox) Helper() string { return s.self }

// New prepares a sandbox for a plan: it chooses and opens the helper
// (ChooseHelper), assembles the seccomp filter and makes the session's
// cgroups, whose watcher runs until Close, which removes them.
func New(pl *Plan) (*Sandbox, error) {
	s := &Sandbox{plan: pl, cgroupFD: -1, stop: make(chan struct{}), kill: &sync.RWMutex{}}
	if !pl.Active() {
		return s, nil
	}
	self, err := ChooseHelper(pl.Policy.helperRoots())
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	open := self
	if me, err := os.Executable(); err == nil && me == self {
		open = "/proc/self/exe" // the running binary, whatever is at its path now
	}
	if s.exe, err = openHelper(open); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s.self = self
	// A sandbox with namespaces loads a filter even where the plan names
	// no seccomp (an approved escalation's: full access, the network on):
	// its commands are root in their user namespace, and the filter is
	// what keeps them from unmounting the covers over the hidden paths.
	if pl.Mechanisms.Seccomp || pl.Mechanisms.Namespaces && seccomp.Supported() {
		if s.seccomp, err = seccompProgram(pl.filterOptions()); err != nil {
			s.exe.Close()
			return nil, fmt.Errorf("sandbox: assemble the seccomp filter: %w", err)
		}
	}
	if s.groups, err = makeGroups(pl.Mechanisms, pl.Policy.Limits); err != nil {
		s.exe.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	for _, g := range s.groups {
		if g.v2 && s.cgroupFD < 0 {
			if fd, err := unix.Open(g.dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
				s.cgroupFD, s.cgroupInto = fd, g.dir
			}
		}
	}
	if len(s.groups) > 0 {
		s.watch = newWatcher(s.groups, pl.Policy.Limits, pl.Policy.writable(), s.killAll)
		go s.watch.run(s.stop)
	}
	return s, nil
}

// Derive returns a sandbox for the policy p (another workspace, temporary
// directory and set of covers: an isolated sub-agent's) under s's
// mechanisms and limits, whose processes count against s's: they are
// born in s's cgroups, s's watcher accounts for them, a limit they break
// kills everything s runs, and Guard reports what s's does. p's Limits
// are replaced by s's. Closing the derived sandbox releases only what it
// holds (its helper kept ready, its descriptors); s must outlive it.
func (s *Sandbox) Derive(p Policy) (*Sandbox, error) {
	p.Limits = s.plan.Policy.Limits
	d := &Sandbox{plan: &Plan{Policy: p, Mechanisms: s.plan.Mechanisms}, cgroupFD: -1, stop: make(chan struct{}), watch: s.watch, kill: s.kill}
	if !d.plan.Active() {
		return d, nil
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || s.exe == nil {
		return nil, errClosed
	}
	dup := func(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }
	fd, err := dup(int(s.exe.Fd()))
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	d.exe, d.self = os.NewFile(uintptr(fd), s.exe.Name()), s.self
	if d.seccomp = s.seccomp; d.seccomp != nil && d.plan.filterOptions() != s.plan.filterOptions() {
		if d.seccomp, err = seccompProgram(d.plan.filterOptions()); err != nil {
			d.exe.Close()
			return nil, fmt.Errorf("sandbox: assemble the seccomp filter: %w", err)
		}
	}
	if s.cgroupFD >= 0 {
		if d.cgroupFD, err = dup(s.cgroupFD); err != nil {
			d.exe.Close()
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		d.cgroupInto = s.cgroupInto
	}
	// The groups to join are s's; d removes none of them (Close).
	d.joins = s.groups
	return d, nil
}

// filterOptions are the seccomp filter's for the plan. With namespaces
// and the network off, commands have a network namespace whose only
// interface is the loopback, and a mount namespace in which no Unix socket
// of the host's is reachable by path; without namespaces, seccomp is what
// keeps them in.
func (pl *Plan) filterOptions() filterOptions {
	m := pl.Mechanisms
	off := !pl.Policy.Network
	if off && !m.Seccomp {
		off = false // a plan without the network filter (an escalation's)
	}
	return filterOptions{
		noNetwork:     off,
		privateNet:    off && m.Namespaces,
		noPathSockets: off && !m.Namespaces && m.Landlock < landlockPathSockets,
	}
}

// Guard reports whether the processes started since the last call broke a
// limit of the sandbox: a fork the pids cgroup refused, a process the
// memory limit killed, or a kill by the watcher (a fork bomb, the disk
// budget). The error is a *LimitError (or several, joined) that says
// which. The shell kills everything in the sandbox when it gets one.
func (s *Sandbox) Guard() error {
	if s.watch == nil {
		return nil
	}
	return s.watch.guard()
}

// KillAll kills every process the sandbox (and every sandbox derived from
// it) started that is still alive, background jobs and daemons included,
// where the sandbox has cgroups to find them by; without cgroups, a
// shell's processes end with its PID namespace when the shell is killed.
func (s *Sandbox) KillAll() {
	if len(s.groups) > 0 {
		s.killAll()
	} else if len(s.joins) > 0 {
		s.kill.Lock()
		defer s.kill.Unlock()
		killAll(s.joins[0])
	}
}

// killAll kills every process in the sandbox, the helper kept ready too.
func (s *Sandbox) killAll() {
	s.mu.Lock()
	p := s.pending
	s.pending = nil
	if p != nil && p.proc != nil {
		p.proc.Kill()
	}
	s.mu.Unlock()
	if p != nil {
		go func() {
			if <-p.done; p.err == nil {
				p.w.discard()
			}
		}()
	}
	if len(s.groups) > 0 {
		s.kill.Lock()
		defer s.kill.Unlock()
		killAll(s.groups[0])
	}
}

// Plan returns the sandbox's plan.
func (s *Sandbox) Plan() *Plan { return s.plan }

// spec is what the helper is told, for argv (nil for an awaiting helper).
func (s *Sandbox) spec(argv []string) helper.Spec {
	pl := s.plan
	var join []string
	for _, g := range slices.Concat(s.groups, s.joins) {
		if g.dir == s.cgroupInto && pl.Mechanisms.Namespaces {
			continue // joined at clone time (attr)
		}
		join = append(join, g.dir)
	}
	lim := helper.Limits{Pids: pl.Policy.Limits.Pids, FileSize: pl.Policy.Limits.FileSize, OpenFiles: pl.Policy.Limits.OpenFiles, Nice: pl.Policy.Limits.nice()}
	if pl.Mechanisms.MemoryCgroup == "" && pl.Policy.Limits.Memory > 0 {
		lim.Data = pl.Policy.Limits.Memory // per process, without a memory cgroup
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
		Cgroups:    join,
		Limits:     lim,
		HideSelf:   pl.Policy.HideShell,
	}
	if pl.Policy.Mode == WorkspaceWrite {
		sp.Protected = pl.Policy.Protected
	}
	sp.Hidden = pl.Policy.Hidden
	if pl.Mechanisms.Namespaces {
		for _, o := range pl.Policy.Overlays {
			sp.Overlays = append(sp.Overlays, helper.Overlay(o))
		}
		sp.Keep = pl.Policy.visible()
		sp.PrivateTmp = pl.Policy.privateTmp()
		sp.TmpSize = pl.Policy.Limits.tmpSize()
		if !pl.Policy.Network {
			var agent string
			sp.Cover, agent = socketDirs(os.Getenv("SSH_AUTH_SOCK"), os.Getenv("HOME"), sp.Keep)
			sp.Sockets = hostSockets(sp.Keep, sp.PrivateTmp, sp.Cover)
			if agent != "" {
				sp.Sockets = append(sp.Sockets, agent)
			}
		}
		sp.Cover = append(sp.Cover, pl.Policy.Covered...)
	}
	return sp
}

// visible are the paths a sandbox with namespaces keeps at their places
// where it replaces /tmp or a directory of sockets: the writable roots,
// the workspace and the readable roots (read-only unless writable).
func (p Policy) visible() []string {
	out := p.writable()
	if p.Workspace != "" {
		out = append(out, p.Workspace)
	}
	return append(out, p.Readable...)
}

// privateTmp reports whether commands get a /tmp of their own: always with
// namespaces, but in full access with the network on (an approved
// escalation), and when a kept path is /tmp itself or holds it.
func (p Policy) privateTmp() bool {
	if p.Mode == FullAccess && p.Network {
		return false
	}
	for _, v := range p.visible() {
		if r, err := filepath.EvalSymlinks(v); err == nil {
			v = r
		}
		if under("/tmp", v) {
			return false
		}
	}
	return true
}

// socketDirs are the directories whose Unix sockets are the host's
// services and are covered with an empty directory when the network is
// off: /run (and /var/run, its usual link: the Docker daemon, D-Bus,
// systemd, the user's runtime directory) and the directory of the SSH
// agent's socket (sshAuthSock, $SSH_AUTH_SOCK) when it is elsewhere and
// holds nothing else the sandbox needs: not home, a directory of one
// component (/var), nor one that holds a kept path. Otherwise the agent's
// socket alone is returned, to be covered by itself. /tmp (tmux, X11,
// most SSH agents) is the sandbox's own anyway.
func socketDirs(sshAuthSock, home string, keep []string) (dirs []string, socket string) {
	dirs = []string{"/run", "/var/run"}
	if sshAuthSock == "" || !filepath.IsAbs(sshAuthSock) {
		return dirs, ""
	}
	sock := filepath.Clean(sshAuthSock)
	dir := filepath.Dir(sock)
	if under(dir, "/tmp") || under(dir, "/run") || under(dir, "/var/run") {
		return dirs, ""
	}
	broad := strings.Count(dir, "/") < 2 || home != "" && filepath.Clean(home) == dir ||
		slices.ContainsFunc(keep, func(k string) bool { return under(k, dir) })
	if broad {
		return dirs, sock
	}
	return append(dirs, dir), ""
}

// maxHostSockets bounds the host's sockets covered one by one.
const maxHostSockets = 512

// hostSockets lists the Unix sockets named in the file system that are
// open in Truss's network namespace (/proc/net/unix: the host's daemons,
// agents and servers, listening or bound) — every one of them is the
// host's, since the sandbox's commands, the network off, have network
// namespaces of their own — but those under a covered directory and,
// when /tmp is the sandbox's own, those under /tmp outside every kept
// path: the helper covers each with /dev/null. A host socket in a
// writable root (a workspace or --add-dir that holds the user's tmux or
// X11 socket, an IDE's) is covered like any other. Reading the table
// costs about a microsecond a socket; a socket made after the helper
// started is not in it (the covered directories still hold).
func hostSockets(keep []string, privateTmp bool, cover []string) []string {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return nil
	}
	gone := func(path string) bool {
		if slices.ContainsFunc(cover, func(c string) bool { return under(path, c) }) {
			return true
		}
		return privateTmp && under(path, "/tmp") && !slices.ContainsFunc(keep, func(k string) bool { return under(path, k) })
	}
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// Num RefCount Protocol Flags Type St Inode Path
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasPrefix(f[7], "/") {
			continue // unnamed, or abstract (@name)
		}
		path := strings.Join(f[7:], " ")
		if seen[path] || gone(path) {
			continue
		}
		seen[path] = true
		out = append(out, path)
		if len(out) == maxHostSockets {
			break
		}
	}
	return out
}

// under reports whether p is root or below it.
func under(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// attr is how the helper is started: in new namespaces, born in the pids
// cgroup when it can be.
func (s *Sandbox) attr() *syscall.SysProcAttr {
	pl := s.plan
	attr := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
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
// cmd's arguments and environment. Only its standard streams reach the
// program: cmd.ExtraFiles, and any other descriptor, are closed first.
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
	sp := s.spec(argv)
	sp.Env = cmd.Env
	if sp.Env == nil {
		sp.Env = os.Environ()
	}
	if !pl.Policy.Network && pl.Mechanisms.Namespaces {
		sp.Env = append(sp.Env[:len(sp.Env):len(sp.Env)], networkEnv)
	}
	b, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	// The helper starts with the spec alone in its environment: the
	// program's variables (LD_PRELOAD, LD_LIBRARY_PATH, which a server's
	// configuration may point into the workspace) reach the program only,
	// once the helper is confined.
	cmd.Env = []string{helper.SpecEnv + "=" + string(b)}
	cmd.ExtraFiles = append(cmd.ExtraFiles, s.exe)
	cmd.Path, cmd.Args = helperFD(2+len(cmd.ExtraFiles)), []string{s.self, HelperArg}
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
			if !w.alive() {
				// Killed with the sandbox's processes (a limit's kill)
				// since it was started: a new one is started instead.
				w.discard()
				w = nil
			}
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
	cmd := &exec.Cmd{Path: helperFD(helper.ReadyFD + 1), Args: []string{s.self, HelperArg}}
	cmd.Env = []string{helper.SpecEnv + "=" + string(b)}
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = files[0], files[2], files[4]
	cmd.ExtraFiles = []*os.File{files[6], files[8], s.exe} // LaunchFD, ReadyFD, the helper
	cmd.SysProcAttr = s.attr()
	// Not into cgroups being emptied: held until the helper has joined
	// them (at its birth, or by its own write on cgroup v1) and is ready.
	s.kill.RLock()
	defer s.kill.RUnlock()
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
	if s.exe != nil {
		s.exe.Close()
	}
	if s.cgroupFD >= 0 {
		unix.Close(s.cgroupFD)
		s.cgroupFD = -1
	}
	// Anything left in the groups is killed first.
	var errs []error
	for _, g := range s.groups {
		killAll(g)
		if err := os.Remove(g.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("sandbox: remove the cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// helperFD is the path the helper is started by: the descriptor the
// sandbox opened it as, passed to the child as fd (a script's
// interpreter opens it again, so it must not be close-on-exec).
func helperFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// IsHelper reports whether this process was started as the sandbox helper.
func IsHelper() bool { return helper.IsHelper() }

// RunHelper is the helper's whole life (see package helper); it never
// returns.
func RunHelper() { helper.Run() }

// GoTestExec is the entry of GOFLAGS that makes every go test in pl's
// sandbox run its test binaries through helper exe as their wrapper
// (helper.TestExecArg): each binary confined further, writing only a
// directory of its own, the sandbox's private /tmp (when no kept path
// is in it; else only its sockets) and its own shared memory, so that none changes what the go command builds or runs after
// it (a later package's sources, another package's binary, the build
// cache). It is "" when pl enforces no Landlock, with which the wrapper
// confines (it would run nothing), and an error when exe cannot be
// quoted in GOFLAGS.
func GoTestExec(exe string, pl *Plan) (string, error) {
	if pl == nil || pl.Mechanisms.Landlock < 1 {
		return "", nil
	}
	args := []string{exe, helper.TestExecArg}
	if pl.Mechanisms.Namespaces && pl.Policy.privateTmp() {
		// The private /tmp, when nothing of the host's is bound back in
		// it: a Landlock rule on /tmp would also let the binary write
		// every kept path beneath it (the workspace, the go command's
		// work directory, the caches: all in /tmp when $TMPDIR is).
		// Else only its sockets (a test that binds /tmp/NAME.sock),
		// which no open for reading or writing reaches.
		kept := slices.ContainsFunc(pl.Policy.visible(), func(v string) bool {
			if r, err := filepath.EvalSymlinks(v); err == nil {
				v = r
			}
			return under(v, "/tmp")
		})
		if kept {
			args = append(args, helper.SocketsOnly+"/tmp")
		} else {
			args = append(args, "/tmp")
		}
	}
	args = append(args, "--")
	var inner []string
	for _, a := range args {
		q, err := quoteField(a, `'`)
		if err != nil {
			return "", err
		}
		inner = append(inner, q)
	}
	return quoteField("-exec="+strings.Join(inner, " "), `"`)
}

// quoteField quotes a for cmd/internal/quoted.Split: as it is when it has
// no white space or quote, else in the quote q, which it must not hold.
func quoteField(a, q string) (string, error) {
	if a != "" && !strings.ContainsAny(a, " \t\n\r'\"") {
		return a, nil
	}
	if strings.Contains(a, q) || q == `'` && strings.Contains(a, `"`) {
		return "", fmt.Errorf("the path in %q cannot be quoted in GOFLAGS: it holds a quote", a)
	}
	return q + a + q, nil
}

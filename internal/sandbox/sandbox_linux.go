package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

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
	s := &Sandbox{plan: pl, cgroupFD: -1}
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
	lim := pl.Policy.Limits
	cgroupByHelper := s.cgroup
	if s.cgroupFD >= 0 && pl.Mechanisms.Namespaces {
		cgroupByHelper = "" // joined at clone time, below
	}
	sp := helper.Spec{
		Format:     helper.Format,
		Argv:       argv,
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
	b, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(append([]string(nil), env...), helper.SpecEnv+"="+string(b))
	if !pl.Policy.Network && pl.Mechanisms.Namespaces {
		cmd.Env = append(cmd.Env, "TRUSS_SANDBOX_NETWORK_DISABLED=1")
	}
	cmd.Path, cmd.Args = s.self, []string{s.self, HelperArg}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if pl.Mechanisms.Namespaces {
		attr = nsAttr(pl.Policy.Network)
		if s.cgroupFD >= 0 {
			attr.UseCgroupFD, attr.CgroupFD = true, s.cgroupFD
		}
	}
	cmd.SysProcAttr = attr
	return nil
}

// Close removes the sandbox's cgroup (its processes are gone by then).
func (s *Sandbox) Close() error {
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

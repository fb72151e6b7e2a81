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
	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// maxLandlockABI is the newest Landlock ABI whose file system rights the
// helper asks for (V5: truncate and device ioctls); newer kernels are
// used at that level.
const maxLandlockABI = 5

// HelperArg is the first argument that makes the truss binary the sandbox
// helper (see RunHelper).
const HelperArg = "__sandbox-exec"

// specEnv carries the helper's spec; the helper removes it before exec.
const specEnv = "TRUSS_SANDBOX_SPEC"

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

// spec is what the helper is told.
type spec struct {
	Argv       []string `json:"argv"`
	Namespaces bool     `json:"namespaces"`
	Network    bool     `json:"network"`
	Landlock   int      `json:"landlock"` // ABI to use, 0 for none
	ReadOnlyFS bool     `json:"read_only_fs"`
	Writable   []string `json:"writable"`
	Protected  []string `json:"protected"`
	Hidden     []string `json:"hidden,omitempty"`
	Seccomp    bool     `json:"seccomp"`
	Cgroup     string   `json:"cgroup,omitempty"`
	Limits     Limits   `json:"limits"`
}

// Sandbox launches processes under a Plan. It implements the shell's
// Launcher interface.
type Sandbox struct {
	plan   *Plan
	self   string
	cgroup string // this sandbox's own pids cgroup, when there is one
	hits   int    // the cgroup's pids.events "max" count last seen
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

// New prepares a sandbox for a plan: it finds the truss binary (the helper)
// and makes the sandbox's pids cgroup. Close removes the cgroup.
func New(pl *Plan) (*Sandbox, error) {
	s := &Sandbox{plan: pl}
	if !pl.Active() {
		return s, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: cannot find the truss binary to run as the helper: %w", err)
	}
	s.self = self
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
	sp := spec{
		Argv:       argv,
		Namespaces: pl.Mechanisms.Namespaces,
		Network:    pl.Policy.Network,
		Landlock:   pl.Mechanisms.Landlock,
		ReadOnlyFS: pl.Policy.Mode == ReadOnly,
		Writable:   pl.Policy.writable(),
		Seccomp:    pl.Mechanisms.Seccomp,
		Cgroup:     s.cgroup,
		Limits:     pl.Policy.Limits,
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
	cmd.Env = append(append([]string(nil), env...), specEnv+"="+string(b))
	if !pl.Policy.Network && pl.Mechanisms.Namespaces {
		cmd.Env = append(cmd.Env, "TRUSS_SANDBOX_NETWORK_DISABLED=1")
	}
	cmd.Path, cmd.Args = s.self, []string{s.self, HelperArg}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if pl.Mechanisms.Namespaces {
		attr = nsAttr(pl.Policy.Network)
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
	err := os.Remove(s.cgroup)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sandbox: remove the cgroup: %w", err)
	}
	return nil
}

// IsHelper reports whether this process was started as the sandbox helper.
func IsHelper() bool { return len(os.Args) > 1 && os.Args[1] == HelperArg }

// RunHelper is the helper's whole life: it reads its spec, confines
// itself, and executes the sandboxed program. It never returns; on a
// failure it prints why and exits with status 126, running nothing.
func RunHelper() {
	runtime.LockOSThread() // never unlocked: the exec happens on this thread
	if err := helper(); err != nil {
		fmt.Fprintf(os.Stderr, "truss sandbox: %v\n", err)
		os.Exit(126)
	}
}

func helper() error {
	raw := os.Getenv(specEnv)
	if raw == "" {
		return errors.New("no sandbox spec")
	}
	var sp spec
	if err := json.Unmarshal([]byte(raw), &sp); err != nil {
		return fmt.Errorf("bad sandbox spec: %w", err)
	}
	os.Unsetenv(specEnv)
	if len(sp.Argv) == 0 {
		return errors.New("nothing to run")
	}
	// The cgroup first: the mounts below make its file system read-only.
	if sp.Cgroup != "" {
		if err := os.WriteFile(filepath.Join(sp.Cgroup, "cgroup.procs"), []byte("0"), 0o644); err != nil {
			return fmt.Errorf("join the pids cgroup: %w", err)
		}
	}
	if sp.Namespaces {
		wd, _ := os.Getwd()
		if err := mounts(sp); err != nil {
			return err
		}
		// The working directory was entered through the mounts as they
		// were; enter it again through the new ones.
		if wd != "" {
			if err := os.Chdir(wd); err != nil {
				return fmt.Errorf("enter %s: %w", wd, err)
			}
		}
	}
	if err := rlimits(sp.Limits); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if sp.Landlock > 0 {
		if err := applyLandlock(sp); err != nil {
			return err
		}
	}
	if sp.Seccomp {
		if err := applySeccomp(sp.Network); err != nil {
			return err
		}
	}
	path := sp.Argv[0]
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(path)
		if err != nil {
			return err
		}
		path = p
	}
	return syscall.Exec(path, sp.Argv, os.Environ())
}

// mounts makes the helper's mounts private, binds the protected paths
// read-only and mounts a /proc of the new PID namespace.
func mounts(sp spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := hide(sp.Hidden); err != nil {
		return err
	}
	if sp.Landlock > 0 || sp.ReadOnlyFS { // not in full access
		if err := readOnlyExcept(sp.Writable); err != nil {
			return err
		}
	}
	for _, p := range sp.Protected {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
		var st unix.Statfs_t
		flags := uintptr(0)
		if unix.Statfs(p, &st) == nil {
			// A remount must keep the flags the mount is locked with.
			flags = uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|flags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	// Shared memory of the sandbox's own, not the host's /dev/shm.
	if _, err := os.Stat("/dev/shm"); err == nil {
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("mount /dev/shm: %w", err)
		}
	}
	unix.Sethostname([]byte("truss-sandbox"))
	return nil
}

// hide covers each hidden path: a directory with an empty read-only tmpfs,
// a file with /dev/null.
func hide(paths []string) error {
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555")
		} else {
			err = unix.Mount("/dev/null", p, "", unix.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
	}
	return nil
}

// readOnlyExcept makes every mount read-only but the writable roots (bound
// onto themselves first, so they stay writable) and the pseudo-terminal and
// shared-memory mounts. Landlock already refuses writes outside the roots;
// a read-only mount also refuses what Landlock does not cover — chmod,
// chown, timestamps and extended attributes of files outside them.
func readOnlyExcept(writable []string) error {
	var roots []string
	for _, w := range writable {
		if _, err := os.Stat(w); err != nil {
			continue
		}
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", w, err)
		}
		roots = append(roots, w)
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read the mount table: %w", err)
	}
	under := func(p, root string) bool {
		return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		keep := mp == "/dev/pts" || mp == "/dev/shm" || under(mp, "/proc")
		for _, r := range roots {
			keep = keep || under(mp, r)
		}
		if keep {
			continue
		}
		var st unix.Statfs_t
		if unix.Statfs(mp, &st) != nil {
			continue // gone, or hidden under another mount
		}
		flags := uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
		err := unix.Mount("", mp, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|flags, "")
		if err != nil && mp == "/" {
			return fmt.Errorf("make / read-only: %w", err)
		}
	}
	return nil
}

// unescapeMount decodes the octal escapes of a mountinfo path (\040 for a
// space).
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func rlimits(l Limits) error {
	set := func(res int, cur, max uint64, name string) error {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: cur, Max: max}); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
		return nil
	}
	if err := set(unix.RLIMIT_CORE, 0, 0, "RLIMIT_CORE"); err != nil {
		return err
	}
	if err := set(unix.RLIMIT_FSIZE, uint64(l.FileSize), uint64(l.FileSize), "RLIMIT_FSIZE"); err != nil {
		return err
	}
	var nofile unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile) == nil && nofile.Max < l.OpenFiles {
		l.OpenFiles = nofile.Max // a hard limit can only come down
	}
	if err := set(unix.RLIMIT_NOFILE, l.OpenFiles, l.OpenFiles, "RLIMIT_NOFILE"); err != nil {
		return err
	}
	return set(unix.RLIMIT_NPROC, uint64(l.Pids), uint64(l.Pids), "RLIMIT_NPROC")
}

// devices are the device files every process may write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

func applyLandlock(sp spec) error {
	cfg := landlock.V5
	if sp.Network {
		cfg.HandledAccessNet = 0 // leave TCP alone
	}
	cfg = cfg.BestEffort()
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWFiles(devices...).IgnoreIfMissing().WithIoctlDev(),
		landlock.RWDirs("/dev/pts", "/dev/shm").IgnoreIfMissing().WithIoctlDev(),
	}
	if len(sp.Writable) > 0 {
		rules = append(rules, landlock.RWDirs(sp.Writable...).IgnoreIfMissing().WithRefer())
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil // best effort found nothing to enforce
	}
	defer unix.Close(fd)
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock restrict: %w", err)
	}
	return nil
}

func applySeccomp(network bool) error {
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
	return seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Policy: seccomp.Policy{
		DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{deny}}})
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

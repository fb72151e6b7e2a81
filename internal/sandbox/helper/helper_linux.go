//go:build linux

// Package helper is the sandbox's helper process: truss (or the small
// truss-sandbox binary) started in new namespaces, which confines itself as
// its Spec says and then executes the sandboxed program. It is its own
// package so that truss-sandbox links nothing else: no filter compiler, no
// crypto, no harness — a Go program that starts in a few milliseconds.
//
// The Spec travels in the environment variable TRUSS_SANDBOX_SPEC as JSON;
// its Format must be this package's, so that a helper from another build
// refuses it instead of misreading it.
//
// A helper whose Spec says Await confines itself first and then waits for
// the program to run: a Launch, as JSON, on file descriptor 3 until its end
// of file. A sandbox starts such a helper ahead of need, so that starting a
// sandboxed program costs a pipe write and an exec instead of a helper's
// whole start.
package helper

import (
	"encoding/binary"
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
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Arg is the first argument that makes a process the helper.
const Arg = "__sandbox-exec"

// SpecEnv carries the Spec; the helper removes it before it executes the
// program.
const SpecEnv = "TRUSS_SANDBOX_SPEC"

// Format is the version of Spec.
const Format = 4

// LaunchFD is the file descriptor an awaiting helper reads its Launch
// from; on ReadyFD it writes one byte, and closes it, once it is confined.
const (
	LaunchFD = 3
	ReadyFD  = 4
)

// Launch is the program an awaiting helper runs: its arguments (Argv[0]
// is the program, looked up in the Env's PATH when it has no slash), its
// environment and its working directory ("" for the helper's).
type Launch struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir,omitempty"`
}

// Spec is what the helper is told.
type Spec struct {
	Format     int      `json:"format"`
	Argv       []string `json:"argv"`
	Namespaces bool     `json:"namespaces"`
	Network    bool     `json:"network"`
	Landlock   int      `json:"landlock"` // ABI to use, 0 for none
	ReadOnlyFS bool     `json:"read_only_fs"`
	Writable   []string `json:"writable"`
	Protected  []string `json:"protected"`
	Hidden     []string `json:"hidden,omitempty"`
	// Seccomp is the assembled seccomp filter (EncodeFilter), empty for
	// none.
	Seccomp []byte `json:"seccomp,omitempty"`
	// Cgroups are the cgroup directories the helper joins first.
	Cgroups []string `json:"cgroups,omitempty"`
	Limits  Limits   `json:"limits"`
	// Await: Argv is empty, and the program comes as a Launch on
	// LaunchFD once the helper is confined.
	Await bool `json:"await,omitempty"`
}

// Limits are the resource limits the helper sets.
type Limits struct {
	Pids      int    `json:"pids"`
	FileSize  int64  `json:"file_size"`
	OpenFiles uint64 `json:"open_files"`
	// Data is RLIMIT_DATA (0 for none): the memory limit when there is no
	// memory cgroup.
	Data int64 `json:"data,omitempty"`
	// Nice is the niceness the program runs at.
	Nice int `json:"nice,omitempty"`
}

// IsHelper reports whether this process was started as the helper.
func IsHelper() bool { return len(os.Args) > 1 && os.Args[1] == Arg }

// Run is the helper's whole life: it reads its spec, confines itself, and
// executes the sandboxed program. It never returns; on a failure it prints
// why and exits with status 126, running nothing.
func Run() {
	runtime.LockOSThread() // never unlocked: the exec happens on this thread
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "truss sandbox: %v\n", err)
		os.Exit(126)
	}
}

// EncodeFilter encodes a BPF program for Spec.Seccomp: 8 bytes an
// instruction (code, jt, jf, k; little-endian).
func EncodeFilter(raw []bpf.RawInstruction) []byte {
	b := make([]byte, 0, 8*len(raw))
	for _, in := range raw {
		b = binary.LittleEndian.AppendUint16(b, in.Op)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}

// loadSeccomp loads an encoded filter on this thread (no_new_privs is
// already set), which is the one that executes the program.
func loadSeccomp(enc []byte) error {
	if len(enc)%8 != 0 || len(enc)/8 > 4096 {
		return fmt.Errorf("bad seccomp filter of %d bytes", len(enc))
	}
	filter := make([]unix.SockFilter, len(enc)/8)
	for i := range filter {
		c := enc[8*i:]
		filter[i] = unix.SockFilter{Code: binary.LittleEndian.Uint16(c), Jt: c[2], Jf: c[3], K: binary.LittleEndian.Uint32(c[4:])}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	const setModeFilter = 1 // SECCOMP_SET_MODE_FILTER
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, setModeFilter, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("load the seccomp filter: %w", errno)
	}
	return nil
}

func run() error {
	raw := os.Getenv(SpecEnv)
	if raw == "" {
		return errors.New("no sandbox spec")
	}
	var sp Spec
	if err := json.Unmarshal([]byte(raw), &sp); err != nil {
		return fmt.Errorf("bad sandbox spec: %w", err)
	}
	if sp.Format != Format {
		return fmt.Errorf("this helper (%s) reads sandbox spec format %d, but was sent format %d: install truss and truss-sandbox from one build", os.Args[0], Format, sp.Format)
	}
	os.Unsetenv(SpecEnv)
	if len(sp.Argv) == 0 && !sp.Await {
		return errors.New("nothing to run")
	}
	// The cgroups first: the mounts below make their file system
	// read-only.
	for _, dir := range sp.Cgroups {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0o644); err != nil {
			return fmt.Errorf("join the cgroup %s: %w", dir, err)
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
	if len(sp.Seccomp) > 0 {
		if err := loadSeccomp(sp.Seccomp); err != nil {
			return err
		}
	}
	l := Launch{Argv: sp.Argv, Env: os.Environ()}
	if sp.Await {
		var err error
		if l, err = await(); err != nil {
			return err
		}
		if l.Dir != "" {
			if err := os.Chdir(l.Dir); err != nil {
				return fmt.Errorf("enter %s: %w", l.Dir, err)
			}
		}
	}
	path := l.Argv[0]
	if !strings.Contains(path, "/") {
		os.Setenv("PATH", pathOf(l.Env))
		p, err := exec.LookPath(path)
		if err != nil {
			return err
		}
		path = p
	}
	// No descriptor but the standard streams reaches the program: not
	// one the user's shell left open to truss, nor one of the helper's.
	if err := closeFrom(3); err != nil {
		return err
	}
	return syscall.Exec(path, l.Argv, l.Env)
}

// closeFrom marks every descriptor from lowfd up close-on-exec.
func closeFrom(lowfd int) error {
	if err := unix.CloseRange(uint(lowfd), ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	// Before Linux 5.11: one by one.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list open descriptors: %w", err)
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= lowfd {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// await says it is ready on ReadyFD, then reads the Launch from LaunchFD,
// to its end, and closes it.
func await() (Launch, error) {
	r := os.NewFile(ReadyFD, "ready")
	r.Write([]byte{'r'})
	r.Close()
	f := os.NewFile(LaunchFD, "launch")
	b, err := io.ReadAll(f)
	f.Close()
	var l Launch
	if err != nil {
		return l, fmt.Errorf("read the launch: %w", err)
	}
	if len(b) == 0 {
		os.Exit(0) // the sandbox closed without using this helper
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("bad launch: %w", err)
	}
	if len(l.Argv) == 0 {
		return l, errors.New("nothing to run")
	}
	return l, nil
}

// pathOf returns the PATH of an environment, or the default search path.
func pathOf(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return v
		}
	}
	return "/usr/local/bin:/usr/bin:/bin"
}

// mounts makes the helper's mounts private, binds the protected paths
// read-only and mounts a /proc of the new PID namespace.
func mounts(sp Spec) error {
	// The writable roots as the mount table names them: with their
	// symbolic links resolved (a workspace reached through a link).
	writable := make([]string, 0, len(sp.Writable))
	for _, w := range sp.Writable {
		if r, err := filepath.EvalSymlinks(w); err == nil {
			w = r
		}
		writable = append(writable, w)
	}
	sp.Writable = writable
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
	// Shared memory of the sandbox's own, not the host's /dev/shm; a
	// writable root in the host's (a workspace on its tmpfs) is bound
	// back into it at the same path, and nothing else of it.
	// (When /dev/shm itself is a writable root, the host's stays.)
	if _, err := os.Stat("/dev/shm"); err == nil && !slices.Contains(sp.Writable, "/dev/shm") {
		roots, err := openRoots("/dev/shm", sp.Writable)
		if err != nil {
			return err
		}
		defer func() {
			for _, r := range roots {
				unix.Close(r.fd)
			}
		}()
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("mount /dev/shm: %w", err)
		}
		for _, r := range roots {
			if err := os.MkdirAll(r.path, 0o755); err != nil {
				return fmt.Errorf("bind %s: %w", r.path, err)
			}
			if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", r.fd), r.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("bind %s: %w", r.path, err)
			}
		}
	}
	unix.Sethostname([]byte("truss-sandbox"))
	return nil
}

// root is a writable root opened (O_PATH) before a mount covers it.
type root struct {
	path string
	fd   int
}

// openRoots opens the writable roots (resolved, as mounts made them) that
// lie at or below dir, except those inside another one (a root's bind
// carries the ones inside it).
func openRoots(dir string, writable []string) ([]root, error) {
	under := func(p, r string) bool { return p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") }
	var paths []string
	for _, w := range writable {
		if under(w, dir) {
			paths = append(paths, w)
		}
	}
	var out []root
	for _, w := range paths {
		nested := false
		for _, o := range paths {
			nested = nested || o != w && under(w, o)
		}
		if nested || slices.ContainsFunc(out, func(r root) bool { return r.path == w }) {
			continue
		}
		fd, err := unix.Open(w, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			for _, r := range out {
				unix.Close(r.fd)
			}
			return nil, fmt.Errorf("open %s: %w", w, err)
		}
		out = append(out, root{w, fd})
	}
	return out, nil
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
	if l.Data > 0 {
		if err := set(unix.RLIMIT_DATA, uint64(l.Data), uint64(l.Data), "RLIMIT_DATA"); err != nil {
			return err
		}
	}
	if l.Nice > 0 {
		// The CPU yields to the user's programs; best effort. setsid made
		// a scheduling autogroup of the sandbox's own, where the kernel
		// has them: it is lowered too.
		unix.Setpriority(unix.PRIO_PROCESS, 0, l.Nice)
		os.WriteFile("/proc/self/autogroup", []byte(strconv.Itoa(l.Nice)), 0o644)
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

// configs are go-landlock's configurations by ABI.
var configs = []landlock.Config{landlock.V1, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7, landlock.V8, landlock.V9}

// landlockConfig is what the helper restricts at an ABI: files (writes
// outside the writable roots), TCP and Unix sockets reaching outside the
// sandbox when the network is off, signals to processes outside it.
func landlockConfig(abi int, network bool) landlock.Config {
	cfg := configs[max(1, min(abi, len(configs)-1))]
	cfg.Scoped &= landlock.ScopedSet(llsyscall.ScopeSignal | llsyscall.ScopeAbstractUnixSocket)
	if network {
		cfg.HandledAccessNet = 0 // leave TCP alone
		cfg.HandledAccessFS &^= landlock.AccessFSSet(llsyscall.AccessFSResolveUnix)
		cfg.Scoped &^= landlock.ScopedSet(llsyscall.ScopeAbstractUnixSocket)
	}
	return cfg.BestEffort()
}

func applyLandlock(sp Spec) error {
	cfg := landlockConfig(sp.Landlock, sp.Network)
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

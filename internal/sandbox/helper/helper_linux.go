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
	"github.com/trussdev/truss/internal/cacheprog"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Arg is the first argument that makes a process the helper.
const Arg = "__sandbox-exec"

// SpecEnv carries the Spec; the helper removes it before it executes the
// program.
const SpecEnv = "TRUSS_SANDBOX_SPEC"

// Format is the version of Spec.
const Format = 8

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
	Format int      `json:"format"`
	Argv   []string `json:"argv"`
	// Env is Argv's environment. The helper itself starts with SpecEnv
	// alone in its environment: the dynamic loader reads LD_PRELOAD,
	// LD_LIBRARY_PATH and GLIBC_TUNABLES before any confinement, so none
	// of the program's variables may reach the helper's own start.
	Env        []string `json:"env,omitempty"`
	Namespaces bool     `json:"namespaces"`
	Network    bool     `json:"network"`
	Landlock   int      `json:"landlock"` // ABI to use, 0 for none
	ReadOnlyFS bool     `json:"read_only_fs"`
	Writable   []string `json:"writable"`
	Protected  []string `json:"protected"`
	Hidden     []string `json:"hidden,omitempty"`
	// HideSelf covers /proc/1, the program's own entry (it is PID 1), so
	// that no process it starts can open its descriptors (the pipe a shell
	// reads its commands from) or memory. The program itself then cannot
	// reach /proc/self either: a shell's own /dev/fd/N redirections
	// (`done < <(cmd)`) fail, its children's work.
	HideSelf bool `json:"hide_self,omitempty"`
	// PrivateTmp replaces /tmp with an empty tmpfs of the sandbox's own
	// (writable; the Keep paths under it bound back at their paths).
	PrivateTmp bool `json:"private_tmp,omitempty"`
	// TmpSize bounds the private /tmp and /dev/shm (tmpfs size=, bytes;
	// 0 for the kernel's default of half the machine's memory): what
	// commands write there is memory, not disk, so no disk budget sees it.
	TmpSize int64 `json:"tmp_size,omitempty"`
	// Cover are directories replaced by an empty read-only tmpfs, so that
	// no Unix socket in them can be reached (/run, the SSH agent's
	// directory); their symbolic links to elsewhere (/run/shm) are kept,
	// and so are the Keep paths under them.
	Cover []string `json:"cover,omitempty"`
	// Sockets are Unix sockets of the host named in the file system, each
	// covered with /dev/null (missing ones, and those under a Keep path,
	// are skipped).
	Sockets []string `json:"sockets,omitempty"`
	// Keep are the paths that stay visible where /tmp, /dev/shm or a Cover
	// is replaced: the writable roots and the workspace.
	Keep []string `json:"keep,omitempty"`
	// Seccomp is the assembled seccomp filter (EncodeFilter), empty for
	// none.
	Seccomp []byte `json:"seccomp,omitempty"`
	// Overlays are directories mounted first (so that the writable root
	// holding each is bound with it where a directory is replaced), each
	// an overlay of a read-only lower layer and a writable upper one.
	Overlays []Overlay `json:"overlays,omitempty"`
	// Cgroups are the cgroup directories the helper joins first.
	Cgroups []string `json:"cgroups,omitempty"`
	Limits  Limits   `json:"limits"`
	// Await: Argv is empty, and the program comes as a Launch on
	// LaunchFD once the helper is confined.
	Await bool `json:"await,omitempty"`
}

// Overlay is an overlay file system at Target: Lower read through, what
// is written going to Upper (Work is the kernel's scratch directory, on
// Upper's file system). Target, Upper and Work lie in a writable root;
// Lower is never written.
type Overlay struct {
	Target string `json:"target"`
	Lower  string `json:"lower"`
	Upper  string `json:"upper"`
	Work   string `json:"work"`
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

// IsHelper reports whether this process was started as the helper, as
// the Go build cache program (cacheprog.Arg) or as a test binary's
// wrapper (TestExecArg), which every binary that can be the helper also
// is: the program runs inside a sandbox, started by a
// sandboxed go command, from the binary the sandbox chose as its helper.
func IsHelper() bool {
	return len(os.Args) > 1 && (os.Args[1] == Arg || os.Args[1] == cacheprog.Arg || os.Args[1] == TestExecArg)
}

// Run is the helper's whole life: it reads its spec, confines itself, and
// executes the sandboxed program. It never returns; on a failure it prints
// why and exits with status 126, running nothing. Started as the cache
// program, it is that program (cacheprog.Main) instead; started as a
// test binary's wrapper, that wrapper (TestExecMain).
func Run() {
	if len(os.Args) > 1 && os.Args[1] == cacheprog.Arg {
		os.Exit(cacheprog.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == TestExecArg {
		os.Exit(TestExecMain(os.Args[2:]))
	}
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
		if !sp.Network {
			if err := loopbackUp(); err != nil {
				return err
			}
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
	if sp.Namespaces && sp.HideSelf {
		// The program (the shell) is PID 1, and its commands are the
		// same user in the same namespaces: through /proc/1 they could
		// open the pipe it reads its commands from anew (fd/N) or write
		// its memory (mem), and so run what they like as the shell after
		// the commands the host sends. An empty read-only directory
		// covers it, last of the helper's own uses of /proc/self; ptrace,
		// pidfd_getfd and process_vm_writev are refused by seccomp, and
		// neither seccomp nor Landlock lets a command take a cover away.
		if err := unix.Mount("tmpfs", "/proc/1", "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555"); err != nil {
			return fmt.Errorf("cover /proc/1: %w", err)
		}
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
	l := Launch{Argv: sp.Argv, Env: sp.Env}
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
	if err := syscall.Exec(path, l.Argv, l.Env); err != nil {
		// A program the host sees may be hidden here (in the host's /tmp,
		// which the sandbox replaces, or under a hidden path).
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
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

// mounts makes the helper's mounts private, replaces /tmp, /dev/shm and
// the covered directories with file systems of the sandbox's own, covers
// the host's Unix sockets and the hidden paths, makes everything but the
// writable roots read-only, binds the protected paths read-only, and
// mounts a /proc of the new PID namespace and a devpts of its own.
func mounts(sp Spec) error {
	// The writable roots as the mount table names them: with their
	// symbolic links resolved (a workspace reached through a link).
	named := append(append([]string(nil), sp.Keep...), sp.Writable...)
	sp.Writable = resolved(sp.Writable)
	keep := append(resolved(sp.Keep), sp.Writable...)
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	// The overlays' lower layers are opened now, before any mount hides
	// them (a lower layer under the /tmp replaced below); the overlays are
	// mounted last, when their upper layers are reached through the
	// writable roots' own mounts: an upper layer on a mount made
	// read-only afterwards fails every copy-up (ENOENT).
	lowers := make([]int, len(sp.Overlays))
	for i, o := range sp.Overlays {
		fd, err := unix.Open(o.Lower, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		lowers[i] = fd
	}
	defer func() {
		for _, fd := range lowers {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	// The host's sockets first (those in kept paths too, which are bound
	// back with their covers below): a socket under a directory replaced
	// below is gone with it.
	if err := coverSockets(sp.Sockets); err != nil {
		return err
	}
	if sp.PrivateTmp {
		if err := replace("/tmp", tmpData(sp.TmpSize), false, keep, named); err != nil {
			return err
		}
	}
	done := map[string]bool{}
	for _, dir := range resolved(sp.Cover) {
		if done[dir] || sp.PrivateTmp && under(dir, "/tmp") {
			continue // /var/run is /run; /tmp is the sandbox's own
		}
		done[dir] = true
		if err := replace(dir, "mode=0755", true, keep, named); err != nil {
			return err
		}
	}
	// Shared memory of the sandbox's own, not the host's /dev/shm; a
	// writable root in the host's (a workspace on its tmpfs) is bound
	// back into it at the same path, and nothing else of it.
	// (When /dev/shm itself is a writable root, the host's stays.)
	if !slices.Contains(sp.Writable, "/dev/shm") {
		if err := replace("/dev/shm", tmpData(sp.TmpSize), false, sp.Writable, named); err != nil {
			return err
		}
	}
	if err := hide(sp.Hidden); err != nil {
		return err
	}
	if sp.Landlock > 0 || sp.ReadOnlyFS { // not in full access
		if err := readOnlyExcept(sp.Writable, sp.PrivateTmp); err != nil {
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
		if err := remountReadOnly(p); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for i, o := range sp.Overlays {
		if lowers[i] < 0 {
			continue
		}
		// Where the kernel cannot (overlayfs in a user namespace needs
		// Linux 5.11), Target stays the empty directory it is: a cache
		// without the lower layer's warmth, not an error.
		o.Lower = "/proc/self/fd/" + strconv.Itoa(lowers[i])
		mountOverlay(o)
	}
	if err := devpts(); err != nil {
		return err
	}
	unix.Sethostname([]byte("truss-sandbox"))
	return nil
}

// mountOverlay mounts o, reporting whether it could. Its kernel scratch
// directory is one of its own in o.Work: a sandbox starts its next helper
// while the last one's commands run, and a mount that took over another
// live mount's work directory would empty it, failing every copy-up of
// the other (ENOENT).
func mountOverlay(o Overlay) bool {
	work, err := os.MkdirTemp(o.Work, "w")
	if err != nil {
		return false
	}
	esc := strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`)
	data := "lowerdir=" + esc.Replace(o.Lower) + ",upperdir=" + esc.Replace(o.Upper) + ",workdir=" + esc.Replace(work)
	return unix.Mount("overlay", o.Target, "overlay", unix.MS_NOSUID|unix.MS_NODEV, data) == nil
}

// resolved returns paths with their symbolic links resolved where they
// exist.
func resolved(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		out = append(out, p)
	}
	return out
}

// remountReadOnly makes the mount at p read-only, keeping the flags it is
// locked with.
func remountReadOnly(p string) error {
	var st unix.Statfs_t
	flags := uintptr(0)
	if unix.Statfs(p, &st) == nil {
		flags = uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
	}
	return unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|flags, "")
}

// tmpData are the mount options of a writable tmpfs of the sandbox's own
// of at most size bytes (0: the kernel's default).
func tmpData(size int64) string {
	if size > 0 {
		return "mode=1777,size=" + strconv.FormatInt(size, 10)
	}
	return "mode=1777"
}

// replace mounts an empty tmpfs (with the mount options data) over dir,
// its symbolic links resolved; a missing dir is left alone. The kept
// paths under dir (resolved) are opened first and bound back at their
// paths; the symbolic links under dir by which a kept path is named
// (named: a workspace reached through a link) are made again, and so are
// dir's own links to places outside it (/run/shm to /dev/shm). A
// read-only tmpfs is made read-only once they are.
func replace(dir, data string, readOnly bool, keep, named []string) error {
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil // missing
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	roots, err := openRoots(dir, keep)
	if err != nil {
		return err
	}
	defer func() {
		for _, r := range roots {
			unix.Close(r.fd)
		}
	}()
	var links []link
	if ents, err := os.ReadDir(dir); err == nil && readOnly {
		for _, e := range ents {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if t, err := os.Readlink(p); err == nil && filepath.IsAbs(t) && !under(t, dir) {
				links = append(links, link{p, t})
			}
		}
	}
	for _, n := range named {
		for _, l := range linksOn(dir, n) {
			if !slices.ContainsFunc(keep, func(k string) bool { return under(l.path, k) }) {
				links = append(links, l) // not in the kept trees, which are the host's
			}
		}
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return fmt.Errorf("mount a tmpfs on %s: %w", dir, err)
	}
	// The directories that hold the kept paths (/tmp/a/b of /tmp/a/b/ws)
	// are made, and on a writable tmpfs bound onto themselves read-only:
	// the new /tmp is writable, but what leads to a kept path is not
	// (echo > ../x beside a workspace fails as it would outside).
	var scaffold []string
	for _, r := range roots {
		if r.path == dir {
			continue
		}
		if err := os.MkdirAll(r.path, 0o755); err != nil {
			return fmt.Errorf("bind %s: %w", r.path, err)
		}
		top := filepath.Join(dir, strings.SplitN(strings.TrimPrefix(r.path, dir+"/"), "/", 2)[0])
		if top != r.path && !slices.Contains(scaffold, top) {
			scaffold = append(scaffold, top)
		}
	}
	for _, l := range links {
		os.MkdirAll(filepath.Dir(l.path), 0o755)
		os.Symlink(l.target, l.path)
		if top := filepath.Join(dir, strings.SplitN(strings.TrimPrefix(l.path, dir+"/"), "/", 2)[0]); !readOnly && top != l.path && !slices.Contains(scaffold, top) {
			scaffold = append(scaffold, top)
		}
	}
	if !readOnly {
		for _, top := range scaffold {
			if slices.ContainsFunc(roots, func(r root) bool { return under(top, r.path) }) {
				continue // a kept path itself
			}
			if err := unix.Mount(top, top, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind %s: %w", top, err)
			}
			if err := unix.Mount("", top, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
				return fmt.Errorf("make %s read-only: %w", top, err)
			}
		}
	}
	for _, r := range roots {
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", r.fd), r.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", r.path, err)
		}
	}
	if readOnly {
		if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", dir, err)
		}
	}
	return nil
}

// link is a symbolic link to make again.
type link struct{ path, target string }

// linksOn returns the symbolic links below dir on the way to path (named
// as given, its links unresolved), in order.
func linksOn(dir, path string) []link {
	path = filepath.Clean(path)
	if !filepath.IsAbs(path) || !under(path, dir) || path == dir {
		return nil
	}
	var out []link
	p := dir
	for _, c := range strings.Split(strings.TrimPrefix(path, dir+"/"), "/") {
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		if err != nil {
			return out
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			t, err := os.Readlink(p)
			if err != nil {
				return out
			}
			return append(out, link{p, t}) // what lies beyond is the target's
		}
	}
	return out
}

// coverSockets binds /dev/null over each Unix socket of the host's: a
// connect finds a device, not a listener.
func coverSockets(paths []string) error {
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSocket == 0 {
			continue
		}
		if err := unix.Mount("/dev/null", p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("cover the socket %s: %w", p, err)
		}
	}
	return nil
}

// devpts mounts a devpts instance of the sandbox's own on /dev/pts and
// binds its ptmx onto /dev/ptmx: pseudo-terminals a command opens are its
// own, and the host's (the user's terminal, /dev/pts/N) are not there to
// be opened by path.
func devpts() error {
	if fi, err := os.Stat("/dev/pts"); err != nil || !fi.IsDir() {
		return nil
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mount a devpts of the sandbox's own: %w", err)
	}
	if fi, err := os.Lstat("/dev/ptmx"); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil // a link to pts/ptmx already
	}
	if err := unix.Mount("/dev/pts/ptmx", "/dev/ptmx", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind the sandbox's /dev/pts/ptmx onto /dev/ptmx: %w", err)
	}
	return nil
}

// loopbackUp brings the loopback interface of the helper's new network
// namespace up (SIOCSIFFLAGS; the helper is root of the user namespace
// that owns it): 127.0.0.1 and ::1 work inside, and nothing else exists.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring the loopback interface up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring the loopback interface up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("read the loopback interface's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring the loopback interface up: %w", err)
	}
	return nil
}

// under reports whether p is root or below it.
func under(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
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
func readOnlyExcept(writable []string, privateTmp bool) error {
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
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := UnescapeMount(f[4])
		keep := mp == "/dev/pts" || mp == "/dev/shm" || under(mp, "/proc") || privateTmp && mp == "/tmp"
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
		err := remountReadOnly(mp)
		if err != nil && mp == "/" {
			return fmt.Errorf("make / read-only: %w", err)
		}
	}
	return nil
}

// UnescapeMount decodes the octal escapes of a mountinfo path (\040 for a
// space).
func UnescapeMount(s string) string {
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
// sandbox when the network is off, signals to processes outside it. In a
// network namespace of its own (privateNet), whose only interface is the
// loopback, TCP is left alone: nothing outside can be reached by it.
func landlockConfig(abi int, network, privateNet bool) landlock.Config {
	cfg := configs[max(1, min(abi, len(configs)-1))]
	cfg.Scoped &= landlock.ScopedSet(llsyscall.ScopeSignal | llsyscall.ScopeAbstractUnixSocket)
	if privateNet {
		cfg.HandledAccessNet = 0
	}
	if network {
		cfg.HandledAccessNet = 0 // leave TCP alone
		cfg.HandledAccessFS &^= landlock.AccessFSSet(llsyscall.AccessFSResolveUnix)
		cfg.Scoped &^= landlock.ScopedSet(llsyscall.ScopeAbstractUnixSocket)
	}
	return cfg.BestEffort()
}

func applyLandlock(sp Spec) error {
	cfg := landlockConfig(sp.Landlock, sp.Network, sp.Namespaces && !sp.Network)
	own := []string{"/dev/pts", "/dev/shm"}
	if sp.PrivateTmp {
		own = append(own, "/tmp")
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWFiles(devices...).IgnoreIfMissing().WithIoctlDev(),
		landlock.RWDirs(own...).IgnoreIfMissing().WithIoctlDev(),
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

package bench

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The kinds of a known path.
const (
	KnownOut     = "out"     // a benchmark's --out: predictions, verdicts, ledgers
	KnownWork    = "work"    // a benchmark's --work: its workspaces and grading checkouts
	KnownTasks   = "tasks"   // a task file a benchmark read (hidden tests, gold patches)
	KnownRepo    = "repo"    // a task repository a benchmark read (its later history)
	KnownDataset = "dataset" // an imported dataset (truss bench import --out)
	KnownInput   = "input"   // a file or directory a bench command read: an import's source, --predictions, --logs, --sim-scripts
	KnownReport  = "report"  // a report a bench command wrote (bench report --html, its pages)
	KnownPrivate = "private" // a live benchmark's private directory (PrivateDir), dropped when it is removed
)

// KnownPath is one path of the registry.
type KnownPath struct {
	Path  string    `json:"path"`
	Kind  string    `json:"kind"`
	Added time.Time `json:"added"`
}

// registryFile is the registry's file: its format version and paths.
type registryFile struct {
	Version int         `json:"version"`
	Paths   []KnownPath `json:"paths"`
}

// registryVersion is the format ParseRegistry reads.
const registryVersion = 1

// maxRegistry bounds the registry file read.
const maxRegistry = 16 << 20

// Registry is the list of every benchmark output, workspaces' directory,
// task file, task repository, imported dataset and private directory of
// the user's benchmarks (UserDataDir()/bench/known-paths.json): every
// benchmark hides all of them that still exist from its runs' agents and
// gradings, so that no run reads an earlier (or concurrent) benchmark's
// predictions, verdicts, ledgers or hidden tests. It is written
// atomically (a temporary file renamed into place) under a lock (flock on
// known-paths.lock beside it), so that benchmarks starting at once each
// add theirs.
type Registry struct {
	// File is the registry's file; its directory holds the lock.
	File string
	// Earlier are registry files read besides File and never written:
	// the registry an earlier Truss kept in its data directory
	// (DataDir()/bench/known-paths.json), whose paths a user upgrading
	// keeps hidden.
	Earlier []string
	// LockWait is how long Add and Remove wait for the lock held by
	// another process; 0 means DefaultLockWait.
	LockWait time.Duration
}

// DataDir is Truss's data directory: $TRUSS_HOME, else
// $XDG_DATA_HOME/truss, else ~/.local/share/truss.
func DataDir() (string, error) {
	if base := os.Getenv("TRUSS_HOME"); base != "" {
		return base, nil
	}
	d := os.Getenv("XDG_DATA_HOME")
	if d == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no data directory (set TRUSS_HOME): %w", err)
		}
		d = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(d, "truss"), nil
}

// TestUserHomeEnv names the variable that, in a test binary only
// (testing.Testing), stands for the home directory the user database
// gives the process's UID (UserHome); without it a test binary has none,
// so that each script keeps its registry in its own TRUSS_HOME and its
// private directories in its temporary directory, and nothing in the
// real home. A truss built as a program never reads it: no setting of the
// environment moves its registry or its private directories' parent.
const TestUserHomeEnv = "TRUSS_TEST_USER_HOME"

// UserHome is the home directory the user database gives the process's
// real UID (getpwuid; /etc/passwd without cgo), not $HOME: the one place
// of the user's that no setting of TRUSS_HOME, XDG_DATA_HOME or HOME
// moves. It is "" where the database has no usable home for the UID (no
// entry, a home that is the root or not a directory of the user's).
func UserHome() string {
	if testing.Testing() {
		return os.Getenv(TestUserHomeEnv)
	}
	return userDatabaseHome(os.Getuid())
}

// UserDataDir is the user's data directory for the benchmarks:
// .local/share/truss in UserHome, so that every benchmark of the user,
// under whatever data directory, records its paths in one registry and
// hides every other's. Without a UserHome it is DataDir().
func UserDataDir() (string, error) {
	if home := UserHome(); home != "" {
		return filepath.Join(home, ".local", "share", "truss"), nil
	}
	return DataDir()
}

// userDatabaseHome is the home directory the user database (getpwuid;
// /etc/passwd without cgo) gives uid, when it is an absolute directory
// other than the root, owned by uid; "" otherwise.
func userDatabaseHome(uid int) string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		return ""
	}
	home := filepath.Clean(u.HomeDir)
	fi, err := os.Stat(home)
	if err != nil || !fi.IsDir() || home == "/" {
		return ""
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
		return ""
	}
	return home
}

// DefaultRegistry is the user's registry, in UserDataDir, which reads
// the data directory's too (Registry.Earlier) when that is another file.
func DefaultRegistry() (*Registry, error) {
	d, err := UserDataDir()
	if err != nil {
		return nil, err
	}
	r := &Registry{File: filepath.Join(d, "bench", "known-paths.json")}
	if old, err := DataDir(); err == nil {
		r.Earlier = earlierRegistries(r.File, filepath.Join(old, "bench", "known-paths.json"))
	}
	return r, nil
}

// earlierRegistries are those of files that are neither file nor one
// listed before them, compared resolved (ResolvePath).
func earlierRegistries(file string, files ...string) []string {
	seen := map[string]bool{}
	if r, err := ResolvePath(file); err == nil {
		seen[r] = true
	}
	var out []string
	for _, f := range files {
		r, err := ResolvePath(f)
		if err != nil || seen[r] {
			continue
		}
		seen[r] = true
		out = append(out, f)
	}
	return out
}

// DefaultLockWait is how long Add and Remove wait for the registry's lock
// when Registry.LockWait is 0.
const DefaultLockWait = 10 * time.Second

// LockedError is the error of Add and Remove when another process held
// the registry's lock for longer than they wait.
type LockedError struct {
	Lock string        // the lock file
	Wait time.Duration // how long it was waited for
	// Holder is the process that holds it, as /proc/locks and
	// /proc/PID/comm name it ("" when they do not say).
	Holder string
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.Holder != "" {
		who = e.Holder
	}
	return fmt.Sprintf("the registry of benchmark paths is locked (%s) by %s: waited %s; end that process or wait for it", e.Lock, who, e.Wait)
}

// lock takes the registry's lock (exclusive), making its directory (mode
// 0700) first; the returned function lets it go. It does not block: it
// tries again until LockWait has passed, then fails with a *LockedError
// naming the holder where /proc/locks says it. The lock is held only
// while the file is read and written, never while anything else is
// waited for.
func (r *Registry) lock() (func(), error) {
	dir := filepath.Dir(r.File)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := ownDir(dir); err != nil {
		return nil, fmt.Errorf("the registry of benchmark paths: %w", err)
	}
	name := strings.TrimSuffix(r.File, ".json") + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the registry of benchmark paths: %w", err)
	}
	wait := cmp.Or(r.LockWait, DefaultLockWait)
	deadline := time.Now().Add(wait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking the registry of benchmark paths: %w", err)
		}
		if time.Now().After(deadline) {
			holder := lockHolderOf(f)
			f.Close()
			return nil, &LockedError{Lock: name, Wait: wait, Holder: holder}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ownDir checks that dir is a directory (not a link to one) of this
// user's, and makes it 0700 when it is not: the registry's directory and
// the benchmarks' private directories' parent are no one else's to read.
func ownDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to UID %d, not to this user (%d)", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// lockHolderOf names the process holding a lock on f: "process PID
// (COMMAND)", from /proc/locks; "" when it cannot tell.
func lockHolderOf(f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return ""
	}
	pid := LockHolder(b, unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	if pid <= 0 {
		return ""
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if c := strings.TrimSpace(string(comm)); c != "" {
		return fmt.Sprintf("process %d (%s)", pid, c)
	}
	return fmt.Sprintf("process %d", pid)
}

// LockHolder returns the process holding a lock on the file of device
// major:minor and inode ino, as /proc/locks (its text) lists it; 0 when
// none is listed. Lines of processes waiting for a lock ("->") are not
// holders.
func LockHolder(locks []byte, major, minor uint32, ino uint64) int {
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, ino)
	for line := range strings.Lines(string(locks)) {
		f := strings.Fields(line)
		// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
		if len(f) < 6 || f[1] == "->" {
			continue
		}
		if f[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}

// readRegistry reads a registry file; a missing file is an empty one.
func readRegistry(name string) ([]KnownPath, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRegistry+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRegistry {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxRegistry)
	}
	paths, err := ParseRegistry(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return paths, nil
}

// ParseRegistry parses a registry file: {"version": 1, "paths": [...]},
// each path absolute and clean, with a kind.
func ParseRegistry(b []byte) ([]KnownPath, error) {
	var rf registryFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rf); err != nil {
		return nil, fmt.Errorf("not a registry of benchmark paths: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a registry of benchmark paths: data after its object")
	}
	if rf.Version != registryVersion {
		return nil, fmt.Errorf("registry of benchmark paths of version %d; this Truss reads version %d", rf.Version, registryVersion)
	}
	for _, p := range rf.Paths {
		if !filepath.IsAbs(p.Path) || filepath.Clean(p.Path) != p.Path {
			return nil, fmt.Errorf("registry of benchmark paths: %q is not a clean absolute path", p.Path)
		}
		if p.Kind == "" {
			return nil, fmt.Errorf("registry of benchmark paths: %s has no kind", p.Path)
		}
	}
	return rf.Paths, nil
}

// pruneAfter is how long a recorded path that does not exist is kept.
const pruneAfter = 24 * time.Hour

// ResolvePath is p made absolute with every symbolic link in it resolved,
// as far as it exists: the rest, not made yet, is appended as given. It is
// the form in which the registry records paths and benchmarks compare
// them, so that a path reached through a link (a $TMPDIR in /tmp that
// links elsewhere) is judged by where it really is.
func ResolvePath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// Add records paths of kind (resolved: ResolvePath; empty ones skipped),
// under the lock, dropping the recorded paths that have not existed for a
// day (recorded over pruneAfter ago and missing now) and the private
// directories that are gone, and writes the registry atomically.
func (r *Registry) Add(kind string, paths ...string) error {
	var add []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, err := ResolvePath(p)
		if err != nil {
			return err
		}
		add = append(add, abs)
	}
	return r.update(func(known []KnownPath, now time.Time) []KnownPath {
		for _, abs := range add {
			if !slices.ContainsFunc(known, func(k KnownPath) bool { return k.Path == abs && k.Kind == kind }) {
				known = append(known, KnownPath{Path: abs, Kind: kind, Added: now})
			}
		}
		return known
	})
}

// Remove drops the records of paths of kind (resolved), under the lock,
// and writes the registry atomically: what a benchmark does with its
// private directory once it has removed it.
func (r *Registry) Remove(kind string, paths ...string) error {
	var drop []string
	for _, p := range paths {
		if abs, err := ResolvePath(p); err == nil && p != "" {
			drop = append(drop, abs)
		}
	}
	return r.update(func(known []KnownPath, _ time.Time) []KnownPath {
		return slices.DeleteFunc(known, func(k KnownPath) bool { return k.Kind == kind && slices.Contains(drop, k.Path) })
	})
}

// update reads the registry under its lock, with the Earlier files'
// paths (which it takes in, so that every benchmark of the user's hides
// them from then on, whatever its data directory), prunes it, changes it
// with change and writes it atomically.
func (r *Registry) update(change func(known []KnownPath, now time.Time) []KnownPath) error {
	unlock, err := r.lock()
	if err != nil {
		return err
	}
	defer unlock()
	known, err := r.All()
	if err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Second)
	known = slices.DeleteFunc(known, func(k KnownPath) bool {
		if k.Kind != KnownPrivate && now.Sub(k.Added) < pruneAfter {
			return false // a benchmark's --out may not be made yet
		}
		_, err := os.Lstat(k.Path)
		return errors.Is(err, fs.ErrNotExist)
	})
	known = change(known, now)
	b, err := json.MarshalIndent(registryFile{Version: registryVersion, Paths: known}, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(r.File, append(b, '\n'))
}

// Paths returns the recorded paths that exist now.
func (r *Registry) Paths() ([]KnownPath, error) {
	known, err := r.All()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(known, func(k KnownPath) bool {
		_, err := os.Lstat(k.Path)
		return err != nil
	}), nil
}

// All returns every recorded path, those that do not exist (yet) too,
// of File and of the Earlier files. It takes no lock: the file is only
// ever replaced whole (renamed into place), so a reader sees one version
// or the next, and no process holding the lock can stall a reader.
func (r *Registry) All() ([]KnownPath, error) {
	known, err := readRegistry(r.File)
	if err != nil {
		return nil, err
	}
	for _, name := range r.Earlier {
		more, err := readRegistry(name)
		if err != nil {
			return nil, err
		}
		for _, k := range more {
			if !slices.ContainsFunc(known, func(o KnownPath) bool { return o.Path == k.Path && o.Kind == k.Kind }) {
				known = append(known, k)
			}
		}
	}
	return known, nil
}

// Dirs are the directories of the registry's files, File's first: each
// holds a list of benchmarks' paths, and File's the lock they are
// written under.
func (r *Registry) Dirs() []string {
	dirs := []string{filepath.Dir(r.File)}
	for _, f := range r.Earlier {
		dirs = append(dirs, filepath.Dir(f))
	}
	return dirs
}

// stamp is the size and modification time of each of the registry's
// files ("" for one that does not exist): it changes when any is
// replaced.
func (r *Registry) stamp() string {
	var b strings.Builder
	for _, f := range append([]string{r.File}, r.Earlier...) {
		if fi, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%d %d;", fi.Size(), fi.ModTime().UnixNano())
		} else {
			b.WriteString("-;")
		}
	}
	return b.String()
}

// Confinement splits the known paths into what a benchmark's runs must
// not see: hidden, the paths to hide, and covered, the directories to
// cover instead because they hold one of the benchmark's own directories
// (own: its private directory, --work, the grading checkouts' directory,
// the temporary directory), which a cover binds back and a hidden path
// would hide. Paths in own directories, in whole (directories every run
// sees covered already or has a private one of: the temporary
// directory's cover, /tmp) and the own directories themselves are left
// out. skipped are the paths that hold the home directory (or are the
// root): hiding them would hide the toolchains the runs need.
func Confinement(known []KnownPath, own, whole []string, home string) (hidden, covered, skipped []string) {
	var owned []string
	for _, o := range own {
		if o != "" {
			owned = append(owned, filepath.Clean(o))
		}
	}
	for _, k := range known {
		p := k.Path
		switch {
		case slices.ContainsFunc(owned, func(o string) bool { return within(p, o) }),
			slices.ContainsFunc(whole, func(w string) bool { return w != "" && within(p, w) }):
			continue
		case p == "/" || home != "" && within(home, p):
			skipped = append(skipped, p)
		case slices.ContainsFunc(owned, func(o string) bool { return within(o, p) }):
			covered = append(covered, p)
		default:
			hidden = append(hidden, p)
		}
	}
	return slices.Compact(hidden), slices.Compact(covered), skipped
}

// KnownView is the registry as one benchmark sees it: Current splits the
// recorded paths (Confinement) for the benchmark's own directories, read
// again whenever the registry's file has changed, so that a benchmark
// started later, whose paths were recorded after this one started, is
// hidden from this one's later runs too. It keeps the paths that do not
// exist yet (a --out made after it was recorded): the sandbox skips a
// hidden or covered path that is missing when a shell starts. It is safe
// for concurrent use.
type KnownView struct {
	Registry *Registry
	// Own, Whole and Home are Confinement's, resolved (ResolvePath)
	// before they are compared with the recorded paths.
	Own   []string
	Whole []string
	Home  string

	mu              sync.Mutex
	stamp           string // the file's size and modification time when read
	hidden, covered []string
	skipped         []string
}

// Current returns the paths to hide and to cover now, resolved
// (ResolvePath): the registry's directories (Registry.Dirs) among the hidden (no run
// reads the list of every benchmark's paths, nor takes the lock the
// benchmarks write it under). When the registry cannot be read, it
// returns what it read last, with the error.
func (v *KnownView) Current() (hidden, covered []string, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	stamp := v.Registry.stamp()
	if v.stamp == "" || stamp != v.stamp {
		known, err := v.Registry.All()
		if err != nil {
			if v.stamp == "" && len(v.hidden) == 0 {
				return resolveAll(v.Registry.Dirs()), nil, err
			}
			return v.hidden, v.covered, err
		}
		v.hidden, v.covered, v.skipped = Confinement(known, resolveAll(v.Own), resolveAll(v.Whole), resolveAll([]string{v.Home})[0])
		v.hidden = append(v.hidden, resolveAll(v.Registry.Dirs())...)
		v.stamp = stamp
	}
	return v.hidden, v.covered, nil
}

// resolveAll is ResolvePath of each path ("" kept, a path that cannot be
// resolved as given).
func resolveAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p != "" {
			if r, err := ResolvePath(p); err == nil {
				p = r
			}
		}
		out = append(out, p)
	}
	return out
}

// Skipped are the recorded paths Current leaves visible because they hold
// the home directory or are the root (as of its last read).
func (v *KnownView) Skipped() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.skipped)
}

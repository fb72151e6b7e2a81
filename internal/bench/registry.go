package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The kinds of a known path.
const (
	KnownOut     = "out"     // a benchmark's --out: predictions, verdicts, ledgers
	KnownWork    = "work"    // a benchmark's --work: its workspaces and grading checkouts
	KnownTasks   = "tasks"   // a task file a benchmark read (hidden tests, gold patches)
	KnownRepo    = "repo"    // a task repository a benchmark read (its later history)
	KnownDataset = "dataset" // an imported dataset (truss bench import --out)
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
// task file, task repository and imported dataset of this installation
// (DataDir()/bench/known-paths.json): every benchmark hides all of them
// that still exist from its runs' agents and gradings, so that no run
// reads an earlier (or concurrent) benchmark's predictions, verdicts,
// ledgers or hidden tests. It is written atomically (a temporary file
// renamed into place) under a lock (flock on known-paths.lock beside it),
// so that benchmarks starting at once each add theirs.
type Registry struct {
	// File is the registry's file; its directory holds the lock.
	File string
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

// DefaultRegistry is the installation's registry, in DataDir.
func DefaultRegistry() (*Registry, error) {
	d, err := DataDir()
	if err != nil {
		return nil, err
	}
	return &Registry{File: filepath.Join(d, "bench", "known-paths.json")}, nil
}

// lock takes the registry's lock (exclusive, waiting for it), making its
// directory (mode 0700) first; the returned function lets it go.
func (r *Registry) lock() (func(), error) {
	dir := filepath.Dir(r.File)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(strings.TrimSuffix(r.File, ".json")+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the registry of benchmark paths: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the registry of benchmark paths: %w", err)
	}
	return func() { f.Close() }, nil
}

// read reads the registry; a missing file is an empty one.
func (r *Registry) read() ([]KnownPath, error) {
	f, err := os.Open(r.File)
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
		return nil, fmt.Errorf("%s: larger than %d bytes", r.File, maxRegistry)
	}
	paths, err := ParseRegistry(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.File, err)
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

// Add records paths of kind (made absolute; empty ones skipped), under
// the lock, dropping the recorded paths that have not existed for a day
// (recorded over pruneAfter ago and missing now), and writes the registry
// atomically.
func (r *Registry) Add(kind string, paths ...string) error {
	unlock, err := r.lock()
	if err != nil {
		return err
	}
	defer unlock()
	known, err := r.read()
	if err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Second)
	known = slices.DeleteFunc(known, func(k KnownPath) bool {
		if now.Sub(k.Added) < pruneAfter {
			return false // a benchmark's --out may not be made yet
		}
		_, err := os.Lstat(k.Path)
		return errors.Is(err, fs.ErrNotExist)
	})
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(known, func(k KnownPath) bool { return k.Path == abs && k.Kind == kind }) {
			known = append(known, KnownPath{Path: abs, Kind: kind, Added: now})
		}
	}
	b, err := json.MarshalIndent(registryFile{Version: registryVersion, Paths: known}, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(r.File, append(b, '\n'))
}

// Paths returns the recorded paths that exist now, under the lock.
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
// under the lock.
func (r *Registry) All() ([]KnownPath, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return r.read()
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
	// Own, Whole and Home are Confinement's.
	Own   []string
	Whole []string
	Home  string

	mu              sync.Mutex
	stamp           string // the file's size and modification time when read
	hidden, covered []string
	skipped         []string
}

// Current returns the paths to hide and to cover now. When the registry
// cannot be read, it returns what it read last, with the error.
func (v *KnownView) Current() (hidden, covered []string, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	stamp := ""
	if fi, err := os.Stat(v.Registry.File); err == nil {
		stamp = fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
	}
	if stamp == "" || stamp != v.stamp {
		known, err := v.Registry.All()
		if err != nil {
			return v.hidden, v.covered, err
		}
		v.hidden, v.covered, v.skipped = Confinement(known, v.Own, v.Whole, v.Home)
		v.stamp = stamp
	}
	return v.hidden, v.covered, nil
}

// Skipped are the recorded paths Current leaves visible because they hold
// the home directory or are the root (as of its last read).
func (v *KnownView) Skipped() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.skipped)
}

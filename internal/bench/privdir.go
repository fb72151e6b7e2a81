package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// PrivatePrefix begins the name of every benchmark's private directory in
// the temporary directory (truss bench run, grade and worker make one).
const PrivatePrefix = "truss-bench-"

// PrivateParent is the directory every benchmark of the user whose
// temporary directory is outside /tmp makes its private directory in
// (PrivateDirIn): .cache/truss-bench in UserHome, one per user whatever
// $TMPDIR, $HOME or TRUSS_HOME say. Every benchmark makes it
// (MakePrivateParent) before any of its sandboxes starts, and every
// agent's and grading's sandbox covers it whole, binding back only the
// run's own: so a private directory another benchmark makes there later
// is not in the view of a sandbox already running, as one in another
// $TMPDIR would be. It is never removed (a sandbox's cover is of the
// directory that was there when it started). "" where there is no
// UserHome: then private directories are made in the temporary
// directory, as before.
func PrivateParent() string {
	home := UserHome()
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".cache", "truss-bench")
}

// MakePrivateParent makes PrivateParent (mode 0700; one that exists must
// be a directory of the user's, not a link, and is narrowed to 0700) and
// returns it resolved (ResolvePath); "" when there is none.
func MakePrivateParent() (string, error) {
	p := PrivateParent()
	if p == "" {
		return "", nil
	}
	if err := os.MkdirAll(p, 0o700); err != nil {
		return "", fmt.Errorf("the benchmarks' private directories' parent: %w", err)
	}
	if err := ownDir(p); err != nil {
		return "", fmt.Errorf("the benchmarks' private directories' parent: %w", err)
	}
	return ResolvePath(p)
}

// PrivateDirIn is where a benchmark makes its private directory, given
// parent (MakePrivateParent's): the temporary directory ("") when it is
// /tmp or in it, as before — every sandbox has a /tmp of its own from its
// start, so nothing made in the real one later is in its view either, and
// the paths under it stay as short (a Unix socket's name holds 108
// bytes) — else parent.
func PrivateDirIn(parent string) string {
	if parent == "" || TempInTmp() {
		return ""
	}
	return parent
}

// TempInTmp reports whether the temporary directory, resolved
// (ResolvePath), is /tmp or in it, which every sandbox replaces with a
// /tmp of its own.
func TempInTmp() bool {
	t, err := ResolvePath(os.TempDir())
	if err != nil {
		return false
	}
	tmp, err := ResolvePath("/tmp")
	if err != nil {
		tmp = "/tmp"
	}
	return within(t, "/tmp") || within(t, tmp)
}

// PrivateCover is PrivateParent resolved, as sandboxes cover it; "" when
// there is none.
func PrivateCover() string {
	p := PrivateParent()
	if p == "" {
		return ""
	}
	if r, err := ResolvePath(p); err == nil {
		return r
	}
	return p
}

// lockName is the file in a private directory that its process holds
// locked (flock) for as long as it lives: a directory whose lock can be
// taken has no process left, and is stale.
const lockName = ".owner.lock"

// PrivateDir is a benchmark's private directory (mode 0700), held by this
// process through a lock the kernel releases when the process ends, however
// it ends: SweepStale tells a crashed benchmark's directory from a live one
// by it.
type PrivateDir struct {
	// Dir is the directory, absolute, its symbolic links resolved.
	Dir  string
	lock *os.File
	reg  *Registry
}

// MakePrivateDir makes a private directory named PrivatePrefix+"*" in
// parent ("" for the temporary directory), resolved (a parent that is a
// symbolic link gives a directory at the link's target), and takes its
// lock. With a registry it records the directory there (KnownPrivate)
// before it returns, so that every benchmark that reads the registry
// after hides it from its runs, whatever its temporary directory; Remove
// drops the record.
func MakePrivateDir(parent string, reg *Registry) (*PrivateDir, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	real, err := ResolvePath(parent)
	if err != nil {
		return nil, err
	}
	abs, err := os.MkdirTemp(real, PrivatePrefix)
	if err != nil {
		return nil, err
	}
	// The lock is taken under another name and then renamed into place,
	// so that a sweep never finds the lock file before it is held.
	tmp := filepath.Join(abs, lockName+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			err = os.Rename(tmp, filepath.Join(abs, lockName))
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(abs)
		return nil, fmt.Errorf("locking the benchmark's private directory %s: %w", abs, err)
	}
	p := &PrivateDir{Dir: abs, lock: f}
	if reg != nil {
		if err := reg.Add(KnownPrivate, abs); err != nil {
			p.Remove()
			return nil, fmt.Errorf("recording the benchmark's private directory among the paths benchmarks hide: %w", err)
		}
		p.reg = reg
	}
	return p, nil
}

// Remove removes the directory and everything in it, drops its record
// from the registry, then lets its lock go. Anything it could not remove
// is in the error; a directory left stays recorded (and hidden) until a
// sweep removes it.
func (p *PrivateDir) Remove() error {
	if p == nil || p.lock == nil {
		return nil
	}
	err := RemoveTree(p.Dir)
	if err == nil && p.reg != nil {
		err = p.reg.Remove(KnownPrivate, p.Dir)
	}
	p.lock.Close()
	p.lock = nil
	return err
}

// SweepStale removes the private directories in parent ("" for the
// temporary directory) and, with a registry, those it records
// (KnownPrivate, in any directory) whose process is gone: this user's
// directories named PrivatePrefix+"*" whose lock can be taken. A
// directory whose lock is held, or that has no lock (being made this
// instant, or made by an older Truss), is left alone. It returns the
// directories it removed; the error says what it could not remove.
func SweepStale(parent string, reg *Registry) (removed []string, err error) {
	if parent == "" {
		parent = os.TempDir()
	}
	var dirs []string
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), PrivatePrefix) {
			continue // a link is not followed: e.IsDir is false for it
		}
		dirs = append(dirs, filepath.Join(parent, e.Name()))
	}
	var errs []error
	if reg != nil {
		known, err := reg.All()
		if err != nil {
			errs = append(errs, err)
		}
		for _, k := range known {
			if k.Kind == KnownPrivate && strings.HasPrefix(filepath.Base(k.Path), PrivatePrefix) {
				dirs = append(dirs, k.Path)
			}
		}
	}
	seen := map[string]bool{}
	var gone []string
	for _, dir := range dirs {
		real, err := ResolvePath(dir)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		stale, err := staleDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if stale == nil {
			continue
		}
		err = RemoveTree(dir)
		stale.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
		gone = append(gone, real)
	}
	if reg != nil && len(gone) > 0 {
		if err := reg.Remove(KnownPrivate, gone...); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// staleDir returns dir's lock, taken, when dir is a stale private
// directory of this user's; nil when it is live, has no lock or is not
// this user's.
func staleDir(dir string) (*os.File, error) {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return nil, nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return nil, nil
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil // no lock: not ours to judge
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil // its process lives
		}
		return nil, fmt.Errorf("%s: taking its lock: %w", dir, err)
	}
	return f, nil
}

// RemoveTree removes dir and everything in it, making this user's
// read-only directories in it writable first when they refuse (Go's
// module cache makes its directories read-only).
func RemoveTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			// Opened without following a link: a directory an agent's
			// process swapped for a link since the walk listed it does
			// not make its target writable.
			if f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0); err == nil {
				f.Chmod(0o700)
				f.Close()
			}
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// TempCover is the temporary directory ($TMPDIR), resolved (ResolvePath:
// a $TMPDIR in /tmp that links elsewhere is judged by its target), that every
// agent's and every grading's sandbox covers whole, binding back only
// the run's own parts: there other benchmarks, live or crashed, keep
// their private directories, and other programs their files. It is ""
// where covering it would do nothing or cover too much: /tmp (each
// sandbox has a /tmp of its own already), the root, or a directory that
// holds the home directory.
func TempCover() string {
	t, err := ResolvePath(os.TempDir())
	if err != nil {
		return ""
	}
	tmp, err := ResolvePath("/tmp")
	if err != nil {
		tmp = "/tmp"
	}
	if t == "/" || within(t, "/tmp") || within(t, tmp) {
		return ""
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		if h, err := ResolvePath(home); err == nil {
			home = h
		}
		if within(home, t) {
			return ""
		}
	}
	return t
}

// within reports whether p is dir or a path under it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// LivePrivateDirs are the private directories the registry records
// (KnownPrivate) whose benchmark still runs (their lock is held), but for
// own: the benchmarks whose commands, started before this benchmark's
// paths were recorded, may read them (a sandbox's hidden paths are fixed
// when its shell starts).
func LivePrivateDirs(reg *Registry, own string) ([]string, error) {
	known, err := reg.All()
	if err != nil {
		return nil, err
	}
	var live []string
	for _, k := range known {
		if k.Kind != KnownPrivate || k.Path == own {
			continue
		}
		f, err := os.OpenFile(filepath.Join(k.Path, lockName), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue // gone
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			live = append(live, k.Path)
		}
	}
	return live, nil
}

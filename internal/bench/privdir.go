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

// lockName is the file in a private directory that its process holds
// locked (flock) for as long as it lives: a directory whose lock can be
// taken has no process left, and is stale.
const lockName = ".owner.lock"

// PrivateDir is a benchmark's private directory (mode 0700), held by this
// process through a lock the kernel releases when the process ends, however
// it ends: SweepStale tells a crashed benchmark's directory from a live one
// by it.
type PrivateDir struct {
	// Dir is the directory, absolute.
	Dir  string
	lock *os.File
}

// MakePrivateDir makes a private directory named PrivatePrefix+"*" in
// parent ("" for the temporary directory) and takes its lock.
func MakePrivateDir(parent string) (*PrivateDir, error) {
	dir, err := os.MkdirTemp(parent, PrivatePrefix)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		os.RemoveAll(dir)
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
	return &PrivateDir{Dir: abs, lock: f}, nil
}

// Remove removes the directory and everything in it, then lets its lock
// go. Anything it could not remove is in the error.
func (p *PrivateDir) Remove() error {
	if p == nil || p.lock == nil {
		return nil
	}
	err := RemoveTree(p.Dir)
	p.lock.Close()
	p.lock = nil
	return err
}

// SweepStale removes the private directories in parent ("" for the
// temporary directory) whose process is gone: this user's directories
// named PrivatePrefix+"*" whose lock can be taken. A directory whose lock
// is held, or that has no lock (being made this instant, or made by an
// older Truss), is left alone. It returns the directories it removed;
// the error says what it could not remove.
func SweepStale(parent string) (removed []string, err error) {
	if parent == "" {
		parent = os.TempDir()
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), PrivatePrefix) {
			continue // a link is not followed: e.IsDir is false for it
		}
		dir := filepath.Join(parent, e.Name())
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

// TempCover is the temporary directory ($TMPDIR), absolute, that every
// agent's and every grading's sandbox covers whole, binding back only
// the run's own parts: there other benchmarks, live or crashed, keep
// their private directories, and other programs their files. It is ""
// where covering it would do nothing or cover too much: /tmp (each
// sandbox has a /tmp of its own already), the root, or a directory that
// holds the home directory.
func TempCover() string {
	t, err := filepath.Abs(os.TempDir())
	if err != nil {
		return ""
	}
	real := t
	if r, err := filepath.EvalSymlinks(t); err == nil {
		real = r
	}
	if real == "/" || within(real, "/tmp") || within(t, "/tmp") {
		return ""
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			home = h
		}
		if within(home, real) || within(home, t) {
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

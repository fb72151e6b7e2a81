//go:build linux

package changes

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrStoreInRoot is the error (in a StoreError) of a content store
// directory inside a tracked root, where commands could rewrite the
// evidence of what they changed.
var ErrStoreInRoot = errors.New("is inside the tracked root")

// ErrStoreAltered says that a content read back from the store is not the
// content kept under its digest: something wrote the store's file. The
// change's before content is then recorded as unavailable, never wrong.
var ErrStoreAltered = errors.New("the kept copy failed its digest check (the content store was written by something else)")

// StoreError is an error of the content store's directory or file.
type StoreError struct {
	Dir string
	Err error
}

func (e *StoreError) Error() string { return "changes: content store " + e.Dir + ": " + e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// store keeps file contents by their SHA-256, each once, appended to one
// pack file in a private directory (a file per content would cost a file
// creation per file copied at the baseline). It holds at most max bytes;
// a content that does not fit is not kept. The pack has no name: it is
// made with O_TMPFILE (or unlinked as soon as it is made), so nothing
// can open it by path, and only the tracker's descriptor reaches it. Each
// read is checked against its digest all the same (ErrStoreAltered).
type store struct {
	f   *os.File
	max int64
	// dfd is the private directory, held open: the stat index's segments
	// are made in it too (tmpFile).
	dfd int
	dir string

	mu   sync.Mutex
	used int64
	// recent are the contents kept lately (recentMax at most), so that a
	// content put again is not kept twice. Where each content is kept is
	// remembered by the index entry that names it, not here: the store's
	// memory does not grow with the contents it keeps.
	recent map[[32]byte]span
}

// emptySum is the SHA-256 of no bytes.
var emptySum = sha256.Sum256(nil)

// span locates a content in the pack.
type span struct{ off, n int64 }

func newStore(dir string, max int64) (*store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	f, err := tmpFile(dfd, dir, "contents")
	if err != nil {
		unix.Close(dfd)
		return nil, err
	}
	return &store{f: f, dfd: dfd, dir: dir, max: max, recent: map[[32]byte]span{}}, nil
}

// tmpFile makes a file with no name in the directory dir (dfd, held
// open): O_TMPFILE, else a new file unlinked as soon as it is made. Only
// the descriptor returned reaches it, and it is gone when that is closed.
func tmpFile(dfd int, dir, kind string) (*os.File, error) {
	fd, err := unix.Openat(dfd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		// No O_TMPFILE on this file system: a new file, unlinked at once.
		var rnd [8]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return nil, err
		}
		name := kind + "-" + hex.EncodeToString(rnd[:]) + ".tmp"
		fd, err = unix.Openat(dfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, &os.PathError{Op: "create", Path: filepath.Join(dir, name), Err: err}
		}
		if err := unix.Unlinkat(dfd, name, 0); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "unlink", Path: filepath.Join(dir, name), Err: err}
		}
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, "("+kind+")")), nil
}

// recentMax bounds the digests the store remembers to keep a content
// once: past it they are forgotten, and a content written again may be
// kept twice (within max).
const recentMax = 4096

// put keeps b under its digest sum and reports whether and where it is
// kept (now or before). An empty content is always "kept": it needs no
// bytes. Where a content is kept is its entry's to remember (get).
func (s *store) put(sum [32]byte, b []byte) (span, bool, error) {
	if len(b) == 0 {
		return span{}, true, nil
	}
	s.mu.Lock()
	if sp, ok := s.recent[sum]; ok {
		s.mu.Unlock()
		return sp, true, nil
	}
	if s.used+int64(len(b)) > s.max {
		s.mu.Unlock()
		return span{}, false, nil
	}
	sp := span{off: s.used, n: int64(len(b))}
	s.used += sp.n // reserved; the bytes are written outside the lock
	s.mu.Unlock()
	if _, err := s.f.WriteAt(b, sp.off); err != nil {
		return span{}, false, fmt.Errorf("content store: %w", err)
	}
	s.mu.Lock()
	if len(s.recent) >= recentMax {
		clear(s.recent)
	}
	s.recent[sum] = sp
	s.mu.Unlock()
	return sp, true, nil
}

// get returns the content kept under sum at sp, re-hashed: ok is false
// when it is not kept; a content that does not hash to sum is
// ErrStoreAltered.
func (s *store) get(sum [32]byte, sp span) ([]byte, bool, error) {
	if sum == emptySum {
		return []byte{}, true, nil
	}
	if sp.n <= 0 {
		return nil, false, nil
	}
	b := make([]byte, sp.n)
	if _, err := s.f.ReadAt(b, sp.off); err != nil {
		return nil, false, fmt.Errorf("content store: %w", err)
	}
	if sha256.Sum256(b) != sum {
		return nil, false, ErrStoreAltered
	}
	return b, true, nil
}

// close closes the pack, which, having no name, is gone with it.
func (s *store) close() error {
	unix.Close(s.dfd)
	return s.f.Close()
}

// tmpFile makes a file with no name in the store's directory.
func (s *store) tmpFile(kind string) (*os.File, error) { return tmpFile(s.dfd, s.dir, kind) }

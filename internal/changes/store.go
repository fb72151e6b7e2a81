package changes

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// store keeps file contents by their SHA-256 in a private directory, one
// file per content (dir/ab/cdef…), each written once and atomically. It
// holds at most max bytes; a content that does not fit is not kept.
type store struct {
	dir string
	max int64

	mu   sync.Mutex
	used int64
	has  map[[32]byte]bool
}

func newStore(dir string, max int64) (*store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("content store: %w", err)
	}
	return &store{dir: dir, max: max, has: map[[32]byte]bool{}}, nil
}

func (s *store) file(sum [32]byte) string {
	h := hex.EncodeToString(sum[:])
	return filepath.Join(s.dir, h[:2], h[2:])
}

// put keeps b under its digest sum and reports whether it is kept (now or
// before). An empty content is always "kept": it needs no bytes.
func (s *store) put(sum [32]byte, b []byte) (bool, error) {
	if len(b) == 0 {
		return true, nil
	}
	s.mu.Lock()
	if s.has[sum] {
		s.mu.Unlock()
		return true, nil
	}
	if s.used+int64(len(b)) > s.max {
		s.mu.Unlock()
		return false, nil
	}
	s.used += int64(len(b)) // reserved: a failed write gives it back
	s.mu.Unlock()
	err := s.write(sum, b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.used -= int64(len(b))
		return false, err
	}
	if s.has[sum] { // written twice at once
		s.used -= int64(len(b))
	}
	s.has[sum] = true
	return true, nil
}

func (s *store) write(sum [32]byte, b []byte) error {
	p := s.file(sum)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("content store: %w", err)
	}
	return nil
}

// get returns the content kept under sum; ok is false when it is not kept.
func (s *store) get(sum [32]byte) ([]byte, bool, error) {
	if sum == emptySum {
		return []byte{}, true, nil
	}
	s.mu.Lock()
	kept := s.has[sum]
	s.mu.Unlock()
	if !kept {
		return nil, false, nil
	}
	b, err := os.ReadFile(s.file(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("content store: %x was kept but its file is gone", sum[:8])
	}
	if err != nil {
		return nil, false, fmt.Errorf("content store: %w", err)
	}
	return b, true, nil
}

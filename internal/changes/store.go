package changes

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// store keeps file contents by their SHA-256, each once, appended to one
// pack file in a private directory (a file per content would cost a file
// creation per file copied at the baseline). It holds at most max bytes;
// a content that does not fit is not kept. The pack is the tracker's
// own: it is read back only by the tracker, and each read is checked
// against its digest.
type store struct {
	f   *os.File
	max int64

	mu   sync.Mutex
	used int64
	at   map[[32]byte]span
}

// emptySum is the SHA-256 of no bytes.
var emptySum = sha256.Sum256(nil)

// span locates a content in the pack.
type span struct{ off, n int64 }

func newStore(dir string, max int64) (*store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("content store: %w", err)
	}
	f, err := os.CreateTemp(dir, "contents-*.pack")
	if err != nil {
		return nil, fmt.Errorf("content store: %w", err)
	}
	return &store{f: f, max: max, at: map[[32]byte]span{}}, nil
}

// put keeps b under its digest sum and reports whether it is kept (now or
// before). An empty content is always "kept": it needs no bytes.
func (s *store) put(sum [32]byte, b []byte) (bool, error) {
	if len(b) == 0 {
		return true, nil
	}
	s.mu.Lock()
	if _, ok := s.at[sum]; ok {
		s.mu.Unlock()
		return true, nil
	}
	if s.used+int64(len(b)) > s.max {
		s.mu.Unlock()
		return false, nil
	}
	sp := span{off: s.used, n: int64(len(b))}
	s.used += sp.n // reserved; the bytes are written outside the lock
	s.mu.Unlock()
	if _, err := s.f.WriteAt(b, sp.off); err != nil {
		return false, fmt.Errorf("content store: %w", err)
	}
	s.mu.Lock()
	if _, ok := s.at[sum]; !ok {
		s.at[sum] = sp
	}
	s.mu.Unlock()
	return true, nil
}

// get returns the content kept under sum; ok is false when it is not kept.
func (s *store) get(sum [32]byte) ([]byte, bool, error) {
	if sum == emptySum {
		return []byte{}, true, nil
	}
	s.mu.Lock()
	sp, ok := s.at[sum]
	s.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	b := make([]byte, sp.n)
	if _, err := s.f.ReadAt(b, sp.off); err != nil {
		return nil, false, fmt.Errorf("content store: %w", err)
	}
	if got := sha256.Sum256(b); !bytes.Equal(got[:], sum[:]) {
		return nil, false, fmt.Errorf("content store: the content of %x was changed in %s", sum[:8], filepath.Base(s.f.Name()))
	}
	return b, true, nil
}

// close closes and removes the pack.
func (s *store) close() error {
	s.f.Close()
	return os.Remove(s.f.Name())
}

//go:build !linux

package changes

import (
	"context"
	"errors"
	"sync"

	"github.com/trussdev/truss/internal/tool"
)

// ErrUnsupported is Open's error where changes cannot be tracked: the
// tracker reads directories with Linux's getdents64 and follows them with
// inotify.
var ErrUnsupported = errors.New("changes: finding the files commands change needs Linux")

// A Tracker finds the changes made in a set of roots; on this system none
// can be made (Open fails).
type Tracker struct {
	mu        sync.Mutex
	scanAfter []tool.Op
}

// Open fails with ErrUnsupported on this system.
func Open(ctx context.Context, roots []string, opts Options) (*Tracker, error) {
	return nil, ErrUnsupported
}

// Ready returns ErrUnsupported.
func (t *Tracker) Ready(ctx context.Context) error { return ErrUnsupported }

// Scan returns ErrUnsupported.
func (t *Tracker) Scan(ctx context.Context) ([]tool.FileChange, error) { return nil, ErrUnsupported }

// ScanAll returns ErrUnsupported.
func (t *Tracker) ScanAll(ctx context.Context) ([]tool.FileChange, error) { return nil, ErrUnsupported }

// Note does nothing.
func (t *Tracker) Note(changes []tool.FileChange) {}

func (t *Tracker) note(changes []tool.FileChange) {}

// Close does nothing.
func (t *Tracker) Close() error { return nil }

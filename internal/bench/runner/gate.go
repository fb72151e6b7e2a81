package runner

import (
	"context"
	"sync"
	"time"
)

// Gate is a provider's concurrency cap and shared backoff: at most Cap
// runs of the provider at once, and a backoff any run reports holds every
// run's next request.
type Gate struct {
	slots chan struct{}
	now   func() time.Time

	mu    sync.Mutex
	until time.Time
}

// NewGate returns a gate letting n runs in at once (n < 1 means 1).
func NewGate(n int) *Gate {
	return &Gate{slots: make(chan struct{}, max(n, 1)), now: time.Now}
}

// Acquire takes a slot, waiting for one; release gives it back.
func (g *Gate) Acquire(ctx context.Context) (release func(), err error) {
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-g.slots }) }, nil
}

// Wait implements RateLimit.
func (g *Gate) Wait(ctx context.Context) error {
	for {
		g.mu.Lock()
		d := g.until.Sub(g.now())
		g.mu.Unlock()
		if d <= 0 {
			return ctx.Err()
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// Backoff implements RateLimit.
func (g *Gate) Backoff(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if u := g.now().Add(d); u.After(g.until) {
		g.until = u
	}
}

package tui

import (
	"context"
	"sync"
)

// queue carries what the session's goroutines report to the UI's: events
// and approval requests. A push never blocks (the agent loop must not wait
// for a frame to be drawn); the UI takes everything queued at once, so a
// burst of streamed deltas costs one update, not one each.
type queue struct {
	mu    sync.Mutex
	items []item
	ready chan struct{} // holds a token while items is not empty
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

// item is one thing queued: an event, an approval request, or the
// withdrawal of a request whose context ended.
type item struct {
	ev        *event
	approval  *approval
	withdrawn int    // id of a withdrawn approval
	note      string // a line from the UI's own goroutines (an attachment's report)
}

func (q *queue) push(it item) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take returns everything queued, waiting until there is something or ctx
// ends (then it returns nil).
func (q *queue) take(ctx context.Context) []item {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			its := q.items
			q.items = nil
			q.mu.Unlock()
			return its
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil
		}
	}
}

// drain returns what is queued without waiting.
func (q *queue) drain() []item {
	q.mu.Lock()
	defer q.mu.Unlock()
	its := q.items
	q.items = nil
	return its
}

// inflight counts the session calls the UI has started (turns, commands),
// so that Run returns only after every one has returned.
type inflight struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      int
	closed bool
}

func newInflight() *inflight {
	f := &inflight{}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// begin reports whether a call may start (false once closed).
func (f *inflight) begin() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.n++
	return true
}

func (f *inflight) end() {
	f.mu.Lock()
	f.n--
	f.mu.Unlock()
	f.cond.Broadcast()
}

// closeAndWait refuses new calls and waits for the started ones.
func (f *inflight) closeAndWait() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for f.n > 0 {
		f.cond.Wait()
	}
}

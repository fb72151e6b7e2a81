package harness

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"sync"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/tool"
)

// The first request leaves first. A model request needs the prompt (the
// project's instructions read safely, the trust decision made), the tool
// declarations (MCP tools and the container's details included) and the
// provider's client; Open prepares those before it returns. What the
// request does not carry — the session's meta.json, the signing key, the
// ledger's files and its session.start entry, which waits for the
// repository's state from git — is prepared in the background while the
// request is on its way and the model thinks (preparation). Until the
// preparation is done:
//
//   - every event of the loop is held, in order, and given to the
//     session's observers (the ledger's recorder first, the transcript,
//     the user's) once it is: the ledger's entries come in the order and
//     with the content a sequential start gives them, and the request's
//     bytes reach the ledger with the response that carries them;
//   - a tool call waits for it before anything runs (the change tracker's
//     baseline it needs is waited for by the tracker itself);
//   - Info names the ledger's directory, which is decided before.
//
// When the preparation fails, the run is cancelled, the held events are
// dropped, Run returns the preparation's error as Open would have, and
// Close removes the session as it removes one whose Open failed.

// startGate holds the session's background work — the preparation, the
// change tracker's baseline, the repository's state from git — until the
// first model request has left (its bytes written to the connection, or,
// for a model in the process, its first answer), so that none of it
// competes with building and sending the request for the machine's CPUs:
// it runs while the model thinks. Whatever waits for that work opens the
// gate first (a tool call, the end of Run, VerifyLedger, Validate,
// Compact), so no wait depends on a request being sent. Close opens it
// with closeUnopened: when nothing opened it before, the work is not
// done (no ledger, no repository state), as the session did nothing to
// record. A nil gate is open.
type startGate struct {
	ch   chan struct{}
	once sync.Once
	// unused: the gate was opened by closing, nothing having needed the
	// background work (closeUnopened); read once ch is closed.
	unused bool
}

func newStartGate() *startGate { return &startGate{ch: make(chan struct{})} }

// open opens the gate; later calls do nothing.
func (g *startGate) open() {
	if g != nil {
		g.once.Do(func() { close(g.ch) })
	}
}

// closeUnopened opens the gate for a session that closes and reports
// whether nothing had opened it before: no request left, no call ran and
// nothing waited for the preparation, so the session did nothing worth
// preparing (closed reads it). Later calls of open do nothing.
func (g *startGate) closeUnopened() bool {
	if g == nil {
		return false
	}
	unused := false
	g.once.Do(func() {
		g.unused, unused = true, true
		close(g.ch)
	})
	return unused
}

// closed reports whether the gate, now open, was opened by closeUnopened.
func (g *startGate) closed() bool { return g != nil && g.unused }

// wait waits until the gate is open or ctx is done.
func (g *startGate) wait(ctx context.Context) {
	if g == nil {
		return
	}
	select {
	case <-g.ch:
	case <-ctx.Done():
	}
}

// held is the channel the gate closes when it opens, nil for a nil gate
// (changes.Options.Defer: not held).
func (g *startGate) held() <-chan struct{} {
	if g == nil {
		return nil
	}
	return g.ch
}

// sentTrace is ctx with an HTTP trace that opens the gate when a request's
// bytes have been written: the first model request has left.
func (g *startGate) sentTrace(ctx context.Context) context.Context {
	if g == nil {
		return ctx
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { g.open() }})
}

// preparation is the session's background preparation.
type preparation struct {
	done chan struct{} // closed when it ended, after its events were given on
	err  error         // set before done is closed
	// skipped: the session closed before anything needed the
	// preparation, which then prepared nothing (set before done is
	// closed).
	skipped bool
}

// prepare starts the preparation: the ledger, when one is written. With
// sequential (a test's comparison) it runs to its end first and its error
// is returned, as Open returned it before preparations ran in the
// background. hold is released with the session's recorder first.
func (s *Session) prepare(hold *heldObserver) error {
	p := &preparation{done: make(chan struct{})}
	s.prep = p
	s.ledgerDir = s.plannedLedgerDir()
	run := func() {
		defer close(p.done)
		s.start.wait(s.life)
		if s.start.closed() {
			// The session closes having done nothing that needed it (no
			// task, no check, no ledger verified): no ledger, so no run
			// that never ended; a created session is removed by Close.
			p.skipped = true
			hold.drop()
			return
		}
		if s.opts.prepGate != nil {
			<-s.opts.prepGate
		}
		if p.err = s.saveMeta(); p.err == nil {
			p.err = s.openLedger(s.ledgerDir)
		}
		if p.err != nil {
			hold.drop()
			return
		}
		var first agent.Observer
		if s.rec != nil {
			first = s.rec
		}
		hold.release(first)
	}
	if s.opts.sequentialStart {
		s.start.open()
		run()
		return p.err
	}
	go run()
	return nil
}

// prepared waits until the preparation is done and returns its error; nil
// at once when there is none. It opens the start gate: the caller needs
// the preparation now. ctx bounds the wait only.
func (s *Session) prepared(ctx context.Context) error {
	s.start.open()
	p := s.prep
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prepFailed reports whether the preparation ended with an error; false
// while it runs.
func (s *Session) prepFailed() bool {
	p := s.prep
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return p.err != nil
	default:
		return false
	}
}

// heldObserver holds the events it observes until it is released, then
// gives them, in order, to the released observers and passes every later
// event on; dropped, it discards them and every later one. Observe may be
// called from several goroutines; the events are given on one at a time.
type heldObserver struct {
	mu      sync.Mutex
	held    []agent.Event
	next    agent.Observer // set by release
	dropped bool
	rest    agent.Observer // the observers after the released one
}

// Observe implements agent.Observer.
func (h *heldObserver) Observe(ev agent.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.dropped:
	case h.next == nil:
		h.held = append(h.held, ev)
	default:
		h.next.Observe(ev)
	}
}

// release gives the held events to first (when not nil), then the rest,
// and passes every later event on the same way.
func (h *heldObserver) release(first agent.Observer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := h.rest
	if first != nil {
		next = agent.Observers{first, h.rest}
	}
	for _, ev := range h.held {
		next.Observe(ev)
	}
	h.held, h.next = nil, next
}

// drop discards the held events and every later one.
func (h *heldObserver) drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held, h.dropped = nil, true
}

// preparedExec is the top agent's executor: each call waits until the
// session's preparation is done, and fails without running when the
// preparation failed (the run is being cancelled then). The executor's
// optional capabilities are looked up through it (tool.Wrapper).
type preparedExec struct {
	tool.Executor
	s *Session
}

// Execute implements tool.Executor.
func (p preparedExec) Execute(ctx context.Context, call tool.Call) tool.Result {
	if err := p.s.prepared(ctx); err != nil {
		return tool.Failed(call, &tool.Error{Kind: tool.ErrCanceled, Message: fmt.Sprintf("the call was not run: the session could not be prepared: %v", err), Err: err})
	}
	return p.Executor.Execute(ctx, call)
}

// Unwrap implements tool.Wrapper.
func (p preparedExec) Unwrap() tool.Executor { return p.Executor }

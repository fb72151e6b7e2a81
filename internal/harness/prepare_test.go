package harness

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/tool"
)

// TestHeldObserver: events wait until the release, then reach the
// released observer first and the rest after, in the order observed, and
// every later event passes on; dropped, nothing reaches them.
func TestHeldObserver(t *testing.T) {
	var got []string
	obs := func(name string) agent.Observer {
		return agent.ObserverFunc(func(ev agent.Event) { got = append(got, name+":"+string(ev.Type)) })
	}
	h := &heldObserver{rest: obs("rest")}
	h.Observe(agent.Event{Type: agent.EventUser})
	h.Observe(agent.Event{Type: agent.EventResponse})
	if len(got) != 0 {
		t.Fatalf("held events were given on: %v", got)
	}
	h.release(obs("ledger"))
	h.Observe(agent.Event{Type: agent.EventRunCompleted})
	want := []string{"ledger:user", "rest:user", "ledger:response", "rest:response", "ledger:run_completed", "rest:run_completed"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	got = nil
	d := &heldObserver{rest: obs("rest")}
	d.Observe(agent.Event{Type: agent.EventUser})
	d.drop()
	d.Observe(agent.Event{Type: agent.EventRunCompleted})
	if len(got) != 0 {
		t.Errorf("a dropped observer gave events on: %v", got)
	}
}

// TestPreparedExec: a call waits for the preparation and runs after it;
// when the preparation failed, it fails without running; a call whose
// context ends while it waits is cancelled.
func TestPreparedExec(t *testing.T) {
	ran := 0
	inner := tool.ExecutorFunc(func(ctx context.Context, c tool.Call) tool.Result { ran++; return tool.Result{CallID: c.ID} })
	for _, tc := range []struct {
		name string
		err  error
	}{{"prepared", nil}, {"failed", errors.New("no key")}} {
		t.Run(tc.name, func(t *testing.T) {
			ran = 0
			s := &Session{prep: &preparation{done: make(chan struct{})}}
			x := preparedExec{inner, s}
			res := make(chan tool.Result)
			go func() { res <- x.Execute(context.Background(), tool.Call{ID: "c"}) }()
			select {
			case r := <-res:
				t.Fatalf("the call ran before the preparation ended: %+v", r)
			case <-time.After(50 * time.Millisecond):
			}
			s.prep.err = tc.err
			close(s.prep.done)
			r := <-res
			if tc.err == nil && (r.Err != nil || ran != 1) {
				t.Errorf("result %+v, ran %d times; want it run once", r, ran)
			}
			if tc.err != nil && (r.Err == nil || r.Err.Kind != tool.ErrCanceled || ran != 0) {
				t.Errorf("result %+v, ran %d times; want a cancelled result, not run", r, ran)
			}
		})
	}
	s := &Session{prep: &preparation{done: make(chan struct{})}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := (preparedExec{inner, s}).Execute(ctx, tool.Call{ID: "c"}); r.Err == nil || ran != 0 {
		t.Errorf("a cancelled wait: %+v", r)
	}
}

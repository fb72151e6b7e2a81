package harness

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestStartGate: Open leaves the background work — the signing key and
// the ledger's files, the change tracker's baseline — for after the first
// request has left; a file made between Open and Run is part of the
// baseline, not a change of the model's; and the ledger verifies.
func TestStartGate(t *testing.T) {
	o := fixture(t, `{"steps": [{"actions": [{"kind": "run", "command": "true"}]}, {"say": "Done."}]}`)
	gitRepo(t, o.Root)
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Given time to run (it takes milliseconds when not held), the
	// preparation must still be waiting.
	select {
	case <-s.prep.done:
		t.Error("the preparation ran before the first request")
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := os.Stat(filepath.Join(o.KeyDir, "ledger.key")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the signing key was made before the first request (%v)", err)
	}
	if err := os.WriteFile(filepath.Join(o.Root, "early.txt"), []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(ctx, "Run true.")
	if err != nil {
		t.Fatal(err)
	}
	if out.Changed != 0 {
		t.Errorf("%d changes: a file made before the first request is the baseline's", out.Changed)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	verified(t, o.KeyDir, out.LedgerDir)
}

// TestStartGateOpens: the gate opens when an HTTP request's bytes have
// been written under sentTrace's context, and once only; a nil gate is
// open.
func TestStartGateOpens(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	g := newStartGate()
	req, err := http.NewRequestWithContext(g.sentTrace(context.Background()), "POST", srv.URL, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.held():
		t.Fatal("open before any request")
	default:
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-g.held():
	default:
		t.Fatal("still closed after the request was written")
	}
	g.open() // again: nothing
	var none *startGate
	none.open()
	none.wait(context.Background())
	if none.held() != nil {
		t.Error("a nil gate holds")
	}
}

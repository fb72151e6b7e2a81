package approval

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// TestQueue: a user interface receives each question and its answer
// decides the call; two open questions are answered independently; a
// canceled call withdraws its question.
func TestQueue(t *testing.T) {
	q := NewQueue()
	box, esc := &fakeShell{name: "sandbox"}, &fakeShell{name: "escalated"}
	g := Wrap(box, OnRequest, q, esc)
	var wg sync.WaitGroup
	results := map[string]tool.Result{}
	var mu sync.Mutex
	for _, cmd := range []string{"curl a", "curl b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := g.Execute(t.Context(), execCall(cmd, true))
			mu.Lock()
			results[cmd] = r
			mu.Unlock()
		}()
	}
	open := []*Question{<-q.Questions(), <-q.Questions()}
	for _, qu := range open {
		if qu.Command == "curl a" {
			qu.Answer(ApproveSession)
			qu.Answer(Deny) // a second answer does not count
		} else {
			qu.Answer(Deny)
		}
	}
	wg.Wait()
	if results["curl a"].Stdout != "escalated" || results["curl b"].Err == nil {
		t.Fatalf("results %+v", results)
	}
	for _, qu := range open {
		<-qu.Withdrawn() // closed once answered too
	}

	// A canceled call withdraws its open question.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan tool.Result)
	go func() { done <- g.Execute(ctx, execCall("curl c", true)) }()
	qu := <-q.Questions()
	cancel()
	<-qu.Withdrawn()
	qu.Answer(Approve) // too late: ignored
	if r := <-done; r.Err == nil || r.Err.Kind != tool.ErrCanceled {
		t.Fatalf("canceled: %+v", r)
	}
	// Nobody listening: a canceled call does not wait to deliver.
	ctx2, cancel2 := context.WithCancel(t.Context())
	cancel2()
	if _, err := q.Approve(ctx2, Request{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
	if cmds := esc.commands(); len(cmds) != 1 {
		t.Errorf("escalated ran %v", cmds)
	}
}

package agent_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

// meeting is an executor whose concurrent calls wait until all of them
// have started, so that calls run in order would never meet; it counts the
// calls that were running at once.
type meeting struct {
	concurrent map[string]bool // by tool name
	want       int

	mu      sync.Mutex
	running int
	most    int
	all     chan struct{}
	arrived int
}

func (m *meeting) Concurrent(c tool.Call) bool { return m.concurrent[c.Tool] }

func (m *meeting) Execute(ctx context.Context, c tool.Call) tool.Result {
	m.mu.Lock()
	m.running++
	m.most = max(m.most, m.running)
	m.arrived++
	if m.arrived == m.want {
		close(m.all)
	}
	m.mu.Unlock()
	if m.concurrent[c.Tool] {
		select { // a call run alone goes on after a while
		case <-m.all:
		case <-time.After(500 * time.Millisecond):
		}
	}
	m.mu.Lock()
	m.running--
	m.mu.Unlock()
	return tool.Result{CallID: c.ID, Op: c.Op, Output: "done"}
}

// TestExecutorSaysWhichCallsRunAtOnce checks that the loop asks the
// executor (tool.ConcurrentExecutor) whether a turn's calls may run at
// once: all concurrent ones run together, one that is not makes the turn
// run in order.
func TestExecutorSaysWhichCallsRunAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name       string
		concurrent map[string]bool
		most       int
	}{
		{"all read-only", map[string]bool{"a": true, "b": true}, 2},
		{"one mutating", map[string]bool{"a": true, "b": false}, 1},
		{"none says", map[string]bool{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := []model.Item{
				{Kind: model.KindToolCall, Call: &model.ToolCall{ID: "1", Name: "a", Input: "{}"}},
				{Kind: model.KindToolCall, Call: &model.ToolCall{ID: "2", Name: "b", Input: "{}"}},
			}
			p := &scripted{responses: []*model.Response{{Items: calls}, {Items: []model.Item{{Kind: model.KindAssistant, Text: "ok"}}}}}
			set, err := surface.NewSet("test", panicky{name: "a", op: tool.OpMCP}, panicky{name: "b", op: tool.OpMCP})
			if err != nil {
				t.Fatal(err)
			}
			ex := &meeting{concurrent: tc.concurrent, want: 2, all: make(chan struct{})}
			out := agent.New(agent.Config{Provider: p, Tools: set, Exec: ex}, nil).Run(context.Background(), "go")
			if out.Status != agent.StatusCompleted {
				t.Fatalf("status %s: %s", out.Status, out.Reason)
			}
			if ex.most != tc.most {
				t.Errorf("%d calls ran at once, want %d", ex.most, tc.most)
			}
		})
	}
}

// recording is an executor that notes each call it runs, and an observer
// that notes each completion, in one log.
type recording struct {
	mu  sync.Mutex
	log []string
}

func (r *recording) Execute(ctx context.Context, c tool.Call) tool.Result {
	r.mu.Lock()
	r.log = append(r.log, "run "+c.ID)
	r.mu.Unlock()
	return tool.Result{CallID: c.ID, Op: c.Op, Output: "done"}
}

func (r *recording) Observe(ev agent.Event) {
	if ev.Type == agent.EventCallCompleted {
		r.mu.Lock()
		r.log = append(r.log, "completed "+ev.Call.ID)
		r.mu.Unlock()
	}
}

// TestCallsInOrderReportedOneByOne: calls that run in order (edits) are
// each reported before the next runs, so that the file contents a call's
// result carries to the ledger are let go before the next call reads its
// file: a turn of thirty edits holds one edit's contents, not thirty.
func TestCallsInOrderReportedOneByOne(t *testing.T) {
	calls := []model.Item{
		{Kind: model.KindToolCall, Call: &model.ToolCall{ID: "1", Name: "a", Input: "{}"}},
		{Kind: model.KindToolCall, Call: &model.ToolCall{ID: "2", Name: "a", Input: "{}"}},
		{Kind: model.KindToolCall, Call: &model.ToolCall{ID: "3", Name: "a", Input: "{}"}},
	}
	p := &scripted{responses: []*model.Response{{Items: calls}, {Items: []model.Item{{Kind: model.KindAssistant, Text: "ok"}}}}}
	set, err := surface.NewSet("test", panicky{name: "a", op: tool.OpMCP})
	if err != nil {
		t.Fatal(err)
	}
	r := &recording{}
	out := agent.New(agent.Config{Provider: p, Tools: set, Exec: r, Observer: r}, nil).Run(context.Background(), "go")
	if out.Status != agent.StatusCompleted {
		t.Fatalf("status %s: %s", out.Status, out.Reason)
	}
	want := []string{"run 1", "completed 1", "run 2", "completed 2", "run 3", "completed 3"}
	if !slices.Equal(r.log, want) {
		t.Errorf("got %v, want %v", r.log, want)
	}
}

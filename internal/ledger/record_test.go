package ledger

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// BenchmarkRecordTurn records one turn as the loop reports it: a response
// whose request has 40 cached parts, one view call with a 6 KB result, and
// the turn's checkpoint.
func BenchmarkRecordTurn(b *testing.B) {
	s, _ := newKey(b, "truss/bench")
	w, _ := Create(filepath.Join(b.TempDir(), "l"), "S", s)
	rec, _ := NewRecorder(w, Start{Model: "m"})
	defer func() { rec.Close(); w.Close() }()
	var parts [][]byte
	var digests []string
	for i := 0; i < 40; i++ {
		p := []byte(fmt.Sprintf(`{"role":"user","content":"message %d %s"}`, i, strings.Repeat("x", 2000)))
		parts, digests = append(parts, p), append(digests, tool.Digest(p))
	}
	call := &model.ToolCall{ID: "toolu_1", Name: "str_replace_based_edit_tool", Kind: model.ToolTyped, Type: "tool_use", Input: `{"command":"view","path":"/repo/stats.go"}`}
	text := strings.Repeat("     1\tpackage stats // a line of code\n", 150)
	resp := &model.Response{ID: "msg_1", Model: "m", StopReason: model.StopToolUse, Attempts: 1,
		Items: []model.Item{{Kind: model.KindAssistant, Text: "Reading."}, {Kind: model.KindToolCall, Call: call}},
		Wire:  &model.Wire{Parts: parts, Digests: digests, Response: []byte(strings.Repeat("event: x\ndata: {}\n\n", 30))}}
	ops := []tool.Call{{ID: "toolu_1", Op: tool.OpView, Surface: "anthropic", Args: &tool.ViewArgs{Path: "/repo/stats.go"}}}
	results := []tool.Result{{CallID: "toolu_1", Op: tool.OpView, Output: text}}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		rec.Observe(agent.Event{Type: agent.EventResponse, Turn: i, Response: resp})
		rec.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: i, Call: call, Ops: ops, Results: results,
			Result: &model.ToolResult{CallID: "toolu_1", Text: text}, FullText: text})
		rec.Observe(agent.Event{Type: agent.EventTurnCompleted, Turn: i})
	}
}

// TestRecorderDefer: events wait at most Defer, not for the run's end: a
// long tool call's events reach the ledger while it runs.
func TestRecorderDefer(t *testing.T) {
	s, _ := newKey(t, "truss/test")
	w, err := Create(filepath.Join(t.TempDir(), "l"), "S", s)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := NewRecorder(w, Start{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	rec.Observe(agent.Event{Type: agent.EventUser, Items: []model.Item{{Kind: model.KindUser, Text: "task"}}})
	for w.Size() < 2 {
		time.Sleep(time.Millisecond) // the test's deadline bounds the wait
	}
	rec.Close()
	w.Close()
}

package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

func TestDepth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`1`, 0}, {`"[{"`, 0}, {`[]`, 1}, {`{"a":[1,{"b":"]]"}]}`, 3}, {`["\"[" ,[[]]]`, 3}, {`"\\\\"`, 0}, {`["\\\\",[]]`, 2},
	} {
		if got := Depth([]byte(tc.in)); got != tc.want {
			t.Errorf("Depth(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// nested is JSON arrays nested n deep.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// The model chooses a call's arguments: nested as deep as a decoder
// reads, they must not make the ledger unreadable. They are recorded
// omitted, the input payload keeps them, and the ledger verifies.
func TestDeepArgumentsKeepTheLedgerReadable(t *testing.T) {
	dir := t.TempDir()
	s, vkey := newKey(t, "truss/test")
	w, err := Create(dir, "sess", s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorder(w, Start{Truss: "test"})
	if err != nil {
		t.Fatal(err)
	}
	deep := nested(9998)
	r.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: 1,
		Call:    &model.ToolCall{ID: "c1", Name: "mcp__x__y", Input: deep},
		Ops:     []tool.Call{{Op: "mcp", Args: json.RawMessage(deep)}},
		Results: []tool.Result{{Op: "mcp"}},
		Result:  &model.ToolResult{CallID: "c1", Text: "ok"}, FullText: "ok"})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append("x", map[string]any{"a": json.RawMessage(nested(MaxDataDepth))}, nil); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("data nested past MaxDataDepth: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, entries, err := Verify(dir, vkey)
	if err != nil {
		t.Fatalf("the ledger does not verify: %v", err)
	}
	var found bool
	for _, e := range entries {
		if e.Type == "tool.call" {
			found = strings.Contains(fmt.Sprint(e.Data), "omitted")
		}
	}
	if !found {
		t.Fatalf("the deep arguments are not recorded as omitted: %v", entries)
	}
}

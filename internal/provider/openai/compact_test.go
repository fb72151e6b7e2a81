package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/model"
)

// TestStatefulAfterCompaction: in stateful mode, the first request after a
// compaction is sent whole, without previous_response_id (the server holds
// the earlier responses with the replaced history), and the strict
// simulator plays on from the step the conversation was at; the request
// after it chains again, to the response of that first one.
func TestStatefulAfterCompaction(t *testing.T) {
	var steps []string
	for i := range 10 {
		steps = append(steps, fmt.Sprintf(`{"say": "Answer %d. %s"}`, i, strings.Repeat("words ", 40)))
	}
	srv, base := serve(t, `{"steps": [`+strings.Join(steps, ",")+`], "compaction": {"say": "We talked six times."}}`)
	c := New(Config{BaseURL: base, Retry: fast, Stateful: true})
	turn := func(items []model.Item) []model.Item {
		t.Helper()
		resp, err := c.Turn(t.Context(), &model.Request{Model: "gpt-5.2", Items: items}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return append(items, resp.Items...)
	}
	items := []model.Item{{Kind: model.KindUser, Text: "TASK: talk"}}
	for i := range 6 {
		items = turn(items)
		items = append(items, model.Item{Kind: model.KindUser, Text: fmt.Sprintf("go on %d", i)})
	}
	if last := srv.Requests()[len(srv.Requests())-1]; !strings.Contains(string(last.Body), "previous_response_id") {
		t.Fatal("the conversation is not chained before the compaction")
	}
	cp := &compact.Compactor{Provider: c, Model: "gpt-5.2", KeepTokens: 150}
	out, rec, err := cp.Compact(t.Context(), items, compact.ReasonAuto)
	if err != nil {
		t.Fatal(err)
	}
	if kept := len(items) - rec.Cut; kept < 2 {
		t.Fatalf("the compaction kept %d items, want a kept response", kept)
	}
	out = turn(out)
	reqs := srv.Requests()
	first := reqs[len(reqs)-1]
	var body struct {
		Previous string            `json:"previous_response_id"`
		Input    []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(first.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Previous != "" || len(body.Input) != len(out)-1 || first.Status != 200 {
		t.Fatalf("the first request after the compaction: previous %q, %d input items for %d, status %d", body.Previous, len(body.Input), len(out)-1, first.Status)
	}
	if first.Step != 6 || !strings.Contains(out[len(out)-1].Text, "Answer 6.") {
		t.Errorf("played step %d (%q), want 6", first.Step, out[len(out)-1].Text)
	}
	out = append(out, model.Item{Kind: model.KindUser, Text: "and now"})
	out = turn(out)
	reqs = srv.Requests()
	second := reqs[len(reqs)-1]
	if err := json.Unmarshal(second.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Previous == "" || body.Previous != out[len(out)-3].Response || len(body.Input) != 1 {
		t.Errorf("the next request: previous %q (want %q), %d input items", body.Previous, out[len(out)-3].Response, len(body.Input))
	}
	if second.Step != 7 {
		t.Errorf("played step %d, want 7", second.Step)
	}
}

package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/model"
)

// TestCompactionItems: a compaction is a context_compaction item with the
// summary as its text; a failed one has the error.
func TestCompactionItems(t *testing.T) {
	tests := []struct {
		name string
		ev   agent.Event
		want string
	}{
		{"compacted", agent.Event{Type: agent.EventCompacted, Turn: 7, Compaction: &compact.Record{Reason: "auto", Replaced: 12, Summary: "We fixed Median.",
			TokensBefore: 170000, TokensAfter: 30000, Usage: model.Usage{InputTokens: 100, CacheReadTokens: 50, OutputTokens: 20, CostUSD: 0.25}}},
			`{"type":"item.completed","item":{"id":"item_0","type":"context_compaction","text":"We fixed Median.","status":"completed","compaction":{"reason":"auto","replaced":12,"tokens_before":170000,"tokens_after":30000,"usage":{"input_tokens":150,"cached_input_tokens":50,"cache_write_input_tokens":0,"output_tokens":20,"reasoning_output_tokens":0},"cost_usd":0.25}}}`},
		{"failed", agent.Event{Type: agent.EventCompactFailed, Compaction: &compact.Record{Reason: "manual", TokensBefore: 900},
			Err: &compact.SummaryError{Err: errors.New("HTTP 400: prompt is too long")}},
			`{"type":"item.completed","item":{"id":"item_0","type":"context_compaction","status":"failed","error":{"message":"compact: the summary request failed, the conversation is unchanged: HTTP 400: prompt is too long"},"compaction":{"reason":"manual","tokens_before":900}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			e := New(&buf)
			e.Observe(tc.ev)
			got := bytes.TrimSpace(buf.Bytes())
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if !json.Valid(got) {
				t.Error("not JSON")
			}
		})
	}
}

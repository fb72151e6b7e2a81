package harness

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/compact"
)

// TestSessionCompacts runs a session longer than its context (a 4,000
// token window) through the harness: it compacts on its own and finishes,
// /compact (Compact) compacts again on demand, the saved transcript is the
// compacted one with the replaced ones kept beside it, and the ledger
// verifies with the compactions in it.
func TestSessionCompacts(t *testing.T) {
	var steps []string
	for i := range 12 {
		steps = append(steps, fmt.Sprintf(`{"say": "Step %d.", "actions": [{"kind": "run", "command": "seq %d %d"}]}`, i, 1000*i, 1000*i+300))
	}
	steps = append(steps, `{"say": "Done."}`)
	o := fixture(t, `{"steps": [`+strings.Join(steps, ",")+`], "compaction": {"say": "We ran seq twelve times."}}`)
	o.ContextTokens = 4000
	o.Validation.Off = true
	compacted := 0
	o.Observers = []agent.Observer{agent.ObserverFunc(func(ev agent.Event) {
		switch ev.Type {
		case agent.EventCompacted:
			compacted++
		case agent.EventCompactFailed:
			t.Errorf("compaction failed: %v", ev.Err)
		}
	})}
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Run(ctx, "Run seq twelve times.")
	if err != nil {
		t.Fatal(err)
	}
	if out.Agent.Status != agent.StatusCompleted {
		t.Fatalf("%s after %d turns: %v", out.Agent.Status, out.Agent.Turns, out.Agent.Err)
	}
	if compacted == 0 {
		t.Fatal("a session past its window never compacted")
	}
	auto := compacted
	rec, err := s.Compact(ctx)
	if err != nil || rec == nil || compacted != auto+1 {
		t.Fatalf("Compact: %+v, %v", rec, err)
	}
	if _, err := s.Compact(ctx); !errors.Is(err, compact.ErrNothingToCompact) {
		t.Errorf("a second Compact: %v, want ErrNothingToCompact", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	kept, _ := filepath.Glob(filepath.Join(o.SessionDir, out.SessionID, "transcript-*.jsonl"))
	if len(kept) != compacted {
		t.Errorf("%d replaced transcripts kept for %d compactions: %v", len(kept), compacted, kept)
	}
	_, entries := verified(t, o.KeyDir, out.LedgerDir)
	n := 0
	for _, e := range entries {
		if e.Type == "context.compact" {
			n++
		}
	}
	if n != compacted {
		t.Errorf("%d context.compact entries for %d compactions", n, compacted)
	}
}

package harness

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/session"
)

// TestCloseEndsTheRun: a session resumed and closed after a compaction,
// a check or a verification of its ledger with no task after it ends its
// run with a session.end of status closed; one closed after a task ends
// it with the task's alone; one closed having done nothing writes no run
// at all. Every run of the session then verifies, ends (CheckEnded) and
// follows the one before it.
func TestCloseEndsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		do     func(context.Context, *Session) error
		runs   int    // the session's runs after it
		status string // the last run's last session.end's
	}{
		{"nothing", func(context.Context, *Session) error { return nil }, 1, "completed"},
		{"compact", func(ctx context.Context, s *Session) error { _, err := s.Compact(ctx); return err }, 2, ledger.StatusClosed},
		{"check", func(ctx context.Context, s *Session) error { _, err := s.Validate(ctx); return err }, 2, ledger.StatusClosed},
		{"verify", func(ctx context.Context, s *Session) error { _, err := s.VerifyLedger(ctx); return err }, 2, ledger.StatusClosed},
		{"task", func(ctx context.Context, s *Session) error { _, err := s.Run(ctx, "And now?"); return err }, 2, "completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, `{"steps": [{"say": "One."}, {"say": "Two."}, {"say": "Three."}], "compaction": {"say": "Two tasks."}}`)
			o.Validation.OnDemand = true
			ctx := context.Background()
			s, err := Open(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range []string{"First.", "Second."} {
				if _, err := s.Run(ctx, task); err != nil {
					t.Fatal(err)
				}
			}
			id := s.Info().SessionID
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			o.Resume = id
			s, err = Open(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.do(ctx, s); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			dirs, err := session.Ledgers(filepath.Join(o.SessionDir, id))
			if err != nil || len(dirs) != tc.runs {
				t.Fatalf("the session's runs: %v, %v; want %d", dirs, err, tc.runs)
			}
			var prev ledger.Run
			for i, d := range dirs {
				r, entries := verified(t, o.KeyDir, d)
				run := ledger.Run{Name: filepath.Base(d), Report: r, Entries: entries}
				if err := ledger.CheckEnded(entries, r.Sealed); err != nil {
					t.Errorf("run %d: %v", i+1, err)
				}
				if i > 0 {
					if err := ledger.CheckNext(prev, run, i+1); err != nil {
						t.Error(err)
					}
				}
				prev = run
			}
			var end map[string]any
			for _, e := range prev.Entries {
				if e.Type == "session.end" {
					end, _ = e.Data.(map[string]any)
				}
			}
			if end["status"] != tc.status {
				t.Errorf("the last run's last session.end: %v, want status %s", end, tc.status)
			}
		})
	}
}

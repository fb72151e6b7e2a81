package harness

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/session"
)

// TestCancelledBeforeTheFirstAnswerIsSaved: a run cancelled before the
// model has answered (Ctrl-C, or a closed output, at once) is a session
// like any other: saved as cancelled, its ledger sealed and ended by
// session.end. A session closed without a run leaves nothing.
func TestCancelledBeforeTheFirstAnswerIsSaved(t *testing.T) {
	for _, run := range []bool{true, false} {
		o := fixture(t, twoRuns)
		s, err := Open(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		var out Outcome
		if run {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if out, err = s.Run(ctx, "Look at a.txt."); err != nil {
				t.Fatal(err)
			}
			if out.Agent.Status != agent.StatusCanceled || out.Unreached || s.Reached() {
				t.Fatalf("status %s, unreached %v, reached %v; want a cancelled run that reached nothing", out.Agent.Status, out.Unreached, s.Reached())
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		ms, err := session.Store{Dir: o.SessionDir}.List()
		if err != nil {
			t.Fatal(err)
		}
		if !run {
			if len(ms) != 0 {
				t.Errorf("a session closed without a run is kept: %+v", ms)
			}
			continue
		}
		if len(ms) != 1 || ms[0].ID != out.SessionID || ms[0].Status != string(agent.StatusCanceled) {
			t.Fatalf("sessions %+v, want %s, canceled", ms, out.SessionID)
		}
		r, entries := verified(t, o.KeyDir, filepath.Join(o.SessionDir, out.SessionID, "ledger"))
		if r.Unsealed != 0 || len(entries) == 0 || entries[len(entries)-1].Type != "session.end" {
			t.Errorf("%d unsealed entries, %d in all, the last not session.end: %+v", r.Unsealed, len(entries), entries)
		}
	}
}

package harness

import (
	"context"
	"testing"
)

// TestTrackersOnlyWhenRecording: a session that writes a ledger tracks the
// changes commands make; one that writes none (a single tool call,
// --no-ledger) does not pay for the baseline.
func TestTrackersOnlyWhenRecording(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noLedger bool
		want     bool
	}{{"ledger", false, true}, {"no ledger", true, false}} {
		o := fixture(t, twoRuns)
		o.NoLedger = tc.noLedger
		s, err := Open(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.tracker(s.w.ws.Dir()) != nil; got != tc.want {
			t.Errorf("%s: tracking %v, want %v", tc.name, got, tc.want)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

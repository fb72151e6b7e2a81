package harness

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/session"
)

// TestResumedRunNamesThePrevious: a resumed run's session.start names the
// run before it by that ledger's last checkpoint, the first run's names
// none, and the runs verify as one session's chain.
func TestResumedRunNamesThePrevious(t *testing.T) {
	o := fixture(t, twoRuns)
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(ctx, "Look at a.txt.")
	if err != nil {
		t.Fatal(err)
	}
	id := out.SessionID
	s.Close()
	o.Resume = id
	s2, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Run(ctx, "Now change it."); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	dirs, err := session.Ledgers(filepath.Join(o.SessionDir, id))
	if err != nil || len(dirs) != 2 {
		t.Fatalf("ledgers %v, %v", dirs, err)
	}
	var runs []ledger.Run
	for _, d := range dirs {
		r, entries := verified(t, o.KeyDir, d)
		runs = append(runs, ledger.Run{Name: filepath.Base(d), Report: r, Entries: entries})
		if err := ledger.CheckEnded(entries, r.Sealed); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if p, err := ledger.Continues(runs[0].Entries); p != nil || err != nil {
		t.Errorf("the first run continues %+v, %v", p, err)
	}
	p, err := ledger.Continues(runs[1].Entries)
	if err != nil || p == nil || p.Dir != "ledger" || p.Size != runs[0].Report.Sealed {
		t.Fatalf("the resumed run continues %+v, %v; the first run has %d sealed entries", p, err, runs[0].Report.Sealed)
	}
	if err := ledger.CheckNext(runs[0], runs[1], 2); err != nil {
		t.Error(err)
	}
}

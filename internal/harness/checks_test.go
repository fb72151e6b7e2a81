package harness

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/trussdev/truss/internal/session"
)

const fourRuns = `{"steps": [
 {"actions": [{"kind": "view", "path": "a.txt"}]},
 {"say": "It says one."},
 {"actions": [{"kind": "replace", "path": "a.txt", "old": "one", "new": "two"}]},
 {"say": "Changed."},
 {"actions": [{"kind": "create", "path": "slow", "content": "x\n"}]},
 {"say": "Made slow."},
 {"actions": [{"kind": "view", "path": "a.txt"}]},
 {"say": "It says two."}
]}`

// TestValidationBackground: with background checks (the interactive
// session), a task that changed no file runs none; one that did starts
// them in the background and Run returns at once; the next task cancels
// a check still running, and the ledger records it as cancelled, never
// as failed.
func TestValidationBackground(t *testing.T) {
	o := fixture(t, fourRuns)
	o.Validation = ValidationOptions{Background: true, TestCmd: "if [ -e slow ]; then sleep 120; fi; grep -q two a.txt"}
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	out, err := s.Run(ctx, "Look at a.txt.")
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != nil || out.Background != nil || out.Changed != 0 {
		t.Fatalf("a task that changed nothing: verdict %+v, check %v, %d changed", out.Verdict, out.Background, out.Changed)
	}

	out, err = s.Run(ctx, "Change it.")
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != nil || out.Background == nil || out.Changed != 1 {
		t.Fatalf("a task that changed a file: verdict %+v, check %v, %d changed", out.Verdict, out.Background, out.Changed)
	}
	v, err := out.Background.Wait(ctx)
	if err != nil || v == nil || !v.OK || v.Cancelled {
		t.Fatalf("the background check: %+v, %v", v, err)
	}

	out, err = s.Run(ctx, "Make it slow.")
	if err != nil || out.Background == nil {
		t.Fatalf("a task that made a file: %+v, %v", out, err)
	}
	slow := out.Background
	if _, err := s.Run(ctx, "Look again."); err != nil {
		t.Fatal(err)
	}
	select {
	case <-slow.Done():
	default:
		t.Fatal("the next task began while the check still ran")
	}
	if v := slow.Verdict(); v == nil || !v.Cancelled || v.OK {
		t.Fatalf("the check the next task cancelled: %+v", v)
	}

	out, err = s.Run(ctx, "nothing more")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, entries := verified(t, o.KeyDir, out.LedgerDir)
	var got []string
	for _, e := range entries {
		if e.Type != "validation" {
			continue
		}
		b, _ := json.Marshal(e.Data)
		var d struct {
			When    string `json:"when"`
			Summary struct {
				OK        bool `json:"ok"`
				Cancelled bool `json:"cancelled"`
			} `json:"summary"`
		}
		json.Unmarshal(b, &d)
		got = append(got, d.When+map[bool]string{true: " ok", false: " not ok"}[d.Summary.OK]+map[bool]string{true: " cancelled", false: ""}[d.Summary.Cancelled])
	}
	want := []string{"in the background ok", "in the background not ok cancelled"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("the ledger's verdicts: %q, want %q", got, want)
	}
}

// TestUsageGoesOn: the saved session's usage is the sum of its runs' (not
// of the running totals), and a session opened on it (a resume, /model,
// /surface, /sandbox) counts on from there.
func TestUsageGoesOn(t *testing.T) {
	o := fixture(t, twoRuns)
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	s.Run(ctx, "Look at a.txt.")
	out, err := s.Run(ctx, "Now change it.")
	if err != nil {
		t.Fatal(err)
	}
	total := out.Usage
	if total.InputTokens == 0 || out.Agent.RunUsage.InputTokens >= total.InputTokens {
		t.Fatalf("usage %+v, this run's %+v", total, out.Agent.RunUsage)
	}
	id := out.SessionID
	s.Close()
	meta, _, err := session.Store{Dir: o.SessionDir}.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Meta.Usage.InputTokens != total.InputTokens || meta.Meta.Usage.OutputTokens != total.OutputTokens {
		t.Errorf("saved usage %+v, the runs used %+v", meta.Meta.Usage, total)
	}
	o.Resume = id
	s2, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := s2.Stats().Usage; got.InputTokens != total.InputTokens {
		t.Errorf("the resumed session starts at %+v, want %+v", got, total)
	}
}

package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/session"
)

// longScript is twelve turns that each run a command printing about 1.5 KB,
// then a final word: more than a 4,000-token window holds (Ollama's default context).
func longScript() string {
	var steps []string
	for i := range 12 {
		steps = append(steps, fmt.Sprintf(`{"say": "Step %d.", "actions": [{"kind": "run", "command": "seq %d %d"}]}`, i, 1000*i, 1000*i+300))
	}
	steps = append(steps, `{"say": "Done."}`)
	return `{"steps": [` + strings.Join(steps, ",") + `], "compaction": {"say": "We ran seq twelve times; every run printed its numbers."}}`
}

// compactor gives the agent a compactor on its own provider, model, system
// prompt and tools.
func compactor(window int) func(*agent.Config) {
	return func(c *agent.Config) {
		c.Compactor = &compact.Compactor{Provider: c.Provider, Model: c.Model, System: c.System, Tools: c.Tools.Specs,
			Window: window, KeepTokens: int64(window) / 5}
	}
}

// observe adds an observer to the config's.
func observe(o agent.Observer) func(*agent.Config) {
	return func(c *agent.Config) { c.Observer = agent.Observers{c.Observer, o} }
}

// prompt is the prompt tokens of a usage, cached or not.
func prompt(u model.Usage) int64 { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

func all(fs ...func(*agent.Config)) func(*agent.Config) {
	return func(c *agent.Config) {
		for _, f := range fs {
			f(c)
		}
	}
}

// TestCompactionEveryDialect: in every dialect, a run longer than its
// context compacts automatically before a request, against the strict
// simulator, and plays the whole script; the summary turn's usage is the
// run's; the ledger verifies and holds the compaction, with the replaced
// items and the summary turn's bytes resolvable; every command's approval
// is recorded with its result.
func TestCompactionEveryDialect(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			rec, vkey, closeLedger := newLedger(t)
			var mu sync.Mutex
			var asked []approval.Request
			approve := approval.ApproverFunc(func(_ context.Context, r approval.Request) (approval.Decision, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, r)
				return approval.Approve, nil
			})
			gate := func(c *agent.Config) { c.Exec = approval.Wrap(c.Exec, approval.Untrusted, approve, nil) }
			e := runScript(t, d, longScript(), all(compactor(4000), gate, observe(rec)))
			dir := closeLedger()
			if e.outcome.Status != agent.StatusCompleted || e.outcome.Text != "Done." || e.outcome.Turns != 13 {
				t.Fatalf("outcome %+v", e.outcome)
			}
			var compacted []agent.Event
			var summaryUsage model.Usage
			for _, ev := range e.events {
				switch ev.Type {
				case agent.EventCompacted:
					compacted = append(compacted, ev)
					summaryUsage.Add(ev.Usage)
				case agent.EventCompactFailed:
					t.Errorf("compaction failed: %v", ev.Err)
				}
			}
			if len(compacted) < 2 {
				t.Fatalf("the run compacted %d times, want at least 2 (a summary replaced by the next)", len(compacted))
			}
			summaries := 0
			for _, r := range e.srv.Requests() {
				if r.Summary {
					summaries++
				}
				if r.Status != 200 {
					t.Errorf("a request got %d", r.Status)
				}
			}
			if summaries != len(compacted) {
				t.Errorf("%d summary requests for %d compactions", summaries, len(compacted))
			}
			c := compacted[0]
			if c.Compaction.Reason != compact.ReasonAuto || c.Turn < 2 || !compact.IsSummary(c.Items[1]) || c.Items[0].Text != "Fix the failing test." {
				t.Errorf("compaction before turn %d: %+v, head %+v", c.Turn, c.Compaction, c.Items[:2])
			}
			if prompt(summaryUsage) == 0 || prompt(e.outcome.Usage) < prompt(summaryUsage) {
				t.Errorf("the summary turns' usage %+v is not in the run's %+v", summaryUsage, e.outcome.Usage)
			}
			// The transcript is the last compaction's with the turns since.
			last := compacted[len(compacted)-1]
			if tr := e.agent.Transcript(); len(tr) < len(last.Items) || !compact.IsSummary(tr[1]) {
				t.Errorf("the transcript was not replaced")
			}

			rep, entries, err := ledger.Verify(dir, vkey)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Sealed != rep.Entries {
				t.Errorf("%d of %d entries sealed", rep.Sealed, rep.Entries)
			}
			pack := readPack(t, dir)
			var compacts, approvals int
			for i, en := range entries {
				data, _ := en.Data.(map[string]any)
				switch en.Type {
				case "context.compact":
					compacts++
					digest, _ := data["digest"].(string)
					b, ok := pack[en.Payloads["replaced"]]
					sum := sha256.Sum256(b)
					if !ok || en.Payloads["replaced"] != digest || hex.EncodeToString(sum[:]) != digest {
						t.Errorf("entry %d: the replaced items do not resolve from digest %q", i, digest)
					}
					if n := strings.Count(string(b), "\n"); fmt.Sprint(n) != fmt.Sprint(data["replaced"]) {
						t.Errorf("entry %d: %d replaced items stored, %v recorded", i, n, data["replaced"])
					}
					if !strings.Contains(fmt.Sprint(data["summary"]), "We ran seq twelve times") || data["reason"] != "auto" {
						t.Errorf("entry %d: %v", i, data)
					}
					if _, ok := pack[en.Payloads["response"]]; !ok {
						t.Errorf("entry %d: the summary turn's response bytes are missing", i)
					}
					if en.Payloads["request"] == "" && en.Payloads["request_parts"] == "" {
						t.Errorf("entry %d: the summary turn's request is missing", i)
					}
					if next := entries[i+1]; i+1 < len(entries) && next.Type == "context.compact" {
						t.Errorf("two compactions in a row")
					}
				case "tool.result":
					rs, _ := data["results"].([]any)
					for _, r := range rs {
						ap, _ := r.(map[string]any)["approval"].(map[string]any)
						if ap != nil && ap["decision"] == "approved" && ap["by"] == "user" && ap["policy"] == "untrusted" && ap["kind"] == "command" {
							approvals++
						}
					}
				}
			}
			if compacts != len(compacted) {
				t.Errorf("%d context.compact entries for %d compactions", compacts, len(compacted))
			}
			if approvals != 12 || len(asked) != 12 {
				t.Errorf("%d approvals recorded, %d asked, want 12", approvals, len(asked))
			}
		})
	}
}

// TestCompactManualAndFailure: Agent.Compact summarizes everything but the
// pinned items; a summary request the API refuses is reported, leaves the
// transcript as it was, and the run goes on.
func TestCompactManualAndFailure(t *testing.T) {
	d := dialects[2] // anthropic
	script := strings.Replace(longScript(), `"compaction": {`, `"compaction": {"faults": [{"kind": "status", "status": 400, "message": "prompt is too long"}], `, 1)
	e := runScript(t, d, script, compactor(4000))
	if e.outcome.Status != agent.StatusCompleted || e.outcome.Turns != 13 {
		t.Fatalf("outcome %+v", e.outcome)
	}
	failed := 0
	for _, ev := range e.events {
		switch ev.Type {
		case agent.EventCompactFailed:
			failed++
			var se *compact.SummaryError
			if !errors.As(ev.Err, &se) || !strings.Contains(ev.Err.Error(), "prompt is too long") || ev.Compaction.Reason != "auto" {
				t.Errorf("failure %v", ev.Err)
			}
		case agent.EventCompacted:
			t.Error("compacted although the summary was refused")
		}
	}
	// Failures back off: 1, 2, 4 turns between attempts.
	if failed == 0 || failed > 4 {
		t.Errorf("%d failed compactions in 13 turns", failed)
	}

	e = runScript(t, d, longScript(), func(c *agent.Config) { c.Budget.MaxTurns = 3 })
	if _, err := e.agent.Compact(t.Context()); !errors.Is(err, agent.ErrNoCompactor) {
		t.Errorf("compact without a compactor: %v", err)
	}
	e = runScript(t, d, longScript(), all(compactor(1<<20), func(c *agent.Config) { c.Budget.MaxTurns = 3 }))
	before := len(e.agent.Transcript())
	n := len(e.events)
	rec, err := e.agent.Compact(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tr := e.agent.Transcript()
	if rec.Reason != compact.ReasonManual || len(tr) != 2 || !compact.IsSummary(tr[1]) || rec.Replaced != before-1 {
		t.Errorf("manual compaction: %+v, %d items", rec, len(tr))
	}
	if got := e.events[n:]; len(got) != 1 || got[0].Type != agent.EventCompacted || got[0].Turn != 0 {
		t.Errorf("events %+v", got)
	}
	if u := e.agent.Usage(); prompt(u) != prompt(e.outcome.Usage)+prompt(rec.Usage) || prompt(rec.Usage) == 0 {
		t.Errorf("the summary turn's usage was not added: %+v", u)
	}
	// Nothing but pinned items: nothing to compact, and nothing reported.
	n = len(e.events)
	if _, err := e.agent.Compact(t.Context()); !errors.Is(err, compact.ErrNothingToCompact) || len(e.events) != n {
		t.Errorf("second manual compaction: %v", err)
	}
}

// TestResumeAfterCompaction: a session stored through a compaction (the
// transcript replaced, the old one kept) resumes with the compacted
// transcript, and the simulated model plays on from the step it was at.
func TestResumeAfterCompaction(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			st := session.Store{Dir: t.TempDir()}
			sess, err := st.Create(session.Meta{Task: "Fix the failing test."})
			if err != nil {
				t.Fatal(err)
			}
			var perr error
			persist := agent.ObserverFunc(func(ev agent.Event) {
				var err error
				switch ev.Type {
				case agent.EventUser, agent.EventTurnCompleted:
					err = sess.Append(ev.Items...)
				case agent.EventCompacted:
					err = sess.Replace(ev.Items)
				}
				if err != nil && perr == nil {
					perr = err
				}
			})
			e := runScript(t, d, longScript(), all(compactor(4000), observe(persist), func(c *agent.Config) { c.Budget.MaxTurns = 9 }))
			if e.outcome.Status != agent.StatusMaxTurns || perr != nil {
				t.Fatalf("outcome %+v, persist %v", e.outcome, perr)
			}
			sess.Close()
			_, items, err := st.Open(sess.Meta.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != len(e.agent.Transcript()) || !compact.IsSummary(items[1]) {
				t.Fatalf("resumed %d items, the agent had %d", len(items), len(e.agent.Transcript()))
			}
			old, err := sess.Transcripts()
			if err != nil || len(old) == 0 {
				t.Fatalf("replaced transcripts %v %v", old, err)
			}
			if b, err := os.ReadFile(filepath.Join(sess.Dir(), "transcript-1.jsonl")); err != nil || !strings.Contains(string(b), "Step 0.") {
				t.Errorf("the first transcript was not kept: %v", err)
			}
			r := resumeScript(t, d, longScript(), compactor(4000), items)
			if r.outcome.Status != agent.StatusCompleted || r.outcome.Text != "Done." || r.outcome.Turns != 4 {
				t.Fatalf("resumed outcome %+v", r.outcome)
			}
			for _, req := range r.srv.Requests() {
				if !req.Summary {
					if req.Step != 9 {
						t.Errorf("the resumed session's first turn played step %d, want 9", req.Step)
					}
					break
				}
			}
		})
	}
}

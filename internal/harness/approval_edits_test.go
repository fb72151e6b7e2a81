package harness

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/tool"
)

// editScript replaces "one" by "two" in a.txt, then ends.
const editScript = `{"steps": [{"actions": [{"kind": "replace", "path": "a.txt", "old": "one", "new": "two"}]}, {"say": "Done."}]}`

// TestApprovalEdits: a session opened with --approval-edits ask asks its
// approver before the model's edit, showing the edit's diff; after a deny
// the file is unchanged and the model reads that the user declined it,
// after an approval it is changed; the answer travels with the result.
func TestApprovalEdits(t *testing.T) {
	for _, tc := range []struct {
		answer   approval.Decision
		content  string
		decision string
	}{
		{approval.Deny, "one\n", "denied"},
		{approval.Approve, "two\n", "approved"},
	} {
		t.Run(string(tc.answer), func(t *testing.T) {
			o := fixture(t, editScript)
			o.Validation.Off = true
			o.Approval = approval.OnRequest
			o.ApprovalEdits = approval.EditsAsk
			var mu sync.Mutex
			var asked []approval.Request
			o.Approver = approval.ApproverFunc(func(_ context.Context, r approval.Request) (approval.Decision, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, r)
				// Nothing is written before the answer.
				if b, err := os.ReadFile(filepath.Join(o.Root, "a.txt")); err != nil || string(b) != "one\n" {
					t.Errorf("a.txt before the answer: %q, %v", b, err)
				}
				return tc.answer, nil
			})
			var results []tool.Result
			o.Observers = append(o.Observers, agent.ObserverFunc(func(ev agent.Event) {
				if ev.Type == agent.EventCallCompleted {
					results = append(results, ev.Results...)
				}
			}))
			s, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.ApprovalEdits() != approval.EditsAsk {
				t.Errorf("ApprovalEdits() = %q", s.ApprovalEdits())
			}
			out, err := s.Run(context.Background(), "change one to two")
			if err != nil {
				t.Fatal(err)
			}
			if len(asked) != 1 {
				t.Fatalf("asked %d times, want 1", len(asked))
			}
			q := asked[0]
			if q.Kind != approval.KindEdit || q.Op != tool.OpReplace || len(q.Paths) != 1 || q.Paths[0] != "a.txt" ||
				!strings.Contains(q.Diff, "--- a/a.txt\n+++ b/a.txt\n") || !strings.Contains(q.Diff, "-one\n+two\n") {
				t.Errorf("request %+v", q)
			}
			if b, _ := os.ReadFile(filepath.Join(o.Root, "a.txt")); string(b) != tc.content {
				t.Errorf("a.txt = %q, want %q", b, tc.content)
			}
			if len(results) != 1 || results[0].Approval == nil {
				t.Fatalf("results %+v", results)
			}
			r := results[0]
			if a := r.Approval; a.Kind != "edit" || a.Decision != tc.decision || a.By != "user" || a.Preview != tool.Digest([]byte(q.Diff)) {
				t.Errorf("approval %+v", a)
			}
			// The signed ledger keeps the question and the answer with the
			// result, and verifies.
			s.Close()
			_, entries := verified(t, o.KeyDir, out.LedgerDir)
			var recorded []string
			for _, e := range entries {
				if e.Type != "tool.result" {
					continue
				}
				b, _ := json.Marshal(e.Data)
				var d struct {
					Results []struct {
						Approval map[string]any `json:"approval"`
					} `json:"results"`
				}
				json.Unmarshal(b, &d)
				for _, res := range d.Results {
					if a := res.Approval; a != nil {
						b, _ := json.Marshal(a)
						recorded = append(recorded, string(b))
					}
				}
			}
			want := `"decision":"` + tc.decision + `"`
			if len(recorded) != 1 || !strings.Contains(recorded[0], `"kind":"edit"`) || !strings.Contains(recorded[0], `"paths":["a.txt"]`) ||
				!strings.Contains(recorded[0], want) || !strings.Contains(recorded[0], `"preview_sha256":"`+tool.Digest([]byte(q.Diff))+`"`) ||
				strings.Contains(recorded[0], `"command"`) {
				t.Errorf("the ledger's approvals: %s", recorded)
			}
			if tc.answer == approval.Deny && (r.Err == nil || r.Err.Kind != tool.ErrNotApproved || !strings.Contains(r.Err.Message, "The user declined this edit")) {
				t.Errorf("result error %+v", r.Err)
			}
		})
	}
}

// TestApprovalEditsNeedSomebody: a session that would ask before edits
// but where nobody can answer — a headless approver, or the policy never
// — fails to open, saying why and how to go on, whether the setting is
// the option; the user's approval_edits = "ask" applies only where
// somebody answers (headless runs of a user who asks in the interactive
// session edit without asking).
func TestApprovalEditsNeedSomebody(t *testing.T) {
	person := approval.ApproverFunc(func(context.Context, approval.Request) (approval.Decision, error) { return approval.Approve, nil })
	for _, tc := range []struct {
		name     string
		policy   approval.Policy
		edits    approval.EditPolicy
		user     string // the user's config.toml
		approver approval.Approver
		want     []string            // "" opens
		policyIs approval.EditPolicy // when it opens: its edit policy, if set
	}{
		{"headless", approval.OnRequest, approval.EditsAsk, "", approval.Headless{}, []string{"--approval-edits ask", "nobody can answer", "--approval-edits accept"}, ""},
		{"no approver", "", approval.EditsAsk, "", nil, []string{"nobody can answer", "unattended"}, ""},
		{"never", approval.Never, approval.EditsAsk, "", person, []string{`approval policy "never" asks nobody`, "--approval on-request"}, ""},
		{"user config headless", "", "", "approval_edits = \"ask\"\n", approval.Headless{}, nil, approval.EditsAccept},
		{"bad value", approval.OnRequest, "sometimes", "", person, []string{"--approval-edits", "unknown edit approval"}, ""},
		{"flag overrides the user's config", "", approval.EditsAccept, "approval_edits = \"ask\"\n", approval.Headless{}, nil, ""},
		{"interactive", approval.OnRequest, approval.EditsAsk, "", person, nil, approval.EditsAsk},
		{"user config with a person", "", "", "approval = \"on-request\"\napproval_edits = \"ask\"\n", person, nil, approval.EditsAsk},
		{"user config under never", "", "", "approval_edits = \"ask\"\n", person, nil, approval.EditsAccept},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, editScript)
			o.Validation.Off = true
			o.Approval, o.ApprovalEdits, o.Approver = tc.policy, tc.edits, tc.approver
			if tc.user != "" {
				if err := os.MkdirAll(o.KeyDir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(o.KeyDir, "config.toml"), []byte(tc.user), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Open(context.Background(), o)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if tc.policyIs != "" && s.ApprovalEdits() != tc.policyIs {
					t.Errorf("edit policy %q, want %q", s.ApprovalEdits(), tc.policyIs)
				}
				return
			}
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("%T %v, want a ConfigError", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

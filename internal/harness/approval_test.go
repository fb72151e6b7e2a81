package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/tool"
)

// escalationScript asks, on the generic surface, to run cmd outside the
// sandbox, then ends.
func escalationScript(t *testing.T, cmd string) string {
	t.Helper()
	in, err := json.Marshal(map[string]string{"command": cmd, "sandbox_permissions": "require_escalated", "justification": "Do you allow writing outside the workspace?"})
	if err != nil {
		t.Fatal(err)
	}
	step, _ := json.Marshal(map[string]any{"actions": []map[string]any{{"kind": "run", "command": cmd, "raw_input": string(in)}}})
	return `{"steps": [` + string(step) + `, {"say": "Done."}]}`
}

// shellResults keeps the results of every shell call the session runs.
func shellResults(o *Options) *[]tool.Result {
	var rs []tool.Result
	o.Observers = append(o.Observers, agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type != agent.EventCallCompleted {
			return
		}
		for _, r := range ev.Results {
			if r.Op == tool.OpExec {
				rs = append(rs, r)
			}
		}
	}))
	return &rs
}

// TestApprovalPolicies: an escalation request under each policy and
// answer is asked (or not), run in the escalated sandbox (or not), and
// the question and answer travel with the result.
func TestApprovalPolicies(t *testing.T) {
	tests := []struct {
		name     string
		policy   approval.Policy
		answer   approval.Decision // "" for the headless approver
		asked    bool
		ran      bool
		decision string
		by       string
		declared bool
	}{
		{"on-request approved", approval.OnRequest, approval.Approve, true, true, "approved", "user", true},
		{"on-request denied", approval.OnRequest, approval.Deny, true, false, "denied", "user", true},
		{"untrusted always", approval.Untrusted, approval.ApproveSession, true, true, "approved_for_session", "user", true},
		{"never", approval.Never, approval.Approve, false, false, "denied", "policy", false},
		{"headless", approval.OnRequest, "", false, false, "denied", "unattended", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outside := t.TempDir()
			target := filepath.Join(outside, "escalated.txt")
			o := fixture(t, escalationScript(t, "echo out > "+target+" && echo wrote"))
			o.Validation.Off = true
			o.Approval = tt.policy
			var asked atomic.Int32
			if tt.answer != "" {
				o.Approver = approval.ApproverFunc(func(ctx context.Context, r approval.Request) (approval.Decision, error) {
					asked.Add(1)
					if r.Kind != approval.KindEscalation || !strings.Contains(r.Justification, "outside the workspace") {
						t.Errorf("request = %+v", r)
					}
					return tt.answer, nil
				})
			} else {
				o.Approver = approval.Headless{}
			}
			rs := shellResults(&o)
			s, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var declared bool
			for _, sp := range s.Tools().Specs() {
				declared = declared || strings.Contains(string(sp.Parameters), "sandbox_permissions")
			}
			if declared != tt.declared {
				t.Errorf("the shell tool declares sandbox_permissions: %v, want %v", declared, tt.declared)
			}
			if _, err := s.Run(context.Background(), "write outside"); err != nil {
				t.Fatal(err)
			}
			if got := asked.Load() > 0; got != tt.asked {
				t.Errorf("asked = %v, want %v", got, tt.asked)
			}
			if len(*rs) != 1 {
				t.Fatalf("%d shell results, want 1", len(*rs))
			}
			r := (*rs)[0]
			a := r.Approval
			if a == nil {
				t.Fatalf("the result carries no approval: %+v", r)
			}
			if a.Decision != tt.decision || a.By != tt.by || a.Policy != string(tt.policy) || a.Escalated != tt.ran {
				t.Errorf("approval = %+v", a)
			}
			_, err = os.Stat(target)
			if wrote := err == nil; wrote != tt.ran {
				t.Errorf("the command wrote outside the workspace: %v, want %v (result %+v)", wrote, tt.ran, r)
			}
			if !tt.ran && (r.Err == nil || r.Err.Kind != tool.ErrNotApproved) {
				t.Errorf("a refused escalation's error = %+v, want not_approved", r.Err)
			}
		})
	}
}

// TestFirstSessionHidesTheKey: in a first session the signing key is
// created while the first request is on its way; the model's shell, started
// while the answer streams, still cannot read it.
func TestFirstSessionHidesTheKey(t *testing.T) {
	o := fixture(t, twoRuns)
	// Out of /tmp, which the sandbox replaces with its own: commands see
	// the key's directory as it is on the host.
	kd, err := os.MkdirTemp("/var/tmp", "truss-key-")
	if err != nil {
		t.Skip("no /var/tmp:", err)
	}
	t.Cleanup(func() { os.RemoveAll(kd) })
	o.KeyDir = filepath.Join(kd, "key")
	key := filepath.Join(o.KeyDir, "ledger.key")
	script, _ := json.Marshal(map[string]any{"steps": []any{
		map[string]any{"actions": []any{map[string]any{"kind": "run", "command": "cat '" + key + "' | wc -c"}}},
		map[string]any{"say": "Done."}}})
	if err := os.WriteFile(o.Script, script, 0o644); err != nil {
		t.Fatal(err)
	}
	o.Validation.Off = true
	rs := shellResults(&o)
	// The preparation is held until the answer has had time to arrive
	// (and the shell to be started early, were it not to wait).
	o.prepGate = make(chan struct{})
	time.AfterFunc(time.Second, func() { close(o.prepGate) })
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.w.sandbox.Plan().Mechanisms.Namespaces {
		t.Skip("the session's sandbox uses no namespaces on this host: nothing is hidden")
	}
	if _, err := s.Run(context.Background(), "read the key"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(key); err != nil || fi.Size() == 0 {
		t.Fatalf("no signing key at %s: %v", key, err)
	}
	if len(*rs) != 1 {
		t.Fatalf("%d shell results, want 1", len(*rs))
	}
	if got := strings.TrimSpace((*rs)[0].Stdout); got != "0" {
		t.Errorf("the command read %s bytes of the signing key, want 0 (stderr %q)", got, (*rs)[0].Stderr)
	}
}

// TestEscalatedShellHidesTheKey: an escalated command reads and writes
// everywhere, but the signing key stays hidden where the session's
// sandbox hides it.
func TestEscalatedShellHidesTheKey(t *testing.T) {
	o := fixture(t, escalationScript(t, "cat \"$KEYFILE\" | wc -c"))
	o.Validation.Off = true
	o.Approval = approval.OnRequest
	o.Approver = approval.ApproverFunc(func(context.Context, approval.Request) (approval.Decision, error) { return approval.Approve, nil })
	rs := shellResults(&o)
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.escalatedPlan().Active() {
		t.Skip("the session's sandbox uses no namespaces on this host: nothing is hidden")
	}
	// The session creates the key while its first request is on its
	// way; the command runs after.
	key := filepath.Join(o.KeyDir, "ledger.key")
	t.Setenv("KEYFILE", key)
	if _, err := s.Run(context.Background(), "read the key"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(key); err != nil || fi.Size() == 0 {
		t.Fatalf("no signing key at %s: %v", key, err)
	}
	if len(*rs) != 1 {
		t.Fatalf("%d shell results, want 1", len(*rs))
	}
	r := (*rs)[0]
	if r.Approval == nil || !r.Approval.Escalated {
		t.Fatalf("not escalated: %+v", r)
	}
	if got := strings.TrimSpace(r.Stdout); got != "0" {
		t.Errorf("the escalated command read %s bytes of the signing key, want 0 (stderr %q)", got, r.Stderr)
	}
}

// TestApprovalOptionChecked: an unknown policy is a configuration error.
func TestApprovalOptionChecked(t *testing.T) {
	o := fixture(t, twoRuns)
	o.Approval = "sometimes"
	_, err := Open(context.Background(), o)
	if !IsConfigError(err) || !strings.Contains(err.Error(), "on-request") {
		t.Fatalf("err = %v, want a configuration error naming the policies", err)
	}
}

// TestSubAgentEscalation: a sub-agent's escalation goes through the
// session's gate (Gate.Child): the same approver is asked, the command
// runs in the child's own escalated shell, and an "always" answer given
// to the child covers the same command in the parent.
func TestSubAgentEscalation(t *testing.T) {
	outside := t.TempDir()
	cmd := "echo child >> " + filepath.Join(outside, "log.txt")
	in, _ := json.Marshal(map[string]string{"command": cmd, "sandbox_permissions": "require_escalated", "justification": "May the child write the log?"})
	esc, _ := json.Marshal(map[string]any{"kind": "run", "command": cmd, "raw_input": string(in)})
	script := `{"steps": [
	  {"actions": [{"kind": "spawn", "content": "CHILD: write the log"}]},
	  {"actions": [` + string(esc) + `]},
	  {"say": "Done."}],
	 "agents": {"CHILD": {"steps": [{"actions": [` + string(esc) + `]}, {"say": "Wrote it."}]}}}`
	o := fixture(t, script)
	o.Validation.Off = true
	o.Approval = approval.OnRequest
	var asked atomic.Int32
	o.Approver = approval.ApproverFunc(func(context.Context, approval.Request) (approval.Decision, error) {
		asked.Add(1)
		return approval.ApproveSession, nil
	})
	rs := shellResults(&o)
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Run(context.Background(), "delegate")
	if err != nil || out.Agent.Status != agent.StatusCompleted {
		t.Fatalf("Run = %+v, %v", out.Agent, err)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("asked %d times, want once (the child's always covers the parent)", n)
	}
	b, err := os.ReadFile(filepath.Join(outside, "log.txt"))
	if err != nil || string(b) != "child\nchild\n" {
		t.Errorf("log = %q, %v; want the child's and the parent's escalated writes", b, err)
	}
	if len(*rs) != 1 || (*rs)[0].Approval == nil || (*rs)[0].Approval.By != "session" || !(*rs)[0].Approval.Escalated {
		t.Errorf("the parent's call: %+v", *rs)
	}
}

package approval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// fakeShell stands for a shell executor: it records the commands it ran
// and answers with its name on stdout.
type fakeShell struct {
	name string
	mu   sync.Mutex
	ran  []string
}

func (s *fakeShell) Execute(_ context.Context, c tool.Call) tool.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := ""
	if a, ok := c.Args.(*tool.ExecArgs); ok {
		cmd = a.Command
	}
	s.ran = append(s.ran, cmd)
	zero := 0
	return tool.Result{CallID: c.ID, Op: c.Op, Stdout: s.name, ExitCode: &zero}
}

func (s *fakeShell) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ran...)
}

// scripted answers every request with d and counts the requests.
type scripted struct {
	d    Decision
	err  error
	mu   sync.Mutex
	seen []Request
}

func (a *scripted) Approve(_ context.Context, r Request) (Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, r)
	return a.d, a.err
}

func execCall(cmd string, escalate bool) tool.Call {
	return tool.Call{ID: "c1", Tool: "shell_command", Surface: "codex", Op: tool.OpExec,
		Args: &tool.ExecArgs{Command: cmd, Escalate: escalate, Justification: map[bool]string{true: "Do you want to fetch the module?"}[escalate]}}
}

// TestGate: every policy against every kind of request and every answer:
// who ran the command (the sandbox, the escalated shell, nobody), whether
// the approver was asked, and what the result records.
func TestGate(t *testing.T) {
	const write, read, net = "go mod tidy", "ls -la && git status", "curl -sI https://go.dev"
	type want struct {
		asked    bool
		ran      string // "sandbox", "escalated" or "" (refused)
		decision string // Result.Approval.Decision, "" for no approval record
		by       string
	}
	tests := []struct {
		policy   Policy
		cmd      string
		escalate bool
		answer   Decision
		want     want
	}{
		// never: nobody is asked; escalations are refused by policy.
		{Never, write, false, Approve, want{false, "sandbox", "", ""}},
		{Never, net, true, Approve, want{false, "", "denied", "policy"}},
		// on-request: only escalations ask.
		{OnRequest, write, false, Deny, want{false, "sandbox", "", ""}},
		{OnRequest, read, false, Deny, want{false, "sandbox", "", ""}},
		{OnRequest, net, true, Approve, want{true, "escalated", "approved", "user"}},
		{OnRequest, net, true, ApproveSession, want{true, "escalated", "approved_for_session", "user"}},
		{OnRequest, net, true, Deny, want{true, "", "denied", "user"}},
		{OnRequest, net, true, "maybe", want{true, "", "denied", "user"}},
		// untrusted: read-only commands run, the rest and escalations ask.
		{Untrusted, read, false, Deny, want{false, "sandbox", "", ""}},
		{Untrusted, write, false, Approve, want{true, "sandbox", "approved", "user"}},
		{Untrusted, write, false, ApproveSession, want{true, "sandbox", "approved_for_session", "user"}},
		{Untrusted, write, false, Deny, want{true, "", "denied", "user"}},
		{Untrusted, read, true, Approve, want{true, "escalated", "approved", "user"}},
		{Untrusted, net, true, Deny, want{true, "", "denied", "user"}},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%s/%s/escalate=%v/%s", tc.policy, tc.cmd, tc.escalate, tc.answer)
		t.Run(name, func(t *testing.T) {
			box, esc := &fakeShell{name: "sandbox"}, &fakeShell{name: "escalated"}
			a := &scripted{d: tc.answer}
			r := Wrap(box, tc.policy, a, esc).Execute(t.Context(), execCall(tc.cmd, tc.escalate))
			if got := len(a.seen) > 0; got != tc.want.asked {
				t.Errorf("asked %v", got)
			}
			if tc.want.asked {
				q := a.seen[0]
				if q.Command != tc.cmd || q.Policy != tc.policy || q.CallID != "c1" || (q.Kind == KindEscalation) != tc.escalate ||
					(tc.escalate && q.Justification == "") {
					t.Errorf("request %+v", q)
				}
			}
			if r.Stdout != tc.want.ran {
				t.Errorf("ran in %q, want %q", r.Stdout, tc.want.ran)
			}
			if tc.want.ran == "" {
				if r.Err == nil || r.Err.Kind != tool.ErrNotApproved || r.Err.Message == "" || len(box.commands())+len(esc.commands()) != 0 {
					t.Errorf("refusal %+v (ran %v %v)", r.Err, box.commands(), esc.commands())
				}
			}
			switch {
			case tc.want.decision == "" && r.Approval != nil:
				t.Errorf("approval recorded: %+v", r.Approval)
			case tc.want.decision != "":
				ap := r.Approval
				if ap == nil || ap.Decision != tc.want.decision || ap.By != tc.want.by || ap.Policy != string(tc.policy) ||
					ap.Command != tc.cmd || ap.Escalated != (tc.want.ran == "escalated") {
					t.Errorf("approval %+v", ap)
				}
			}
		})
	}
}

// TestGateRefusalTexts: a refusal tells the model what happened and what
// to do instead, in its own words for each cause.
func TestGateRefusalTexts(t *testing.T) {
	box := &fakeShell{name: "sandbox"}
	cases := []struct {
		g    *Gate
		call tool.Call
		want []string
	}{
		{Wrap(box, Never, nil, box), execCall("curl x", true), []string{`approval policy "never"`, "without sandbox_permissions"}},
		{Wrap(box, OnRequest, &scripted{d: Approve}, nil), execCall("curl x", true), []string{"not available in this session"}},
		{Wrap(box, OnRequest, Headless{}, box), execCall("curl x", true), []string{"unattended", "outside the sandbox"}},
		{Wrap(box, Untrusted, nil, box), execCall("rm -rf build", false), []string{"unattended", "read-only"}},
		{Wrap(box, OnRequest, &scripted{d: Deny}, box), execCall("curl x", true), []string{"The user declined running this command outside the sandbox", "Do not ask again"}},
		{Wrap(box, Untrusted, &scripted{d: Deny}, box), execCall("make", false), []string{"The user declined this command", "another way"}},
		{Wrap(box, OnRequest, &scripted{err: errors.New("terminal closed")}, box), execCall("curl x", true), []string{"could not be asked (terminal closed)"}},
	}
	for i, tc := range cases {
		r := tc.g.Execute(t.Context(), tc.call)
		if r.Err == nil || r.Err.Kind != tool.ErrNotApproved {
			t.Fatalf("case %d: %+v", i, r)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.Err.Message, w) {
				t.Errorf("case %d: %q lacks %q", i, r.Err.Message, w)
			}
		}
	}
	if n := len(box.commands()); n != 0 {
		t.Errorf("%d commands ran", n)
	}
}

// TestHeadless: the headless approver refuses without being waited for,
// and the gate records that nobody could be asked.
func TestHeadless(t *testing.T) {
	if d, err := (Headless{}).Approve(t.Context(), Request{}); d != Deny || err != nil {
		t.Fatalf("Headless answered %v %v", d, err)
	}
	box := &fakeShell{name: "sandbox"}
	for _, p := range []Policy{OnRequest, Untrusted} {
		r := Wrap(box, p, Headless{}, box).Execute(t.Context(), execCall("curl x", true))
		if r.Approval == nil || r.Approval.By != "unattended" || r.Approval.Decision != "denied" || r.Approval.Waited != 0 {
			t.Errorf("%s: %+v", p, r.Approval)
		}
	}
}

// TestSessionMemory: "always" covers the same kind of request for the same
// command (spacing aside) in the same directory, and nothing else.
func TestSessionMemory(t *testing.T) {
	box, esc := &fakeShell{name: "sandbox"}, &fakeShell{name: "escalated"}
	a := &scripted{d: ApproveSession}
	g := Wrap(box, Untrusted, a, esc)
	run := func(cmd, dir string, escalate bool) tool.Result {
		c := execCall(cmd, escalate)
		c.Args.(*tool.ExecArgs).Dir = dir
		return g.Execute(t.Context(), c)
	}
	run("go  mod   download", "", true) // asked, remembered
	a.d = Deny
	if r := run("go mod download", "", true); r.Stdout != "escalated" || r.Approval.By != "session" || r.Approval.Decision != "approved_for_session" {
		t.Errorf("the same escalation: %+v %+v", r, r.Approval)
	}
	if len(a.seen) != 1 {
		t.Errorf("asked %d times for one command", len(a.seen))
	}
	// A sub-agent's gate shares the session's answers, and runs in its own shells.
	childBox, childEsc := &fakeShell{name: "child sandbox"}, &fakeShell{name: "child escalated"}
	if r := g.Child(childBox, childEsc).Execute(t.Context(), execCall("go mod download", true)); r.Stdout != "child escalated" || r.Approval.By != "session" {
		t.Errorf("child: %+v", r)
	}
	for _, c := range []struct {
		cmd, dir string
		escalate bool
	}{
		{"go mod download", "sub", true}, // another directory
		{"go mod download", "", false},   // another kind: a sandboxed run
		{"go mod download -x", "", true}, // another command
		{"go mod download; rm x", "", true},
	} {
		before := len(a.seen)
		if r := run(c.cmd, c.dir, c.escalate); r.Err == nil || len(a.seen) != before+1 {
			t.Errorf("%+v ran without asking", c)
		}
	}
}

// TestConcurrentQuestions: two calls that need approval at once each get
// their own question and their own answer; the gate does not hold one
// back while the other waits.
func TestConcurrentQuestions(t *testing.T) {
	box, esc := &fakeShell{name: "sandbox"}, &fakeShell{name: "escalated"}
	arrived := make(chan Request, 2)
	release := make(chan struct{})
	a := ApproverFunc(func(ctx context.Context, r Request) (Decision, error) {
		arrived <- r
		<-release // both questions are open at once before either is answered
		if r.Command == "curl a" {
			return Approve, nil
		}
		return Deny, nil
	})
	g := Wrap(box, OnRequest, a, esc)
	var wg sync.WaitGroup
	results := make([]tool.Result, 2)
	for i, cmd := range []string{"curl a", "curl b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := execCall(cmd, true)
			c.ID = cmd
			results[i] = g.Execute(t.Context(), c)
		}()
	}
	got := map[string]bool{(<-arrived).Command: true, (<-arrived).Command: true}
	close(release)
	wg.Wait()
	if !got["curl a"] || !got["curl b"] {
		t.Fatalf("questions %v", got)
	}
	if results[0].Stdout != "escalated" || results[0].Approval.Decision != "approved" {
		t.Errorf("curl a: %+v", results[0])
	}
	if results[1].Err == nil || results[1].Approval.Decision != "denied" {
		t.Errorf("curl b: %+v", results[1])
	}
	if cmds := esc.commands(); len(cmds) != 1 || cmds[0] != "curl a" {
		t.Errorf("escalated ran %v", cmds)
	}
}

// TestCancelWhileWaiting: cancelling the call while its question is open
// ends the wait at once, runs nothing, and records the question as
// unanswered; so does an approver that ignores its context.
func TestCancelWhileWaiting(t *testing.T) {
	for _, honours := range []bool{true, false} {
		box := &fakeShell{name: "sandbox"}
		asked := make(chan struct{})
		stuck := make(chan struct{})
		defer close(stuck)
		a := ApproverFunc(func(ctx context.Context, r Request) (Decision, error) {
			close(asked)
			if honours {
				<-ctx.Done()
				return "", ctx.Err()
			}
			<-stuck // a person who never answers, and an approver deaf to ctx
			return Approve, nil
		})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan tool.Result)
		go func() { done <- Wrap(box, OnRequest, a, box).Execute(ctx, execCall("curl x", true)) }()
		<-asked
		cancel()
		r := <-done
		if r.Err == nil || r.Err.Kind != tool.ErrCanceled || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("honours=%v: %+v", honours, r.Err)
		}
		if r.Approval == nil || r.Approval.Decision != "unanswered" || !strings.Contains(r.Approval.Reason, "canceled") {
			t.Errorf("honours=%v: %+v", honours, r.Approval)
		}
		if n := len(box.commands()); n != 0 {
			t.Errorf("honours=%v: %d commands ran", honours, n)
		}
	}
}

// TestPassThrough: calls other than commands are never gated.
func TestPassThrough(t *testing.T) {
	box := &fakeShell{name: "sandbox"}
	a := &scripted{d: Deny}
	g := Wrap(box, Untrusted, a, nil)
	for _, c := range []tool.Call{{ID: "v", Op: tool.OpView, Args: &tool.ViewArgs{Path: "a"}}, {ID: "r", Op: tool.OpRestart}} {
		if r := g.Execute(t.Context(), c); r.Err != nil || r.Approval != nil {
			t.Errorf("%s: %+v", c.Op, r)
		}
	}
	if len(a.seen) != 0 {
		t.Error("asked about a non-command")
	}
}

func TestParsePolicy(t *testing.T) {
	for _, p := range Policies {
		if got, err := ParsePolicy(string(p)); got != p || err != nil {
			t.Errorf("%s: %v %v", p, got, err)
		}
	}
	if _, err := ParsePolicy("on-failure"); err == nil || !strings.Contains(err.Error(), "never, on-request or untrusted") {
		t.Errorf("on-failure: %v", err)
	}
}

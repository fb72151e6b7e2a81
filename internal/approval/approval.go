// Package approval decides whether a command may run, and asks a person
// when it must: the approval policies of Codex CLI, "never", "on-request"
// and "untrusted", applied to the shell calls of a session.
//
// Under "on-request" the model may ask to run one command with more than
// the sandbox allows (the shell tool's sandbox_permissions
// "require_escalated", decoded into tool.ExecArgs.Escalate); the Approver
// is asked, and an approved command runs through the escalated executor,
// whose shell runs with the wider sandbox policy. Under "untrusted", every
// command that is not known to be read-only (ReadOnly) is asked about
// first, and escalations too. Under "never" nobody is asked: escalations
// are refused and every command runs in the sandbox.
//
// Every question and answer travels with the call's result
// (tool.Result.Approval), so that whatever records the call records them.
package approval

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/tool"
)

// Policy is when a person is asked before a command runs.
type Policy string

// The policies, with Codex CLI's names.
const (
	// Never asks nobody: commands run in the sandbox, escalations are
	// refused. Headless runs (truss exec) use it.
	Never Policy = "never"
	// OnRequest asks only when the model requests an escalation; commands
	// inside the sandbox run without asking. The interactive default.
	OnRequest Policy = "on-request"
	// Untrusted asks before every command that is not known to be
	// read-only, and before every escalation.
	Untrusted Policy = "untrusted"
)

// Policies lists the policies, for flags and help.
var Policies = []Policy{Never, OnRequest, Untrusted}

// ParsePolicy parses a policy name.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range Policies {
		if s == string(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown approval policy %q: use never, on-request or untrusted", s)
}

// Kind is what a request asks.
type Kind string

// The kinds of request.
const (
	// KindEscalation asks to run a command with more than the sandbox
	// allows.
	KindEscalation Kind = "escalation"
	// KindCommand asks to run, inside the sandbox, a command that is not
	// known to be read-only (under Untrusted).
	KindCommand Kind = "command"
)

// Request is one question to the person approving.
type Request struct {
	Policy Policy
	Kind   Kind
	// CallID, Tool and Surface name the call that asks.
	CallID  string
	Tool    string
	Surface string
	// Command is the command as the model sent it; Dir its directory,
	// if the call named one.
	Command string
	Dir     string
	// Justification is the model's reason for an escalation (a question
	// for the user, as Codex's models are trained to phrase it).
	Justification string
}

// Key is what an answer of ApproveSession covers: the same kind of
// request for the same command (as the shell parser prints it, so spacing
// does not matter) in the same directory.
func (r Request) Key() string {
	return string(r.Kind) + "\x00" + r.Dir + "\x00" + Canonical(r.Command)
}

// Decision is an answer.
type Decision string

// The answers.
const (
	Approve        Decision = "approved"             // yes, this once
	ApproveSession Decision = "approved_for_session" // yes, and the same request again in this session
	Deny           Decision = "denied"               // no
)

// Approver asks a person. Approve blocks until the person answers or ctx
// ends (then it returns ctx's error); it may be called by several calls at
// once, and each call gets its own question and answer.
type Approver interface {
	Approve(ctx context.Context, r Request) (Decision, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, r Request) (Decision, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, r Request) (Decision, error) { return f(ctx, r) }

// Unattended is implemented by approvers that stand for nobody: the gate
// refuses what needs approval without asking, in the words Unattended
// returns (why nobody can be asked).
type Unattended interface {
	Unattended() string
}

// Headless is the approver of runs without a person (truss exec): it
// refuses every request, without waiting.
type Headless struct{}

// Approve implements Approver: always Deny.
func (Headless) Approve(context.Context, Request) (Decision, error) { return Deny, nil }

// Unattended implements Unattended.
func (Headless) Unattended() string {
	return "this run is unattended and nobody can approve commands in it"
}

// Gate is a tool.Executor that applies an approval policy to shell calls
// (tool.OpExec) and passes every other call through. It remembers answers
// of ApproveSession for its lifetime, one session (shared with its Child
// gates). It is safe for concurrent use; it never holds a lock while a
// question waits.
type Gate struct {
	exec, escalated tool.Executor
	policy          Policy
	approver        Approver
	memory          *memory
}

// memory is the answers of ApproveSession of one session, shared by the
// gates of its agents.
type memory struct {
	mu     sync.Mutex
	always map[string]bool
}

func (m *memory) has(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.always[key]
}

func (m *memory) add(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.always[key] = true
}

// Wrap returns exec gated by policy p. a answers the questions (nil means
// Headless); escalated runs the approved escalations, a shell with the
// wider sandbox policy (nil: escalations are refused as not available).
func Wrap(exec tool.Executor, p Policy, a Approver, escalated tool.Executor) *Gate {
	if a == nil {
		a = Headless{}
	}
	return &Gate{exec: exec, escalated: escalated, policy: p, approver: a, memory: &memory{always: map[string]bool{}}}
}

// Child returns a gate for another agent of the same session (a
// sub-agent, with its own shell and escalated shell in its own
// directory): the same policy and approver, and the same memory of
// ApproveSession answers, so that "always" holds for the whole session.
func (g *Gate) Child(exec, escalated tool.Executor) *Gate {
	return &Gate{exec: exec, escalated: escalated, policy: g.policy, approver: g.approver, memory: g.memory}
}

// Policy returns the gate's policy.
func (g *Gate) Policy() Policy { return g.policy }

// Execute implements tool.Executor.
func (g *Gate) Execute(ctx context.Context, call tool.Call) tool.Result {
	args, ok := call.Args.(*tool.ExecArgs)
	if call.Op != tool.OpExec || !ok {
		return g.exec.Execute(ctx, call)
	}
	req := Request{Policy: g.policy, CallID: call.ID, Tool: call.Tool, Surface: call.Surface, Command: args.Command, Dir: args.Dir}
	switch {
	case args.Escalate:
		req.Kind, req.Justification = KindEscalation, args.Justification
	case g.policy == Untrusted && !ReadOnly(args.Command):
		req.Kind = KindCommand
	default:
		return g.exec.Execute(ctx, call)
	}
	rec := &tool.Approval{Policy: string(g.policy), Kind: string(req.Kind), Command: req.Command, Dir: req.Dir, Justification: req.Justification}
	if req.Kind == KindEscalation && (g.policy == Never || g.escalated == nil) {
		rec.Decision, rec.By = string(Deny), "policy"
		msg := "This session does not ask for approvals (approval policy \"never\"), so the command was not run outside the sandbox. Run what you can inside the sandbox, without sandbox_permissions, or do without it."
		if g.policy != Never {
			msg = "Running a command outside the sandbox is not available in this session, so the command was not run. Run what you can inside the sandbox, without sandbox_permissions, or do without it."
		}
		return refused(call, rec, msg)
	}
	if u, ok := g.approver.(Unattended); ok {
		rec.Decision, rec.By = string(Deny), "unattended"
		return refused(call, rec, fmt.Sprintf("The command needed approval (%s), but %s, so it was not run. %s", what(req), u.Unattended(), instead(req)))
	}
	key := req.Key()
	if g.memory.has(key) {
		rec.Decision, rec.By = string(ApproveSession), "session"
		return g.run(ctx, call, req, rec)
	}
	start := time.Now()
	d, err := g.ask(ctx, req)
	rec.Waited = time.Since(start)
	if err != nil {
		rec.Decision = "unanswered"
		if ctx.Err() != nil {
			rec.Reason = "the call was canceled while it waited for an answer"
			r := tool.Failed(call, &tool.Error{Kind: tool.ErrCanceled, Message: "the call was canceled while it waited for approval; the command was not run", Err: ctx.Err()})
			r.Approval = rec
			return r
		}
		rec.Reason = "the approval could not be asked: " + err.Error()
		return refused(call, rec, fmt.Sprintf("The command needed approval (%s), but the approval could not be asked (%v), so it was not run.", what(req), err))
	}
	rec.By = "user"
	switch d {
	case ApproveSession:
		g.memory.add(key)
		fallthrough
	case Approve:
		rec.Decision = string(d)
		return g.run(ctx, call, req, rec)
	case Deny:
		rec.Decision = string(Deny)
		return refused(call, rec, fmt.Sprintf("The user declined %s, so it was not run. %s", declined(req), instead(req)))
	}
	rec.Decision, rec.Reason = string(Deny), fmt.Sprintf("the approver answered %q, which is not a decision", d)
	return refused(call, rec, fmt.Sprintf("The command needed approval (%s) and got no valid answer, so it was not run.", what(req)))
}

// ask asks the approver, and gives up when ctx ends even if the approver
// does not.
func (g *Gate) ask(ctx context.Context, req Request) (Decision, error) {
	type answer struct {
		d   Decision
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		d, err := g.approver.Approve(ctx, req)
		ch <- answer{d, err}
	}()
	select {
	case a := <-ch:
		if a.err == nil && ctx.Err() != nil {
			return "", ctx.Err()
		}
		return a.d, a.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// run runs an approved call: an escalation through the escalated
// executor, a command through the sandboxed one.
func (g *Gate) run(ctx context.Context, call tool.Call, req Request, rec *tool.Approval) tool.Result {
	e := g.exec
	if req.Kind == KindEscalation {
		e, rec.Escalated = g.escalated, true
	}
	r := e.Execute(ctx, call)
	r.CallID, r.Op = call.ID, call.Op
	r.Approval = rec
	return r
}

func refused(call tool.Call, rec *tool.Approval, msg string) tool.Result {
	r := tool.Failed(call, &tool.Error{Kind: tool.ErrNotApproved, Message: msg})
	r.Approval = rec
	return r
}

func what(r Request) string {
	if r.Kind == KindEscalation {
		return "it asked to run outside the sandbox"
	}
	return "under the untrusted policy, only known read-only commands run without asking"
}

func declined(r Request) string {
	if r.Kind == KindEscalation {
		return "running this command outside the sandbox"
	}
	return "this command"
}

func instead(r Request) string {
	if r.Kind == KindEscalation {
		return "Do not ask again for the same command; run what you can inside the sandbox, without sandbox_permissions, or ask the user how to go on."
	}
	return "Use another way (read-only commands and the file tools run without asking), or ask the user how to go on."
}

// Unwrap implements tool.Wrapper: the optional capabilities of the
// sandboxed executor (which calls are concurrent, which mutate) are the
// gate's.
func (g *Gate) Unwrap() tool.Executor { return g.exec }

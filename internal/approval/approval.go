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
// Apart from the policy, a gate may ask before every file edit
// (EditsAsk): every operation that changes the workspace's files
// (IsEdit), whatever tool or surface it came through, is a question of
// KindEdit that shows the person the edit's diff, computed before
// anything is written (tool.Previewer). It is what a Claude Code user
// knows as its default mode; EditsAccept, the default, is its "accept
// edits" mode.
//
// Every question and answer travels with the call's result
// (tool.Result.Approval), so that whatever records the call records them.
package approval

import (
	"context"
	"errors"
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

// EditPolicy is whether a person is asked before a file edit. It is
// orthogonal to Policy, which is about commands, except that it needs a
// policy that asks somebody: a gate under Never refuses the edits it
// would ask about.
type EditPolicy string

// The edit policies.
const (
	// EditsAccept makes file edits without asking (within the
	// workspace's writable roots, as the file tools always do). The
	// default.
	EditsAccept EditPolicy = "accept"
	// EditsAsk asks before every operation that changes files (IsEdit),
	// showing the edit's diff.
	EditsAsk EditPolicy = "ask"
)

// EditPolicies lists the edit policies, for flags and help.
var EditPolicies = []EditPolicy{EditsAccept, EditsAsk}

// ParseEditPolicy parses an edit policy name.
func ParseEditPolicy(s string) (EditPolicy, error) {
	for _, p := range EditPolicies {
		if s == string(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown edit approval %q: use ask (ask before every file edit, showing its diff) or accept (make edits without asking)", s)
}

// IsEdit reports whether op changes the workspace's files: the file
// operations that write, delete, rename or undo, and patches. It is what
// EditsAsk asks about. Views and listings read; the memory operations
// change the model's notes, not the workspace; commands are the
// Policy's.
func IsEdit(op tool.Op) bool {
	switch op {
	case tool.OpCreate, tool.OpWrite, tool.OpReplace, tool.OpInsert, tool.OpDelete, tool.OpRename, tool.OpUndo, tool.OpPatch, tool.OpPatchOp:
		return true
	}
	return false
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
	// KindEdit asks to change files (under EditsAsk).
	KindEdit Kind = "edit"
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

	// Op is the call's operation (for an edit: tool.OpReplace, …).
	Op tool.Op
	// Paths are the files an edit changes, as the model named them: both
	// names of a rename, every file a patch names.
	Paths []string
	// Summary says in one line what an edit does ("replace text in
	// a.go", "apply a patch to a.go, b.go").
	Summary string
	// Diff is an edit's preview: a unified diff of what it would change,
	// computed from the files as they were when the question was asked,
	// before anything was written (tool.Previewer). It is empty when the
	// executor cannot preview the call or the preview failed; Detail then
	// shows the call's arguments instead.
	Diff string
	// Detail is an edit's arguments as text, set when there is no Diff:
	// the content written, the text replaced and its replacement, the
	// patch as sent; at most DetailMax bytes, cut with a marker.
	Detail string
	// PreviewError is why the preview failed ("the text to replace was
	// not found in a.go; …"): the edit, if approved, will most likely fail
	// with that error. Empty when there is a Diff or the executor has no
	// preview.
	PreviewError string
}

// DetailMax is the most bytes of an edit's arguments Request.Detail
// holds.
const DetailMax = 64 << 10

// Key is what an answer of ApproveSession covers: for a command, the same
// kind of request for the same command (as the shell parser prints it, so
// spacing does not matter) in the same directory; for an edit, every edit
// (the key is the kind, not the path).
func (r Request) Key() string {
	if r.Kind == KindEdit {
		return string(KindEdit)
	}
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
	return "this run is unattended and nobody can approve anything in it"
}

// Gate is a tool.Executor that applies an approval policy to shell calls
// (tool.OpExec) and, under EditsAsk, to file edits (IsEdit), and passes
// every other call through. It remembers answers of ApproveSession for
// its lifetime, one session (shared with its Child gates). It is safe for
// concurrent use; it never holds a lock while a question waits.
type Gate struct {
	exec, escalated tool.Executor
	policy          Policy
	edits           EditPolicy
	approver        Approver
	memory          *memory
}

// Option configures a Gate.
type Option func(*Gate)

// WithEdits sets the gate's edit policy (EditsAccept when not given).
func WithEdits(e EditPolicy) Option { return func(g *Gate) { g.edits = e } }

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
// Under WithEdits(EditsAsk), exec's previews (tool.Preview, looked up
// through its Wrappers) show the person each edit.
func Wrap(exec tool.Executor, p Policy, a Approver, escalated tool.Executor, opts ...Option) *Gate {
	if a == nil {
		a = Headless{}
	}
	g := &Gate{exec: exec, escalated: escalated, policy: p, edits: EditsAccept, approver: a, memory: &memory{always: map[string]bool{}}}
	for _, o := range opts {
		o(g)
	}
	return g
}

// Child returns a gate for another agent of the same session (a
// sub-agent, with its own shell and escalated shell in its own
// directory): the same policies and approver, and the same memory of
// ApproveSession answers, so that "always" holds for the whole session.
func (g *Gate) Child(exec, escalated tool.Executor) *Gate {
	return &Gate{exec: exec, escalated: escalated, policy: g.policy, edits: g.edits, approver: g.approver, memory: g.memory}
}

// Policy returns the gate's policy.
func (g *Gate) Policy() Policy { return g.policy }

// Edits returns the gate's edit policy.
func (g *Gate) Edits() EditPolicy { return g.edits }

// Execute implements tool.Executor.
func (g *Gate) Execute(ctx context.Context, call tool.Call) tool.Result {
	if g.edits == EditsAsk && IsEdit(call.Op) {
		return g.edit(ctx, call)
	}
	args, ok := call.Args.(*tool.ExecArgs)
	if call.Op != tool.OpExec || !ok {
		return g.exec.Execute(ctx, call)
	}
	req := Request{Policy: g.policy, CallID: call.ID, Tool: call.Tool, Surface: call.Surface, Op: call.Op, Command: args.Command, Dir: args.Dir}
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
	if r, ok := g.permit(ctx, call, &req, rec, nil); !ok {
		return r
	}
	return g.run(ctx, call, req, rec)
}

// edit gates a file edit under EditsAsk: asked with its preview, unless
// an earlier answer of ApproveSession covers every edit.
func (g *Gate) edit(ctx context.Context, call tool.Call) tool.Result {
	req := Request{Policy: g.policy, Kind: KindEdit, CallID: call.ID, Tool: call.Tool, Surface: call.Surface, Op: call.Op}
	req.Paths, req.Summary = describe(call)
	rec := &tool.Approval{Policy: string(g.policy), Kind: string(KindEdit), Paths: req.Paths}
	if g.policy == Never {
		rec.Decision, rec.By = string(Deny), "policy"
		return refused(call, rec, "This session asks before file edits, but its approval policy \"never\" asks nobody, so the edit was not made. Do not make the change another way (with a command or another tool); say in your answer what you would change.")
	}
	preview := func() {
		d, err := tool.Preview(ctx, g.exec, call)
		switch {
		case err == nil && d != "":
			req.Diff = d
			rec.Preview = tool.Digest([]byte(d))
		case err == nil, errors.Is(err, tool.ErrNoPreview):
			req.Detail = detail(call)
		default:
			req.Detail, req.PreviewError = detail(call), err.Error()
			rec.PreviewError = req.PreviewError
		}
	}
	if r, ok := g.permit(ctx, call, &req, rec, preview); !ok {
		return r
	}
	if req.Diff != "" {
		// What was approved is the change the preview showed: if the
		// files changed while the person decided, the edit would make
		// another change, which nobody approved. (The edit itself reads
		// them once more; a change falling in between is not caught.)
		if d, err := tool.Preview(ctx, g.exec, call); err == nil && d != req.Diff {
			rec.Reason = "the files changed while the user decided: the edit would no longer make the change approved"
			r := tool.Failed(call, &tool.Error{Kind: tool.ErrStale, Path: first(req.Paths),
				Message: "The files this edit changes were changed while the user was deciding on it, so it would no longer make the change the user approved; it was not made. View the files again and redo the edit."})
			r.Approval = rec
			return r
		}
	}
	r := g.exec.Execute(ctx, call)
	r.CallID, r.Op = call.ID, call.Op
	r.Approval = rec
	return r
}

// permit decides whether call may go on: it refuses without asking when
// nobody can answer, lets it go on when an earlier answer of
// ApproveSession covers it, else calls prepare (if any: to fill in what
// the question shows) and asks. It fills in rec; when the call may not go
// on it returns the refusal.
func (g *Gate) permit(ctx context.Context, call tool.Call, req *Request, rec *tool.Approval, prepare func()) (tool.Result, bool) {
	if u, ok := g.approver.(Unattended); ok {
		rec.Decision, rec.By = string(Deny), "unattended"
		return refused(call, rec, fmt.Sprintf("The %s needed approval (%s), but %s, so %s. %s", noun(*req), what(*req), u.Unattended(), notDone(*req), instead(*req))), false
	}
	key := req.Key()
	if g.memory.has(key) {
		rec.Decision, rec.By = string(ApproveSession), "session"
		return tool.Result{}, true
	}
	if prepare != nil {
		prepare()
	}
	start := time.Now()
	d, err := g.ask(ctx, *req)
	rec.Waited = time.Since(start)
	if err != nil {
		rec.Decision = "unanswered"
		if ctx.Err() != nil {
			rec.Reason = "the call was canceled while it waited for an answer"
			r := tool.Failed(call, &tool.Error{Kind: tool.ErrCanceled, Message: fmt.Sprintf("the call was canceled while it waited for approval; the %s was not %s", noun(*req), map[bool]string{true: "made", false: "run"}[req.Kind == KindEdit]), Err: ctx.Err()})
			r.Approval = rec
			return r, false
		}
		rec.Reason = "the approval could not be asked: " + err.Error()
		return refused(call, rec, fmt.Sprintf("The %s needed approval (%s), but the approval could not be asked (%v), so %s.", noun(*req), what(*req), err, notDone(*req))), false
	}
	rec.By = "user"
	switch d {
	case ApproveSession:
		g.memory.add(key)
		fallthrough
	case Approve:
		rec.Decision = string(d)
		return tool.Result{}, true
	case Deny:
		rec.Decision = string(Deny)
		return refused(call, rec, fmt.Sprintf("The user declined %s, so %s. %s", declined(*req), notDone(*req), instead(*req))), false
	}
	rec.Decision, rec.Reason = string(Deny), fmt.Sprintf("the approver answered %q, which is not a decision", d)
	return refused(call, rec, fmt.Sprintf("The %s needed approval (%s) and got no valid answer, so %s.", noun(*req), what(*req), notDone(*req))), false
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

func noun(r Request) string {
	if r.Kind == KindEdit {
		return "edit"
	}
	return "command"
}

func notDone(r Request) string {
	if r.Kind == KindEdit {
		return "it was not made"
	}
	return "it was not run"
}

func what(r Request) string {
	switch r.Kind {
	case KindEscalation:
		return "it asked to run outside the sandbox"
	case KindEdit:
		return "this session asks the user before every file edit"
	}
	return "under the untrusted policy, only known read-only commands run without asking"
}

func declined(r Request) string {
	switch r.Kind {
	case KindEscalation:
		return "running this command outside the sandbox"
	case KindEdit:
		return "this edit (" + r.Summary + ")"
	}
	return "this command"
}

func instead(r Request) string {
	switch r.Kind {
	case KindEscalation:
		return "Do not ask again for the same command; run what you can inside the sandbox, without sandbox_permissions, or ask the user how to go on."
	case KindEdit:
		return "Do not make this change another way (with a command or another tool); ask the user how to go on."
	}
	return "Use another way (read-only commands and the file tools run without asking), or ask the user how to go on."
}

func first(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	return paths[0]
}

// Unwrap implements tool.Wrapper: the optional capabilities of the
// sandboxed executor (which calls are concurrent, which mutate) are the
// gate's.
func (g *Gate) Unwrap() tool.Executor { return g.exec }

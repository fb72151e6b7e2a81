package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/changes"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/shell"
)

// Approvals: every agent's shell calls go through an approval gate
// (package approval) under Options.Approval. When the policy is not
// "never", the surface's shell tools declare the escalation parameters
// (surface.OfferEscalation), and an approved escalation runs in an
// escalated shell: a shell of its own, started on first use, in a second
// sandbox with full file-system access and the network on, which still
// hides the signing key and the saved sessions where the session's own
// sandbox does (its namespaces). The question and the answer travel with
// the call's result (tool.Result.Approval).
//
// Under the edit policy approval.EditsAsk (Options.ApprovalEdits, else
// the user's approval_edits), the same gate asks before every file edit,
// of every agent, showing its diff: the executors' previews
// (tool.Previewer: the file and patch executors) are found through the
// gate's executor, the changes tracker and the Mux. Such a session needs
// somebody to answer: Open refuses it when nobody can (checkApproval).

// approvalPolicy is the session's approval policy: never unless set.
func (s *Session) approvalPolicy() approval.Policy {
	if s.opts.Approval == "" {
		if s.user != nil && s.user.Approval != "" {
			return approval.Policy(s.user.Approval)
		}
		return approval.Never
	}
	return s.opts.Approval
}

// editPolicy is the session's edit policy: the option, else the user's
// configuration where somebody can answer (a user's "ask" is the default
// of the sessions a person drives; headless runs edit without asking),
// else accept.
func (s *Session) editPolicy() approval.EditPolicy {
	switch {
	case s.opts.ApprovalEdits != "":
		return s.opts.ApprovalEdits
	case s.user != nil && s.user.ApprovalEdits != "" && s.nobodyAnswers() == "":
		return approval.EditPolicy(s.user.ApprovalEdits)
	}
	return approval.EditsAccept
}

// nobodyAnswers says why nobody can answer an approval question in this
// session (its approver stands for nobody, or its policy is never), or ""
// when somebody can.
func (s *Session) nobodyAnswers() string {
	var a approval.Approver = approval.Headless{}
	if s.opts.Approver != nil {
		a = s.opts.Approver
	}
	if u, ok := a.(approval.Unattended); ok {
		return u.Unattended()
	}
	if s.approvalPolicy() == approval.Never {
		return neverAsks
	}
	return ""
}

// checkApproval checks the approval options, and refuses a session told
// to ask before edits (--approval-edits ask) when nobody can answer: every
// edit of it would be refused, so it fails now, before the model is paid
// for, saying how to go on. (The user's approval_edits = "ask" does not
// apply where nobody answers: editPolicy.)
func (s *Session) checkApproval() error {
	if s.opts.Approval != "" {
		if _, err := approval.ParsePolicy(string(s.opts.Approval)); err != nil {
			return &ConfigError{Msg: "--approval: " + err.Error()}
		}
	}
	if s.opts.ApprovalEdits != "" {
		if _, err := approval.ParseEditPolicy(string(s.opts.ApprovalEdits)); err != nil {
			return &ConfigError{Msg: "--approval-edits: " + err.Error()}
		}
	}
	if s.opts.ApprovalEdits != approval.EditsAsk {
		return nil
	}
	switch why := s.nobodyAnswers(); why {
	case "":
		return nil
	case neverAsks:
		return &ConfigError{Msg: `--approval-edits ask asks before every file edit, but the approval policy "never" asks nobody: use --approval on-request (commands in the sandbox still run without asking), or --approval-edits accept`}
	default:
		return &ConfigError{Msg: fmt.Sprintf("--approval-edits ask asks before every file edit, but nobody can answer in this run (%s): use the interactive session (truss), or --approval-edits accept to let this run edit without asking", why)}
	}
}

// neverAsks is nobodyAnswers' reason under the policy never.
const neverAsks = `the approval policy "never" asks nobody`

// offersEscalation reports whether the shell tools declare the escalation
// parameters: only when someone may be asked.
func (s *Session) offersEscalation() bool {
	return s.approvalPolicy() != approval.Never
}

// escalating returns the registry whose surfaces' shell tools declare the
// escalation parameters.
func escalating(r surface.Registry) surface.Registry {
	out := make(surface.Registry, len(r))
	for name, f := range r {
		out[name] = func(p surface.Profile) []surface.Binding { return surface.OfferEscalation(f(p)) }
	}
	return out
}

// gated wraps exec, the executor of an agent working in dir, in the
// session's approval gate: the top agent's gate is made first, every
// sub-agent's is its Child (one policy, one approver, one memory of
// "always" answers for the session).
func (s *Session) gated(exec tool.Executor, dir string) tool.Executor {
	var esc tool.Executor
	if s.approvalPolicy() != approval.Never {
		e := &escalatedShell{s: s, dir: dir}
		s.escalated.add(e)
		esc = e
		if t := s.tracker(dir); t != nil {
			esc = changes.Wrap(esc, t)
		}
	}
	s.gateMu.Lock()
	defer s.gateMu.Unlock()
	if s.gate == nil {
		s.gate = approval.Wrap(exec, s.approvalPolicy(), s.opts.Approver, esc, approval.WithEdits(s.editPolicy()))
		return s.gate
	}
	return s.gate.Child(exec, esc)
}

// escalatedPlan is the sandbox plan of approved escalations: the
// session's policy with full file-system access and the network on. The
// hidden paths (the signing key, the saved sessions) stay hidden wherever
// the session's sandbox uses namespaces, which is what hides them:
// sandbox.MakePlan enforces nothing for full access with the network, so
// the mechanisms are the session's without Landlock (no file-system
// restriction) and without the network part of the system-call filter;
// sandbox.New keeps the filter's fixed refusals (mount, umount2, the new
// mount API, namespaces, ptrace) for every plan with namespaces, so the
// command, root of its user namespace, cannot take a cover off.
func (s *Session) escalatedPlan() *sandbox.Plan {
	base := s.w.sandbox.Plan()
	p := base.Policy
	p.Mode, p.Network, p.Protected = sandbox.FullAccess, true, nil
	// Its own directory is in the session's private one, which the
	// session's commands do not see; the escalated shell must write it.
	p.Hidden = slices.DeleteFunc(slices.Clone(p.Hidden), func(h string) bool { return h == s.w.priv })
	pl := &sandbox.Plan{Policy: p}
	if base.Mechanisms.Namespaces && len(p.Hidden) > 0 {
		m := base.Mechanisms
		m.Landlock, m.Seccomp = 0, false
		pl.Mechanisms = m
	}
	return pl
}

// escalatedShell runs approved escalations of one agent in dir, in a
// shell started on first use in the escalated sandbox.
type escalatedShell struct {
	s   *Session
	dir string

	once sync.Once
	sb   *sandbox.Sandbox
	sh   *ownedShell
	err  error
	mu   sync.Mutex
	done bool
}

// Execute implements tool.Executor.
func (e *escalatedShell) Execute(ctx context.Context, call tool.Call) tool.Result {
	e.once.Do(e.start)
	if e.err != nil {
		return tool.Failed(call, &tool.Error{Kind: tool.ErrShell, Message: "the escalated shell could not start: " + e.err.Error(), Err: e.err})
	}
	return e.sh.Execute(ctx, call)
}

func (e *escalatedShell) start() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		e.err = ErrClosed
		return
	}
	w := e.s.w
	if w.envs != nil {
		// A task environment: the escalated command runs in the session's
		// container like every other (whose own confinement is the
		// image's), never on the host.
		e.sh = &ownedShell{Session: w.envShellIn(e.dir)}
		return
	}
	sb, err := sandbox.New(e.s.escalatedPlan())
	if err != nil {
		e.err = fmt.Errorf("the escalated sandbox: %w", err)
		return
	}
	// Its saved variables, which its next shell sources, are where no
	// command of the session's sandbox can write.
	own, err := os.MkdirTemp(w.priv, "escalated-")
	if err != nil {
		sb.Close()
		e.err = err
		return
	}
	// Nothing the session's sandboxed commands can write steers it: its
	// temporary directory is its own, beside its saved variables; its
	// caches are the host's own (the user's, as for any command the user
	// runs), never the sandbox's, where a command could have planted a
	// wheel, a module or an npx package the approved command would take;
	// its PATH has none of the directories commands write (an approved
	// "git status" is not a git a command wrote into .venv/bin).
	tmp := filepath.Join(own, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		sb.Close()
		hostfs.RemoveAll(own)
		e.err = err
		return
	}
	sh := shell.New(shell.Config{Dir: e.dir, Timeout: w.timeout, AllowEnv: w.allowEnv, WithholdEnv: w.withholdEnv, OwnEnv: w.ownEnv,
		Env: os.Environ(), SetEnv: append([]string{"TMPDIR=" + tmp, "PATH=" + w.hostPath}, w.cfg.Validate.EnvList()...),
		TmpDir: own, Launcher: sb, Guard: sb.Guard, Bash: w.bash})
	e.sb, e.sh = sb, &ownedShell{Session: sh, dir: own}
}

// close stops the shell and its sandbox, if they started.
func (e *escalatedShell) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done = true
	if e.sh != nil {
		e.sh.Close()
	}
	if e.sb != nil {
		e.sb.Close()
	}
}

// escalatedShells are the session's escalated shells, closed with it.
type escalatedShells struct {
	mu  sync.Mutex
	all []*escalatedShell
}

func (es *escalatedShells) add(e *escalatedShell) {
	es.mu.Lock()
	defer es.mu.Unlock()
	es.all = append(es.all, e)
}

func (es *escalatedShells) close() {
	es.mu.Lock()
	all := es.all
	es.all = nil
	es.mu.Unlock()
	for _, e := range all {
		e.close()
	}
}

// stop kills what each escalated shell runs (its next command starts a
// new shell, with the saved directory and variables).
func (es *escalatedShells) stop() {
	es.mu.Lock()
	all := slices.Clone(es.all)
	es.mu.Unlock()
	for _, e := range all {
		e.mu.Lock()
		if e.sh != nil {
			e.sh.Restart()
		}
		if e.sb != nil {
			e.sb.KillAll()
		}
		e.mu.Unlock()
	}
}

// Approval returns the session's approval policy.
func (s *Session) Approval() approval.Policy { return s.approvalPolicy() }

// ApprovalEdits returns the session's edit policy: whether the approver
// is asked before every file edit.
func (s *Session) ApprovalEdits() approval.EditPolicy { return s.editPolicy() }

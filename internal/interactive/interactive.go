// Package interactive is the interactive session: a harness session
// driven by the terminal UI (internal/tui). It answers the UI's commands
// through the session (switching the model, surface or sandbox mode by
// re-opening it, resuming another saved session, attaching files, the
// project's checks in the background and on demand), puts the session's
// approval questions to the user, and closes the session when the UI
// ends. cmd/truss only parses flags and prints what Run returns.
package interactive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/suggest"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tui"
)

// Closed is what became of the session when the UI ended.
type Closed struct {
	// Opened reports that the session opened (and the UI ran).
	Opened bool
	// ID is the last session open, "" when sessions are not saved
	// (--no-session).
	ID string
	// Saved reports that closing kept it (harness.Session.Saved): false
	// when no task reached the model.
	Saved bool
}

// Run opens a session with o, runs the terminal UI on it until the user
// quits or ctx ends, and closes the session, which saves it. The checks
// run in the background after a task that changed files, and on demand
// (/check): o.Validation.Background is set; o.Interactive is set too. Approval questions go to the
// UI (o.Approver is replaced). An error opening the session is returned
// before the UI starts; the UI's own error and the session's close error
// are returned after it ends (a cancelled ctx is not an error).
func Run(ctx context.Context, o harness.Options, uo tui.Options) (Closed, error) {
	o.Validation.Background = true
	o.Interactive = true
	u := tui.New(uo)
	q := approval.NewQueue()
	qctx, stopAsking := context.WithCancel(ctx)
	defer stopAsking()
	go askUser(qctx, q, u)
	log := &harness.ChangeLog{}
	o.Approver = q
	o.Observers = append(o.Observers, u, log)
	o.ObserveChild = u.Child
	o.OnWarning, o.OnRetry = notices(u.Notify)
	s, err := harness.Open(ctx, o)
	if err != nil {
		return Closed{}, err
	}
	opened(s, o, u.Notify)
	is := &session{opts: o, s: s, log: log, notify: u.Notify}
	runErr := u.Run(ctx, is)
	c, cerr := is.close()
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return c, errors.Join(runErr, cerr)
	}
	return c, cerr
}

// opened tells the user, through notify, what they should know of the
// session s (opened with o) before their first task: that it has no
// checks, so its work will not be verified (harness.NoChecksNote).
func opened(s *harness.Session, o harness.Options, notify func(string)) {
	if !s.Info().Validation && !o.Validation.Off {
		notify(harness.NoChecksNote)
	}
}

// notices are the session's warnings and retries as the screen's notices
// (notify): one line each, without the "truss: " a command line's stderr
// puts before them (on this screen every notice is Truss's).
func notices(notify func(string)) (warn func(string), retry func(int, time.Duration, error)) {
	warn = func(msg string) { notify(oneLine(msg)) }
	retry = func(attempt int, wait time.Duration, err error) {
		notify(fmt.Sprintf("%s; retrying in %s (attempt %d)", oneLine(err.Error()), wait.Round(time.Millisecond), attempt+1))
	}
	return warn, retry
}

// oneLine is s on one line, for a notice.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// askUser puts the questions of q to the user through u until ctx ends.
// A question withdrawn (its call canceled) is taken off the screen; one
// the UI cannot ask (it has ended) is refused.
func askUser(ctx context.Context, q *approval.Queue, u *tui.UI) {
	for {
		select {
		case <-ctx.Done():
			return
		case qu := <-q.Questions():
			go func() {
				actx, cancel := context.WithCancel(ctx)
				defer cancel()
				go func() {
					select {
					case <-qu.Withdrawn():
						cancel()
					case <-actx.Done():
					}
				}()
				d, err := u.Approve(actx, approvalRequest(qu.Request))
				if err != nil {
					d = tui.Deny
				}
				qu.Answer(approvalDecision(d))
			}()
		}
	}
}

// approvalRequest is how the UI shows r: an edit with its preview diff
// (or, without one, its arguments and why there is no diff), a command
// with what it would be given.
func approvalRequest(r approval.Request) tui.ApprovalRequest {
	if r.Kind == approval.KindEdit {
		req := tui.ApprovalRequest{CallID: r.CallID, Tool: r.Tool, Command: r.Summary, Edit: true, Diff: r.Diff}
		if r.Diff == "" {
			req.Command = r.Summary + "\n" + r.Detail
			if r.PreviewError != "" {
				req.Reason = "no preview of this edit: " + r.PreviewError
			}
		}
		return req
	}
	req := tui.ApprovalRequest{CallID: r.CallID, Tool: r.Tool, Command: r.Command, Reason: r.Justification}
	if r.Kind == approval.KindEscalation {
		// An escalated command runs with the network and full access.
		req.Network, req.Paths = true, []string{"the whole file system"}
	}
	if r.Dir != "" {
		req.Command = "(in " + r.Dir + ") " + req.Command
	}
	return req
}

func approvalDecision(d tui.Decision) approval.Decision {
	switch d {
	case tui.Allow:
		return approval.Approve
	case tui.AllowAlways:
		return approval.ApproveSession
	}
	return approval.Deny
}

// session is the harness session as the UI drives it
// (tui.Session and its optional capabilities). Re-opening it (another
// model, surface or sandbox mode; another session) closes the open
// session, which saves it, and opens the next; the UI never calls Run
// and a command at once, but Status comes at any time.
type session struct {
	opts   harness.Options
	log    *harness.ChangeLog
	notify func(string)

	// mu guards the fields below; swapping holds it only for the swap,
	// so that Status never waits for a session to open. The UI never
	// runs two commands at once.
	mu       sync.Mutex
	s        *harness.Session
	attached []attachment
	tasks    int
	check    *harness.BackgroundCheck // the last one started
}

type attachment struct {
	path string
	data []byte
}

// session returns the open session.
func (is *session) session() *harness.Session {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.s
}

// Run implements tui.Session: the task, with the files attached to it,
// runs on the open session; the checks' verdict is drawn after it.
func (is *session) Run(ctx context.Context, task string) (agent.Outcome, error) {
	is.mu.Lock()
	s, att := is.s, is.attached
	is.attached = nil
	is.tasks++
	is.mu.Unlock()
	if len(att) > 0 {
		var b strings.Builder
		b.WriteString(task)
		for _, a := range att {
			b.WriteString(tui.AttachedFile(a.path, a.data))
		}
		task = b.String()
	}
	out, err := s.Run(ctx, task)
	if err != nil {
		return agent.Outcome{}, err
	}
	if v := out.Verdict; v != nil {
		is.notify("checks (run by truss): " + oneLine(v.Text("", 0)))
	}
	if c := out.Background; c != nil {
		is.mu.Lock()
		is.check = c
		is.mu.Unlock()
		go func() {
			<-c.Done()
			switch v := c.Verdict(); {
			case v == nil:
			case v.Cancelled:
				is.notify("checks (run by truss) cancelled before they ended; /check runs them")
			default:
				is.notify("checks (run by truss): " + oneLine(v.Text("", 0)))
			}
		}()
	}
	return out.Agent, nil
}

// Transcript implements tui.Transcripter: the conversation the session
// resumed.
func (is *session) Transcript() []model.Item { return is.session().Transcript() }

// Check implements tui.Checker: the checks now, a background one
// cancelled first.
func (is *session) Check(ctx context.Context) (string, error) {
	v, err := is.session().Validate(ctx)
	switch {
	case err != nil:
		return "", err
	case v == nil:
		return "No checks are configured or detected for this workspace (set one with --test-cmd, or test under [validate] in .truss/config.toml).", nil
	}
	return v.Text(v.Log, 20), nil
}

// Status implements tui.Session.
func (is *session) Status() tui.Status {
	is.mu.Lock()
	s, tasks, check := is.s, is.tasks, is.check
	is.mu.Unlock()
	info, st := s.Info(), s.Stats()
	policy := string(s.Approval())
	if s.ApprovalEdits() == approval.EditsAsk {
		policy += " + ask before edits"
	}
	ts := tui.Status{Model: info.Model, Surface: info.Surface, Sandbox: sandboxMode(info.Sandbox), Approval: policy,
		SessionID: info.SessionID, Workspace: info.Workspace, Usage: st.Usage, ContextTokens: st.ContextTokens, ContextWindow: st.ContextWindow, Turns: tasks}
	if check != nil && check.Running() {
		ts.Checking = "checks"
	}
	return ts
}

// sandboxMode is the short form of an enforced sandbox's description.
func sandboxMode(enforced string) string {
	mode, _, _ := strings.Cut(enforced, " (")
	return mode
}

// reopen closes the open session and opens it again with change applied
// to its options, resuming it so that its transcript goes on (a session
// that never reached the model was not kept: it is opened anew). Options
// harness.Check refuses (an unknown provider or model, a surface the
// model's API has not) are refused before anything is closed: the session
// stays open as it is. When the new options do not open for another
// reason, the session is opened again as it was. Closing ends the
// session's run in its ledger (harness.Session.Close); a session opened
// again runs no ledger until a task, a check, a compaction or a
// verification needs one, so switching back and forth leaves no run
// behind.
func (is *session) reopen(ctx context.Context, change func(*harness.Options)) error {
	is.mu.Lock()
	cur, old := is.s, is.opts
	is.mu.Unlock()
	info := cur.Info()
	id := info.SessionID
	if id == "" {
		return errors.New("this session is not saved (--no-session), so it cannot be re-opened with other settings")
	}
	// The open session's provider and model, with the change: what the
	// session would be opened with, resolved.
	chk := old
	chk.Provider, chk.Model, chk.Resume = info.Provider, info.Model, ""
	if info.Provider == "sim" {
		chk.Script, chk.SimDialect = info.Script, info.Dialect
	}
	change(&chk)
	if err := harness.Check(chk); err != nil {
		return err
	}
	resume := id
	if old.Resume == "" && !cur.Reached() {
		resume = "" // Close removes a new session the model never answered
	}
	o := old
	change(&o)
	o.Resume, old.Resume = resume, resume
	cur.Close() // its warnings reach the user through OnWarning
	s, err := harness.Open(ctx, o)
	if err != nil {
		back, berr := harness.Open(context.WithoutCancel(ctx), old)
		if berr != nil {
			return fmt.Errorf("%w; and the session could not be opened again as it was: %v (quit and resume it with truss --resume %s)", err, berr, id)
		}
		s, o = back, old
	}
	is.mu.Lock()
	is.s, is.opts = s, o
	is.mu.Unlock()
	if err == nil && resume == "" {
		is.notify(fmt.Sprintf("No task had reached the model, so this is a new session: %s.", s.Info().SessionID))
	}
	return err
}

// SetModel implements tui.ModelSwitcher.
//
// A name the provider's model list does not have (tui.ListedAs: an alias
// of a listed snapshot is had) is met with the listed model it most
// likely meant, and not switched to; one no listed model is near is
// switched to with a note. A provider without a list switches at once.
func (is *session) SetModel(ctx context.Context, name string) error {
	if ids, err := is.Models(ctx); err == nil && len(ids) > 0 &&
		!slices.ContainsFunc(ids, func(id string) bool { return tui.ListedAs(id, name) }) {
		if near := suggest.Nearest(name, ids); near != "" {
			return fmt.Errorf("the provider lists no model %s; did you mean %s? (/model %s switches to it)", termsafe.Line(name), termsafe.Line(near), termsafe.Line(near))
		}
		is.notify(fmt.Sprintf("%s is not a model the provider lists (it lists %s; /model shows them); switching to it all the same", termsafe.Line(name), plural.Count(len(ids), "model")))
	}
	return is.reopen(ctx, func(o *harness.Options) { o.Model = name })
}

// SetSurface implements tui.SurfaceSwitcher.
func (is *session) SetSurface(ctx context.Context, name string) error {
	return is.reopen(ctx, func(o *harness.Options) { o.Surface = name })
}

// SetSandbox implements tui.SandboxSwitcher.
func (is *session) SetSandbox(ctx context.Context, mode string) error {
	m, err := sandbox.ParseMode(mode)
	if err != nil {
		return err
	}
	return is.reopen(ctx, func(o *harness.Options) { o.Sandbox.Mode = m })
}

// Compact implements tui.Compactor.
func (is *session) Compact(ctx context.Context) (string, error) {
	rec, err := is.session().Compact(ctx)
	if errors.Is(err, compact.ErrNothingToCompact) {
		return "Nothing to compact: the conversation holds only what is always kept.", nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Compacted: %d items replaced by a summary, about %d → %d tokens.", rec.Replaced, rec.TokensBefore, rec.TokensAfter), nil
}

// Diff implements tui.Differ: every change the session's calls made
// since it was opened in this process.
func (is *session) Diff(ctx context.Context) (string, error) {
	return is.log.Diff(), ctx.Err()
}

// VerifyLedger implements tui.LedgerVerifier.
func (is *session) VerifyLedger(ctx context.Context) (string, error) {
	st, err := is.session().VerifyLedger(ctx)
	if err != nil {
		return "", err
	}
	r := st.Report
	return fmt.Sprintf("The ledger verifies: %d entries, %d checkpoints, the last one signing %d entries with root %s.\n%s",
		r.Entries, r.Checkpoints, r.Sealed, ledger.FormatRoot(r.Root), st.Dir), nil
}

// Resume implements tui.Resumer: id, or the newest other session of this
// workspace when id is "".
func (is *session) Resume(ctx context.Context, id string) ([]model.Item, error) {
	cur := is.session()
	if id == "" {
		ms, err := cur.Resumable()
		if err != nil {
			return nil, err
		}
		if len(ms) == 0 {
			return nil, fmt.Errorf("no other session in %s to resume (truss sessions lists them all)", cur.Info().Workspace)
		}
		id = ms[0].ID
	}
	if id == cur.Info().SessionID {
		return nil, fmt.Errorf("session %s is the one open", id)
	}
	if err := is.replace(ctx, id); err != nil {
		return nil, err
	}
	return is.session().Transcript(), nil
}

// Resumable implements tui.ResumeLister.
func (is *session) Resumable(ctx context.Context) ([]tui.ResumeChoice, error) {
	ms, err := is.session().Resumable()
	if err != nil {
		return nil, err
	}
	cs := make([]tui.ResumeChoice, len(ms))
	for i, m := range ms {
		cs[i] = tui.ResumeChoice{ID: m.ID, Updated: m.Updated, Task: m.Task, Provider: m.Provider, Model: m.Model}
	}
	return cs, ctx.Err()
}

// Models implements tui.ModelLister: the provider's models, in the order
// harness.Session.Models gives them.
func (is *session) Models(ctx context.Context) ([]string, error) {
	ms, err := is.session().Models(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids, nil
}

// Files implements tui.FileLister: workspace paths for @path completion.
func (is *session) Files(ctx context.Context, prefix string) ([]string, error) {
	return is.session().Files(ctx, prefix, tui.MaxFiles)
}

// NewSession implements tui.Renewer.
func (is *session) NewSession(ctx context.Context) error {
	return is.replace(ctx, "")
}

// replace closes the open session and opens session id (a new one when
// id is ""), with the same options; the open one stays when that fails.
func (is *session) replace(ctx context.Context, id string) error {
	is.mu.Lock()
	cur, o := is.s, is.opts
	is.mu.Unlock()
	o.Resume = id
	if id == "" {
		// A new session of what is open now: its provider, model and
		// workspace, which a session resumed at the start took from what
		// it saved, not from the options.
		i := cur.Info()
		o.Provider, o.Model, o.Root = i.Provider, i.Model, i.Workspace
		if i.Provider == "sim" {
			o.Script, o.SimDialect = i.Script, i.Dialect
		}
	}
	s, err := harness.Open(ctx, o)
	if err != nil {
		return err
	}
	// The session left is said to be kept, or not, before the next
	// one's rule: the last one alone is named at the exit.
	info, saved := cur.Info(), cur.Saved()
	cur.Close()
	if saved && info.SessionID != "" {
		is.notify(fmt.Sprintf("Session %s saved (truss --resume %s).", info.SessionID, info.SessionID))
	}
	is.mu.Lock()
	is.s, is.opts, is.tasks, is.attached = s, o, 0, nil
	is.mu.Unlock()
	return nil
}

// Attach implements tui.Attacher.
func (is *session) Attach(ctx context.Context, path string) (string, error) {
	rel, data, err := is.session().ReadFile(path)
	if err != nil {
		return "", err
	}
	is.mu.Lock()
	is.attached = append(is.attached, attachment{path: rel, data: data})
	is.mu.Unlock()
	n, unit := strings.Count(string(data), "\n"), "lines"
	if n == 1 {
		unit = "line"
	}
	return fmt.Sprintf("%s, %d %s", termsafe.Name(rel), n, unit), ctx.Err()
}

// Detach implements tui.Detacher: what was attached is dropped.
func (is *session) Detach() {
	is.mu.Lock()
	is.attached = nil
	is.mu.Unlock()
}

// close closes the open session, which saves it, and says which it was
// and whether closing keeps it (harness.Session.Saved).
func (is *session) close() (Closed, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	c := Closed{Opened: true, ID: is.s.Info().SessionID, Saved: is.s.Saved()}
	return c, is.s.Close()
}

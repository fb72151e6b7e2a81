// Package tui is Truss's interactive terminal session: a Bubble Tea
// program that sends the user's tasks to a Session and draws what the
// session's agent loop reports, as it happens.
//
// What it draws: the user's tasks; the assistant's text as it streams,
// then rendered as markdown; reasoning collapsed to one line; each tool
// call as a card (the surface's tool name, the command or path, the
// result's first and last lines); every file a call changed as a unified
// diff; escalation requests as a prompt card answered y / n / a; and a
// status line with the model, surface, sandbox mode, tokens, cost and how
// full the context is. Every text that came from a model, a file, a
// command or a tool passes through termsafe before it is drawn; without
// colour (NO_COLOR, or a terminal without it) a frame holds no escape
// sequence at all.
//
// The UI is wired to a session in three places: it is an agent.Observer
// (give it to the session's observers), an approver (the session calls
// Approve when a command needs more than the sandbox allows), and Run
// drives the Session until the user quits.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/ui"
)

// Options configure a UI. The zero value uses the process's terminal and
// environment.
type Options struct {
	// Input and Output are the terminal (nil: os.Stdin and os.Stdout).
	Input  io.Reader
	Output io.Writer
	// Env is the environment the colour support is read from (nil:
	// os.Environ()); NO_COLOR set to anything but "" turns colour off.
	Env []string
	// Width and Height fix the size when Output is not a terminal.
	Width, Height int
	// AltScreen draws the session on the terminal's alternate screen, the
	// whole transcript scrolled with PgUp/PgDn and gone when the program
	// exits. By default (false) it is drawn inline on the normal screen:
	// each part of the transcript, once finished, is printed into the
	// terminal's scrollback, where it stays after the program exits, and
	// only what still changes is redrawn under it.
	AltScreen bool
	// History is the input history to start with, oldest first (Up
	// recalls the newest); UI.History returns it with this session's
	// inputs added, for the caller to keep.
	History []string
	// Task, when set, is sent as the first input, as if typed and
	// entered once the session is drawn (truss "task": the session opens
	// on it, as claude "task" does); it goes into the history like any.
	Task string
}

// ErrClosed is returned by Approve when the UI is not running, so no one
// can answer.
var ErrClosed = errors.New("tui: the interactive session is not running")

// UI is an interactive terminal session. Make it with New, pass it to the
// session as an observer and an approver, then call Run once.
type UI struct {
	opts  Options
	q     *queue
	ids   atomic.Int64
	mu    sync.Mutex
	state int // 0 not started, 1 running, 2 ended
	ended chan struct{}
	hist  []string
}

// History returns the input history once Run has returned: the entries
// of Options.History followed by what was sent in this session, at most
// the newest 1,000.
func (u *UI) History() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.hist...)
}

// New returns a UI; events observed before Run are drawn when it starts.
func New(opts Options) *UI {
	return &UI{opts: opts, q: newQueue(), ended: make(chan struct{})}
}

// Observe implements agent.Observer: it copies what the UI draws out of ev
// (sanitised) and queues it; it never waits for the UI.
func (u *UI) Observe(ev agent.Event) {
	select {
	case <-u.ended:
		return // nothing will draw it
	default:
	}
	if e := convert(ev); e != nil {
		u.q.push(item{ev: e})
	}
}

// Notify draws a line from the session that is not an agent event (an
// automatic compaction, a refused request under the approval policy). It
// never waits for the UI.
func (u *UI) Notify(text string) {
	select {
	case <-u.ended:
		return
	default:
	}
	u.q.push(item{note: termsafe.String(text)})
}

// Child returns an observer for a sub-agent's run, drawn as one indented
// line per call it starts and one when it ends, marked with name.
func (u *UI) Child(name string) agent.Observer {
	name = termsafe.Line(name)
	return agent.ObserverFunc(func(ev agent.Event) {
		var text string
		switch ev.Type {
		case agent.EventCallStarted:
			if ev.Call == nil {
				return
			}
			text = ui.Summary(ev.Call, ev.Ops)
		case agent.EventTurnFailed:
			if ev.Err == nil {
				return
			}
			text = "✗ " + ev.Err.Error()
		case agent.EventRunCompleted:
			if ev.Outcome == nil {
				return
			}
			o := ev.Outcome
			text = fmt.Sprintf("%s after %s and %s", o.Status, plural(o.Turns, "turn"), plural(o.Calls, "tool call"))
		default:
			return
		}
		u.q.push(item{ev: &event{typ: childEvent, text: "↳ [" + name + "] " + termsafe.String(text)}})
	})
}

// Approve asks the user whether a command may do more than the sandbox
// allows (or, req.Edit, whether an edit may be made, its diff shown) and
// blocks until they answer or ctx ends (then it returns Deny
// and ctx's error, and the card is withdrawn). Requests made while another
// is pending wait their turn. It returns ErrClosed once Run has ended.
func (u *UI) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	select {
	case <-u.ended:
		return Deny, ErrClosed
	default:
	}
	req.Tool = termsafe.Line(req.Tool)
	req.Command = termsafe.String(req.Command)
	req.Reason = termsafe.String(req.Reason)
	req.Diff = termsafe.String(req.Diff)
	paths := make([]string, len(req.Paths))
	for i, p := range req.Paths {
		paths[i] = termsafe.Name(p)
	}
	req.Paths = paths
	a := &approval{id: int(u.ids.Add(1)), req: req, reply: make(chan Decision, 1)}
	u.q.push(item{approval: a})
	select {
	case d := <-a.reply:
		return d, nil
	case <-ctx.Done():
		u.q.push(item{withdrawn: a.id})
		return Deny, ctx.Err()
	case <-u.ended:
		return Deny, ErrClosed
	}
}

// Run draws the session and sends it the user's tasks until the user
// quits (Ctrl-D or /quit: Run returns nil) or ctx ends (Run returns ctx's
// error). Either way a turn or command still running is cancelled, and
// Run returns only after the session's call has returned, so the caller
// may Close the session at once. It may be called once.
func (u *UI) Run(ctx context.Context, s Session) error {
	u.mu.Lock()
	if u.state != 0 {
		u.mu.Unlock()
		return errors.New("tui: Run called twice")
	}
	u.state = 1
	u.mu.Unlock()
	defer close(u.ended)

	env := u.opts.Env
	if env == nil {
		env = os.Environ()
	}
	out := u.opts.Output
	if out == nil {
		out = os.Stdout
	}
	profile := colorprofile.Detect(out, env)
	color := useColor(env, profile)
	if !color {
		profile = colorprofile.Ascii
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	m := newModel(runCtx, s, u.q, color)
	m.inline = !u.opts.AltScreen
	for _, h := range u.opts.History {
		m.hist.add(h)
	}
	m.first = u.opts.Task

	opts := []tea.ProgramOption{tea.WithContext(runCtx), tea.WithOutput(out), tea.WithEnvironment(env), tea.WithColorProfile(profile)}
	if u.opts.Input != nil {
		opts = append(opts, tea.WithInput(u.opts.Input))
	}
	if u.opts.Width > 0 && u.opts.Height > 0 {
		opts = append(opts, tea.WithWindowSize(u.opts.Width, u.opts.Height))
	}
	_, err := tea.NewProgram(m, opts...).Run()
	// A turn still running (ctx ended) is cancelled with runCtx; wait
	// for it to return through its cancel path.
	stop()
	m.fly.closeAndWait()
	u.mu.Lock()
	u.hist, u.state = append([]string(nil), m.hist.entries...), 2
	u.mu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	return nil
}

// useColor reports whether the UI draws colours: not when NO_COLOR is set
// (to anything but ""), nor when the terminal has fewer than 16 colours.
func useColor(env []string, p colorprofile.Profile) bool {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NO_COLOR="); ok && v != "" {
			return false
		}
	}
	return p >= colorprofile.ANSI
}

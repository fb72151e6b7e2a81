package tui

import (
	"context"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
)

// Session is what the interactive UI drives: one conversation that runs a
// task at a time and reports its state. Every event of a run reaches the
// UI through its Observe method (the UI is an agent.Observer the session
// was opened with), not through Run's return value.
//
// Run is called once per task the user sends, never concurrently with
// itself or with a command method; its ctx is cancelled when the user
// presses Esc or Ctrl-C, and the run must then end through the loop's
// cancel path (Outcome.Status canceled) and return. Status may be called
// at any time, also while Run is running, and must be cheap.
type Session interface {
	Run(ctx context.Context, task string) (agent.Outcome, error)
	Status() Status
}

// Status is what the status line and /cost show.
type Status struct {
	Model    string // the model's name
	Surface  string // the tool surface ("generic", "anthropic", ...)
	Sandbox  string // the sandbox mode enforced ("workspace-write", ...)
	Approval string // the approval policy ("on-request", ...)
	// SessionID names the session (for /resume and `truss sessions`).
	SessionID string
	// Workspace is the directory the session works in.
	Workspace string
	// Usage is the session's whole usage so far, cost included.
	Usage model.Usage
	// ContextTokens is how many tokens the last request used of the
	// model's ContextWindow; the status line shows the ratio (no ratio
	// when ContextWindow is 0).
	ContextTokens int64
	ContextWindow int64
	// Turns is how many tasks ran in this session.
	Turns int
	// Checking is set while the project's checks run in the background
	// after a task: the command they run.
	Checking string
}

// The slash commands reach the session through these optional
// capabilities, detected by type assertion; a command whose capability the
// session lacks is answered with a message saying so. Each method may
// block (it runs off the UI's goroutine, with the spinner shown) and must
// honour ctx, which Esc cancels. A returned string is a report for the
// user (sanitised by the UI before it is drawn); an error is shown as such.

// ModelSwitcher switches the model for the next turns (/model NAME).
type ModelSwitcher interface {
	SetModel(ctx context.Context, name string) error
}

// ModelLister lists the models the session's provider offers (/model
// without an argument), in the order /model N numbers them. Like every
// command method it is called only while no turn runs.
type ModelLister interface {
	Models(ctx context.Context) ([]string, error)
}

// FileLister lists workspace files for @path completion: the paths,
// relative to the workspace and with "/" as separator, that begin with
// prefix (a directory's with a trailing "/"), at most MaxFiles of them, in
// the order the menu shows them. Unlike the command methods it may be
// called while a turn runs (off the UI's goroutine, as the user types), so
// it must be safe to call concurrently with Run; ctx ends when the answer
// is no longer wanted.
type FileLister interface {
	Files(ctx context.Context, prefix string) ([]string, error)
}

// MaxFiles bounds the paths a FileLister returns; the UI ignores the rest.
const MaxFiles = 50

// SurfaceSwitcher switches the tool surface for the next turns
// (/surface NAME).
type SurfaceSwitcher interface {
	SetSurface(ctx context.Context, name string) error
}

// SandboxSwitcher switches the sandbox mode for the next commands
// (/sandbox MODE).
type SandboxSwitcher interface {
	SetSandbox(ctx context.Context, mode string) error
}

// Compactor compacts the conversation now (/compact) and reports what was
// replaced.
type Compactor interface {
	Compact(ctx context.Context) (string, error)
}

// Differ returns the workspace's changes since the session began as a
// unified diff (/diff); the UI colours it.
type Differ interface {
	Diff(ctx context.Context) (string, error)
}

// LedgerVerifier verifies the session's ledger and reports its size and
// root (/ledger).
type LedgerVerifier interface {
	VerifyLedger(ctx context.Context) (string, error)
}

// Checker runs the project's checks now (/check) and reports their
// verdict; a background check still running is cancelled first.
type Checker interface {
	Check(ctx context.Context) (string, error)
}

// ResumeChoice is a saved session /resume can switch to.
type ResumeChoice struct {
	ID       string
	Updated  time.Time
	Task     string // its first task
	Provider string
	Model    string
}

// ResumeLister lists the sessions /resume (without an id) offers, most
// recently used first; /resume N then switches to the Nth.
type ResumeLister interface {
	Resumable(ctx context.Context) ([]ResumeChoice, error)
}

// Transcripter gives the conversation an opened session already holds
// (a resumed one's), which the UI draws before the first input.
type Transcripter interface {
	Transcript() []model.Item
}

// Resumer switches to an earlier session (/resume [ID]; an empty id means
// the most recent other session in this directory) and returns its
// transcript, which the UI redraws.
type Resumer interface {
	Resume(ctx context.Context, id string) ([]model.Item, error)
}

// Renewer starts a new session in the same directory (/new); the UI clears
// its transcript.
type Renewer interface {
	NewSession(ctx context.Context) error
}

// Attacher attaches a workspace file to the next task (@path in the
// input). It reports what was attached ("main.go, 120 lines").
type Attacher interface {
	Attach(ctx context.Context, path string) (string, error)
}

// A Detacher is an Attacher that can drop what was attached and not yet
// sent: when one of a task's files is refused the task is not sent, and
// the files attached before it must not ride along with the next one.
type Detacher interface {
	Detach()
}

// ApprovalRequest asks the user to let a command do more than the sandbox
// allows, or (Edit) to let a file operation change files.
type ApprovalRequest struct {
	// Edit marks a request to change files (the card asks "Allow this
	// edit?"; AllowAlways then allows every edit for the rest of the
	// session). Diff is the proposed change as a unified diff ("" when it
	// is not known); the card shows its first lines, coloured.
	Edit bool
	Diff string

	// CallID is the call that asks, when known: the answer is drawn with
	// its card, before what the call then does.
	CallID string
	// Tool is the surface's tool name the call came through; Command the
	// command line (or, for a file operation, what it does).
	Tool    string
	Command string
	// Network reports that the command needs the network; Paths lists the
	// paths outside the sandbox it needs to write (or read).
	Network bool
	Paths   []string
	// Reason is why the model says it needs this, if it said.
	Reason string
}

// Decision is the user's answer to an ApprovalRequest.
type Decision int

// The answers.
const (
	Deny        Decision = iota // do not run it (n, Esc)
	Allow                       // run it this once (y)
	AllowAlways                 // run it and every like request for the rest of the session (a); for an edit, every edit
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "yes"
	case AllowAlways:
		return "always"
	default:
		return "no"
	}
}

// Package runner runs a benchmark: every task × arm × repeat in a fresh
// workspace at the task's base_commit, the agent through the Agent
// interface, the grader on the workspace's diff, the verdict signed into
// the run's ledger, and one line per run in DIR/results.jsonl, whose
// behavioural metrics are read back from that ledger.
package runner

import (
	"context"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/sim"
)

// Agent runs the agent loop of one run. The runner calls Run from several
// goroutines at once (--parallel), each with its own workspace and ledger.
type Agent interface {
	Run(ctx context.Context, spec RunSpec) (RunOutcome, error)
}

// AgentFunc adapts a function to Agent.
type AgentFunc func(ctx context.Context, spec RunSpec) (RunOutcome, error)

// Run calls f.
func (f AgentFunc) Run(ctx context.Context, spec RunSpec) (RunOutcome, error) { return f(ctx, spec) }

// RunSpec is everything one run's agent gets. What is not in it is the
// same for every run and every arm.
type RunSpec struct {
	InstanceID string
	Repeat     int
	Arm        bench.Arm
	// Workspace is a fresh checkout of the task's repository at
	// BaseCommit (HEAD is BaseCommit; the history holds that commit only).
	// It is the agent's workspace root: its file tools and its sandboxed
	// shell work there, and only there may its commands write.
	Workspace  string
	BaseCommit string
	// Task is the text the agent is given (the problem statement, and
	// the hints when the benchmark shows them), identical across arms.
	Task string
	// Budgets bound the run.
	Budgets Budgets
	// TestCmd and SetupCmd are the task's environment for the agent's
	// validate tool and its verification boundary ("" and nil: detect
	// them as validate does). Image is the task's environment image,
	// to record.
	TestCmd  string
	SetupCmd []string
	Image    string
	// Workdir is where the task's image keeps the repository (the
	// task's workdir field; "" for the agent's default).
	Workdir string
	// Hidden are paths the agent's sandbox must hide from every command
	// (sandbox.Policy.Hidden): the task file (which holds the hidden
	// tests and the gold patch), the task repositories (whose later
	// history may hold the fix), the benchmark's output directory and
	// the simulator's scripts.
	Hidden []string
	// Covered are directories the agent's commands see empty but for the
	// run's own workspace, temporary directory and caches
	// (sandbox.Policy.Covered): the directory of every run's workspace
	// (the runner's WorkDir, or the temporary directory), where other
	// runs' agents work, and the benchmark's private directory
	// (Runner.TempDir), which holds every run's TempDir.
	Covered []string
	// TempDir is the run's own directory, in the benchmark's private one
	// (Runner.TempDir), which Covered holds: the session makes its
	// temporary and private directories (its caches with them) and its
	// memory directory there, so that every other run's sandbox covers
	// them. The runner removes it after the run. "" means the system's
	// temporary directory.
	TempDir string
	// Ledger is the run's ledger, created by the runner, with Session
	// its session id. The agent records its whole session into it
	// (ledger.NewRecorder(Ledger, start) as an observer of the loop:
	// session.start … session.end) and closes its recorder (which
	// drains it) before Run returns. It must not close Ledger: the
	// runner appends the grader's verdict and seals it.
	Ledger  *ledger.Writer
	Session string
	// Script is what the simulated model plays when Arm.Provider is
	// "sim": the instance's script from --sim-scripts, else a short one
	// that reads the problem and ends. Nil for other providers.
	Script *sim.Script
	// RateLimit is shared by every run of the arm's provider: the agent
	// waits on it before each model request and reports a rate limit's
	// delay (Retry-After) to it, so that parallel runs back off
	// together.
	RateLimit RateLimit
	// Progress, when set, is told of each model turn the agent finishes
	// ("turn N"), for the benchmark's live progress. It must not block.
	Progress func(note string)
}

// Budgets bound one run; zero fields are unbounded (MaxTurns 0: the
// loop's default).
type Budgets struct {
	MaxTurns   int           `json:"max_turns,omitempty"`
	MaxTokens  int64         `json:"max_tokens,omitempty"`
	MaxCostUSD float64       `json:"max_cost_usd,omitempty"`
	WallTime   time.Duration `json:"wall_time_ns,omitempty"`
}

// RunOutcome is what the agent reports of its run. The behavioural
// metrics (tool calls, edits, validation) are not in it: the runner reads
// them from the ledger.
type RunOutcome struct {
	// Turns is the number of model turns.
	Turns int
	// Usage is the tokens and cost of every turn, sub-agents included.
	Usage model.Usage
	// StopReason is why the loop ended (agent.Status: completed,
	// max_turns, budget, loop, failed, refused, …).
	StopReason string
	// ModelTime is the time spent waiting for the model; ToolTime the
	// time spent running the agent's tool calls (its commands, its
	// validation) while no request was in flight.
	ModelTime time.Duration
	ToolTime  time.Duration
}

// RateLimit is a provider's shared rate-limit state.
type RateLimit interface {
	// Wait blocks while the provider is backing off, or until ctx ends.
	Wait(ctx context.Context) error
	// Backoff makes every run of the provider wait d before its next
	// request (a 429's Retry-After); a shorter backoff than the one in
	// force changes nothing.
	Backoff(d time.Duration)
}

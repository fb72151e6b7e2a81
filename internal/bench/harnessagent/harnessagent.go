// Package harnessagent is the agent of `truss bench run`: each run is a
// session of the harness (package harness) on the run's workspace,
// recorded into the run's ledger, with the arm's provider, model and
// surface and everything else the same for every arm.
package harnessagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/sandbox"
)

// Agent runs each run as a harness session. Its zero value runs with the
// harness's defaults; it is safe for concurrent use (each Run opens its
// own session).
type Agent struct {
	// Version is Truss's version, recorded in each run's ledger.
	Version string
	// Fallback accepts a weaker sandbox for the agent's commands where
	// this host cannot enforce one (the grader's is set apart).
	Fallback sandbox.Fallback
	// Network lets the agent's commands use the network (off by
	// default, for every arm).
	Network bool
	// ShellTimeout is a command's timeout (0: the harness's default).
	ShellTimeout time.Duration
	// KeyDir holds the signing key of sub-agents' ledgers ("" for the
	// installation's; the run's own ledger is the runner's).
	KeyDir string
	// OnWarning, when set, is told of a run's warnings (a ledger event
	// that could not be written, a model without a profile, …).
	OnWarning func(spec *runner.RunSpec, msg string)
	// Env, Engine and EnvWorkdir are the runs' task environment
	// (harness.Options): "" or "host" for the sandbox on this host,
	// "image:REF" for a container from the image per run, "task" for a
	// container from each task's own image (RunSpec.Image).
	Env, Engine, EnvWorkdir string
	// Images, when set, makes sure of a run's image (Env "image:REF" or
	// "task") before its session opens, the session's container never
	// pulling: *container.Engine's Ensure, which pulls an absent image
	// once however many runs ask. Its error (a
	// *container.MissingImageError: "image X: not found locally and the
	// pull failed: …") is the run's.
	Images Ensurer
	// Hidden are paths hidden from every run's commands besides the
	// run's own spec.Hidden: the files of the process's own secrets (a
	// worker's queue credentials).
	Hidden []string
	// Known, when set, gives further paths to hide and to cover, asked
	// as each run starts: the registry of every benchmark's outputs and
	// datasets (bench.KnownView). When it cannot answer, the run gets
	// what it answered last, and OnWarning is told.
	Known KnownPaths
}

// KnownPaths gives the paths every run must not see now: hidden, and
// covered (directories that hold the run's own, bound back).
type KnownPaths interface {
	Current() (hidden, covered []string, err error)
}

// Ensurer makes sure an image is in the container engine's store
// (container.Engine.Ensure).
type Ensurer interface {
	Ensure(ctx context.Context, ref string) (id string, err error)
}

var _ runner.Agent = (*Agent)(nil)

// Options returns the harness options of one run: the arm's provider,
// model and surface on spec.Workspace, no session store, spec.Ledger as
// the session's ledger, spec.Hidden hidden from every command and
// spec.Covered covered (all but the run's own workspace, temporary
// directory and caches), a.Hidden and a.Known's paths hidden or covered too, the session's temporary
// and private directories and its caches in spec.TempDir, spec's budgets
// and environment, no MCP servers and a memory directory of the run's
// own (memoryDir). It is exported for tests and for callers that run a
// session themselves.
func (a *Agent) Options(spec *runner.RunSpec, memoryDir string) harness.Options {
	arm := spec.Arm
	net := a.Network
	var knownHidden, knownCovered []string
	if a.Known != nil {
		var err error
		if knownHidden, knownCovered, err = a.Known.Current(); err != nil && a.OnWarning != nil {
			a.OnWarning(spec, fmt.Sprintf("the registry of benchmark paths: %v (hiding what it held when last read)", err))
		}
	}
	o := harness.Options{
		Version:  a.Version,
		Provider: arm.Provider, Model: arm.Model, Surface: arm.Surface,
		Root: spec.Workspace,
		Env:  env(a.Env, spec.Image), Engine: a.Engine, EnvWorkdir: a.workdir(spec),
		ShellTimeout: a.ShellTimeout,
		MemoryDir:    memoryDir,
		// Each run's commands write caches of their own over the trusted
		// ones: no run reads what another (or a graded patch) wrote.
		PrivateCaches: true,
		TempDir:       spec.TempDir,
		Sandbox:       harness.SandboxOptions{Mode: sandbox.WorkspaceWrite, Network: &net, Fallback: a.Fallback, Hidden: slices.Concat(spec.Hidden, a.Hidden, knownHidden), Covered: slices.Concat(spec.Covered, knownCovered)},
		Budget: agent.Budget{MaxTurns: spec.Budgets.MaxTurns, MaxTokens: spec.Budgets.MaxTokens,
			MaxCost: spec.Budgets.MaxCostUSD, MaxWall: spec.Budgets.WallTime},
		NoSession: true,
		Ledger:    spec.Ledger,
		KeyDir:    a.KeyDir,
		// The grader is the verification boundary: the agent's validate
		// tool runs the task's checks when the model calls it, and no
		// boundary runs at the end of the session.
		Validation: harness.ValidationOptions{TestCmd: spec.TestCmd, SetupCmds: spec.SetupCmd, OnDemand: true},
		MCP:        harness.MCPOptions{Off: true},
	}
	if arm.Provider == "sim" {
		o.SimScript, o.SimRoot, o.SimDialect = spec.Script, spec.Workspace, SimDialect(arm.Model, arm.Surface)
	}
	if a.OnWarning != nil {
		o.OnWarning = func(msg string) { a.OnWarning(spec, msg) }
	}
	return o
}

// SimDialect is the API dialect the simulated model speaks for an arm: a
// cloud platform's route when the model is named in its form (Bedrock's
// anthropic.sim-claude…, Vertex AI's sim-claude@…), the Gemini API's for
// sim-gemini…, else the one a typed surface needs, else the one its
// model's name suggests (sim-gpt… speaks OpenAI's Responses API, any
// other Anthropic's).
func SimDialect(model, surface string) string {
	switch {
	case strings.Contains(model, "anthropic.sim-claude"):
		return "bedrock"
	case strings.HasPrefix(model, "sim-claude") && strings.Contains(model, "@"):
		return "vertex"
	case strings.HasPrefix(model, "sim-gemini"):
		return "gemini"
	}
	switch surface {
	case "anthropic":
		return "anthropic"
	case "openai", "codex":
		return "responses"
	}
	if ok, _ := path.Match("sim-gpt*", model); ok {
		return "responses"
	}
	return "anthropic"
}

// Run implements runner.Agent: it opens the run's session, runs the task,
// and closes the session (draining its recorder into spec.Ledger, which
// stays open for the runner's verdict). An error is the harness's (the
// session could not be opened, the model could not be reached at all, the
// ledger missed an event), not the model's work, which is in the outcome.
func (a *Agent) Run(ctx context.Context, spec runner.RunSpec) (runner.RunOutcome, error) {
	if a.Env == "task" && spec.Image == "" {
		return runner.RunOutcome{}, fmt.Errorf("instance %s has no image (the task's \"image\" field), which --env task needs", spec.InstanceID)
	}
	if ref, ok := strings.CutPrefix(env(a.Env, spec.Image), "image:"); ok && a.Images != nil {
		if _, err := a.Images.Ensure(ctx, ref); err != nil {
			return runner.RunOutcome{}, err
		}
	}
	mem, err := os.MkdirTemp(spec.TempDir, "truss-bench-memory-")
	if err != nil {
		return runner.RunOutcome{}, err
	}
	defer os.RemoveAll(mem)
	o := a.Options(&spec, mem)
	var timer timer
	var turns atomic.Int32
	rl := spec.RateLimit
	o.Observers = append(o.Observers, agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type == agent.EventTurnStarted && rl != nil {
			// Every run of the provider holds its requests while one of
			// them is told to back off. The loop waits for its observers,
			// so the request is sent after the wait.
			rl.Wait(ctx)
		}
		timer.observe(ev)
		if ev.Type == agent.EventTurnCompleted && spec.Progress != nil {
			spec.Progress(fmt.Sprintf("turn %d", turns.Add(1)))
		}
	}))
	if rl != nil {
		o.OnRetry = func(_ int, wait time.Duration, err error) {
			if pe, ok := errors.AsType[*provider.Error](err); ok && pe.Kind == provider.ErrRateLimited {
				rl.Backoff(wait)
			}
		}
	}
	s, err := harness.Open(ctx, o)
	if err != nil {
		return runner.RunOutcome{}, fmt.Errorf("opening the session: %w", err)
	}
	out, err := s.Run(ctx, spec.Task)
	cerr := s.Close()
	model, tools := timer.totals()
	res := runner.RunOutcome{Turns: out.Agent.Turns, Usage: out.Usage, StopReason: string(out.Agent.Status), ModelTime: model, ToolTime: tools}
	switch {
	case err != nil:
		return res, err
	case out.Unreached:
		return res, fmt.Errorf("the model could not be reached: %w", out.Agent.Err)
	case cerr != nil:
		return res, fmt.Errorf("recording the session: %w", cerr)
	}
	return res, nil
}

// timer adds up, from the loop's events, the time spent waiting for the
// model (from each request to its response or its failure) and the time
// spent running tool calls while no request was in flight (a call started
// while the response still streams counts as the model's until it ends).
type timer struct {
	mu         sync.Mutex
	last       time.Time
	requesting bool
	calls      int
	model      time.Duration
	tools      time.Duration
}

func (t *timer) observe(ev agent.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if !t.last.IsZero() {
		switch {
		case t.requesting:
			t.model += now.Sub(t.last)
		case t.calls > 0:
			t.tools += now.Sub(t.last)
		}
	}
	t.last = now
	switch ev.Type {
	case agent.EventTurnStarted:
		t.requesting = true
	case agent.EventResponse, agent.EventTurnFailed:
		t.requesting = false
	case agent.EventCallStarted:
		t.calls++
	case agent.EventCallCompleted:
		t.calls = max(0, t.calls-1)
	}
}

// totals returns the model's time and the tools'.
func (t *timer) totals() (model, tools time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.model, t.tools
}

// workdir is where the run's workspace is mounted in its container: in the
// task's own image (Env "task"), the task's place for the repository when
// it names one; else EnvWorkdir.
func (a *Agent) workdir(spec *runner.RunSpec) string {
	if a.Env == "task" {
		return cmp.Or(spec.Workdir, a.EnvWorkdir)
	}
	return a.EnvWorkdir
}

// env is a run's environment: "task" is the task's own image (Run refuses
// a task without one).
func env(env, image string) string {
	if env == "task" {
		return "image:" + image
	}
	return env
}

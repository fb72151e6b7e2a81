// Package subagent runs sub-agents: it is the executor of the spawn tool
// (tool.OpSpawn).
//
// A spawn call runs a child agent loop (internal/agent) on a sub-task with
// the parent's provider, a subset of the parent's tools, optionally another
// model of the same provider or a user-defined agent's instructions
// (.truss/agents/NAME.md), and a budget. The child works in the parent's
// workspace under the same sandbox, with a shell of its own, or, when the
// call asks for isolation, in a copy (a git worktree of the workspace's
// repository, else a plain copy) whose changes come back as a diff.
//
// Limits: an agent runs at most Limits.MaxParallel children at once (more
// spawn calls wait for a slot); agents nest at most Limits.MaxDepth deep
// (the top agent is depth 0, and an agent at MaxDepth is not offered spawn);
// cancelling the parent's context cancels its children. The child's usage,
// its own children's included, comes back in the result (tool.AgentRun) and
// the agent loop adds it to the parent's, so budgets and totals see it.
//
// Recording is a hook (Config.Record), so that this package does not know
// the ledger: the harness gives each child a ledger of its own and the result
// links it by its last checkpoint.
package subagent

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

// Limits bound sub-agents.
type Limits struct {
	// MaxDepth is how deep agents may nest; 0 means 2 (children may spawn
	// grandchildren, which may not spawn).
	MaxDepth int
	// MaxParallel is how many children one agent runs at once; 0 means 4.
	MaxParallel int
	// Budget is a child's budget where neither the call nor its agent
	// definition sets one; MaxTurns 0 means 30. Every field is also a cap on
	// what a call may ask for, when set.
	Budget agent.Budget
	// MaxCopyBytes and MaxCopyEntries bound an isolated copy: the bytes
	// of the files copied (and read back for its diff) and the number of
	// entries; 0 means 1 GiB and 200,000. A workspace over either is an
	// error of the spawn call, not a partial copy.
	MaxCopyBytes   int64
	MaxCopyEntries int
}

// Run describes one child run.
type Run struct {
	// Session is the child's session id: its parent's, a dot, and Name.
	Session string
	// Name is the spawn call's id with characters other than letters,
	// digits, '_' and '-' replaced by '_' (a file name).
	Name   string
	Parent string
	CallID string
	Depth  int
	// Agent is the user-defined agent it runs as, if any.
	Agent    *Definition
	Model    string
	Task     string
	Tools    []string
	Budget   agent.Budget
	Isolated bool
	// Dir is the workspace the child works in: the parent's, or the
	// isolated copy.
	Dir string
}

// Env is what a child runs with: its executors and how to release them.
type Env struct {
	Exec  tool.Executor
	Close func()
}

// Recording records one child run (its ledger, in the harness).
type Recording interface {
	agent.Observer
	// Finish ends the record after the run and returns the link to it.
	Finish(*agent.Outcome) (*tool.LedgerLink, error)
}

// Config configures a Spawner. Provider, Tools, Model and NewEnv are
// required.
type Config struct {
	Provider provider.Provider
	// Tools is the top agent's tool set; a child gets the subset it asks
	// for, without spawn at the depth limit.
	Tools *surface.Set
	// Model is the parent's model, the default for children.
	Model string
	// System returns the base system prompt of an agent working in dir.
	System func(dir string) string
	// Prices returns a model's prices (nil: no cost).
	Prices func(model string) surface.Prices
	// MaxTokens is the output-token limit per turn; MaxResultChars the tool
	// result budget (see agent.Config).
	MaxTokens      int
	MaxResultChars int
	Agents         []*Definition
	Limits         Limits
	// Workspace is the top agent's workspace root; WorkDir is where
	// isolated copies are made (a directory commands may write).
	Workspace string
	WorkDir   string
	// GitPath, when set, is the PATH host git is found in for isolated
	// worktrees (gitsafe.Git's Path).
	GitPath string
	// Session is the top agent's session id.
	Session string
	// NewEnv returns the executors for a child working in run.Dir (a
	// fresh shell, the file tools on that directory, validation).
	NewEnv func(ctx context.Context, run *Run) (*Env, error)
	// Record, when set, starts the record of a child run (a nil Recording:
	// none).
	Record func(run *Run) (Recording, error)
	// Observe, when set, returns an observer of a child's events (progress
	// for a user interface).
	Observe func(run *Run) agent.Observer

	// repo is the workspace's repository as New found it (the session's
	// start): an isolated copy uses git only while the workspace is in
	// that same repository.
	repo gitsafe.Repo
}

// Spawner executes spawn calls for the agents at one depth. It is safe for
// concurrent use.
type Spawner struct {
	cfg    *Config
	depth  int
	parent string
	sem    chan struct{}
}

// New returns the spawner of the top agent (depth 0). It records the
// workspace's repository as it is now, the session's start: isolated
// copies use git only while the workspace is in that same .git (same
// path, device and inode); a repository that appears later, or replaces
// it, is the commands' own and gets a plain copy.
func New(cfg Config) *Spawner {
	if cfg.Limits.MaxDepth == 0 {
		cfg.Limits.MaxDepth = 2
	}
	if cfg.Limits.MaxParallel == 0 {
		cfg.Limits.MaxParallel = 4
	}
	if cfg.Limits.Budget.MaxTurns == 0 {
		cfg.Limits.Budget.MaxTurns = 30
	}
	if cfg.System == nil {
		cfg.System = func(dir string) string { return agent.SystemPrompt(dir, agent.DefaultSystem) }
	}
	if cfg.Limits.MaxCopyBytes <= 0 {
		cfg.Limits.MaxCopyBytes = defaultMaxCopyBytes
	}
	if cfg.Limits.MaxCopyEntries <= 0 {
		cfg.Limits.MaxCopyEntries = defaultMaxCopyEntries
	}
	if cfg.Workspace != "" {
		// A repository that is not there now, or cannot be told apart,
		// is never used: isolated copies are then plain copies.
		cfg.repo, _ = gitsafe.Find(cfg.Workspace)
	}
	return &Spawner{cfg: &cfg, parent: cfg.Session, sem: make(chan struct{}, cfg.Limits.MaxParallel)}
}

// canSpawn reports whether agents at depth may spawn children.
func (c *Config) canSpawn(depth int) bool { return depth < c.Limits.MaxDepth }

// safeID replaces the characters of a call id other than letters, digits,
// '_' and '-' by '_', for session ids and file names.
func safeID(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Concurrent implements tool.ConcurrentExecutor: a sub-agent is a whole
// run of its own, so spawn calls of one turn run at once.
func (s *Spawner) Concurrent(tool.Call) bool { return true }

// childExec is a child agent's executor: spawn calls go to the child's
// spawner, every other call to its environment's executors, and every
// change is noted for the child's result.
type childExec struct {
	env     tool.Executor
	spawn   *Spawner
	changes *changeLog
}

func (c *childExec) route(call tool.Call) tool.Executor {
	if call.Op == tool.OpSpawn {
		return c.spawn
	}
	return c.env
}

// Execute implements tool.Executor.
func (c *childExec) Execute(ctx context.Context, call tool.Call) tool.Result {
	r := c.route(call).Execute(ctx, call)
	r.CallID, r.Op = call.ID, call.Op
	c.changes.add(r.Changes)
	return r
}

// Concurrent implements tool.ConcurrentExecutor for the executor the call
// goes to.
func (c *childExec) Concurrent(call tool.Call) bool { return tool.IsConcurrent(c.route(call), call) }

// Mutates implements tool.MutatingExecutor for the executor the call goes
// to.
func (c *childExec) Mutates(call tool.Call) bool { return tool.Mutates(c.route(call), call) }

// Execute runs a spawn call: it waits for a slot, runs the child to its
// end, and returns its outcome. A child that does not complete (budget,
// loop, provider failure, cancellation) gives an error result that still
// carries the outcome.
func (s *Spawner) Execute(ctx context.Context, call tool.Call) tool.Result {
	args, ok := call.Args.(*tool.SpawnArgs)
	if !ok || args == nil {
		return tool.Failed(call, tool.Errorf(tool.ErrInvalidInput, "spawn: no task"))
	}
	cfg := s.cfg
	if !cfg.canSpawn(s.depth) {
		return tool.Failed(call, tool.Errorf(tool.ErrUnsupported, "spawn: sub-agents may nest at most %d deep and this agent is at depth %d; do the task yourself", cfg.Limits.MaxDepth, s.depth))
	}
	run := &Run{Parent: s.parent, CallID: call.ID, Depth: s.depth + 1, Task: args.Task, Isolated: args.Isolated, Model: cfg.Model}
	run.Name = safeID(call.ID)
	run.Session = s.parent + "." + run.Name
	if args.Agent != "" {
		for _, d := range cfg.Agents {
			if d.Name == args.Agent {
				run.Agent = d
			}
		}
		if run.Agent == nil {
			return tool.Failed(call, tool.Errorf(tool.ErrInvalidInput, "spawn: there is no agent named %q", args.Agent))
		}
	}
	if run.Agent != nil && run.Agent.Model != "" {
		run.Model = run.Agent.Model
	}
	if args.Model != "" {
		run.Model = args.Model
	}
	set, names, err := s.childTools(run, args)
	if err != nil {
		return tool.Failed(call, err)
	}
	run.Tools = names
	run.Budget = s.budget(run, args)

	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return tool.Failed(call, &tool.Error{Kind: tool.ErrCanceled, Message: "spawn: canceled while waiting for a free sub-agent slot", Err: ctx.Err()})
	}
	defer func() { <-s.sem }()

	run.Dir = cfg.Workspace
	var iso *isolation
	if run.Isolated {
		iso, err = isolate(ctx, cfg.Workspace, cfg.repo, cfg.WorkDir, run.Session, copyLimits{bytes: cfg.Limits.MaxCopyBytes, entries: cfg.Limits.MaxCopyEntries, gitPath: cfg.GitPath})
		if err != nil {
			return tool.Failed(call, tool.Errorf(tool.ErrIO, "spawn: could not make an isolated copy of the workspace: %v", err))
		}
		defer iso.remove()
		run.Dir = iso.dir
	}
	env, err := cfg.NewEnv(ctx, run)
	if err != nil {
		return tool.Failed(call, tool.Errorf(tool.ErrIO, "spawn: could not start the sub-agent's tools: %v", err))
	}
	defer env.Close()

	child := &Spawner{cfg: cfg, depth: run.Depth, parent: run.Session, sem: make(chan struct{}, cfg.Limits.MaxParallel)}
	var changes changeLog
	exec := &childExec{env: env.Exec, spawn: child, changes: &changes}
	var obs agent.Observers
	var rec Recording
	if cfg.Record != nil {
		if rec, err = cfg.Record(run); err != nil {
			return tool.Failed(call, tool.Errorf(tool.ErrIO, "spawn: could not start the sub-agent's record: %v", err))
		}
		if rec != nil {
			obs = append(obs, rec)
		}
	}
	if cfg.Observe != nil {
		if o := cfg.Observe(run); o != nil {
			obs = append(obs, o)
		}
	}
	var prices surface.Prices
	if cfg.Prices != nil {
		prices = cfg.Prices(run.Model)
	}
	a := agent.New(agent.Config{
		Provider: cfg.Provider, Tools: set, Exec: exec, Model: run.Model,
		System: s.system(run), Budget: run.Budget, Prices: prices,
		MaxTokens: cfg.MaxTokens, MaxResultChars: cfg.MaxResultChars, Observer: obs,
	}, nil)
	out := a.Run(ctx, args.Task)

	ar := &tool.AgentRun{Session: run.Session, Model: run.Model, Depth: run.Depth, Status: string(out.Status), Reason: out.Reason,
		Text: out.Text, Turns: out.Turns, Calls: out.Calls, Usage: out.Usage}
	if run.Agent != nil {
		ar.Agent = run.Agent.Name
	}
	res := tool.Result{CallID: call.ID, Op: call.Op, Agent: ar}
	if iso != nil {
		ar.Worktree = iso.dir
		diff, err := iso.diff(ctx, changes.paths())
		if err != nil {
			ar.Diff = fmt.Sprintf("(the diff could not be made: %v)", err)
		} else {
			ar.Diff = diff
		}
	} else {
		res.Changes = changes.merged()
	}
	res.Output = out.Text
	if iso != nil && len(iso.skipped) > 0 {
		res.Output += fmt.Sprintf("\n\n(Left out of the isolated copy, being neither regular files, directories nor links, or under a link: %s)", strings.Join(iso.skipped, ", "))
	}
	switch out.Status {
	case agent.StatusCompleted:
	case agent.StatusCanceled:
		res.Err = &tool.Error{Kind: tool.ErrCanceled, Message: "the sub-agent was canceled", Err: ctx.Err()}
	default:
		res.Err = tool.Errorf(tool.ErrAgent, "the sub-agent did not finish its task: %s", cmp.Or(out.Reason, string(out.Status)))
	}
	if rec != nil {
		link, err := rec.Finish(out)
		if err != nil && res.Err == nil {
			res.Err = tool.Errorf(tool.ErrIO, "spawn: the sub-agent's record could not be finished: %v", err)
		}
		ar.Ledger = link
	}
	return res
}

// childTools returns the child's tool set: the top set's tools in their
// order, narrowed by the call's and the agent's lists, without spawn at
// the depth limit.
func (s *Spawner) childTools(run *Run, args *tool.SpawnArgs) (*surface.Set, []string, error) {
	want := func(list []string) map[string]bool {
		if len(list) == 0 {
			return nil
		}
		m := map[string]bool{}
		for _, n := range list {
			m[n] = true
		}
		return m
	}
	byCall := want(args.Tools)
	var byAgent map[string]bool
	if run.Agent != nil {
		byAgent = want(run.Agent.Tools)
	}
	top := s.cfg.Tools
	set, err := surface.NewSet(top.Surface)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, spec := range top.Specs() {
		n := spec.Name
		if (byCall != nil && !byCall[n]) || (byAgent != nil && !byAgent[n]) {
			continue
		}
		if n == "spawn" && !s.cfg.canSpawn(run.Depth) {
			continue
		}
		b, _ := top.Lookup(n)
		if err := set.Add(b); err != nil {
			return nil, nil, err
		}
		names = append(names, n)
	}
	for _, n := range args.Tools {
		if _, ok := top.Lookup(n); !ok {
			return nil, nil, tool.Errorf(tool.ErrInvalidInput, "spawn: there is no tool named %q to give the sub-agent; the tools are: %s", n, strings.Join(top.Names(), ", "))
		}
	}
	if len(names) == 0 {
		return nil, nil, tool.Errorf(tool.ErrInvalidInput, "spawn: the tool list leaves the sub-agent no tools")
	}
	return set, names, nil
}

// budget merges the call's budget over the agent's over the default, each
// capped by the configured limits.
func (s *Spawner) budget(run *Run, args *tool.SpawnArgs) agent.Budget {
	lim := s.cfg.Limits.Budget
	b := lim
	if run.Agent != nil {
		b = overlay(b, run.Agent.Budget)
	}
	b = overlay(b, agent.Budget{MaxTurns: args.MaxTurns, MaxTokens: args.MaxTokens, MaxCost: args.MaxCost, MaxWall: time.Duration(args.MaxWallMS) * time.Millisecond})
	capInt := func(v, c int) int {
		if c > 0 && (v == 0 || v > c) {
			return c
		}
		return v
	}
	b.MaxTurns = capInt(b.MaxTurns, lim.MaxTurns)
	b.MaxTokens = int64(capInt(int(b.MaxTokens), int(lim.MaxTokens)))
	b.MaxWall = time.Duration(capInt(int(b.MaxWall), int(lim.MaxWall)))
	if lim.MaxCost > 0 && (b.MaxCost == 0 || b.MaxCost > lim.MaxCost) {
		b.MaxCost = lim.MaxCost
	}
	return b
}

func overlay(b, o agent.Budget) agent.Budget {
	if o.MaxTurns > 0 {
		b.MaxTurns = o.MaxTurns
	}
	if o.MaxTokens > 0 {
		b.MaxTokens = o.MaxTokens
	}
	if o.MaxCost > 0 {
		b.MaxCost = o.MaxCost
	}
	if o.MaxWall > 0 {
		b.MaxWall = o.MaxWall
	}
	return b
}

// system is the child's system prompt: the base prompt for its directory,
// what a sub-agent is, and its agent's instructions.
func (s *Spawner) system(run *Run) string {
	var sb strings.Builder
	sb.WriteString(s.cfg.System(run.Dir))
	sb.WriteString("\n\n# Sub-agent\n\nYou are a sub-agent: another agent gave you the task below. It sees only your final message, so end with a complete, concise report of what you did, what you found and what is left.")
	if run.Isolated {
		sb.WriteString(" You work in an isolated copy of the workspace; your changes are returned to the other agent as a diff.")
	}
	if run.Agent != nil {
		fmt.Fprintf(&sb, "\n\n# Agent: %s\n\n%s\n", run.Agent.Name, run.Agent.Prompt)
	}
	return sb.String()
}

// changeLog collects the file changes of a run's calls.
type changeLog struct {
	mu  sync.Mutex
	all []tool.FileChange
}

func (l *changeLog) add(cs []tool.FileChange) {
	if len(cs) == 0 {
		return
	}
	l.mu.Lock()
	l.all = append(l.all, cs...)
	l.mu.Unlock()
}

// paths returns the paths changed, sorted, without duplicates.
func (l *changeLog) paths() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	var ps []string
	for _, c := range l.all {
		for _, p := range []string{c.Path, c.MovedTo} {
			if p != "" && !seen[p] {
				seen[p] = true
				ps = append(ps, p)
			}
		}
	}
	sort.Strings(ps)
	return ps
}

// merged returns one change per path, from its first before to its last
// after, in the order paths were first changed; a file added and then
// deleted is left out.
func (l *changeLog) merged() []tool.FileChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	type span struct {
		first, last tool.FileChange
	}
	var order []string
	byPath := map[string]*span{}
	note := func(p string, c tool.FileChange) {
		if sp, ok := byPath[p]; ok {
			sp.last = c
			return
		}
		order = append(order, p)
		byPath[p] = &span{first: c, last: c}
	}
	for _, c := range l.all {
		if c.MovedTo != "" {
			note(c.Path, tool.FileChange{Path: c.Path, Kind: tool.ChangeDelete, Before: c.Before})
			note(c.MovedTo, tool.FileChange{Path: c.MovedTo, Kind: tool.ChangeAdd, After: c.After})
			continue
		}
		note(c.Path, c)
	}
	var out []tool.FileChange
	for _, p := range order {
		sp := byPath[p]
		before, after := sp.first.Before, sp.last.After
		if sp.last.Kind == tool.ChangeDelete {
			after = ""
		}
		if sp.first.Kind == tool.ChangeAdd && sp.first.Before == "" {
			before = ""
		}
		var kind tool.ChangeKind
		switch {
		case before == after:
			continue
		case before == "":
			kind = tool.ChangeAdd
		case after == "":
			kind = tool.ChangeDelete
		default:
			kind = tool.ChangeUpdate
		}
		out = append(out, tool.FileChange{Path: p, Kind: kind, Before: before, After: after})
	}
	return out
}

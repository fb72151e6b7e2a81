// Package harness owns one session's life: it composes the provider, the
// tool surface, the executors on the workspace, the sandbox, the session
// store, the signed ledger, the MCP servers, validation and sub-agents
// from plain Options, runs the agent loop on tasks, and releases all of it.
//
//	s, err := harness.Open(ctx, harness.Options{Provider: "sim", Script: "demo", Root: dir})
//	if err != nil { ... }
//	defer s.Close()
//	out, err := s.Run(ctx, "Fix the failing test.")
//
// Run may be called several times: each call continues the same
// transcript, session store and ledger (a signed checkpoint after every
// turn), and, unless validation is off or on demand, ends with the
// verification boundary (the project's checks run once more by Truss in
// the sandbox, recorded in the ledger). Every path out of Open, Run and
// Close releases what was opened: Close stops the shells, the sandbox
// helper, the MCP servers and the simulated model, seals and closes the
// ledger and removes the session's temporary files.
//
// `truss run`, `exec`, `demo`, `mcp serve` and `tool call`, and
// sub-agents' environments, are all composed here.
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/changes"
	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/trust"
	"github.com/trussdev/truss/internal/validate"
)

// Session is one open session. Its methods are not safe for concurrent
// use, except Info and Reached.
type Session struct {
	opts     Options
	dialect  string
	prof     surface.Profile
	set      *surface.Set
	settings provider.Settings

	w        *workspace
	mcp      *mcpSession
	prov     provider.Provider
	predial  *provider.Predial // the provider's server, connected to from when it is known (nil: none)
	contact  *provider.Contact
	exec     tool.Executor // the composed executor of the top agent
	children *childRecords
	repo     func() *ledger.RepoState // the workspace's repository at the start
	// dotGit is the workspace's .git when the session began (gitsafe.Find),
	// the zero Repo when there was none: host-side git runs on it alone.
	dotGit gitsafe.Repo
	// user is the user's own configuration (config.User), beside the key.
	user *config.User
	// base is the system prompt every agent's is built on: Truss's own
	// and the user's instructions (baseSystem); set before the first
	// agent is made.
	base string
	// newRepoWarned: the warning of a repository made during the session
	// was given.
	newRepoWarned bool
	// nestedGit are the repositories below the workspace's top whose .git
	// commands changed (a git init in a subdirectory, a nested clone's
	// config), each warned of once (nestedWarned).
	gitMu        sync.Mutex
	nestedGit    []string
	nestedWarned map[string]bool
	gitParts     map[string]int // a directory's changed HEAD (1) and config (2)
	trackers     trackers

	store     session.Store
	sess      *session.Session
	created   bool // the session is this Session's own, not a resumed one
	sessionID string
	history   []model.Item

	lw      *ledger.Writer
	rec     *ledger.Recorder
	persist error // the first error saving the session
	// prep is the preparation the first request does not wait for (the
	// ledger; prepare.go); ledgerDir the ledger's directory, decided
	// before it ("" when none is written). lw and rec are read only once
	// prep is done.
	prep      *preparation
	start     *startGate // holds the background work until the first request has left
	ledgerDir string

	agent *agent.Agent
	ran   bool
	// kept: a run ended otherwise than failed before the model's first
	// response (completed, cancelled, failed after a response…), so Close
	// saves the session even when the model never responded (a run
	// cancelled before its first response).
	kept bool
	// responded: the model has given a response (agent.EventResponse).
	responded atomic.Bool

	// place is where a cloud platform's requests go ("project P,
	// REGION", "REGION"; Endpoint.Place), "" for other providers.
	place string

	// life ends when the session closes (the simulated model's server).
	life   context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool

	// gate is the top agent's approval gate; escalated the escalated
	// shells of every agent (approval.go).
	gateMu    sync.Mutex
	gate      *approval.Gate
	escalated escalatedShells
	// stats are the live statistics (interactive.go).
	stats stats
	// changed counts the tool calls, sub-agents' included, whose results
	// carry file changes; bg is the check running in the background.
	changed atomic.Int64
	bg      checks
	// testCode holds the paths of test code (validate.IsTestCode) that
	// the session's calls changed, for the boundary's verdict.
	testCode struct {
		sync.Mutex
		paths map[string]bool
		// config: the test configuration changed in what decides a run
		// (changedConfig).
		config map[string]bool
	}

	// modelFrom is the variable the model came from when the provider
	// was chosen and the model was not ("TRUSS_MODEL"), else "".
	modelFrom string
	// modelSource is where the model came from, whatever chose the
	// provider: "--model" (the options), "TRUSS_MODEL", "session ID" (a
	// resumed session's), "model in config.toml" (the user's default),
	// "" (the provider's default or model setting).
	modelSource string
}

// Open composes a session. Errors in the options or the environment are
// *ConfigError. On error everything opened so far is released.
func Open(ctx context.Context, opts Options) (s *Session, err error) {
	s = &Session{opts: opts, start: newStartGate()}
	s.life, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if opts.NoModel || opts.Serve != "" {
		s.start.open() // no request will leave
	}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	o := &s.opts
	if o.Serve != "" {
		o.NoModel = true
	}
	if err := s.loadUser(); err != nil {
		return s, err
	}
	if err := s.checkApproval(); err != nil {
		return s, err
	}
	if err := s.resume(); err != nil {
		return s, err
	}
	if err := s.step("resolve"); err != nil {
		return s, err
	}
	if !o.NoModel {
		if err := s.resolve(); err != nil {
			return s, err
		}
		// The provider is known: its server is connected to while the
		// workspace opens, and the first request takes the connection.
		s.predial = s.startPredial()
	}
	switch {
	case o.Tools != nil:
		s.set = o.Tools
	case o.Serve != "":
		// The file tools' executors serve the calls; no memory store.
		if s.set, err = surface.NewSet(generic.Name, generic.Bindings()...); err != nil {
			return s, err
		}
	default:
		if s.set, s.prof, err = pickSurface(o.Surface, s.dialect, o.Provider, o.Model, s.offersEscalation()); err != nil {
			return s, err
		}
		where := ""
		var def ProviderDef
		if d, err := s.providerDef(o.Provider); err == nil {
			def, where = d, d.elsewhere(o.Model, s.modelFrom, o.Interactive)
		}
		// A named provider's own limits, over the row's and the guess's.
		s.prof = def.withLimits(s.prof)
		s.catalogWarning(def, where, s.prof, s.set.Surface)
		if o.Budget.MaxCost > 0 && !s.prof.Prices.Known() && o.Provider != "sim" {
			return s, configErrorf("--max-cost needs the model's prices, and Truss's catalog has none for %q (truss models lists the models it knows); use --max-turns or --max-tokens instead", o.Model)
		}
		s.platformWarnings(def)
	}
	if err := s.step("workspace"); err != nil {
		return s, err
	}
	if s.w, err = s.openWorkspace(s.set); err != nil {
		return s, err
	}
	s.dotGit, _ = gitsafe.Find(s.w.root)
	s.repo = repoState(s.life, s.start, s.w.root, s.dotGit, s.w.hostPath)
	if msg := s.w.cfg.Trust.Warning(); msg != "" {
		s.warn(msg)
	}
	if !o.NoModel {
		// MCP servers start now, while the rest is set up.
		if s.mcp, err = s.startMCP(ctx, s.w, s.set); err != nil {
			return s, err
		}
	}
	if s.w.runner = s.w.newRunner(o.Validation); s.w.runner != nil {
		if o.Serve == "" {
			if err := s.set.Add(generic.Validate{}); err != nil {
				return s, err
			}
		}
		s.w.mux.Handle(tool.OpValidate, s.w.runner)
	}
	if err := s.step("session"); err != nil {
		return s, err
	}
	if err := s.createSession(); err != nil {
		return s, err
	}
	if err := s.startEnv(ctx); err != nil {
		return s, err
	}
	s.exec = s.compose(&s.w.mux, s.w.ws.Dir())
	if o.NoModel {
		if err := s.saveMeta(); err != nil {
			return s, err
		}
		s.ledgerDir = s.plannedLedgerDir()
		return s, s.openLedger(s.ledgerDir)
	}
	if s.settings, err = s.modelSettings(); err != nil {
		return s, err
	}
	s.contact = &provider.Contact{}
	retry := provider.RetryPolicy{Contact: s.contact, OnRetry: o.OnRetry}
	if err := s.step("provider"); err != nil {
		return s, err
	}
	if s.prov, err = s.newProvider(ctx, retry); err != nil {
		return s, err
	}
	s.mcp.wait(ctx, mcpWait(o.MCP, s.w.cfg))
	if err := s.addSpawn(); err != nil {
		return s, err
	}
	// The ledger is prepared while the first request is on its way; the
	// loop's events wait for it in hold (prepare.go).
	hold := &heldObserver{}
	observer := s.observers(hold)
	if err := s.prepare(hold); err != nil {
		return s, err
	}
	if err := s.step("agent"); err != nil {
		return s, err
	}
	// Before a request would pass 85 % of the context the server gives
	// it, older turns are replaced by a summary the model writes (and the
	// ledger records what was replaced); Compact does it on demand.
	system := s.systemPrompt() + s.mcp.notes()
	compactor := &compact.Compactor{Provider: s.prov, Model: o.Model, System: system, Tools: s.set.Specs, Window: int(s.contextLimit())}
	s.agent = agent.New(agent.Config{
		Compactor: compactor,
		Provider:  s.prov, Tools: s.set, Exec: preparedExec{s.exec, s}, Model: o.Model,
		System:         system,
		Budget:         o.Budget,
		Prices:         s.prof.Prices,
		MaxTokens:      s.prof.MaxOutput,
		MaxResultChars: o.MaxResultChars,
		Observer:       observer,
	}, s.history)
	return s, nil
}

// step fails when the options ask Open to fail at name (tests of the error
// paths).
func (s *Session) step(name string) error {
	if s.opts.failAt == name {
		return fmt.Errorf("harness: injected failure at %s", name)
	}
	return nil
}

// compose is the executor of an agent working in the workspace directory
// dir: the routes of mux, wrapped by whatever must see every call. The top
// agent's and every sub-agent's executors are composed here, and only
// here (ServeMCP and Execute use the top agent's).
func (s *Session) compose(mux *tool.Mux, dir string) tool.Executor {
	var exec tool.Executor = mux
	// The changes commands make are found after each command and travel
	// with its result: one tracker per workspace directory, so a
	// sub-agent in the session's workspace shares the top agent's and one
	// in an isolated copy has its own. changes.Wrap implements
	// tool.Wrapper, so the executors' optional capabilities are looked up
	// through it.
	if t := s.tracker(dir); t != nil {
		exec = changes.Wrap(exec, t)
	}
	// Shell calls pass the approval policy (approval.go); file changes
	// are refused before it while the sandbox is read-only (readonly.go).
	return fileWrites{next: s.gated(exec, dir), mode: s}
}

// warn reports a warning to the user.
func (s *Session) warn(msg string) {
	if s.opts.OnWarning != nil {
		s.opts.OnWarning(msg)
	}
}

// resume opens the resumed session and fills in what the options leave
// out from it.
func (s *Session) resume() error {
	o := &s.opts
	if o.Resume == "" {
		return nil
	}
	dir, err := s.sessionDir()
	if err != nil {
		return err
	}
	s.store = session.Store{Dir: dir}
	ref := o.Resume
	if ref == session.Last {
		// The newest of this workspace (--root's, else the current
		// directory), as /resume, claude --continue and codex resume
		// --last take it: not another repository's.
		if ref, err = s.lastHere(); err != nil {
			return err
		}
	}
	sess, items, err := s.store.Open(ref)
	if err != nil {
		return err
	}
	s.sess, s.history, s.sessionID = sess, items, sess.Meta.ID
	if o.Provider == "" {
		o.Provider = sess.Meta.Provider
	}
	if (o.Root == "" || o.Root == ".") && sess.Meta.Workspace != "" {
		o.Root = sess.Meta.Workspace
		if _, err := os.Stat(o.Root); errors.Is(err, os.ErrNotExist) {
			return configErrorf("session %s worked in %s, which no longer exists; resume it in another directory with --root DIR", sess.Meta.ID, o.Root)
		}
	}
	if o.Provider == "sim" && o.Script == "" {
		// The simulated model plays on from where the session stopped.
		o.Script = sess.Meta.Script
		if sess.Meta.SimDialect != "" {
			o.SimDialect = sess.Meta.SimDialect
		}
	}
	return nil
}

// lastHere is the id of the newest session, not an MCP server's record,
// that worked in this workspace: --root's, else the current directory
// (the same directory by identity, whatever path it was reached by).
func (s *Session) lastHere() (string, error) {
	here, err := filepath.Abs(cmpOr(s.opts.Root, "."))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(here); err != nil {
		return "", configErrorf("the workspace %s: %v", here, err)
	}
	id, err := s.store.Resolve(session.Last, workedIn(here))
	if errors.Is(err, session.ErrNotFound) {
		return "", configErrorf("no session worked in %s to resume (`truss sessions` lists every session; --resume ID resumes one by its id)", here)
	}
	return id, err
}

// workedIn reports of a session whether it can be resumed (it is not an
// MCP server's record) and worked in the directory dir: by its path, or,
// reached by another path, by identity.
func workedIn(dir string) func(session.Meta) bool {
	di, derr := os.Stat(dir)
	return func(m session.Meta) bool {
		if m.Served() || m.Workspace == "" {
			return false
		}
		if filepath.Clean(m.Workspace) == filepath.Clean(dir) {
			return true
		}
		mi, err := os.Stat(m.Workspace)
		return derr == nil && err == nil && os.SameFile(di, mi)
	}
}

// resolve fills in the provider, the model and the dialect.
func (s *Session) resolve() error {
	o := &s.opts
	if o.Provider == "sim" && o.Script == "" && o.SimScript == nil {
		return configErrorf("--provider sim needs --script FILE, the steps the simulated model plays (docs/simulator.md); `truss demo` plays the bundled fix")
	}
	chosen := o.Provider != ""
	if o.Model != "" {
		s.modelSource = "--model"
	}
	// The user's own default provider and model (config.User), after the
	// options and a resumed session's, before the environment's and the
	// provider's default.
	var u config.User
	if s.user != nil {
		u = *s.user
	}
	fromUser := o.Provider == "" && u.Provider != ""
	if fromUser {
		o.Provider, chosen = u.Provider, true
	}
	if o.Provider == "" {
		p, err := detectProvider(os.Getenv)
		if err != nil {
			return err
		}
		o.Provider = p
	}
	def, err := s.providerDef(o.Provider)
	if err != nil {
		if fromUser {
			dir, _ := s.keyDir()
			return configErrorf("provider in %s: %v", filepath.Join(dir, config.UserFile), err)
		}
		return err
	}
	s.dialect = wire(def.Dialect)
	if def.Name == "sim" && o.SimDialect == "" {
		o.SimDialect = simDialectFor(o.Surface, o.Model)
	}
	if err := def.checkFlags(o); err != nil {
		return err
	}
	if def.Name == "sim" {
		if _, ok := dialect(o.SimDialect); !ok {
			return configErrorf("--sim-dialect must be %s, not %q", DialectNames(), o.SimDialect)
		}
		s.dialect = wire(o.SimDialect)
		if o.Script != DemoScript && o.Script != DemoInteractiveScript && o.Script != "" {
			if abs, err := filepath.Abs(o.Script); err == nil {
				o.Script = abs
			}
		}
	}
	if o.Model == "" && s.sess != nil {
		var note string
		o.Model, note = resumedModel(def, s.sess.Meta)
		if note != "" {
			s.warn("warning: " + note)
		}
		if o.Model == s.sess.Meta.Model {
			s.modelSource = "session " + s.sess.Meta.ID
		}
	}
	if o.Model == "" {
		o.Model = os.Getenv("TRUSS_MODEL")
		if o.Model != "" {
			s.modelSource = "TRUSS_MODEL"
			if chosen {
				s.modelFrom = "TRUSS_MODEL"
			}
		}
	}
	if o.Model == "" && u.Model != "" && (u.Provider == "" || u.Provider == o.Provider) && def.Name != "sim" {
		o.Model, s.modelSource = u.Model, "model in "+config.UserFile
	}
	if o.Model == "" {
		o.Model = def.DefaultModel
		if def.Name == "sim" {
			o.Model = simModel(o.SimDialect)
		}
	}
	if o.Model == "" {
		return def.NoModel()
	}
	return nil
}

// resumedModel is the model a resumed session (meta) goes on with when
// --model is not given, and a note for the user when it is not simply the
// session's: on the provider the session ran on, its model; on another
// (--resume ID --provider P), its model when P's sessions run it from the
// model catalog in the platform's form, else P's default model (its model setting for a provider
// of the user's configuration) with a note saying so, else its model with
// a note saying where the model came from (a server of any maker's models,
// an Azure deployment: the catalog cannot tell).
func resumedModel(def ProviderDef, meta session.Meta) (model, note string) {
	m := meta.Model
	if m == "" || meta.Provider == "" || meta.Provider == def.Name || def.Name == "sim" {
		return m, ""
	}
	if q, ok := lookupProvider(meta.Provider); ok && q.Name == def.Name {
		return m, "" // an alias
	}
	if e, ok := def.catalogRow(m); ok && def.Runs(e) && def.platformIDWarning(m, "") == "" {
		return m, ""
	}
	if def.DefaultModel != "" {
		whose := def.Name + "'s default model"
		if def.Named {
			whose = fmt.Sprintf("the model of [providers.%s]", def.Name)
		}
		return def.DefaultModel, fmt.Sprintf("session %s ran %q on %s, which is not a model of %s: using %s, %q (pass --model to choose another)",
			meta.ID, m, meta.Provider, def.Name, whose, def.DefaultModel)
	}
	return m, fmt.Sprintf("the model %q came from session %s, which ran it on %s (pass --model to choose another for %s)", m, meta.ID, meta.Provider, def.Name)
}

// modelSettings checks the model-setting overrides and resolves them
// against the model's profile.
func (s *Session) modelSettings() (provider.Settings, error) {
	o := &s.opts
	switch o.ReasoningEffort {
	case "", "none", "minimal", "low", "medium", "high", "xhigh":
	default:
		return provider.Settings{}, configErrorf("--reasoning-effort must be none, minimal, low, medium, high or xhigh, not %q", o.ReasoningEffort)
	}
	thinking := -1
	if o.ThinkingTokens != nil {
		thinking = *o.ThinkingTokens
		// Anthropic's minimum; Gemini's budgets start lower, and its
		// server says what a model takes.
		if thinking != 0 && thinking < 1024 && s.dialect == "anthropic" {
			return provider.Settings{}, configErrorf("--thinking needs a budget of at least 1024 tokens on Anthropic's models (or 0 for none), not %d", thinking)
		}
		if thinking < 0 {
			return provider.Settings{}, configErrorf("--thinking needs a budget in tokens (or 0 for none), not %d", thinking)
		}
	}
	return s.prof.Settings(o.ReasoningEffort, thinking, o.ContextTokens, s.sessionID), nil
}

// createSession creates the session in the store, unless it is resumed or
// not saved.
func (s *Session) createSession() error {
	o := &s.opts
	if s.sess != nil || o.NoSession {
		return nil
	}
	dir, err := s.sessionDir()
	if err != nil {
		return err
	}
	s.store = session.Store{Dir: dir}
	meta := session.Meta{Workspace: s.w.root, Provider: o.Provider, Model: o.Model, Surface: s.set.Surface}
	if o.Serve != "" {
		meta.Provider, meta.Model, meta.Surface, meta.Task = "mcp", "-", serveSurface, "truss mcp serve"
	}
	if o.Provider == "sim" {
		meta.Script, meta.SimDialect = o.Script, o.SimDialect
	}
	// Its meta.json is written by the preparation (saveMeta), off the
	// first request's path.
	if s.sess, err = s.store.Begin(meta); err != nil {
		return err
	}
	s.created, s.sessionID = true, s.sess.Meta.ID
	return nil
}

// saveMeta writes a session this Session created its first meta.json,
// before its ledger: the session is listed from then on.
func (s *Session) saveMeta() error {
	if !s.created {
		return nil
	}
	return s.sess.SaveMeta()
}

// plannedLedgerDir is the directory of the session's ledger: the open
// writer's, a new one in the saved session, or the options'; "" when no
// ledger is written.
func (s *Session) plannedLedgerDir() string {
	o := &s.opts
	switch {
	case o.NoLedger:
		return ""
	case o.Ledger != nil:
		return o.Ledger.Dir()
	case s.sess != nil:
		return s.sess.LedgerDir(time.Now())
	}
	return o.LedgerDir
}

// openLedger starts the session's ledger in dir (plannedLedgerDir), when
// one is written: the key, the ledger's files, and session.start with the
// repository's state (which waits for git).
func (s *Session) openLedger(dir string) error {
	o := &s.opts
	if dir == "" {
		return nil
	}
	kd, err := s.keyDir()
	if err != nil {
		return err
	}
	signer, _, err := ledger.LoadOrCreateKey(kd)
	if err != nil {
		return err
	}
	id := cmpOr(s.sessionID, "session")
	if err := s.step("ledger"); err != nil {
		return err
	}
	var prev *ledger.Previous
	if o.Ledger == nil && s.sess != nil {
		if prev, err = previousRun(s.sess.Dir(), dir); err != nil {
			return err
		}
	}
	if o.Ledger != nil {
		s.lw = o.Ledger
	} else if s.lw, err = ledger.Create(dir, id, signer); err != nil {
		return err
	}
	if err := s.step("recorder"); err != nil {
		return err
	}
	start := ledger.Start{Truss: o.Version, Provider: o.Provider, Model: o.Model, Surface: s.set.Surface,
		Tools: toolDecls(s.set), Sandbox: s.w.enforced(), Workspace: s.w.root, Repo: s.repo(), Config: s.runConfig(),
		Environment: s.w.envFacts(), Previous: prev}
	if o.Serve != "" {
		var decls []ledger.ToolDecl
		for _, n := range serveTools(s.w.runner != nil) {
			decls = append(decls, ledger.ToolDecl{Name: n, Kind: "mcp"})
		}
		start.Provider, start.Model, start.Surface, start.Tools = "mcp", "-", serveSurface, decls
		start.Config = map[string]string{"transport": o.Serve}
	}
	if s.rec, err = ledger.NewRecorder(s.lw, start); err != nil {
		return err
	}
	s.rec.Settle = s.settle
	if s.children != nil {
		s.children.setLedger(s.lw.Dir(), signer)
	}
	return nil
}

// previousRun names the ledger of the run before the one whose ledger
// will be dir, in the session directory sessDir: the last of the
// session's ledgers other than dir, by its last checkpoint; nil for the
// session's first run.
func previousRun(sessDir, dir string) (*ledger.Previous, error) {
	dirs, err := session.Ledgers(sessDir)
	if err != nil {
		return nil, fmt.Errorf("the session's ledgers: %w", err)
	}
	dirs = slices.DeleteFunc(dirs, func(d string) bool { return filepath.Clean(d) == filepath.Clean(dir) })
	if len(dirs) == 0 {
		return nil, nil
	}
	return ledger.PreviousOf(dirs[len(dirs)-1])
}

// runConfig is the configuration session.start records.
func (s *Session) runConfig() map[string]string {
	c := s.settings.Fields()
	c["max_turns"], c["timeout"] = fmt.Sprint(cmpInt(s.opts.Budget.MaxTurns, 50)), s.w.timeout.String()
	if m := s.mcp.summary(); m != "" {
		c["mcp"] = m
	}
	if st := s.w.cfg.Trust.State; st != "" && st != trust.None {
		c["project_config"] = string(st)
	}
	return c
}

func cmpInt(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// repoState reads the repository's HEAD and whether it is dirty; nil when
// the workspace is not a git repository. Git runs with none of the
// repository's hooks, fsmonitor, filters or pagers (package gitsafe): its
// configuration may have been written by a command; git is found in
// hostPath (the session's PATH without its writable roots), never in a
// directory a command could have put a git in.
// It reads in the background once gate opens (the first request has
// left: git's processes would compete with it for the CPU); the returned
// function opens the gate and waits for the answer.
func repoState(ctx context.Context, gate *startGate, dir string, at gitsafe.Repo, hostPath string) func() *ledger.RepoState {
	ch := make(chan *ledger.RepoState, 1)
	go func() {
		gate.wait(ctx)
		if at.DotGit == "" || gate.closed() { // none, or none wanted: the session closed unused
			ch <- nil
			return
		}
		top := filepath.Dir(at.DotGit)
		st, err := gitsafe.Git{Dir: top, GitDir: at.DotGit, WorkTree: top, Path: hostPath}.State(ctx)
		if err != nil || st.Head == "" {
			ch <- nil
			return
		}
		ch <- &ledger.RepoState{Head: st.Head, Dirty: st.Dirty}
	}()
	var once sync.Once
	var rs *ledger.RepoState
	return func() *ledger.RepoState {
		gate.open()
		once.Do(func() { rs = <-ch })
		return rs
	}
}

// observers are the agent's observer: the shell's prewarming, then hold,
// which holds the events until the session's preparation is done and
// gives them to the ledger's recorder (prepare.go), then to the session's
// own observers, then to the options'.
func (s *Session) observers(hold *heldObserver) agent.Observer {
	// The shell (through the sandbox helper) starts while the model's
	// first answer streams, not while the first request is being built
	// and sent; and not before the session's preparation is done: the
	// helper hides the signing key only if the key exists when it starts
	// (a first session creates it).
	var prewarm sync.Once
	first := agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type == agent.EventResponse {
			s.responded.Store(true)
		}
		if ev.Type == agent.EventDelta || ev.Type == agent.EventResponse {
			// A model in the process answered: its request has left.
			s.start.open()
			prewarm.Do(func() {
				go func() {
					if s.prepared(s.life) == nil {
						s.w.shell.Prewarm()
					}
				}()
			})
		}
	})
	var obs agent.Observers
	obs = append(obs, s.statsObserver())
	// A .git below the workspace's top that commands changed is warned of
	// at the end of the run (warnNewRepository).
	obs = append(obs, agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type == agent.EventCallCompleted {
			s.noteNestedGit(ev.Results)
		}
	}))
	obs = append(obs, s.changeCounter())
	// A request that comes near the context the server was given is
	// reported, as retries are.
	window := s.contextLimit()
	obs = append(obs, agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type != agent.EventResponse {
			return
		}
		u := ev.Response.Usage
		if prompt := u.Input(); provider.NearContext(prompt, window) {
			s.warn(fmt.Sprintf("warning: the request of turn %d took %d of the %d tokens of context the server was given; later turns may not fit (see --context)", ev.Turn, prompt, window))
		}
	}))
	if s.sess != nil {
		sess := s.sess
		obs = append(obs, agent.ObserverFunc(func(ev agent.Event) {
			if ev.Type == agent.EventUser && s.created && sess.Meta.Task == "" && len(ev.Items) > 0 {
				// A new session is named by its first task.
				sess.Meta.Task = ev.Items[0].Text
				if err := sess.SaveMeta(); err != nil && s.persist == nil {
					s.persist = err
				}
			}
			switch ev.Type {
			case agent.EventUser, agent.EventTurnCompleted:
				if err := sess.Append(ev.Items...); err != nil && s.persist == nil {
					s.persist = err
				}
			case agent.EventCompacted:
				// The compacted transcript replaces the saved one (kept
				// beside it), so that a resume continues from it.
				if err := sess.Replace(ev.Items); err != nil && s.persist == nil {
					s.persist = err
				}
			case agent.EventRunCompleted:
				o := ev.Outcome
				sess.Meta.Status, sess.Meta.Turns = string(o.Status), sess.Meta.Turns+o.Turns
				// What it last ran on (a resume goes on with it; a
				// session re-opened with another model lists that one).
				sess.Meta.Provider, sess.Meta.Model, sess.Meta.Surface = s.opts.Provider, s.opts.Model, s.set.Surface
				sess.Meta.Usage.Add(o.RunUsage) // o.Usage is every Run's of this opening
				if err := sess.SaveMeta(); err != nil && s.persist == nil {
					s.persist = err
				}
			}
		}))
	}
	hold.rest = append(obs, s.opts.Observers...)
	return agent.Observers{first, hold}
}

// contextLimit is the context window the server gives a request: the one
// sent (num_ctx), Ollama's own default when none is, else the model's.
func (s *Session) contextLimit() int64 {
	switch {
	case s.settings.ContextTokens > 0:
		return int64(s.settings.ContextTokens)
	case s.dialect == "ollama":
		return 4096 // Ollama's default num_ctx
	}
	return int64(s.prof.ContextWindow)
}

// Info describes the session.
func (s *Session) Info() Info {
	i := Info{Provider: s.opts.Provider, Model: s.opts.Model, Dialect: s.dialect, Surface: s.set.Surface, Script: s.opts.Script,
		ProfileGuess: s.prof.Guess, Place: s.place, SessionID: s.sessionID, Workspace: s.w.root, Sandbox: s.w.enforced(),
		Validation: s.w.runner != nil, Environment: s.w.envDescription()}
	i.LedgerDir = s.ledgerDir
	return i
}

// Reached reports whether the model's server has answered at least once.
func (s *Session) Reached() bool { return s.contact.Answered() }

// Responded reports whether the model has given a response in this
// session (a whole one, not an error status).
func (s *Session) Responded() bool { return s.responded.Load() }

// Run adds task as a user message and runs the agent loop until it ends,
// then, unless validation is off or on demand, the verification boundary.
// The error is the harness's own (a closed session, no model, or the
// failure of the session's preparation, which cancels the run: see
// prepare.go); how the run ended is in the outcome.
func (s *Session) Run(ctx context.Context, task string) (Outcome, error) {
	if s.isClosed() {
		return Outcome{}, ErrClosed
	}
	if s.agent == nil {
		return Outcome{}, errors.New("harness: the session has no model (NoModel)")
	}
	s.ran = true
	// A new task cancels a background check: its commands would change
	// the tree the check reads.
	s.stopCheck()
	before := s.changed.Load()
	// The first request leaves while the session's preparation runs; when
	// it fails, the run is cancelled and the failure is Run's error.
	rctx, cancel := context.WithCancel(s.start.sentTrace(ctx))
	defer cancel()
	if p := s.prep; p != nil {
		go func() {
			select {
			case <-p.done:
				if p.err != nil {
					cancel()
				}
			case <-rctx.Done():
			}
		}()
	}
	out := s.agent.Run(rctx, task)
	if err := s.prepared(context.WithoutCancel(ctx)); err != nil {
		return Outcome{}, err
	}
	res := Outcome{Agent: *out, SessionID: s.sessionID, Usage: s.agent.Usage(), Changed: int(s.changed.Load() - before)}
	if !s.recording() { // changes are tracked only for a ledger
		res.Changed = -1
	}
	// The first request could not connect, or found a server that is not
	// the API: nothing happened.
	res.Unreached = out.Status == agent.StatusFailed && !s.contact.Answered() && provider.Unreached(out.Err)
	// A run that failed before the model's first response (no server, a
	// server that is not the API, a refused key, an unknown model, a
	// quota…) leaves nothing to resume: the session is not kept for it.
	res.NoResponse = out.Status == agent.StatusFailed && !s.responded.Load()
	s.kept = s.kept || !res.NoResponse
	switch v := s.opts.Validation; {
	case res.Unreached || v.OnDemand:
	case v.Background:
		if res.Changed != 0 && s.w.runner != nil && ctx.Err() == nil {
			res.Background = s.startCheck()
		}
	default:
		res.Verdict = s.boundary(ctx, "after the task")
	}
	s.sealed(&res)
	if s.persist != nil {
		s.warn(fmt.Sprintf("the session could not be saved: %v", s.persist))
		s.persist = nil
	}
	s.warnNewRepository()
	return res, nil
}

// gitMarks are what a bulk change's manifest holds where one of its files
// is in, or is, a git directory.
var gitMarks = [][]byte{[]byte("/.git/"), []byte("/HEAD\""), []byte("/.git\"")}

// manifestNamesGit reports whether a bulk change's manifest (in memory
// or in a file) names a file in or of a git directory, reading a file's
// a chunk at a time. A manifest that cannot be read counts as naming one:
// the end of the run then asks for a review it may not need.
func manifestNamesGit(ch tool.FileChange) bool {
	r, err := ch.OpenAfter()
	if err != nil {
		return true
	}
	defer r.Close()
	const keep = 8 // longer than every mark: one cut by a chunk's end is found in the next
	buf := make([]byte, keep+64<<10)
	have := 0
	for {
		n, err := r.Read(buf[have:])
		have += n
		for _, m := range gitMarks {
			if bytes.Contains(buf[:have], m) {
				return true
			}
		}
		if err == io.EOF {
			return false
		}
		if err != nil {
			return true
		}
		if have > keep {
			have = copy(buf, buf[have-keep:have])
		}
	}
}

// noteNestedGit keeps the repositories below the workspace's top whose
// git directory the results' changes touched: a path through a .git
// directory, a .git file (a "gitdir:" pointer to a directory elsewhere),
// or a directory in which both HEAD and config changed (a git directory
// by any name: git init --separate-git-dir, or one made file by file,
// which git finds through core.worktree or GIT_DIR).
func (s *Session) noteNestedGit(results []tool.Result) {
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	note := func(repo string) {
		if repo != "" && repo != "." && !slices.Contains(s.nestedGit, repo) {
			s.nestedGit = append(s.nestedGit, repo)
		}
	}
	for _, r := range results {
		for _, ch := range r.Changes {
			paths := []string{ch.Path, ch.MovedTo}
			if ch.Files > 0 && manifestNamesGit(ch) {
				paths = append(paths, ch.Path+"/.git/") // a bulk change: a repository is among its files
			}
			for _, p := range paths {
				if p == "" {
					continue
				}
				if i := strings.Index(p, "/.git/"); i > 0 {
					note(p[:i])
					continue
				}
				dir, base := path.Split(p)
				dir = strings.TrimSuffix(dir, "/")
				switch base {
				case ".git":
					note(dir)
				case "HEAD", "config":
					if s.gitParts == nil {
						s.gitParts = map[string]int{}
					}
					bit := map[string]int{"HEAD": 1, "config": 2}[base]
					if s.gitParts[dir] |= bit; s.gitParts[dir] == 3 && dir != ".git" && !strings.HasSuffix(dir, "/.git") {
						note(dir + " (a git directory)")
					}
				}
			}
		}
	}
}

// warnNewRepository warns, once, when the workspace is in a git
// repository that was not there when the session began: commands wrote
// its configuration, and git run there by the user would obey it (a
// core.fsmonitor or a hook runs a program). Truss runs no git on it.
func (s *Session) warnNewRepository() {
	if s.w == nil {
		return
	}
	s.gitMu.Lock()
	for _, repo := range s.nestedGit {
		if s.nestedWarned[repo] {
			continue
		}
		if s.nestedWarned == nil {
			s.nestedWarned = map[string]bool{}
		}
		s.nestedWarned[repo] = true
		if gd, ok := strings.CutSuffix(repo, " (a git directory)"); ok {
			dir := filepath.FromSlash(gd)
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(s.w.root, dir)
			}
			s.warn(fmt.Sprintf("commands made or changed the git directory %s during the session: a repository that uses it (through a .git file, core.worktree or GIT_DIR) obeys its configuration and hooks (core.fsmonitor, hooks and filters run programs); review %s/config and %s/hooks before using git with it",
				dir, dir, dir))
			continue
		}
		dir := filepath.FromSlash(repo)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(s.w.root, dir)
		}
		s.warn(fmt.Sprintf("commands changed %s/.git during the session: its configuration and hooks may be the model's work, and git run there obeys them (core.fsmonitor, hooks and filters run programs); review the git directory it is or names, its config and hooks, before using git in %s",
			dir, dir))
	}
	s.gitMu.Unlock()
	if s.newRepoWarned {
		return
	}
	cur, err := gitsafe.Find(s.w.root)
	if err != nil || cur.DotGit == "" || cur.Same(s.dotGit) {
		return
	}
	s.newRepoWarned = true
	s.warn(fmt.Sprintf("commands made %s during the session: its configuration and hooks are the model's work, and git run there obeys them (core.fsmonitor, hooks and filters run programs); review %s/config and %s/hooks before using git in %s",
		cur.DotGit, cur.DotGit, cur.DotGit, filepath.Dir(cur.DotGit)))
}

// Validate runs the verification boundary now: Truss runs the project's
// checks once more itself, in the sandbox, and records the verdict in the
// ledger. It returns nil when there are no checks to run.
func (s *Session) Validate(ctx context.Context) (*Verdict, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if err := s.prepared(ctx); err != nil {
		return nil, err
	}
	s.stopCheck()
	return s.boundary(ctx, "on demand"), nil
}

// Compact replaces the transcript's older turns by a summary the model
// writes, now (the interactive /compact); the pinned first task is kept.
// It must not be called while Run runs. The compaction is recorded in the
// ledger and the saved transcript like an automatic one;
// compact.ErrNothingToCompact says there was nothing to replace.
func (s *Session) Compact(ctx context.Context) (*compact.Record, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if s.agent == nil {
		return nil, errors.New("harness: the session has no model (NoModel)")
	}
	if err := s.prepared(ctx); err != nil {
		return nil, err
	}
	rec, err := s.agent.Compact(ctx)
	if s.rec != nil {
		s.rec.Flush()
	}
	if s.persist != nil {
		s.warn(fmt.Sprintf("the session could not be saved: %v", s.persist))
		s.persist = nil
	}
	return rec, err
}

// boundary is the verification boundary; nil when there are no checks
// (or ctx ended before they started). When is recorded with the verdict:
// "after the task", "in the background" after it, or "on demand".
// Nothing the model started runs during it: the model's shell and the
// escalated ones are killed with everything they started (background
// jobs and daemons too). In a task environment the session's container
// is halted (every process in it killed, its init included) and the
// checks run in a fresh container from the session's image ID with the
// workspace mounted, so nothing a command did to the session's
// container (processes, programs replaced outside the workspace, a
// traced init) takes part in them; the session's container is started
// again afterwards. When that fails, no check runs and the verdict
// fails. The next command starts a new shell, with the saved directory
// and variables.
func (s *Session) boundary(ctx context.Context, when string) *Verdict {
	r := s.w.runner
	if r == nil || ctx.Err() != nil {
		return nil
	}
	s.w.stopCommands()
	s.escalated.stop()
	var sum validate.Summary
	var log string
	var facts any
	confined := false
	if s.w.envs != nil {
		var err error
		sum, log, facts, err = s.w.envs.checks(ctx, r, s.w.envShellConfig, s.warn)
		if err != nil {
			// The checks could not be had where nothing of the model's
			// runs: no check runs, and the verdict is a failure that says
			// why.
			sum = validate.Summary{Command: r.Env.Test, Unit: "tests", ExitCode: -1, Setup: "run the checks in a fresh container"}
			log = err.Error()
		}
	} else {
		var res tool.Result
		sum, res, confined = s.w.runChecks(ctx, r)
		log = res.Stdout + res.Stderr
	}
	tc, cc := s.testCodeChanged()
	if len(tc) > 0 {
		// The checks ran the workspace's tests as the model left them:
		// whatever test code it changed decided them too.
		s.warn(fmt.Sprintf("the verification ran test code the model changed (%s): read it before trusting the verdict", termsafe.Name(strings.Join(tc, ", "))))
	}
	if len(cc) > 0 {
		s.warn(fmt.Sprintf("the verification ran with test configuration the model changed (%s): read it before trusting the verdict", termsafe.Name(strings.Join(cc, ", "))))
	}
	if s.rec != nil {
		v := map[string]any{"boundary": true, "when": when, "env": r.Env, "summary": sum}
		if facts != nil {
			v["environment"] = facts // the checks ran in a fresh container of the task's image
		}
		if len(tc) > 0 {
			v["test_code_changed"] = tc
		}
		if len(cc) > 0 {
			v["test_config_changed"] = cc
		}
		if confined {
			v["test_binaries_confined"] = true
		}
		s.rec.Validation(v, []byte(log))
	}
	return &Verdict{Summary: sum, Log: log, TestCodeChanged: tc, TestConfigChanged: cc, TestBinariesConfined: confined}
}

// testCodeChanged is the test code and the test configuration the
// session's calls changed, each sorted.
func (s *Session) testCodeChanged() (code, config []string) {
	s.testCode.Lock()
	defer s.testCode.Unlock()
	return slices.Sorted(maps.Keys(s.testCode.paths)), slices.Sorted(maps.Keys(s.testCode.config))
}

// sealed fills in the ledger's state after everything observed so far.
func (s *Session) sealed(o *Outcome) {
	if s.lw == nil {
		return
	}
	s.rec.Flush()
	size, root, _, err := s.lw.Seal()
	if err != nil {
		s.warn(fmt.Sprintf("the ledger could not be sealed: %v", err))
	}
	o.LedgerDir, o.LedgerSize, o.LedgerRoot = s.lw.Dir(), size, root
}

// Execute runs one call on the session's executors, as the agent loop
// would (a panicking executor gives an internal-error result), without
// recording it.
func (s *Session) Execute(ctx context.Context, call tool.Call) tool.Result {
	r, _ := agent.Execute(ctx, s.exec, call)
	return r
}

// Transcript returns the conversation so far (a resumed session's
// included), for a caller that shows it.
func (s *Session) Transcript() []model.Item {
	if s.agent == nil {
		return nil
	}
	return slices.Clone(s.agent.Transcript())
}

// Tools returns the session's tool set.
func (s *Session) Tools() *surface.Set { return s.set }

func (s *Session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Saved reports whether Close keeps the session for a resume: it does
// unless the session is this Session's own, its model never responded and
// no run ended otherwise than failed before a response (or it saves
// none).
func (s *Session) Saved() bool {
	if s.prepFailed() {
		return false // as when Open fails
	}
	return s.sess != nil && !(s.created && !s.opts.NoModel && !s.responded.Load() && !s.kept)
}

// closedReason is the reason of the session.end Close writes for a run
// that no task ended last (ledger.Recorder.End).
const closedReason = "the session was closed with no task running"

// Close releases everything the session opened: it ends the ledger's run
// (a session.end with status closed when no task's session.end is its
// last entry: see ledger.Recorder.End), seals and closes the ledger,
// saves the session or, when no run ended otherwise than unreached (none
// ran, or the model could not be reached), removes it, stops the MCP
// servers, the simulated model, the shells and the sandbox, and removes
// the temporary files. A session closed before anything needed its
// preparation (no task ran, no check, no ledger verified or compaction)
// writes no ledger at all. It returns the first error closing the ledger;
// warnings go to OnWarning. Close is idempotent; it must not be called
// while Run or Compact runs.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stopCheck() // recorded as cancelled before the ledger closes
	// A session that did nothing that needed its preparation (no task ran,
	// no check, no ledger verified) writes no ledger: it had no run.
	s.start.closeUnopened()
	if s.prep != nil {
		<-s.prep.done // the ledger is being opened
	}
	var err error
	if s.rec != nil {
		// The run ends, also when no task ended it last: a compaction, a
		// check or a verification after the last task, or no task at all.
		var usage model.Usage
		if s.agent != nil {
			usage = s.agent.Usage()
		}
		s.rec.End(closedReason, usage)
		if cerr := s.rec.Close(); cerr != nil {
			s.warn(fmt.Sprintf("the ledger missed an event: %v", cerr))
			err = cerr
		}
	}
	if s.lw != nil && s.lw != s.opts.Ledger {
		if cerr := s.lw.Close(); cerr != nil {
			s.warn(fmt.Sprintf("the ledger could not be closed: %v", cerr))
			if err == nil {
				err = cerr
			}
		}
	}
	s.trackers.close()
	if s.sess != nil {
		if !s.Saved() {
			// Nothing to keep or resume: the model was never reached.
			s.sess.Remove()
		} else {
			s.sess.Close()
		}
	}
	s.mcp.close()
	s.predial.Close() // a connection no request took
	s.cancel()
	s.escalated.close()
	if s.w != nil {
		s.w.close()
	}
	return err
}

// catalogWarning warns of a model the catalog does not know (prof is a
// guess), or knows under other providers than the chosen one (where), with
// the tools (surface) and limits it gets: what truss run and truss tools
// both say.
func (s *Session) catalogWarning(def ProviderDef, where string, prof surface.Profile, surfaceName string) {
	o := &s.opts
	switch {
	case prof.Guess && o.Provider != "sim" && where != "":
		// The catalog knows the model, elsewhere: the guess's limits are
		// Claude's because the model is one, not because it is unknown.
		limits := def.limitsText(prof, o.ContextTokens)
		if l, ok := strings.CutSuffix(limits, claudeGuessText); ok {
			limits = l + " (Claude Sonnet 4.5's, the guess for a Claude model off its own providers)"
		}
		s.warn(fmt.Sprintf("warning: %q is, in Truss's model catalog (truss models), %s: on %s using the %s tools, %s; its cost is unknown",
			o.Model, where, o.Provider, surfaceName, limits))
	case prof.Guess && o.Provider != "sim":
		s.warn(fmt.Sprintf("warning: %q is not in Truss's model catalog (truss models): using the %s tools, %s; its cost is unknown%s",
			o.Model, surfaceName, def.limitsText(prof, o.ContextTokens), def.didYouMean(o.Model, cmpOr(o.Region, firstEnv(def.RegionEnv)))))
	case where != "":
		s.warn(fmt.Sprintf("warning: %q is, in Truss's model catalog (truss models), %s: on %s using the %s tools, %s",
			o.Model, where, o.Provider, surfaceName, def.limitsText(prof, o.ContextTokens)))
	}
}

// platformWarnings warns of a model id in capitals the API would not
// know, of a model id not in the cloud platform's form, and of a Bedrock
// profile of another geography than the region's.
func (s *Session) platformWarnings(def ProviderDef) {
	o := &s.opts
	if msg := def.caseWarning(o.Model); msg != "" {
		s.warn("warning: " + msg)
	}
	if msg := def.platformIDWarning(o.Model, cmpOr(o.Region, firstEnv(def.RegionEnv))); msg != "" &&
		(!s.prof.Guess || def.nearestModel(o.Model, cmpOr(o.Region, firstEnv(def.RegionEnv))) == "") {
		// A mistyped id's warning said the platform's id it meant.
		s.warn("warning: " + msg)
	}
	if msg := def.regionMismatch(o.Model, cmpOr(o.Region, firstEnv(def.RegionEnv))); msg != "" {
		s.warn("warning: " + msg)
	}
}

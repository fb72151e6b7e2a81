package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/events"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/trust"
	"github.com/trussdev/truss/internal/ui"
	"github.com/trussdev/truss/internal/validate"
)

// runFlags are the flags of run, exec and demo.
type runFlags struct {
	providerFlags
	workspaceFlags
	maxTurns  int
	maxTokens int64
	maxCost   float64
	maxWall   time.Duration
	maxResult int
	resume    string
	noSession bool
	noLedger  bool
	json      bool
	// result, when set, receives what the run did (the demo reads it).
	result *runResult
	// noResumeHint leaves out the "resume with" line (the demo removes
	// its workspace).
	noResumeHint bool
	validateFlags
	spawnFlags
	mcpFlags
	// --reasoning-effort, --thinking, --context: override the model
	// profile's settings (surface.Profile.Settings).
	effort   string
	thinking optInt
	context  optInt
}

// validateFlags configure the task environment and the verification
// boundary.
type validateFlags struct {
	testCmd    string
	setupCmds  multi
	noValidate bool
	require    bool
}

func (r *runFlags) register(fs interface {
	IntVar(*int, string, int, string)
	Int64Var(*int64, string, int64, string)
	Float64Var(*float64, string, float64, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
	Var(flag.Value, string, string)
}) {
	fs.StringVar(&r.effort, "reasoning-effort", "", "OpenAI reasoning effort: none, minimal, low, medium, high or xhigh (default: the model profile's, medium for reasoning models)")
	fs.Var(&r.thinking, "thinking", "Anthropic extended thinking budget in tokens, at least 1024; 0 turns it off (default: the model profile's, off)")
	fs.Var(&r.context, "context", "the context window in tokens the server gives each request (Ollama's num_ctx; default: the model profile's, else what the server reports for the model, at most 65536)")
	fs.IntVar(&r.maxTurns, "max-turns", 50, "stop after this many model turns")
	fs.Int64Var(&r.maxTokens, "max-tokens", 0, "stop once this many tokens are used (0 = no limit)")
	fs.Float64Var(&r.maxCost, "max-cost", 0, "stop once this many USD are spent (0 = no limit)")
	fs.DurationVar(&r.maxWall, "max-wall", 0, "stop after this much wall time (0 = no limit)")
	fs.IntVar(&r.maxResult, "max-result-chars", defaultMaxResultChars, "cut tool results the model sees to this many characters (head and tail)")
	fs.StringVar(&r.resume, "resume", "", "continue the session with this id (see truss sessions)")
	fs.BoolVar(&r.noSession, "no-session", false, "do not save the session (and so write no ledger)")
	fs.BoolVar(&r.noLedger, "no-ledger", false, "do not write the signed ledger")
	r.validateFlags.registerChecks(fs)
	fs.BoolVar(&r.require, "require-validation", false, "exit non-zero unless the checks Truss runs at the end pass")
	r.spawnFlags.register(fs)
	r.mcpFlags.register(fs)
}

// signalContext is cancelled by the first SIGINT or SIGTERM; a second one
// exits at once.
func signalContext(stderr io.Writer) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		fmt.Fprintln(stderr, "\ntruss: interrupted; finishing the current call (press Ctrl-C again to quit at once)")
		cancel()
		select {
		case <-ch:
			os.Exit(130)
		case <-time.After(time.Hour):
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

func cmdRun(args []string, stdout, stderr io.Writer, headless bool) error {
	name := "run"
	if headless {
		name = "exec"
	}
	fset := newFlagSet(name, stderr)
	var f runFlags
	f.providerFlags.register(fset)
	f.workspaceFlags.register(fset)
	f.register(fset)
	if headless {
		fset.BoolVar(&f.json, "json", false, "print one JSON event per line on stdout (logs on stderr)")
	}
	if err := parse(fset, args); err != nil {
		return err
	}
	task := strings.TrimSpace(strings.Join(fset.Args(), " "))
	if task == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		task = strings.TrimSpace(string(b))
	}
	if task == "" {
		return usagef("usage: truss %s [flags] \"task\" (the task is missing)", name)
	}
	ctx, cancel := signalContext(stderr)
	defer cancel()
	ctx, out := watchOutput(ctx, stdout, stderr)
	err := runTask(ctx, &f, task, out.stdout, out.stderr, headless)
	if out.closed(ctx) {
		fmt.Fprintln(out.stderr, "truss: the output was closed; the run was stopped and saved as a cancelled one")
		return exitError{exitOutputClosed}
	}
	return err
}

// runTask wires a session and runs one task. Human output goes to out
// (stdout for run, stderr for exec); exec prints the final message, or the
// JSON events, on stdout.
func runTask(ctx context.Context, f *runFlags, task string, stdout, stderr io.Writer, headless bool) error {
	var store session.Store
	var sess *session.Session
	created := false // the session is this run's own, not a resumed one
	var history []model.Item
	if !f.noSession || f.resume != "" {
		dir, err := session.DefaultDir()
		if err != nil {
			return err
		}
		store = session.Store{Dir: dir}
	}
	if f.resume != "" {
		s, items, err := store.Open(f.resume)
		if err != nil {
			return err
		}
		sess, history = s, items
		if f.provider == "" {
			f.provider = s.Meta.Provider
		}
		if f.model == "" {
			f.model = s.Meta.Model
		}
		if f.root == "." && s.Meta.Workspace != "" {
			f.root = s.Meta.Workspace
		}
		if f.provider == "sim" && f.script == "" {
			// The simulated model plays on from where the session stopped.
			f.script = s.Meta.Script
			if s.Meta.SimDialect != "" {
				f.simDialect = s.Meta.SimDialect
			}
		}
	}
	if err := f.resolve(); err != nil {
		return err
	}
	set, prof, err := f.pickSurface()
	if err != nil {
		return err
	}
	if prof.Guess && f.provider != "sim" {
		fmt.Fprintf(stderr, "truss: no profile for model %q; using the %s surface and default limits\n", f.model, set.Surface)
	}
	tl, err := f.workspaceFlags.open(set)
	if err != nil {
		return err
	}
	defer tl.Close()
	warnTrust(stderr, tl.cfg)
	// MCP servers start now, while the rest is set up.
	ms, err := f.mcpFlags.start(ctx, tl, set, f.dialect(), stderr)
	if err != nil {
		return err
	}
	defer ms.Close()
	runner := f.validateFlags.runner(tl)
	if runner != nil {
		if err := set.Add(generic.Validate{}); err != nil {
			return err
		}
		tl.mux.Handle(tool.OpValidate, runner)
		tl.runner = runner
	}
	contact := &provider.Contact{}
	retry := provider.RetryPolicy{Contact: contact, OnRetry: func(attempt int, wait time.Duration, err error) {
		fmt.Fprintf(stderr, "truss: %s; retrying in %s (attempt %d)\n", termsafe.String(oneLine(err.Error())), wait.Round(time.Millisecond), attempt+1)
	}}
	if sess == nil && !f.noSession {
		abs, _ := filepath.Abs(tl.ws.Dir())
		meta := session.Meta{Workspace: abs, Provider: f.provider, Model: f.model, Surface: set.Surface, Task: task}
		if f.provider == "sim" {
			meta.Script, meta.SimDialect = f.scriptPath(), f.simDialect
		}
		sess, err = store.Create(meta)
		if err != nil {
			return err
		}
		created = true
	}
	sessionID := ""
	if sess != nil {
		defer sess.Close()
		sessionID = sess.Meta.ID
	}
	if f.settings, err = f.modelSettings(prof, sessionID); err != nil {
		return err
	}
	prov, err := f.newProvider(ctx, retry)
	if err != nil {
		return err
	}

	ms.wait(ctx, f.mcpFlags.waitFor(tl.cfg))
	hooks, err := f.spawnFlags.addSpawn(spawnSetup{prov: prov, set: set, tl: tl, model: f.model, provName: f.provider,
		dialect: f.dialect(), prof: prof, session: sessionID, maxResult: f.maxResult})
	if err != nil {
		return err
	}
	exec := tool.Executor(&tl.mux)
	var rec *ledger.Recorder
	var lw *ledger.Writer
	if sess != nil && !f.noLedger {
		signer, _, err := installationKey()
		if err != nil {
			return err
		}
		if lw, err = ledger.Create(sess.LedgerDir(time.Now()), sess.Meta.ID, signer); err != nil {
			return err
		}
		hooks.setLedger(lw, signer)
		abs, _ := filepath.Abs(tl.ws.Dir())
		rec, err = ledger.NewRecorder(lw, ledger.Start{Truss: version, Provider: f.provider, Model: f.model, Surface: set.Surface,
			Tools: toolDecls(set), Sandbox: tl.enforced(), Workspace: abs, Repo: repoState(abs),
			Config: runConfig(f, tl, ms)})
		if err != nil {
			return err
		}
	}
	var obs agent.Observers
	if rec != nil {
		obs = append(obs, rec)
	}
	// The shell (through the sandbox helper) starts while the model's first
	// answer streams, not while the first request is being built and sent.
	var prewarm sync.Once
	obs = append(obs, agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type == agent.EventDelta || ev.Type == agent.EventResponse {
			prewarm.Do(tl.shell.Prewarm)
		}
	}))
	// A request that comes near the context the server was given is
	// reported, as retries are.
	window := f.contextLimit(prof)
	obs = append(obs, agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type != agent.EventResponse {
			return
		}
		u := ev.Response.Usage
		if prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens; provider.NearContext(prompt, window) {
			fmt.Fprintf(stderr, "truss: warning: the request of turn %d took %d of the %d tokens of context the server was given; later turns may not fit (see --context)\n", ev.Turn, prompt, window)
		}
	}))
	human := stdout
	if headless {
		human = stderr
	}
	var enc *events.Encoder
	if f.json {
		enc = events.New(stdout)
		enc.Session, enc.Sandbox, enc.Hold = sessionID, tl.enforced(), runner != nil
		if lw != nil {
			enc.Ledger = lw.Dir()
		}
		enc.Start(sessionID)
		obs = append(obs, enc)
	} else {
		fmt.Fprintf(human, "truss %s · %s · %s · surface %s · session %s\n", version, f.provider, f.model, set.Surface, orNone(sessionID))
		fmt.Fprintf(human, "sandbox: %s\n", tl.enforced())
		hooks.printer = &ui.Printer{W: human}
		// A first request that could not connect is said once, at the
		// end, not also as a failed turn of the transcript.
		printer := hooks.printer
		obs = append(obs, agent.ObserverFunc(func(ev agent.Event) {
			if unreached(ev, contact) {
				return
			}
			printer.Observe(ev)
		}))
	}
	var persistErr error
	if sess != nil {
		obs = append(obs, agent.ObserverFunc(func(ev agent.Event) {
			switch ev.Type {
			case agent.EventUser, agent.EventTurnCompleted:
				if err := sess.Append(ev.Items...); err != nil && persistErr == nil {
					persistErr = err
				}
			case agent.EventRunCompleted:
				o := ev.Outcome
				sess.Meta.Status, sess.Meta.Turns = string(o.Status), sess.Meta.Turns+o.Turns
				sess.Meta.Usage.Add(o.Usage)
				if err := sess.SaveMeta(); err != nil && persistErr == nil {
					persistErr = err
				}
			}
		}))
	}
	a := agent.New(agent.Config{
		Provider: prov, Tools: set, Exec: exec, Model: f.model,
		System:         agent.SystemPrompt(tl.ws.Dir(), agent.DefaultSystem) + ms.notes(),
		Budget:         agent.Budget{MaxTurns: f.maxTurns, MaxTokens: f.maxTokens, MaxCost: f.maxCost, MaxWall: f.maxWall},
		Prices:         prof.Prices,
		MaxTokens:      prof.MaxOutput,
		MaxResultChars: f.maxResult,
		Observer:       obs,
	}, history)
	out := a.Run(ctx, task)
	// never: the first request could not connect; nothing happened.
	never := out.Status == agent.StatusFailed && !contact.Answered() && provider.NoConnection(out.Err)
	var verdict *verdict
	if !never {
		verdict = boundary(ctx, runner, rec, human, f.json)
	}
	if enc != nil {
		if verdict != nil {
			enc.Release(verdict.Text(verdict.log, 20), verdict.OK, verdict.Summary)
		} else {
			enc.Release("", false, nil)
		}
	}
	if lw != nil {
		if err := rec.Close(); err != nil {
			fmt.Fprintf(stderr, "truss: the ledger missed an event: %v\n", err)
		}
		if err := lw.Close(); err != nil {
			fmt.Fprintf(stderr, "truss: the ledger could not be closed: %v\n", err)
		}
		if f.result != nil {
			f.result.ledgerDir = lw.Dir()
		}
		if !f.json && !never {
			fmt.Fprintf(human, "  ledger: %s (%d entries; truss ledger verify %s)\n", lw.Dir(), lw.Size(), sessionID)
		}
	}
	if persistErr != nil {
		fmt.Fprintf(stderr, "truss: the session could not be saved: %v\n", persistErr)
	}
	if f.result != nil {
		f.result.status, f.result.verdict = out.Status, verdict
	}
	if never {
		// Nothing to keep or resume: the model was never reached.
		if created {
			sess.Remove()
		}
		return fmt.Errorf("%s", out.Err.Error())
	}
	if enc != nil && enc.Err != nil {
		return fmt.Errorf("writing events: %w", enc.Err)
	}
	if headless && !f.json && out.Text != "" {
		fmt.Fprintln(stdout, out.Text)
	}
	if sessionID != "" && !f.json && !f.noResumeHint {
		fmt.Fprintf(human, "  resume with: truss run --resume %s \"…\"\n", sessionID)
	}
	if f.require && (verdict == nil || !verdict.OK) {
		if verdict == nil {
			fmt.Fprintln(stderr, "truss: --require-validation: no test command is known (give --test-cmd)")
		}
		return exitError{1}
	}
	switch out.Status {
	case agent.StatusCompleted:
		return nil
	case agent.StatusFailed:
		if !f.json {
			var pe *provider.Error
			if errors.As(out.Err, &pe) {
				return fmt.Errorf("%s", pe.Error())
			}
			return out.Err
		}
		return exitError{1}
	case agent.StatusCanceled:
		return exitError{130}
	}
	return exitError{1}
}

// runResult is what a run did, for a caller that goes on (the demo).
type runResult struct {
	ledgerDir string
	status    agent.Status
	verdict   *verdict // the verification boundary's; nil when it did not run
}

// unreached reports whether ev is the failure of a first request that could
// not connect (the turn's failure, or the run's end it caused).
func unreached(ev agent.Event, c *provider.Contact) bool {
	var err error
	switch ev.Type {
	case agent.EventTurnFailed:
		err = ev.Err
	case agent.EventRunCompleted:
		if ev.Outcome != nil && ev.Outcome.Status == agent.StatusFailed {
			err = ev.Outcome.Err
		}
	}
	return err != nil && !c.Answered() && provider.NoConnection(err)
}

// registerChecks registers the flags of the task's checks.
func (v *validateFlags) registerChecks(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
	Var(flag.Value, string, string)
}) {
	fs.StringVar(&v.testCmd, "test-cmd", "", "the project's test command (default: detected from go.mod, package.json, Cargo.toml, pytest settings or a Makefile)")
	fs.Var(&v.setupCmds, "setup-cmd", "a command to run before the tests when validating (repeatable)")
	fs.BoolVar(&v.noValidate, "no-validate", false, "offer no validate tool and run no checks at the end")
}

// runner returns the validation runner of the workspace: the test command
// from --test-cmd or detected from the repository; nil when there is none
// or validation is off.
func (v *validateFlags) runner(tl *tools) *validate.Runner {
	if v.noValidate {
		return nil
	}
	env, ok := validate.Detect(tl.ws.Dir())
	c := tl.cfg.Validate
	switch {
	case v.testCmd != "":
		env, ok = validate.Env{Test: v.testCmd, Source: "--test-cmd"}, true
	case c.Test != "":
		env, ok = validate.Env{Test: c.Test, Source: config.Path}, true
	}
	if !ok {
		return nil
	}
	env.Setup = append(append(env.Setup, c.Setup...), v.setupCmds...)
	return &validate.Runner{Env: env, NewShell: tl.validationShell, Timeout: c.TimeoutValue()}
}

// boundary is the verification boundary: Truss runs the checks once more
// itself, in the sandbox, prints the verdict and records it in the ledger.
// It returns nil when there are no checks to run.
func boundary(ctx context.Context, r *validate.Runner, rec *ledger.Recorder, w io.Writer, quiet bool) *verdict {
	if r == nil || ctx.Err() != nil {
		return nil
	}
	s, res := r.Run(ctx)
	log := res.Stdout + res.Stderr
	if rec != nil {
		rec.Validation(map[string]any{"boundary": true, "env": r.Env, "summary": s}, []byte(log))
	}
	if !quiet {
		fmt.Fprintf(w, "\n── verification (run by truss) ──\n%s\n", termsafe.String(s.Text(log, 20)))
	}
	return &verdict{Summary: s, log: log}
}

// verdict is the verification boundary's outcome with its log.
type verdict struct {
	validate.Summary
	log string
}

func orNone(s string) string {
	if s == "" {
		return "(not saved)"
	}
	return s
}

func cmdSessions(args []string, stdout, stderr io.Writer) error {
	fset := newFlagSet("sessions", stderr)
	if err := parse(fset, args); err != nil {
		return err
	}
	dir, err := session.DefaultDir()
	if err != nil {
		return err
	}
	ms, err := (session.Store{Dir: dir}).List()
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		fmt.Fprintf(stdout, "no sessions in %s\n", dir)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tSTATUS\tTURNS\tPROVIDER/MODEL\tWORKSPACE\tTASK")
	for _, m := range ms {
		task := oneLine(m.Task)
		if len(task) > 48 {
			task = task[:48] + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s/%s\t%s\t%s\n", m.ID, m.Updated.Local().Format("2006-01-02 15:04"), m.Status, m.Turns, m.Provider, m.Model, termsafe.String(m.Workspace), termsafe.String(task))
	}
	return tw.Flush()
}

// runConfig is the configuration session.start records.
func runConfig(f *runFlags, tl *tools, ms *mcpSession) map[string]string {
	c := f.settings.Fields()
	c["max_turns"], c["timeout"] = fmt.Sprint(f.maxTurns), f.timeout.String()
	if s := ms.summary(); s != "" {
		c["mcp"] = s
	}
	if st := tl.cfg.Trust.State; st != "" && st != trust.None {
		c["project_config"] = string(st)
	}
	return c
}

// optInt is an integer flag that knows whether it was given.
type optInt struct {
	set bool
	n   int
}

func (o *optInt) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.Itoa(o.n)
}

func (o *optInt) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("want a number of tokens, not %q", v)
	}
	o.set, o.n = true, n
	return nil
}

// value is the flag's value, or def when it was not given.
func (o optInt) value(def int) int {
	if o.set {
		return o.n
	}
	return def
}

// modelSettings checks --reasoning-effort, --thinking and --context and
// resolves them against the model's profile.
func (f *runFlags) modelSettings(prof surface.Profile, sessionID string) (provider.Settings, error) {
	switch f.effort {
	case "", "none", "minimal", "low", "medium", "high", "xhigh":
	default:
		return provider.Settings{}, usagef("--reasoning-effort must be none, minimal, low, medium, high or xhigh, not %q", f.effort)
	}
	if n := f.thinking.value(0); n != 0 && n < 1024 {
		return provider.Settings{}, usagef("--thinking needs a budget of at least 1024 tokens (or 0 for none), not %d", n)
	}
	return prof.Settings(f.effort, f.thinking.value(-1), f.context.value(0), sessionID), nil
}

package trusscli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/trussdev/truss/internal/cli"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/events"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/ui"
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
	validateFlags
	spawnFlags
	mcpFlags
	// --reasoning-effort, --thinking, --context: override the model
	// profile's settings (surface.Profile.Settings).
	effort   string
	thinking optInt
	context  optInt
	// --approval: the approval policy ("" for the command's default:
	// never for run and exec, on-request in the interactive session).
	approval string
}

// validateFlags configure the task environment and the verification
// boundary.
type validateFlags struct {
	testCmd    string
	setupCmds  cli.Multi
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
	fs.StringVar(&r.effort, "reasoning-effort", "", "reasoning effort of OpenAI's and Gemini's models: none, minimal, low, medium, high or xhigh (default: the model profile's, medium for reasoning models)")
	fs.Var(&r.thinking, "thinking", "thinking budget in tokens of Anthropic's models (at least 1024) and Gemini's; 0 turns it off (default: the model profile's, off)")
	fs.Var(&r.context, "context", "the context window in tokens the server gives each request (Ollama's num_ctx; default: the model profile's, else what the server reports for the model, at most 65536)")
	fs.IntVar(&r.maxTurns, "max-turns", 50, "stop after this many model turns")
	fs.Int64Var(&r.maxTokens, "max-tokens", 0, "stop once this many tokens are used (0 = no limit)")
	fs.Float64Var(&r.maxCost, "max-cost", 0, "stop once this many USD are spent (0 = no limit)")
	fs.DurationVar(&r.maxWall, "max-wall", 0, "stop after this much wall time (0 = no limit)")
	fs.IntVar(&r.maxResult, "max-result-chars", defaultMaxResultChars, "cut tool results the model sees to this many characters (head and tail)")
	fs.StringVar(&r.resume, "resume", "", "continue the session with this id (see truss sessions)")
	fs.BoolVar(&r.noSession, "no-session", false, "do not save the session (and so write no ledger)")
	fs.BoolVar(&r.noLedger, "no-ledger", false, "do not write the signed ledger")
	fs.StringVar(&r.approval, "approval", "", "when a person is asked before a command runs: never, on-request (the model may ask to run a command outside the sandbox) or untrusted (every command not known to be read-only asks too); default never, on-request in the interactive session. Without a terminal session nobody can answer: what needs approval is refused")
	r.validateFlags.registerChecks(fs)
	fs.BoolVar(&r.require, "require-validation", false, "exit non-zero unless the checks Truss runs at the end pass")
	r.spawnFlags.register(fs)
	r.mcpFlags.register(fs)
}

// checkLimits refuses a limit no run can keep: a negative budget or cut,
// a cost that is not a finite number, a turn limit below 1 (the agent
// would read 0 as its default of 50).
func (r *runFlags) checkLimits() error {
	for _, l := range []struct {
		flag string
		v    any
		bad  bool
		want string
	}{
		{"--max-turns", r.maxTurns, r.maxTurns < 1, "at least 1"},
		{"--max-tokens", r.maxTokens, r.maxTokens < 0, "0 (no limit) or more"},
		{"--max-cost", r.maxCost, !(r.maxCost >= 0) || math.IsInf(r.maxCost, 1), "0 (no limit) or more USD"},
		{"--max-wall", r.maxWall, r.maxWall < 0, "0 (no limit) or a duration such as 10m"},
		{"--max-result-chars", r.maxResult, r.maxResult < 1, "at least 1"},
		{"--agent-max-turns", r.agentTurn, r.agentTurn < 1, "at least 1"},
		{"--max-agents", r.maxAgents, r.maxAgents < 1, "at least 1"},
	} {
		if l.bad {
			return cli.Usagef("%s must be %s, not %v", l.flag, l.want, l.v)
		}
	}
	return nil
}

// options turns the flags into the session's options.
func (r *runFlags) options() (harness.Options, error) {
	if err := r.checkLimits(); err != nil {
		return harness.Options{}, err
	}
	o := harness.Options{Version: version, Resume: r.resume, NoSession: r.noSession, NoLedger: r.noLedger,
		Budget:         agent.Budget{MaxTurns: r.maxTurns, MaxTokens: r.maxTokens, MaxCost: r.maxCost, MaxWall: r.maxWall},
		MaxResultChars: r.maxResult, ReasoningEffort: r.effort, ContextTokens: r.context.value(0)}
	if r.thinking.set {
		n := r.thinking.n
		o.ThinkingTokens = &n
	}
	if err := r.providerFlags.options(&o); err != nil {
		return o, err
	}
	if err := r.workspaceFlags.options(&o); err != nil {
		return o, err
	}
	o.Validation = r.validateFlags.options()
	r.spawnFlags.options(&o.Spawn)
	if r.approval != "" {
		p, err := approval.ParsePolicy(r.approval)
		if err != nil {
			return o, cli.Usagef("--approval: %v", err)
		}
		o.Approval = p
	}
	// Nobody answers questions unless the interactive session does.
	o.Approver = approval.Headless{}
	return o, r.mcpFlags.options(&o.MCP)
}

// options are the validation options of the flags.
func (v *validateFlags) options() harness.ValidationOptions {
	return harness.ValidationOptions{Off: v.noValidate, TestCmd: v.testCmd, SetupCmds: v.setupCmds}
}

func cmdRun(args []string, stdout, stderr io.Writer, headless bool) error {
	name := "run"
	if headless {
		name = "exec"
	}
	fset := cli.NewFlagSet(name, stderr)
	if headless {
		cli.Describe(fset, `truss exec [--json] [flags] "task"`, `Runs the task headless, as run does, and never asks a person: an escalation the
approval policy would ask about is refused. --json prints one JSON event per line
(the codex exec event stream, Truss's own facts under "truss").`)
	} else {
		cli.Describe(fset, `truss run [flags] "task"`, `Runs the task on the repository in the current directory (or --root): the model
reads, edits and runs code through Truss's tools, in the sandbox; Truss then runs the
project's checks itself (the verification boundary), and every turn, call, result and
file change goes into a signed ledger (truss ledger verify). Without a task, on a
terminal: the interactive session.`)
	}
	var f runFlags
	f.providerFlags.register(fset)
	f.workspaceFlags.register(fset)
	f.register(fset)
	if headless {
		fset.BoolVar(&f.json, "json", false, "print one JSON event per line on stdout (logs on stderr)")
	}
	if err := cli.ParseArgs(fset, args); err != nil {
		return err
	}
	// The words of the task are joined with spaces: truss run fix the test
	// is truss run "fix the test". Flags may stand among them; "--" ends
	// the flags (truss run -- --help is the task "--help").
	task := strings.TrimSpace(strings.Join(fset.Args(), " "))
	if task == "" && pipedStdin() {
		task = "-" // echo "fix it" | truss exec --json, as codex exec reads it
	}
	if task == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		task = strings.TrimSpace(string(b))
	}
	if task == "" && !headless && onTerminal() {
		// truss run with no task on a terminal: the interactive session.
		return openTerminalSession(&f, "", stdout, stderr)
	}
	if task == "" {
		return cli.Usagef("usage: truss %s [flags] \"task\" (the task is missing; \"-\", or a pipe into standard input, gives it there)", name)
	}
	octx, cancel := cli.SignalContext(stderr)
	defer cancel()
	ctx, out := watchOutput(octx, stdout, stderr)
	o, err := f.options()
	if err != nil {
		return err
	}
	res, err := runTask(octx, ctx, o, &f, task, out.stdout, out.stderr, runDisplay{headless: headless})
	if out.closed(ctx) && res != nil {
		fmt.Fprintln(out.stderr, closedOutput(res, err))
		return cli.ExitError{Code: exitOutputClosed}
	}
	return err
}

// closedOutput is what is said of a run whose output was closed, from its
// outcome res and the error runTask returned: whether, and as what, the
// session is saved.
func closedOutput(res *harness.Outcome, err error) string {
	const closed = "truss: the output was closed; "
	switch {
	case res.Unreached:
		why := res.Agent.Err
		if err != nil {
			why = err
		}
		return fmt.Sprintf("%sthe model was never reached (%s), and nothing was saved", closed, oneLine(fmt.Sprint(why)))
	case res.SessionID == "":
		return closed + "the run was stopped (the session is not saved: --no-session)"
	case res.Agent.Status == agent.StatusCanceled:
		return closed + "the run was stopped and saved as cancelled: session " + res.SessionID
	}
	return fmt.Sprintf("%sthe run had ended (%s) and is saved: session %s", closed, res.Agent.Status, res.SessionID)
}

// pipedStdin reports whether standard input is a pipe or a file, which
// a task given no other way is read from: not a terminal, nor a device
// such as /dev/null.
func pipedStdin() bool {
	st, err := os.Stdin.Stat()
	return err == nil && (st.Mode()&os.ModeNamedPipe != 0 || st.Mode().IsRegular())
}

// runDisplay is how a run shows itself.
type runDisplay struct {
	headless bool
	// noResumeHint leaves out the "resume with" line (the demo removes its
	// workspace).
	noResumeHint bool
}

// runTask opens a session with octx and runs one task with ctx. Human
// output goes to out (stdout for run, stderr for exec); exec prints the
// final message, or the JSON events, on stdout. It returns the outcome
// (nil when the session could not be opened). ctx may end sooner than octx
// (when the output is closed: see watchOutput): the run stops then, but the
// session is still opened and its run recorded, so that it is saved as
// cancelled rather than lost.
func runTask(octx, ctx context.Context, o harness.Options, f *runFlags, task string, stdout, stderr io.Writer, d runDisplay) (*harness.Outcome, error) {
	human := stdout
	if d.headless {
		human = stderr
	}
	o.OnWarning = warner(stderr)
	// The task's echo waits for the session's records to be ready while
	// the first request is already sent: a retry said before the echo is
	// held until it, so that the transcript reads in order.
	retries := &retryLines{w: stderr, held: !f.json}
	defer retries.release()
	o.OnRetry = func(attempt int, wait time.Duration, err error) {
		retries.say(fmt.Sprintf("truss: %s; retrying in %s (attempt %d)\n", termsafe.String(oneLine(err.Error())), wait.Round(time.Millisecond), attempt+1))
	}
	var s *harness.Session
	var enc *events.Encoder
	var printer *ui.Printer
	if f.json {
		enc = events.New(stdout)
		o.Observers = append(o.Observers, enc)
	} else {
		printer = &ui.Printer{W: human}
		// A run that failed before the model's first response (a first
		// request that could not connect, found a server that is not the
		// API, or was refused) is said once, at the end, not also as a
		// failed turn of the transcript and its summary.
		o.Observers = append(o.Observers, agent.ObserverFunc(func(ev agent.Event) {
			if unreached(ev, s) {
				return
			}
			printer.Observe(ev)
			if ev.Type == agent.EventUser {
				retries.release()
			}
		}))
		o.ObserveChild = func(name string) agent.Observer { return printer.Child(name) }
	}
	s, err := harness.Open(octx, o)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	info := s.Info()
	if enc != nil {
		enc.Session, enc.Sandbox, enc.Hold, enc.Ledger = info.SessionID, info.Sandbox, info.Validation && !o.Validation.OnDemand, info.LedgerDir
		if info.SessionID != "" {
			enc.Saved = s.Saved
		}
		enc.Start(info.SessionID)
	} else {
		where := info.Provider
		if info.Provider == "sim" {
			// The wire the simulated model speaks: the one asked for, else
			// the one the session chose.
			where += " (" + cmp.Or(o.SimDialect, info.Dialect) + " dialect)"
		}
		if info.Place != "" {
			where += " (" + info.Place + ")" // vertex (project p, us-east5), bedrock (eu-west-1)
		}
		fmt.Fprintf(human, "truss %s · %s · %s · surface %s · session %s\n", version, where, info.Model, info.Surface, orNone(info.SessionID))
		fmt.Fprintf(human, "sandbox: %s\n", info.Sandbox)
		if info.Environment != "" {
			fmt.Fprintf(human, "environment: %s\n", info.Environment)
		}
	}
	if !info.Validation && !o.Validation.Off {
		// Said before the work, not found missing after it; with --json,
		// on stderr, beside the warnings.
		w := human
		if f.json {
			w = stderr
		}
		fmt.Fprintln(w, harness.NoChecksNote)
	}
	out, err := s.Run(ctx, task)
	if err != nil {
		return nil, err
	}
	if v := out.Verdict; v != nil && !f.json {
		fmt.Fprintf(human, "\n── verification (run by truss) ──\n%s\n", termsafe.String(v.Text(v.Log, 20)))
	}
	if enc != nil {
		if v := out.Verdict; v != nil {
			enc.Release(v.Text(v.Log, 20), v.OK, v.Summary)
		} else {
			enc.Release("", false, nil)
		}
	}
	// Whether Close keeps the session: one Open made for a run that failed
	// before the model's first response is removed.
	kept := info.SessionID == "" || s.Saved()
	s.Close() // its warnings say what could not be written
	if out.LedgerDir != "" && !f.json && !out.Unreached && kept {
		fmt.Fprintf(human, "  ledger: %s (%s; truss ledger verify %s)\n", out.LedgerDir, plural.Count(out.LedgerSize, "entry"), info.SessionID)
	}
	a := out.Agent
	if out.Unreached || out.NoResponse && !kept {
		// Nothing to keep or resume: the model was never reached, or
		// refused the first request.
		return &out, fmt.Errorf("%s", a.Err.Error())
	}
	if enc != nil && enc.Err != nil {
		return &out, fmt.Errorf("writing events: %w", enc.Err)
	}
	if d.headless && !f.json && a.Text != "" {
		// The model's words: its escape sequences must not drive the
		// user's terminal (--json carries them as they are).
		fmt.Fprintln(stdout, termsafe.String(a.Text))
	}
	if info.SessionID != "" && !f.json && !d.noResumeHint {
		fmt.Fprintf(human, "  resume with: truss run --resume %s \"…\"\n", info.SessionID)
	}
	if f.require && (out.Verdict == nil || !out.Verdict.OK) {
		if out.Verdict == nil {
			fmt.Fprintln(stderr, "truss: --require-validation: no test command is known (give --test-cmd)")
		}
		return &out, cli.ExitError{Code: 1}
	}
	switch a.Status {
	case agent.StatusCompleted:
		return &out, nil
	case agent.StatusFailed:
		if !f.json {
			var pe *provider.Error
			if errors.As(a.Err, &pe) {
				return &out, fmt.Errorf("%s", pe.Error())
			}
			return &out, a.Err
		}
		return &out, cli.ExitError{Code: 1}
	case agent.StatusCanceled:
		return &out, cli.ExitError{Code: 130}
	}
	return &out, cli.ExitError{Code: 1}
}

// unreached reports whether ev is the failure of a run before the model's
// first response in the session: a first request that could not connect,
// found a server that is not the API, or was refused (the turn's failure,
// or the run's end it caused).
func unreached(ev agent.Event, s *harness.Session) bool {
	var err error
	switch ev.Type {
	case agent.EventTurnFailed:
		err = ev.Err
	case agent.EventRunCompleted:
		if ev.Outcome != nil && ev.Outcome.Status == agent.StatusFailed {
			err = ev.Outcome.Err
		}
	}
	return err != nil && s != nil && (!s.Reached() && provider.Unreached(err) || !s.Responded())
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

func orNone(s string) string {
	if s == "" {
		return "(not saved)"
	}
	return s
}

func cmdSessions(args []string, stdout, stderr io.Writer) error {
	fset := cli.NewFlagSet("sessions", stderr)
	cli.Describe(fset, "truss sessions", `Lists the saved sessions, the most recent first: id, when, status, turns,
provider and model, directory and first task. Continue one with truss --resume ID
(the interactive session) or truss run --resume ID "task"; verify what it did with
truss ledger verify ID.`)
	if err := cli.ParseNone(fset, args); err != nil {
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
		fmt.Fprintf(stdout, "no sessions in %s\n", termsafe.Name(dir))
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tSTATUS\tTURNS\tPROVIDER/MODEL\tWORKSPACE\tTASK")
	for _, m := range ms {
		// Its first line, as /resume shows it (an attached file follows
		// the task's own words), cut at a rune, not a byte.
		task, rest, _ := strings.Cut(strings.TrimSpace(m.Task), "\n")
		if r := []rune(task); len(r) > 48 {
			task = string(r[:48]) + "…"
		} else if strings.TrimSpace(rest) != "" {
			task += " …"
		}
		status := m.Status
		if status == "" && m.Served() {
			status = "served" // an MCP server's record: calls served, no conversation
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s/%s\t%s\t%s\n", m.ID, m.Updated.Local().Format("2006-01-02 15:04"), status, m.Turns, m.Provider, m.Model, termsafe.Name(m.Workspace), termsafe.Line(task))
	}
	return tw.Flush()
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

// retryLines are the retry lines of a run: said at once, or, while held
// (until the task's echo), kept and said in order when released.
type retryLines struct {
	mu      sync.Mutex
	w       io.Writer
	held    bool
	pending []string
}

func (r *retryLines) say(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held {
		r.pending = append(r.pending, line)
		return
	}
	io.WriteString(r.w, line)
}

// release says the kept lines and every later one at once.
func (r *retryLines) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.pending {
		io.WriteString(r.w, l)
	}
	r.pending, r.held = nil, false
}

// Package agent runs the model loop: build the request, stream the turn,
// decode the tool calls through the surface, execute them, encode the
// results, and repeat until the model ends its turn or a budget stops it.
//
// The loop knows only interfaces: a provider.Provider, a surface.Set and a
// tool.Executor. It reports everything it does to an Observer, which is how
// whatever records a session (the transcript store, the ledger, the JSON
// event stream) learns of it. Observers see the full tool results; the model
// sees them cut to a budget (head and tail with a marker).
//
// Every call gets exactly one result: a call of an unknown tool, a call whose
// input cannot be decoded, a call cut off by max_tokens, a call cancelled
// by the user and a call whose binding or executor panicked each get an
// error result the model can act on. A panic is recovered, never kills the
// process; its stack goes to the observers (see PanicError).
package agent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

// Budget bounds a run. Zero fields are unlimited, except MaxTurns (0 = 50).
// MaxTokens and MaxCost are checked before each model turn against what the
// agent has used so far (its earlier runs' included): a run stops before
// the turn that would start at or past them, so it ends over them by at
// most its last turn's usage.
type Budget struct {
	MaxTurns int
	// MaxTokens counts every token the provider counted (model.Usage.Total):
	// uncached input, cache reads, cache writes and output, a cache read as
	// one token like any other.
	MaxTokens int64
	MaxCost   float64
	MaxWall   time.Duration
}

// Config configures an Agent.
type Config struct {
	Provider provider.Provider
	Tools    *surface.Set
	Exec     tool.Executor
	Model    string
	System   string
	Budget   Budget
	Prices   surface.Prices
	// MaxTokens is the output-token limit per turn sent to the model.
	MaxTokens int
	// MaxResultChars bounds the tool result text the model sees; 0 means 30,000.
	MaxResultChars int
	// Parallel bounds concurrent read-only calls; 0 means 4.
	Parallel int
	// RepeatLimit stops a run when one call and result recur this many
	// times within the last RepeatWindow calls; 0 means 5 in 10.
	RepeatLimit, RepeatWindow int
	Observer                  Observer
	// Compactor, when set, keeps the conversation within the model's
	// context window: before each request it is asked whether the request
	// needs a compaction first (see Compactor).
	Compactor Compactor
}

// Compactor replaces the older part of a conversation with a summary
// (*compact.Compactor is one; docs/compaction.md).
type Compactor interface {
	// Needed reports whether the next request would be too large: last is
	// the usage of the last turn (zero before the agent's first request,
	// also a resumed one's, and after a compaction), added the items
	// appended to the transcript since that turn's request (the whole
	// transcript when last is zero).
	Needed(last model.Usage, added []model.Item) bool
	// Compact returns the new transcript (items unchanged) and the record
	// of what was replaced, or compact.ErrNothingToCompact, or another
	// error that leaves the conversation as it was.
	Compact(ctx context.Context, items []model.Item, reason string) ([]model.Item, *compact.Record, error)
}

// ErrNoCompactor is returned by Compact for an agent without a Compactor.
var ErrNoCompactor = errors.New("this session cannot compact its conversation (no compactor is configured)")

// Status is how a run ended.
type Status string

// The statuses.
const (
	StatusCompleted Status = "completed" // the model ended its turn
	StatusMaxTurns  Status = "max_turns"
	StatusBudget    Status = "budget" // tokens, cost or wall time
	StatusLoop      Status = "loop"   // repeated identical calls
	StatusCanceled  Status = "canceled"
	StatusFailed    Status = "failed" // the provider failed
	StatusRefused   Status = "refused"
)

// Outcome is the end of a run.
type Outcome struct {
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	Text   string `json:"text,omitempty"` // the model's final message
	// Turns and Calls are this Run's model turns and tool calls; Usage is
	// the agent's whole usage so far (every Run's, sub-agents' included),
	// RunUsage this Run's part of it.
	Turns    int         `json:"turns"`
	Calls    int         `json:"calls"`
	Usage    model.Usage `json:"usage"`
	RunUsage model.Usage `json:"run_usage"`
	Err      error       `json:"-"`
}

// Agent is one conversation. It is not safe for concurrent Runs.
type Agent struct {
	cfg   Config
	items []model.Item
	usage model.Usage
	calls int
	// recent holds digests of the last calls with their results.
	recent []string
	// last is the usage of the latest turn and sent the transcript's
	// length when its request was sent: what Compactor.Needed estimates
	// from (zero for a new agent and after a compaction). They carry over
	// from one Run to the next.
	last model.Usage
	sent int
	// failed counts automatic compactions that failed in a row, and wait
	// the turns to let pass before the next attempt.
	failed, wait int
}

// New returns an agent with an optional earlier transcript (to resume).
func New(cfg Config, history []model.Item) *Agent {
	if cfg.Budget.MaxTurns == 0 {
		cfg.Budget.MaxTurns = 50
	}
	if cfg.MaxResultChars == 0 {
		cfg.MaxResultChars = 30000
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 4
	}
	if cfg.RepeatLimit == 0 {
		cfg.RepeatLimit, cfg.RepeatWindow = 5, 10
	}
	if cfg.Observer == nil {
		cfg.Observer = ObserverFunc(func(Event) {})
	}
	return &Agent{cfg: cfg, items: append([]model.Item(nil), history...)}
}

// Transcript returns the conversation so far.
func (a *Agent) Transcript() []model.Item { return a.items }

// Usage returns the usage summed over the agent's turns.
func (a *Agent) Usage() model.Usage { return a.usage }

// Run adds task as a user message and runs the loop until it ends.
func (a *Agent) Run(ctx context.Context, task string) *Outcome {
	start := time.Now()
	if a.cfg.Budget.MaxWall > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.cfg.Budget.MaxWall)
		defer cancel()
	}
	user := model.Item{Kind: model.KindUser, Text: task}
	a.items = append(a.items, user)
	a.failed, a.wait = 0, 0
	a.emit(Event{Type: EventUser, Items: []model.Item{user}})
	calls, usage := a.calls, a.usage
	out := a.loop(ctx, start)
	out.Usage, out.Calls, out.RunUsage = a.usage, a.calls-calls, a.usage.Sub(usage)
	a.emit(Event{Type: EventRunCompleted, Outcome: out})
	return out
}

func (a *Agent) emit(e Event) { a.cfg.Observer.Observe(e) }

func (a *Agent) loop(ctx context.Context, start time.Time) *Outcome {
	b := a.cfg.Budget
	for turn := 1; ; turn++ {
		if turn > b.MaxTurns {
			return &Outcome{Status: StatusMaxTurns, Turns: turn - 1, Reason: "stopped after the maximum of " + plural.Count(b.MaxTurns, "turn")}
		}
		if b.MaxTokens > 0 && a.usage.Total() >= b.MaxTokens {
			return &Outcome{Status: StatusBudget, Turns: turn - 1, Reason: fmt.Sprintf("stopped: %d tokens used, budget %d", a.usage.Total(), b.MaxTokens)}
		}
		if b.MaxCost > 0 && a.usage.CostUSD >= b.MaxCost {
			return &Outcome{Status: StatusBudget, Turns: turn - 1, Reason: fmt.Sprintf("stopped: $%.4f spent, budget $%.4f", a.usage.CostUSD, b.MaxCost)}
		}
		if err := ctx.Err(); err != nil {
			return a.stopped(ctx, turn-1, start, err)
		}
		if a.cfg.Compactor != nil && a.cfg.Compactor.Needed(a.last, a.items[a.sent:]) {
			if a.wait > 0 {
				a.wait--
			} else if _, err := a.compact(ctx, turn, compact.ReasonAuto); err != nil && ctx.Err() != nil {
				return a.stopped(ctx, turn-1, start, ctx.Err())
			}
		}
		a.emit(Event{Type: EventTurnStarted, Turn: turn})
		a.sent = len(a.items)
		req := &model.Request{Model: a.cfg.Model, System: a.cfg.System, Items: a.items, Tools: a.cfg.Tools.Specs(), MaxTokens: a.cfg.MaxTokens}
		resp, err := a.cfg.Provider.Turn(ctx, req, func(d model.Delta) { a.emit(Event{Type: EventDelta, Turn: turn, Delta: &d}) })
		if err != nil {
			if ctx.Err() != nil {
				return a.stopped(ctx, turn-1, start, ctx.Err())
			}
			a.emit(Event{Type: EventTurnFailed, Turn: turn, Err: err})
			return &Outcome{Status: StatusFailed, Turns: turn, Reason: err.Error(), Err: err}
		}
		resp.Usage.CostUSD, resp.Usage.CostUnknown = a.cfg.Prices.Cost(resp.Usage), !a.cfg.Prices.Known()
		a.usage.Add(resp.Usage)
		a.last = resp.Usage
		newItems := append([]model.Item(nil), resp.Items...)
		a.items = append(a.items, resp.Items...)
		a.emit(Event{Type: EventResponse, Turn: turn, Response: resp})

		calls := resp.Calls()
		if len(calls) == 0 {
			a.emit(Event{Type: EventTurnCompleted, Turn: turn, Items: newItems, Usage: resp.Usage})
			switch resp.StopReason {
			case model.StopPause:
				// The provider paused a long server-side turn: send the
				// conversation back as it is and the model goes on.
				continue
			case model.StopRefusal:
				return &Outcome{Status: StatusRefused, Turns: turn, Text: resp.Text(), Reason: "the model refused"}
			case model.StopMaxTokens:
				return &Outcome{Status: StatusCompleted, Turns: turn, Text: resp.Text(), Reason: "the model's output hit its max_tokens limit"}
			case model.StopContext:
				return &Outcome{Status: StatusBudget, Turns: turn, Text: resp.Text(), Reason: "stopped: the conversation filled the model's context window"}
			}
			return &Outcome{Status: StatusCompleted, Turns: turn, Text: resp.Text()}
		}
		results := a.runCalls(ctx, turn, calls, resp.StopReason == model.StopMaxTokens)
		for _, r := range results {
			it := model.Item{Kind: model.KindToolResult, Result: &r}
			a.items = append(a.items, it)
			newItems = append(newItems, it)
		}
		a.emit(Event{Type: EventTurnCompleted, Turn: turn, Items: newItems, Usage: resp.Usage})
		if err := ctx.Err(); err != nil {
			return a.stopped(ctx, turn, start, err)
		}
		for i, c := range calls {
			if reason := a.repeated(c, results[i]); reason != "" {
				return &Outcome{Status: StatusLoop, Turns: turn, Reason: reason}
			}
		}
	}
}

// Compact compacts the conversation now (the user's /compact: a manual
// compaction summarizes all but the pinned items). It reports
// EventCompacted, or EventCompactFailed for a failure other than
// compact.ErrNothingToCompact, and returns the record, or the error with
// the conversation unchanged. It must not be called while Run runs.
func (a *Agent) Compact(ctx context.Context) (*compact.Record, error) {
	if a.cfg.Compactor == nil {
		return nil, ErrNoCompactor
	}
	return a.compact(ctx, 0, compact.ReasonManual)
}

// compact runs one compaction before turn (0 outside a run). On success
// the summary turn's usage, priced, is added to the agent's and the
// transcript replaced. An automatic compaction that failed is not tried
// again for 1, 2, 4, … turns, as failures repeat.
func (a *Agent) compact(ctx context.Context, turn int, reason string) (*compact.Record, error) {
	items, rec, err := a.cfg.Compactor.Compact(ctx, a.items, reason)
	if err != nil {
		if errors.Is(err, compact.ErrNothingToCompact) || ctx.Err() != nil {
			return nil, err
		}
		if reason == compact.ReasonAuto {
			a.wait = 1 << min(a.failed, 5)
			a.failed++
		}
		a.emit(Event{Type: EventCompactFailed, Turn: turn, Compaction: &compact.Record{Reason: reason, TokensBefore: compact.Tokens(a.items)}, Err: err})
		return nil, err
	}
	a.failed, a.wait = 0, 0
	rec.Usage.CostUSD, rec.Usage.CostUnknown = a.cfg.Prices.Cost(rec.Usage), !a.cfg.Prices.Known()
	if rec.Response != nil {
		rec.Response.Usage.CostUSD, rec.Response.Usage.CostUnknown = rec.Usage.CostUSD, rec.Usage.CostUnknown
	}
	a.usage.Add(rec.Usage)
	a.items = items
	a.last, a.sent = model.Usage{}, 0
	a.emit(Event{Type: EventCompacted, Turn: turn, Compaction: rec, Items: slices.Clone(items), Usage: rec.Usage})
	return rec, nil
}

func (a *Agent) stopped(ctx context.Context, turns int, start time.Time, err error) *Outcome {
	if errors.Is(err, context.DeadlineExceeded) && a.cfg.Budget.MaxWall > 0 {
		return &Outcome{Status: StatusBudget, Turns: turns, Reason: fmt.Sprintf("stopped: wall-time budget of %s spent (%s)", a.cfg.Budget.MaxWall, time.Since(start).Round(time.Millisecond))}
	}
	return &Outcome{Status: StatusCanceled, Turns: turns, Reason: "canceled", Err: err}
}

// runCalls decodes and executes the calls of one turn and returns one
// result per call, in call order. When the executor says every call may
// run concurrently (tool.ConcurrentExecutor: reads, sub-agents, MCP tools
// annotated read-only) they run at once (bounded by Parallel), and are
// reported (EventCallCompleted) in call order once all have run;
// otherwise they run in order, each reported before the next runs, so
// that what a call's results carry (the contents of the files it
// changed) is let go before the next call reads its files. A sub-agent's
// usage is added to the agent's own.
func (a *Agent) runCalls(ctx context.Context, turn int, calls []model.ToolCall, cutOff bool) []model.ToolResult {
	jobs := make([]job, len(calls))
	parallel := len(calls) > 1
	for i, c := range calls {
		a.calls++
		jobs[i] = a.prepare(c, cutOff)
		a.emit(Event{Type: EventCallStarted, Turn: turn, Call: &calls[i], Ops: jobs[i].ops})
		for _, op := range jobs[i].ops {
			if !tool.IsConcurrent(a.cfg.Exec, op) {
				parallel = false
			}
		}
	}
	out := make([]model.ToolResult, len(calls))
	full := make([][]tool.Result, len(calls))
	panics := make([][]*PanicError, len(calls))
	for i, j := range jobs {
		if j.panic != nil {
			panics[i] = append(panics[i], j.panic)
		}
	}
	run := func(i int) {
		j := jobs[i]
		if j.result != nil {
			out[i] = *j.result
			return
		}
		rs := make([]tool.Result, len(j.ops))
		octx := tool.WithOutput(ctx, func(stream string, b []byte) {
			a.emit(Event{Type: EventCallOutput, Turn: turn, Call: &calls[i], Output: &CallOutput{Stream: stream, Text: string(b)}})
		})
		for k, op := range j.ops {
			var p *PanicError
			if op.Op == tool.OpExec { // a command's output is watched as it comes; the other tools' results are
				rs[k], p = a.execute(octx, op)
			} else {
				rs[k], p = a.execute(ctx, op)
			}
			rs[k].CallID = op.ID
			if p != nil {
				panics[i] = append(panics[i], p)
			}
		}
		full[i] = rs
		r, p := encode(j.binding, calls[i], rs)
		if p != nil {
			panics[i] = append(panics[i], p)
		}
		r.CallID, r.Name = calls[i].ID, calls[i].Name
		out[i] = r
	}
	// report reports call i, once it and every call before it ran; its
	// full results (the file contents its changes carry) are let go then.
	report := func(i int) {
		for _, r := range full[i] {
			if r.Agent != nil {
				a.usage.Add(r.Agent.Usage)
			}
		}
		fullText := out[i].Text
		out[i].Text = Truncate(out[i].Text, a.cfg.MaxResultChars)
		var err error
		if len(panics[i]) > 0 {
			// The stacks go to the observers (and so to the session's
			// record), never to the model.
			errs := make([]error, len(panics[i]))
			for k, p := range panics[i] {
				errs[k] = p
				fullText += fmt.Sprintf("\n\n[%v]\n%s", p, p.Stack)
			}
			err = errors.Join(errs...)
		}
		a.emit(Event{Type: EventCallCompleted, Turn: turn, Call: &calls[i], Ops: jobs[i].ops, Results: full[i], Result: &out[i], FullText: fullText, Err: err})
		full[i] = nil
	}
	if parallel {
		var wg sync.WaitGroup
		sem := make(chan struct{}, a.cfg.Parallel)
		for i := range jobs {
			wg.Add(1)
			sem <- struct{}{}
			go func() { defer wg.Done(); defer func() { <-sem }(); run(i) }()
		}
		wg.Wait()
		// Report in call order, whatever order the calls finished in.
		for i := range out {
			report(i)
		}
	} else {
		// Each call is reported before the next runs, so that a turn of
		// many edits holds one call's contents at a time, not all of them.
		for i := range jobs {
			run(i)
			report(i)
		}
	}
	return out
}

// job is one call of a turn, decoded.
type job struct {
	binding surface.Binding
	ops     []tool.Call
	result  *model.ToolResult // set when the call was answered without running
	panic   *PanicError       // set when decoding panicked
}

// prepare decodes a call, or answers it with an error result when it cannot
// run: cut off by max_tokens, an unknown tool, input that does not decode,
// or a binding that panicked.
func (a *Agent) prepare(c model.ToolCall, cutOff bool) (j job) {
	defer func() {
		if v := recover(); v != nil {
			p := &PanicError{Stage: "decode", Tool: c.Name, Value: v, Stack: debug.Stack()}
			r := internalFailure(j.binding, c, p, "the call was not run")
			j = job{result: &r, panic: p}
		}
	}()
	if cutOff {
		return job{result: &model.ToolResult{CallID: c.ID, Name: c.Name, IsError: true,
			Text: "Error: this call was not run because the response was cut off at the output token limit; send it again, shorter if needed"}}
	}
	b, ok := a.cfg.Tools.Lookup(c.Name)
	if !ok {
		r := a.cfg.Tools.UnknownTool(c)
		return job{result: &r}
	}
	j.binding = b
	ops, err := b.Decode(c)
	if err != nil {
		r := surface.DecodeFailure(b, c, err)
		return job{result: &r}
	}
	return job{binding: b, ops: ops}
}

// PanicError is a panic recovered in a call's binding (decoding or
// encoding) or executor. The call is answered with an error result that
// says the tool failed with an internal error and gives the panic's value;
// the PanicError, with its stack, goes to the observers in Err of the
// call's EventCallCompleted (errors.Join of them when more than one), and
// its stack follows the text in FullText, never in what the model reads.
type PanicError struct {
	// Stage is "decode", "execute" or "encode".
	Stage string
	// Tool is the tool the model called; Op the operation, for "execute".
	Tool  string
	Op    tool.Op
	Value any
	// Stack is the panicking goroutine's stack, as debug.Stack gives it.
	Stack []byte
}

func (e *PanicError) Error() string {
	what := e.Tool
	if e.Op != "" {
		what = string(e.Op)
	}
	return fmt.Sprintf("%s of %s panicked: %v", e.Stage, what, e.Value)
}

// execute runs one operation; a panicking executor gives an ErrInternal
// result and the recovered panic.
func (a *Agent) execute(ctx context.Context, op tool.Call) (tool.Result, *PanicError) {
	return Execute(ctx, a.cfg.Exec, op)
}

// Execute runs one operation on exec. A panicking executor does not end
// the process: the result is an ErrInternal error whose message names the
// panic's value (never its stack), and the recovered panic, with its
// stack, is returned for whoever records the call.
func Execute(ctx context.Context, exec tool.Executor, op tool.Call) (r tool.Result, p *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			p = &PanicError{Stage: "execute", Tool: op.Tool, Op: op.Op, Value: v, Stack: debug.Stack()}
			r = tool.Failed(op, tool.Errorf(tool.ErrInternal, "%s failed with an internal error (%s); its effects, if any, are unknown: check before retrying", op.Op, panicText(v)))
		}
	}()
	return exec.Execute(ctx, op), nil
}

// encode renders a call's results; a panicking binding gives an error result
// that says what each operation did, and the recovered panic.
func encode(b surface.Binding, c model.ToolCall, rs []tool.Result) (r model.ToolResult, p *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			p = &PanicError{Stage: "encode", Tool: c.Name, Value: v, Stack: debug.Stack()}
			var sb strings.Builder
			sb.WriteString("the call ran, but its result could not be rendered:")
			for _, res := range rs {
				if res.Err != nil {
					fmt.Fprintf(&sb, " %s failed (%s: %s);", res.Op, res.Err.Kind, res.Err.Message)
				} else {
					fmt.Fprintf(&sb, " %s succeeded;", res.Op)
				}
			}
			r = internalFailure(nil, c, p, strings.TrimSuffix(sb.String(), ";"))
		}
	}()
	return b.Encode(c, rs), nil
}

// internalFailure is the result of a call whose binding or executor
// panicked, rendered by the binding's error encoder when it has one (and
// that does not panic too), else as plain text.
func internalFailure(b surface.Binding, c model.ToolCall, p *PanicError, what string) (r model.ToolResult) {
	err := tool.Errorf(tool.ErrInternal, "the %s tool failed with an internal error (%s); %s", c.Name, panicText(p.Value), what)
	plain := model.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Text: "Error: " + err.Message}
	if b == nil {
		return plain
	}
	defer func() {
		if recover() != nil {
			r = plain
		}
	}()
	return surface.DecodeFailure(b, c, err)
}

// panicText is a panic's value as the model reads it: "panic: " and the
// value, cut to 300 bytes.
func panicText(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 300 {
		s = Truncate(s, 300)
	}
	return "panic: " + s
}

// repeated records a call with its result and reports a reason when the
// pair has recurred RepeatLimit times within the last RepeatWindow calls.
func (a *Agent) repeated(c model.ToolCall, r model.ToolResult) string {
	h := sha256.Sum256([]byte(c.Name + "\x00" + c.Input + "\x00" + r.Text))
	key := string(h[:])
	a.recent = append(a.recent, key)
	if len(a.recent) > a.cfg.RepeatWindow {
		a.recent = a.recent[len(a.recent)-a.cfg.RepeatWindow:]
	}
	n := 0
	for _, k := range a.recent {
		if k == key {
			n++
		}
	}
	if n >= a.cfg.RepeatLimit {
		return fmt.Sprintf("stopped: the model made the same %s call with the same result %d times in its last %d calls", c.Name, n, len(a.recent))
	}
	return ""
}

// Truncate cuts s to at most max characters (bytes, on UTF-8 boundaries),
// keeping the head and the tail with a marker saying how much was left out.
func Truncate(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	half := max / 2
	head := s[:half]
	for len(head) > 0 && !utf8.RuneStart(s[len(head)]) {
		head = head[:len(head)-1]
	}
	ti := len(s) - half
	for ti < len(s) && !utf8.RuneStart(s[ti]) {
		ti++
	}
	tail := s[ti:]
	omitted := len(s) - len(head) - len(tail)
	lines := strings.Count(s[len(head):ti], "\n")
	return fmt.Sprintf("%s\n[... %d characters (%d lines) omitted; the full output is in the session record ...]\n%s", head, omitted, lines, tail)
}

// ProjectDocMaxBytes is how much of AGENTS.md goes into the system
// prompt, as Codex's project_doc_max_bytes: the first 32 KiB, the rest
// left out with a note saying so.
const ProjectDocMaxBytes = 32 << 10

// ProjectDoc is a workspace's instructions for agents, its AGENTS.md (or
// CLAUDE.md), as the system prompt takes it.
type ProjectDoc struct {
	Name      string // the file read: AGENTS.md or CLAUDE.md ("" when none)
	Text      string // at most ProjectDocMaxBytes bytes, cut on a UTF-8 boundary
	Size      int64  // the file's size when it was opened
	Truncated bool   // the file has more than ProjectDocMaxBytes bytes
}

// ReadProjectDoc reads AGENTS.md at the top of the workspace root, or,
// where there is none, CLAUDE.md (a repository set up for Claude Code
// alone keeps its instructions there). An AGENTS.md that is
// there but refused is not passed over for CLAUDE.md: the refusal is
// told. A command may have planted anything there, and Truss reads it outside
// the sandbox, so it goes through a hostfs.Root that follows a symbolic
// link only while it stays beneath the root, as the model's own file
// tools do: `AGENTS.md -> CLAUDE.md` is read, and gives nothing a view of
// CLAUDE.md would not; a link that leads outside the workspace (to the
// signing key, to /proc/self/environ, to /dev/zero) is refused, so is a
// FIFO, socket, device or directory (a link's target included), and an
// open that would wait on a file lease; the open never blocks and the
// read stops at ProjectDocMaxBytes. A missing AGENTS.md is the zero
// ProjectDoc and no error; a refusal is a *hostfs.Error (hostfs.Refused
// is true of it). Where the kernel has no openat2, every link is refused.
func ReadProjectDoc(root string) (ProjectDoc, error) {
	r, err := hostfs.OpenRootWith(root, hostfs.Options{Beneath: true})
	if err != nil {
		if hostfs.IsNotExist(err) {
			return ProjectDoc{}, nil
		}
		return ProjectDoc{}, fmt.Errorf("the workspace root: %w", err)
	}
	defer r.Close()
	return readDoc(r, "AGENTS.md", "CLAUDE.md")
}

// ReadUserDoc reads the user's own instructions for every session,
// AGENTS.md in dir (Truss's user directory, beside config.toml), as
// ReadProjectDoc reads a workspace's but through a strict root: like the
// user's config.toml, it is read from no link. A missing file is the zero
// ProjectDoc and no error.
func ReadUserDoc(dir string) (ProjectDoc, error) {
	r, err := hostfs.OpenRoot(dir)
	if err != nil {
		if hostfs.IsNotExist(err) {
			return ProjectDoc{}, nil
		}
		return ProjectDoc{}, err
	}
	defer r.Close()
	return readDoc(r, "AGENTS.md")
}

// readDoc reads the first of names found in r, up to ProjectDocMaxBytes.
func readDoc(r *hostfs.Root, names ...string) (ProjectDoc, error) {
	var f *hostfs.File
	var err error
	name := ""
	for _, n := range names {
		if f, err = r.Open(n); err == nil || !hostfs.IsNotExist(err) {
			name = n
			break
		}
	}
	switch {
	case name == "":
		return ProjectDoc{}, nil
	case err != nil:
		return ProjectDoc{Name: name}, err
	}
	defer f.Close()
	b, truncated, err := f.ReadHead(ProjectDocMaxBytes)
	if err != nil {
		return ProjectDoc{Name: name}, err
	}
	if truncated {
		// A rune cut in two at the limit is left out whole.
		i := len(b) - 1
		for i > 0 && len(b)-i < utf8.UTFMax && !utf8.RuneStart(b[i]) {
			i--
		}
		if i >= 0 && !utf8.FullRune(b[i:]) {
			b = b[:i]
		}
	}
	return ProjectDoc{Name: name, Text: string(b), Size: f.Info.Size, Truncated: truncated}, nil
}

// SystemPrompt returns base, the workspace root, and the workspace's
// AGENTS.md as ReadProjectDoc reads it (see Prompt). Every agent of a
// session, sub-agents too, gets its prompt here.
func SystemPrompt(root, base string) string { return NewPrompt(root, base).Text }

// Prompt is a system prompt with what became of the workspace's
// AGENTS.md in it, for the user to be told (Notice).
type Prompt struct {
	Text string
	Doc  ProjectDoc // AGENTS.md as read (the zero ProjectDoc when missing or refused)
	// Refused is why AGENTS.md was not read (nil when it was, or there
	// is none); a *hostfs.Error.
	Refused error
}

// NewPrompt returns base, the workspace root, and the workspace's
// AGENTS.md as ReadProjectDoc reads it. A truncated AGENTS.md is followed
// by a note saying so; one that was refused is left out with a line
// saying that it was not read and why, so the refusal is never silent to
// the model (the prompt goes to the session record and the ledger), and
// Notice says it to the user.
func NewPrompt(root, base string) Prompt {
	p := Prompt{Text: base + "\n\nThe workspace root is " + root + "; the shell starts there. Name files by absolute path inside it or relative to it."}
	doc, err := ReadProjectDoc(root)
	p.Doc = doc
	if err != nil {
		p.Refused = err
		p.Text += "\n\n" + ProjectDocRefusal(doc.Name, err)
		return p
	}
	text := strings.TrimSpace(doc.Text)
	if text == "" {
		return p
	}
	p.Text += "\n\n# Project instructions (" + doc.Name + ")\n\n" + text + "\n"
	if doc.Truncated {
		p.Text += fmt.Sprintf("\n[%s is %d bytes; only its first %d bytes are included above.]\n", doc.Name, doc.Size, ProjectDocMaxBytes)
	}
	return p
}

// Notice is what the user is told of the workspace's instructions file
// (AGENTS.md, or CLAUDE.md): that it was not read and why, or that only
// its head was; "" when it was read whole or there is none.
func (p Prompt) Notice() string {
	name := cmp.Or(p.Doc.Name, "AGENTS.md")
	switch {
	case p.Refused != nil:
		return name + " was not read: " + p.Refused.Error() + "; the model is told so. Truss reads a regular file named AGENTS.md (else CLAUDE.md) at the workspace root, or a link to one that stays inside the workspace."
	case p.Doc.Truncated:
		return fmt.Sprintf("%s is %d bytes; only its first %d bytes are in the model's instructions.", name, p.Doc.Size, ProjectDocMaxBytes)
	}
	return ""
}

// ProjectDocRefusal is the line the system prompt carries in place of the
// instructions file name (AGENTS.md, CLAUDE.md; "" for AGENTS.md) that
// ReadProjectDoc refused with err.
func ProjectDocRefusal(name string, err error) string {
	return "[" + cmp.Or(name, "AGENTS.md") + " was not read: " + err.Error() + ". Truss reads only a regular file named AGENTS.md (else CLAUDE.md) at the workspace root, or a link to one that stays inside the workspace.]"
}

// WithUserDoc is base followed by the user's own instructions, doc (as
// ReadUserDoc read it from path), under a heading naming path; base alone
// when doc has no text. Every agent's prompt is built on it (NewPrompt),
// so the user's instructions come before the workspace's.
func WithUserDoc(base string, doc ProjectDoc, path string) string {
	text := strings.TrimSpace(doc.Text)
	if text == "" {
		return base
	}
	base += "\n\n# The user's instructions (" + path + ")\n\n" + text + "\n"
	if doc.Truncated {
		base += fmt.Sprintf("\n[%s is %d bytes; only its first %d bytes are included above.]\n", path, doc.Size, ProjectDocMaxBytes)
	}
	return base
}

// DefaultSystem is the base system prompt.
const DefaultSystem = `You are Truss, a coding agent working in a real repository on the user's machine.
Use the tools to read, edit and run code; every tool call is executed locally and recorded.
Work step by step: look at the relevant files, make focused changes, and run the project's tests to check your work before you finish.
When you are done, reply with a short summary of what you changed and how you verified it.`

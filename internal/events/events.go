// Package events encodes a run as JSON Lines in the shape that consumers of
// `codex exec --json` already parse: thread.started, turn.started,
// item.started / item.completed with typed items, turn.completed with usage,
// turn.failed and error. Truss-only data rides in extra fields named
// "truss"; docs/events.md specifies the stream.
package events

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// Encoder is an agent.Observer that writes one JSON event per line.
type Encoder struct {
	mu      sync.Mutex
	enc     *json.Encoder
	next    int
	started bool
	items   map[string]string // call id -> item id
	// Session and Ledger (the ledger's directory) are reported in
	// turn.completed's truss field.
	Session string
	Ledger  string
	// Sandbox is the sandbox mode enforced, reported there too.
	Sandbox string
	// Saved, when set, says at the run's end whether the session is kept
	// (harness.Session.Saved): one that is not (the run failed before the
	// model's first response) is reported with "session_saved": false
	// and without the session and ledger, which will not exist.
	Saved func() bool
	// Hold keeps the run's end (turn.completed or turn.failed) back until
	// Release, so that the verification boundary's verdict precedes it.
	Hold bool
	held *agent.Event
	// Err is the first write error.
	Err error
}

// New returns an encoder writing to w.
func New(w io.Writer) *Encoder {
	e := &Encoder{enc: json.NewEncoder(w), items: map[string]string{}}
	e.enc.SetEscapeHTML(false)
	return e
}

// Event is one line of the stream.
type Event struct {
	Type     string    `json:"type"`
	ThreadID string    `json:"thread_id,omitempty"`
	Item     *Item     `json:"item,omitempty"`
	Usage    *Usage    `json:"usage,omitempty"`
	Error    *ErrorMsg `json:"error,omitempty"`
	Message  string    `json:"message,omitempty"`
	Truss    any       `json:"truss,omitempty"`
}

// Item is a thread item. Fields are set according to Type.
type Item struct {
	ID   string `json:"id"`
	Type string `json:"type"` // agent_message, reasoning, command_execution, file_change, tool_call, error
	Text string `json:"text,omitempty"`
	// command_execution
	Command          string  `json:"command,omitempty"`
	AggregatedOutput *string `json:"aggregated_output,omitempty"`
	ExitCode         *int    `json:"exit_code,omitempty"`
	// file_change
	Changes []Change `json:"changes,omitempty"`
	// tool_call (Truss): a call of any other tool
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    *string         `json:"output,omitempty"`
	Status    string          `json:"status,omitempty"`
	// mcp_tool_call
	Server string     `json:"server,omitempty"`
	Result *MCPResult `json:"result,omitempty"`
	Error  *ErrorMsg  `json:"error,omitempty"`
	// agent_run (Truss): a sub-agent's run
	Prompt string     `json:"prompt,omitempty"`
	Agent  *AgentItem `json:"agent,omitempty"`
	// context_compaction (Truss): the conversation was compacted (Text:
	// the summary), or a compaction failed (Error)
	Compaction *Compaction `json:"compaction,omitempty"`
	Truss      *ItemTruss  `json:"truss,omitempty"`
}

// MCPResult is an mcp_tool_call's result: the server's content list and
// structured content.
type MCPResult struct {
	Content           json.RawMessage `json:"content"`
	StructuredContent json.RawMessage `json:"structured_content,omitempty"`
}

// AgentItem is the Truss data of an agent_run item.
type AgentItem struct {
	Session string  `json:"session_id,omitempty"`
	Name    string  `json:"name,omitempty"`
	Model   string  `json:"model,omitempty"`
	Depth   int     `json:"depth,omitempty"`
	Status  string  `json:"status,omitempty"`
	Reason  string  `json:"reason,omitempty"`
	Turns   int     `json:"turns,omitempty"`
	Calls   int     `json:"calls,omitempty"`
	Usage   *Usage  `json:"usage,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	// CostUnknown: the model's prices are not known, and CostUSD is 0.
	CostUnknown bool     `json:"cost_unknown,omitempty"`
	Ledger      string   `json:"ledger,omitempty"`
	Changes     []Change `json:"changes,omitempty"`
	Diff        string   `json:"diff,omitempty"`
}

// Compaction is the Truss data of a context_compaction item.
type Compaction struct {
	// Reason is "auto" (the next request would have passed the share of
	// the context window) or "manual" (/compact).
	Reason string `json:"reason"`
	// Replaced counts the transcript items the summary replaced;
	// TokensBefore and TokensAfter estimate the transcript's size.
	Replaced     int   `json:"replaced,omitempty"`
	TokensBefore int64 `json:"tokens_before"`
	TokensAfter  int64 `json:"tokens_after,omitempty"`
	// Usage is the summary turn's (included in the run's usage).
	Usage       *Usage  `json:"usage,omitempty"`
	CostUSD     float64 `json:"cost_usd,omitempty"`
	CostUnknown bool    `json:"cost_unknown,omitempty"`
}

// Change is one file of a file_change item.
type Change struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // add, delete, update
}

// ItemTruss is the Truss-only data of a tool item.
type ItemTruss struct {
	CallID  string            `json:"call_id"`
	Tool    string            `json:"tool"`
	Surface string            `json:"surface,omitempty"`
	Ops     []string          `json:"ops,omitempty"`
	IsError bool              `json:"is_error,omitempty"`
	Error   string            `json:"error_kind,omitempty"`
	Changes []tool.FileChange `json:"changes,omitempty"`
	// Unverified marks a tool the provider executed: Truss saw only what
	// the provider reported.
	Unverified bool `json:"unverified,omitempty"`
}

// Usage is turn.completed's usage (and a sub-agent's): InputTokens is every
// input token (model.Usage.Input), the cached ones included, as OpenAI
// counts them; CachedInputTokens (read from the cache) and
// CacheWriteInputTokens (written to it) are parts of it.
type Usage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

// ErrorMsg is turn.failed's error.
type ErrorMsg struct {
	Message string `json:"message"`
}

// RunTruss is the Truss-only data of turn.completed and turn.failed.
type RunTruss struct {
	Status  string  `json:"status"`
	Reason  string  `json:"reason,omitempty"`
	Turns   int     `json:"turns"`
	Calls   int     `json:"calls"`
	CostUSD float64 `json:"cost_usd"`
	// CostUnknown: the model's prices are not known, and CostUSD is 0.
	CostUnknown bool   `json:"cost_unknown,omitempty"`
	Session     string `json:"session_id,omitempty"`
	Ledger      string `json:"ledger,omitempty"`
	// SessionSaved is false when the session is not kept (the run failed
	// before the model's first response), absent otherwise.
	SessionSaved *bool `json:"session_saved,omitempty"`
	// Sandbox is the sandbox mode actually enforced.
	Sandbox string `json:"sandbox,omitempty"`
	// Validation is the verdict of the verification boundary, when the
	// checks ran.
	Validation any `json:"validation,omitempty"`
}

func (e *Encoder) write(ev Event) {
	if err := e.enc.Encode(ev); err != nil && e.Err == nil {
		e.Err = err
	}
}

// Start writes thread.started.
func (e *Encoder) Start(threadID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.write(Event{Type: "thread.started", ThreadID: threadID})
}

// Fatal writes an error event (a failure outside any turn).
func (e *Encoder) Fatal(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.write(Event{Type: "error", Message: err.Error()})
}

func (e *Encoder) itemID() string {
	id := fmt.Sprintf("item_%d", e.next)
	e.next++
	return id
}

// Observe implements agent.Observer.
func (e *Encoder) Observe(ev agent.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev.Type {
	case agent.EventUser:
		if !e.started {
			e.started = true
			e.write(Event{Type: "turn.started"})
		}
	case agent.EventResponse:
		for _, it := range ev.Response.Items {
			switch it.Kind {
			case model.KindReasoning:
				if strings.TrimSpace(it.Text) != "" {
					e.write(Event{Type: "item.completed", Item: &Item{ID: e.itemID(), Type: "reasoning", Text: it.Text}})
				}
			case model.KindAssistant:
				e.write(Event{Type: "item.completed", Item: &Item{ID: e.itemID(), Type: "agent_message", Text: it.Text}})
			case model.KindServerTool:
				// Executed by the provider, not by Truss: reported, never verified.
				raw := json.RawMessage(it.Raw)
				if !json.Valid(raw) {
					raw = nil
				}
				e.write(Event{Type: "item.completed", Item: &Item{ID: e.itemID(), Type: "provider_tool", Tool: it.Text, Arguments: raw,
					Status: "completed", Truss: &ItemTruss{Tool: it.Text, Unverified: true}}})
			}
		}
	case agent.EventCallStarted:
		id := e.itemID()
		e.items[ev.Call.ID] = id
		it := callItem(id, ev.Call, ev.Ops)
		if it.Type == "file_change" {
			return // file changes are reported once, completed
		}
		it.Status = "in_progress"
		empty := ""
		if it.Type == "command_execution" {
			it.AggregatedOutput = &empty
		}
		e.write(Event{Type: "item.started", Item: it})
	case agent.EventCallCompleted:
		id, ok := e.items[ev.Call.ID]
		if !ok {
			id = e.itemID()
		}
		delete(e.items, ev.Call.ID)
		it := callItem(id, ev.Call, ev.Ops)
		completeItem(it, ev)
		e.write(Event{Type: "item.completed", Item: it})
	case agent.EventCompacted:
		c := ev.Compaction
		e.write(Event{Type: "item.completed", Item: &Item{ID: e.itemID(), Type: "context_compaction", Text: c.Summary, Status: "completed",
			Compaction: &Compaction{Reason: c.Reason, Replaced: c.Replaced, TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter,
				Usage: usage(c.Usage), CostUSD: c.Usage.CostUSD, CostUnknown: c.Usage.CostUnknown}}})
	case agent.EventCompactFailed:
		it := &Item{ID: e.itemID(), Type: "context_compaction", Status: "failed", Error: &ErrorMsg{Message: ev.Err.Error()}}
		if c := ev.Compaction; c != nil {
			it.Compaction = &Compaction{Reason: c.Reason, TokensBefore: c.TokensBefore}
		}
		e.write(Event{Type: "item.completed", Item: it})
	case agent.EventRunCompleted:
		if e.Hold {
			e.held = &ev
			return
		}
		e.runCompleted(ev, nil)
	}
}

// Release writes the run's end that Hold kept back, after a validation
// item when verdict is set (the verification boundary's outcome: text,
// whether it passed, and the summary for truss.validation).
func (e *Encoder) Release(text string, passed bool, verdict any) {
	if verdict != nil {
		status := "failed"
		if passed {
			status = "passed"
		}
		e.write(Event{Type: "item.completed", Item: &Item{ID: e.itemID(), Type: "validation", Text: text, Status: status}})
	}
	if e.held != nil {
		ev := *e.held
		e.held = nil
		e.runCompleted(ev, verdict)
	}
}

func (e *Encoder) runCompleted(ev agent.Event, verdict any) {
	{
		o := ev.Outcome
		rt := &RunTruss{Status: string(o.Status), Reason: o.Reason, Turns: o.Turns, Calls: o.Calls, CostUSD: o.Usage.CostUSD, CostUnknown: o.Usage.CostUnknown,
			Session: e.Session, Ledger: e.Ledger, Sandbox: e.Sandbox, Validation: verdict}
		if e.Saved != nil && !e.Saved() {
			no := false
			rt.Session, rt.Ledger, rt.SessionSaved = "", "", &no
		}
		if o.Status == agent.StatusFailed || o.Status == agent.StatusCanceled {
			e.write(Event{Type: "turn.failed", Error: &ErrorMsg{Message: o.Reason}, Truss: rt})
			return
		}
		e.write(Event{Type: "turn.completed", Truss: rt, Usage: usage(o.Usage)})
	}
}

// usage is a model usage in the stream's form: input_tokens includes the
// cached ones.
func usage(u model.Usage) *Usage {
	return &Usage{InputTokens: u.Input(), CachedInputTokens: u.CacheReadTokens,
		CacheWriteInputTokens: u.CacheWriteTokens, OutputTokens: u.OutputTokens, ReasoningOutputTokens: u.ReasoningTokens}
}

// callItem builds the item for a call from its decoded operations.
func callItem(id string, c *model.ToolCall, ops []tool.Call) *Item {
	it := &Item{ID: id, Truss: &ItemTruss{CallID: c.ID, Tool: c.Name}}
	kind := "tool_call"
	var cmds []string
	for _, op := range ops {
		it.Truss.Ops = append(it.Truss.Ops, string(op.Op))
		it.Truss.Surface = op.Surface
		switch op.Op {
		case tool.OpSpawn:
			kind = "agent_run"
			a := op.Args.(*tool.SpawnArgs)
			it.Prompt = a.Task
			it.Agent = &AgentItem{Name: a.Agent, Model: a.Model}
		case tool.OpMCP:
			kind = "mcp_tool_call"
			a := op.Args.(*tool.MCPArgs)
			it.Server, it.Tool = a.Server, a.Tool
			it.Arguments = a.Arguments
			if len(it.Arguments) == 0 {
				it.Arguments = json.RawMessage("{}")
			}
		case tool.OpExec:
			kind = "command_execution"
			cmds = append(cmds, op.Args.(*tool.ExecArgs).Command)
		case tool.OpWrite, tool.OpCreate, tool.OpReplace, tool.OpInsert:
			if kind == "tool_call" {
				kind = "file_change"
			}
		}
	}
	it.Type = kind
	switch kind {
	case "command_execution":
		it.Command = strings.Join(cmds, "\n")
	case "tool_call":
		it.Tool = c.Name
		if json.Valid([]byte(c.Input)) {
			it.Arguments = json.RawMessage(c.Input)
		} else {
			b, _ := json.Marshal(c.Input)
			it.Arguments = b
		}
	}
	return it
}

func completeItem(it *Item, ev agent.Event) {
	r := ev.Result
	it.Status = "completed"
	if r.IsError {
		it.Status = "failed"
	}
	it.Truss.IsError = r.IsError
	for _, res := range ev.Results {
		if res.Err != nil && it.Truss.Error == "" {
			it.Truss.Error = string(res.Err.Kind)
		}
		it.Truss.Changes = append(it.Truss.Changes, res.Changes...)
	}
	switch it.Type {
	case "agent_run":
		for _, res := range ev.Results {
			a := res.Agent
			if a == nil {
				it.Error = &ErrorMsg{Message: r.Text}
				continue
			}
			u := a.Usage
			it.Text = a.Text
			it.Agent = &AgentItem{Session: a.Session, Name: a.Agent, Model: a.Model, Depth: a.Depth, Status: a.Status, Reason: a.Reason,
				Turns: a.Turns, Calls: a.Calls, CostUSD: u.CostUSD, CostUnknown: u.CostUnknown, Diff: a.Diff, Usage: usage(u)}
			if a.Ledger != nil {
				it.Agent.Ledger = a.Ledger.Dir
			}
			for _, c := range res.Changes {
				it.Agent.Changes = append(it.Agent.Changes, Change{Path: c.Path, Kind: string(c.Kind)})
			}
		}
	case "mcp_tool_call":
		for _, res := range ev.Results {
			if res.MCP != nil && len(res.MCP.Content) > 0 {
				it.Result = &MCPResult{Content: res.MCP.Content, StructuredContent: res.MCP.Structured}
			}
			if res.Err != nil {
				it.Error = &ErrorMsg{Message: res.Err.Message}
			}
		}
		if it.Result == nil && it.Error == nil && r.IsError {
			it.Error = &ErrorMsg{Message: r.Text}
		}
	case "command_execution":
		var sb strings.Builder
		for _, res := range ev.Results {
			sb.WriteString(res.Stdout)
			sb.WriteString(res.Stderr)
			if res.ExitCode != nil {
				code := *res.ExitCode
				it.ExitCode = &code
			}
		}
		out := sb.String()
		if len(ev.Results) == 0 {
			out = r.Text
		}
		it.AggregatedOutput = &out
	case "file_change":
		for _, c := range it.Truss.Changes {
			p := c.Path
			if c.MovedTo != "" {
				p = c.MovedTo
			}
			it.Changes = append(it.Changes, Change{Path: p, Kind: string(c.Kind)})
		}
		if it.Changes == nil {
			it.Changes = []Change{}
		}
	default:
		text := ev.FullText
		it.Output = &text
	}
}

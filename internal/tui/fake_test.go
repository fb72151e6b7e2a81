package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// fakeSession replays scripted agent events, as the harness's session
// reports a run to its observers, so that the UI can be tested without a
// model. Which script runs depends on a word of the task: "slow" runs a
// command until cancelled, "net" asks for approval first, "long" streams
// many deltas; anything else edits a file, runs the tests and answers in
// markdown.
type fakeSession struct {
	obs      agent.Observer
	approver interface {
		Approve(context.Context, ApprovalRequest) (Decision, error)
	}

	mu       sync.Mutex
	status   Status
	tasks    []string
	active   int // Runs that have not returned
	compacts int
	// cancelDelay is how long the slow command takes to end once
	// cancelled (a process group being killed).
	cancelDelay time.Duration
	// toolOutput is what the script's shell command prints.
	toolOutput string
	// resumed: the session opened with an earlier conversation.
	resumed bool
	// sandbox is the mode SetSandbox was last given.
	sandbox string
	// gate holds a "gated" task until it is closed (or the task is
	// cancelled), then the task runs as an edit.
	gate chan struct{}
}

// SetSandbox implements SandboxSwitcher.
func (f *fakeSession) SetSandbox(ctx context.Context, mode string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sandbox = mode
	return ctx.Err()
}

func newFake(u *UI) *fakeSession {
	return &fakeSession{
		obs:      u,
		approver: u,
		status: Status{
			Model: "sim-model", Surface: "generic", Sandbox: "workspace-write", Approval: "on-request",
			SessionID: "s-1", ContextWindow: 200_000,
		},
		toolOutput: "ok  \texample.com/calc\t0.012s\n",
		gate:       make(chan struct{}),
	}
}

func (f *fakeSession) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *fakeSession) emit(ev agent.Event) { f.obs.Observe(ev) }

func (f *fakeSession) turn(n int, usage model.Usage) {
	f.mu.Lock()
	f.status.Usage = addUsage(f.status.Usage, usage)
	f.status.ContextTokens = usage.InputTokens + usage.OutputTokens
	f.mu.Unlock()
	f.emit(agent.Event{Type: agent.EventTurnCompleted, Turn: n, Usage: usage})
}

func addUsage(a, b model.Usage) model.Usage {
	a.InputTokens += b.InputTokens
	a.OutputTokens += b.OutputTokens
	a.CostUSD += b.CostUSD
	return a
}

func (f *fakeSession) stream(turn int, kind model.ItemKind, text string) {
	for _, w := range strings.SplitAfter(text, " ") {
		f.emit(agent.Event{Type: agent.EventDelta, Turn: turn, Delta: &model.Delta{Kind: kind, Text: w}})
	}
}

func (f *fakeSession) call(turn int, id, name string, op tool.Call, res tool.Result, text string) {
	c := &model.ToolCall{ID: id, Name: name, Kind: model.ToolFunction, Input: "{}"}
	op.ID, op.Tool, op.Surface = id, name, "generic"
	f.emit(agent.Event{Type: agent.EventCallStarted, Turn: turn, Call: c, Ops: []tool.Call{op}})
	res.CallID, res.Op = id, op.Op
	f.emit(agent.Event{Type: agent.EventCallCompleted, Turn: turn, Call: c, Ops: []tool.Call{op}, Results: []tool.Result{res},
		Result: &model.ToolResult{CallID: id, Name: name, Text: text, IsError: res.Err != nil}, FullText: text})
}

func (f *fakeSession) Run(ctx context.Context, task string) (agent.Outcome, error) {
	f.mu.Lock()
	f.tasks = append(f.tasks, task)
	f.status.Turns++
	f.active++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
	}()
	f.emit(agent.Event{Type: agent.EventUser, Items: []model.Item{{Kind: model.KindUser, Text: task}}})
	switch {
	case strings.Contains(task, "gated"):
		select {
		case <-f.gate:
		case <-ctx.Done():
			return f.end(agent.Outcome{Status: agent.StatusCanceled, Reason: "cancelled by the user"})
		}
	case strings.Contains(task, "stream"):
		return f.runStreaming(ctx)
	case strings.Contains(task, "slow"):
		return f.runSlow(ctx)
	case strings.Contains(task, "net"):
		return f.runNet(ctx)
	case strings.Contains(task, "long"):
		return f.runLong(ctx, 2000)
	case strings.Contains(task, "background"):
		// As the interactive session reports a task that changed files:
		// its checks go on in the background after it.
		defer func() {
			f.mu.Lock()
			f.status.Checking = "checks"
			f.mu.Unlock()
		}()
	}
	return f.runEdit(ctx)
}

// Transcript implements Transcripter: a resumed session's conversation
// when resumed is set.
func (f *fakeSession) Transcript() []model.Item {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.resumed {
		return nil
	}
	return resumedItems
}

var resumedItems = []model.Item{
	{Kind: model.KindUser, Text: "why does TestAdd fail?"},
	{Kind: model.KindToolCall, Call: &model.ToolCall{ID: "c1", Name: "bash", Input: `{"command":"go test ./..."}`}},
	{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: "c1", Text: "--- FAIL: TestAdd\nFAIL", IsError: true}},
	{Kind: model.KindAssistant, Text: "`Add` subtracts: `a - b` should be `a + b`."},
}

// Resumable implements ResumeLister: two earlier sessions.
func (f *fakeSession) Resumable(ctx context.Context) ([]ResumeChoice, error) {
	at := time.Date(2026, 12, 3, 14, 23, 0, 0, time.Local)
	return []ResumeChoice{
		{ID: "20261203T142301-3fa9c1", Updated: at, Task: "why does TestAdd fail?", Provider: "anthropic", Model: "claude-sonnet-4-5"},
		{ID: "20261202T091500-77aa01", Updated: at.Add(-29 * time.Hour), Task: "add a Median function with tests\nand docs", Provider: "openai", Model: "gpt-5"},
	}, ctx.Err()
}

// Resume implements Resumer.
func (f *fakeSession) Resume(ctx context.Context, id string) ([]model.Item, error) {
	f.mu.Lock()
	f.status.SessionID = id
	f.mu.Unlock()
	return resumedItems, ctx.Err()
}

// Check implements Checker: the checks of the calculator module, a
// background check ended first.
func (f *fakeSession) Check(ctx context.Context) (string, error) {
	f.mu.Lock()
	f.status.Checking = ""
	f.mu.Unlock()
	return "validation passed: `go test ./...` (0.4 s)\ntests: 3 passed, 0 failed", ctx.Err()
}

func (f *fakeSession) end(o agent.Outcome) (agent.Outcome, error) {
	f.emit(agent.Event{Type: agent.EventRunCompleted, Outcome: &o})
	return o, nil
}

func (f *fakeSession) runEdit(ctx context.Context) (agent.Outcome, error) {
	f.emit(agent.Event{Type: agent.EventTurnStarted, Turn: 1})
	f.stream(1, model.KindReasoning, "The test fails because Add subtracts. I should look at calc.go and fix the operator.")
	f.stream(1, model.KindAssistant, "I'll fix `Add` in calc.go and run the tests.")
	f.emit(agent.Event{Type: agent.EventResponse, Turn: 1, Response: &model.Response{StopReason: model.StopToolUse}})
	before := "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
	after := "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
	f.call(1, "call_1", "edit_file",
		tool.Call{Op: tool.OpReplace, Args: &tool.ReplaceArgs{Path: "calc.go", Old: "a - b", New: "a + b"}},
		tool.Result{Output: "edited", Changes: []tool.FileChange{{
			Path: "calc.go", Kind: tool.ChangeUpdate,
			Before: tool.Digest([]byte(before)), After: tool.Digest([]byte(after)),
			BeforeData: []byte(before), AfterData: []byte(after),
		}}},
		"The file calc.go has been edited.")
	exit := 0
	f.call(1, "call_2", "bash",
		tool.Call{Op: tool.OpExec, Args: &tool.ExecArgs{Command: "go test ./..."}},
		tool.Result{Stdout: f.toolOutput, ExitCode: &exit},
		f.toolOutput)
	f.turn(1, model.Usage{InputTokens: 1200, OutputTokens: 80, CostUSD: 0.0042})
	if err := ctx.Err(); err != nil {
		return f.end(agent.Outcome{Status: agent.StatusCanceled, Reason: "cancelled by the user", Turns: 1, Calls: 2})
	}
	f.emit(agent.Event{Type: agent.EventTurnStarted, Turn: 2})
	f.stream(2, model.KindAssistant, "**Fixed.** `Add` now adds:\n\n- `calc.go`: `a - b` became `a + b`\n- `go test ./...` passes\n")
	f.emit(agent.Event{Type: agent.EventResponse, Turn: 2, Response: &model.Response{StopReason: model.StopEndTurn}})
	f.turn(2, model.Usage{InputTokens: 1400, OutputTokens: 40, CostUSD: 0.0048})
	u := model.Usage{InputTokens: 2600, OutputTokens: 120, CostUSD: 0.009}
	return f.end(agent.Outcome{Status: agent.StatusCompleted, Turns: 2, Calls: 2, Usage: u, RunUsage: u})
}

// runSlow runs a command that ends only when the turn is cancelled, as
// the loop's cancel path ends it.
func (f *fakeSession) runSlow(ctx context.Context) (agent.Outcome, error) {
	f.emit(agent.Event{Type: agent.EventTurnStarted, Turn: 1})
	c := &model.ToolCall{ID: "call_s", Name: "bash", Kind: model.ToolFunction, Input: `{"command":"sleep 600"}`}
	op := tool.Call{ID: "call_s", Tool: "bash", Op: tool.OpExec, Args: &tool.ExecArgs{Command: "sleep 600"}}
	f.emit(agent.Event{Type: agent.EventCallStarted, Turn: 1, Call: c, Ops: []tool.Call{op}})
	<-ctx.Done()
	time.Sleep(f.cancelDelay)
	res := tool.Failed(op, &tool.Error{Kind: tool.ErrCanceled, Message: "the command was cancelled"})
	f.emit(agent.Event{Type: agent.EventCallCompleted, Turn: 1, Call: c, Ops: []tool.Call{op}, Results: []tool.Result{res},
		Result: &model.ToolResult{CallID: "call_s", Name: "bash", Text: "the command was cancelled", IsError: true}, FullText: "the command was cancelled"})
	return f.end(agent.Outcome{Status: agent.StatusCanceled, Reason: "cancelled by the user", Turns: 1, Calls: 1})
}

// runStreaming runs a command that prints as it goes, until cancelled:
// eight lines, a progress bar's carriage returns, and a partial line.
func (f *fakeSession) runStreaming(ctx context.Context) (agent.Outcome, error) {
	f.emit(agent.Event{Type: agent.EventTurnStarted, Turn: 1})
	cmd := "for i in $(seq 8); do echo step $i; sleep 1; done; make"
	c := &model.ToolCall{ID: "call_l", Name: "bash", Kind: model.ToolFunction, Input: `{"command":"` + cmd + `"}`}
	op := tool.Call{ID: "call_l", Tool: "bash", Op: tool.OpExec, Args: &tool.ExecArgs{Command: cmd}}
	f.emit(agent.Event{Type: agent.EventCallStarted, Turn: 1, Call: c, Ops: []tool.Call{op}})
	for i := 1; i <= 8; i++ {
		f.emit(agent.Event{Type: agent.EventCallOutput, Turn: 1, Call: c, Output: &agent.CallOutput{Stream: "stdout", Text: fmt.Sprintf("step %d\n", i)}})
	}
	f.emit(agent.Event{Type: agent.EventCallOutput, Turn: 1, Call: c, Output: &agent.CallOutput{Stream: "stderr", Text: "building 10%\rbuilding 60%\r\x1b]0;title\x07build"}})
	<-ctx.Done()
	res := tool.Failed(op, &tool.Error{Kind: tool.ErrCanceled, Message: "the command was cancelled"})
	f.emit(agent.Event{Type: agent.EventCallCompleted, Turn: 1, Call: c, Ops: []tool.Call{op}, Results: []tool.Result{res},
		Result: &model.ToolResult{CallID: "call_l", Name: "bash", Text: "step 1\n…\nthe command was cancelled", IsError: true}, FullText: "step 1\n…\nthe command was cancelled"})
	return f.end(agent.Outcome{Status: agent.StatusCanceled, Reason: "cancelled by the user", Turns: 1, Calls: 1})
}

// runNet asks to run a command with the network before running it.
func (f *fakeSession) runNet(ctx context.Context) (agent.Outcome, error) {
	f.emit(agent.Event{Type: agent.EventTurnStarted, Turn: 1})
	cmd := "curl -sSf https://proxy.golang.org/example.com/calc/@v/list"
	d, err := f.approver.Approve(ctx, ApprovalRequest{Tool: "bash", Command: cmd, Network: true, Reason: "to list the module's versions"})
	if err != nil {
		return f.end(agent.Outcome{Status: agent.StatusCanceled, Reason: "cancelled by the user", Turns: 1})
	}
	out := "the user refused to run the command"
	if d != Deny {
		out = "v1.0.0\nv1.1.0\n"
	}
	exit := 0
	f.call(1, "call_n", "bash", tool.Call{Op: tool.OpExec, Args: &tool.ExecArgs{Command: cmd}},
		tool.Result{Stdout: out, ExitCode: &exit}, out)
	f.turn(1, model.Usage{InputTokens: 900, OutputTokens: 30})
	return f.end(agent.Outcome{Status: agent.StatusCompleted, Turns: 1, Calls: 1})
}

// runLong streams n words of assistant text.
func (f *fakeSession) runLong(ctx context.Context, n int) (agent.Outcome, error) {
	f.emit(agent.Event{Type: agent.EventTurnStarted, Turn: 1})
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		f.emit(agent.Event{Type: agent.EventDelta, Turn: 1, Delta: &model.Delta{Kind: model.KindAssistant, Text: fmt.Sprintf("word%d ", i)}})
	}
	f.emit(agent.Event{Type: agent.EventResponse, Turn: 1, Response: &model.Response{StopReason: model.StopEndTurn}})
	f.turn(1, model.Usage{InputTokens: 100, OutputTokens: int64(n)})
	return f.end(agent.Outcome{Status: agent.StatusCompleted, Turns: 1})
}

// Compact implements Compactor.
func (f *fakeSession) Compact(ctx context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compacts++
	f.status.ContextTokens /= 4
	return "Compacted: 6 items replaced by a summary.", nil
}

// Diff implements Differ.
func (f *fakeSession) Diff(ctx context.Context) (string, error) {
	return "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -4,3 +4,3 @@\n func Add(a, b int) int {\n-\treturn a - b\n+\treturn a + b\n }\n", nil
}

package ui

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/tool"
)

// evil is what a file, a command or a model could send to the terminal:
// a title, a screen clear, a clipboard write, a hyperlink and a bidi
// override.
const evil = "a \x1b]0;HIJACK\x07 \x1b[2J \x1b]52;c;ZXZpbA==\x07 \x1b]8;;http://x\x07l\x1b]8;;\x07 \u202e"

func TestPrinterNeutralises(t *testing.T) {
	call := &model.ToolCall{ID: "1", Name: "bash" + evil, Input: `{"command":"cat f` + strings.ReplaceAll(evil, "\x1b", `\u001b`) + `"}`}
	ops := []tool.Call{{ID: "1", Op: tool.OpExec, Args: &tool.ExecArgs{Command: "cat " + evil}}}
	for _, tc := range []struct {
		name string
		ev   agent.Event
	}{
		{"user", agent.Event{Type: agent.EventUser, Items: []model.Item{{Kind: model.KindUser, Text: evil}}}},
		{"delta", agent.Event{Type: agent.EventDelta, Delta: &model.Delta{Kind: model.KindAssistant, Text: evil}}},
		{"response", agent.Event{Type: agent.EventResponse, Response: &model.Response{Items: []model.Item{{Kind: model.KindAssistant, Text: evil}}}}},
		{"call", agent.Event{Type: agent.EventCallStarted, Call: call, Ops: ops}},
		{"call undecoded", agent.Event{Type: agent.EventCallStarted, Call: call}},
		{"result", agent.Event{Type: agent.EventCallCompleted, Call: call, Result: &model.ToolResult{Text: evil + "\n" + evil}}},
		{"output", agent.Event{Type: agent.EventCallOutput, Call: call, Output: &agent.CallOutput{Stream: "stdout", Text: evil + "\n"}}},
		{"turn failed", agent.Event{Type: agent.EventTurnFailed, Err: errors.New("server said " + evil)}},
		{"run", agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusFailed, Reason: evil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := &Printer{W: &buf}
			p.Observe(tc.ev)
			p.Child("child" + evil).Observe(tc.ev)
			out := buf.String()
			if strings.ContainsAny(out, "\x1b\x07\u202e\u009b\u009d") {
				t.Fatalf("a control reached the terminal: %q", out)
			}
			if tc.ev.Type != agent.EventUser && tc.ev.Type != agent.EventTurnStarted && !strings.Contains(out, "<U+001B>]0;HIJACK<U+0007>") && !strings.Contains(out, "HIJACK") {
				t.Fatalf("the text was hidden instead of shown: %q", out)
			}
		})
	}
}

// TestPrinterLiveOutput: a running command's output is printed line by
// line as it comes (a line split across pieces printed once whole, a
// progress bar's carriage returns showing its last state), and its end
// says how it ended instead of repeating the output.
func TestPrinterLiveOutput(t *testing.T) {
	call := &model.ToolCall{ID: "1", Name: "bash", Input: `{"command":"make"}`}
	ops := []tool.Call{{ID: "1", Op: tool.OpExec, Args: &tool.ExecArgs{Command: "make"}}}
	var buf bytes.Buffer
	p := &Printer{W: &buf}
	out := func(text string) {
		p.Observe(agent.Event{Type: agent.EventCallOutput, Call: call, Output: &agent.CallOutput{Stream: "stdout", Text: text}})
	}
	p.Observe(agent.Event{Type: agent.EventCallStarted, Call: call, Ops: ops})
	out("building\npar")
	if got := buf.String(); got != "⏺ bash · $ make\n  ┊ building\n" {
		t.Fatalf("after the first piece: %q", got)
	}
	out("tial line\n10%\r50%\r100%\nno newline")
	p.Observe(agent.Event{Type: agent.EventCallCompleted, Call: call, Ops: ops,
		Results: []tool.Result{{Err: &tool.Error{Kind: tool.ErrExit, Message: "the command exited with status 2"}}},
		Result:  &model.ToolResult{Text: "building\npartial line\n100%\nno newline\nexit status 2", IsError: true}})
	want := "⏺ bash · $ make\n  ┊ building\n  ┊ partial line\n  ┊ 100%\n  ┊ no newline\n  ⎿ the command exited with status 2\n"
	if got := buf.String(); got != want {
		t.Errorf("the transcript:\n%s\nwant:\n%s", got, want)
	}
}

// TestSummaryNames: a file name in a call's summary is shown with every
// byte of it, escaped where it cannot be shown, not with its escape
// sequences removed (which would show a name that is not the file's).
func TestSummaryNames(t *testing.T) {
	const name = "new\x1b[2J\u202e.txt"
	const shown = `new\x1b[2J\u202e.txt`
	call := &model.ToolCall{ID: "1", Name: "edit"}
	for _, tc := range []struct {
		op   tool.Op
		args any
		want string
	}{
		{tool.OpView, &tool.ViewArgs{Path: name}, "edit · view " + shown},
		{tool.OpCreate, &tool.CreateArgs{Path: name}, "edit · create " + shown},
		{tool.OpWrite, &tool.CreateArgs{Path: name}, "edit · write " + shown},
		{tool.OpReplace, &tool.ReplaceArgs{Path: name}, "edit · edit " + shown},
		{tool.OpInsert, &tool.InsertArgs{Path: name, Line: 3}, "edit · insert into " + shown + " after line 3"},
		{tool.OpList, &tool.ListArgs{Path: name}, "edit · list " + shown},
		{tool.OpPatchOp, &tool.PatchOpArgs{Type: "update_file", Path: name}, "edit · update " + shown},
		{tool.OpPatch, &tool.PatchArgs{Text: "*** Begin Patch\n*** Add File: " + name + "\n+x\n*** End Patch"}, "edit · patch: add " + shown},
	} {
		got := Summary(call, []tool.Call{{ID: "1", Op: tc.op, Args: tc.args}})
		if got != tc.want {
			t.Errorf("Summary(%T) = %q, want %q", tc.args, got, tc.want)
		}
		var buf bytes.Buffer
		(&Printer{W: &buf}).Observe(agent.Event{Type: agent.EventCallStarted, Call: call, Ops: []tool.Call{{ID: "1", Op: tc.op, Args: tc.args}}})
		if out := buf.String(); !strings.Contains(out, shown) || strings.ContainsAny(out, "\x1b\u202e") {
			t.Errorf("printed %q, want the name shown as %s", out, shown)
		}
	}
}

// TestPrinterLiveOutputBounded: a command that prints far more than a
// screen shows its first liveHead lines as they come and, at its end, how
// many were left out and its last liveTail lines; a short one is shown
// whole.
func TestPrinterLiveOutputBounded(t *testing.T) {
	call := &model.ToolCall{ID: "1", Name: "bash", Input: `{"command":"seq 1 200000"}`}
	ops := []tool.Call{{ID: "1", Op: tool.OpExec, Args: &tool.ExecArgs{Command: "seq 1 200000"}}}
	for _, n := range []int{liveHead + liveTail, liveHead + liveTail + 1, 200_000} {
		var buf bytes.Buffer
		p := &Printer{W: &buf}
		p.Observe(agent.Event{Type: agent.EventCallStarted, Call: call, Ops: ops})
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "%d\n", i)
			if b.Len() > 1000 || i == n {
				p.Observe(agent.Event{Type: agent.EventCallOutput, Call: call, Output: &agent.CallOutput{Stream: "stdout", Text: b.String()}})
				b.Reset()
			}
		}
		p.Observe(agent.Event{Type: agent.EventCallCompleted, Call: call, Ops: ops, Results: []tool.Result{{}}, Result: &model.ToolResult{Text: "…"}})
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		shown := len(lines) - 2 // the call's line and its end
		if n <= liveHead+liveTail {
			if shown != n {
				t.Errorf("%d lines: %d shown, want all", n, shown)
			}
			continue
		}
		if shown != liveHead+1+liveTail {
			t.Errorf("%d lines: %d shown, want %d", n, shown, liveHead+1+liveTail)
		}
		if got, want := lines[liveHead], fmt.Sprintf("  ┊ %d", liveHead); got != want {
			t.Errorf("%d lines: the last of the head is %q, want %q", n, got, want)
		}
		if got, want := lines[liveHead+1], fmt.Sprintf("  ┊ … %s not shown …", plural.Count(n-liveHead-liveTail, "line")); got != want {
			t.Errorf("%d lines: %q, want %q", n, got, want)
		}
		if got, want := lines[len(lines)-2], fmt.Sprintf("  ┊ %d", n); got != want {
			t.Errorf("%d lines: the last line shown is %q, want %q", n, got, want)
		}
	}
}

// TestRunSummaryCountsTheCache: the run's summary counts every input
// token, whichever part of the prompt the cache read or took (the Messages
// API reports those apart from its input_tokens).
func TestRunSummaryCountsTheCache(t *testing.T) {
	for _, c := range []struct {
		u    model.Usage
		want string
	}{
		{model.Usage{CacheReadTokens: 1430, CacheWriteTokens: 894, OutputTokens: 33}, "· 2324 input (1430 read from cache, 894 written to cache) / 33 output tokens\n"},
		{model.Usage{InputTokens: 900, CacheWriteTokens: 100, OutputTokens: 3}, "· 1000 input (100 written to cache) / 3 output tokens\n"},
		{model.Usage{InputTokens: 2332, OutputTokens: 33}, "· 2332 input / 33 output tokens\n"},
	} {
		var buf bytes.Buffer
		p := &Printer{W: &buf}
		p.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted, Turns: 3, Calls: 2, Usage: c.u}})
		if got := buf.String(); !strings.HasSuffix(got, c.want) {
			t.Errorf("summary of %+v: %q, want it to end %q", c.u, got, c.want)
		}
	}
}

// TestRunSummaryReason: a run that did not complete says why under its
// summary, unless the why is only its status again ("canceled").
func TestRunSummaryReason(t *testing.T) {
	for _, c := range []struct {
		status agent.Status
		reason string
		want   int // times reason is printed
	}{
		{agent.StatusCanceled, "canceled", 1},
		{agent.StatusBudget, "the budget of 1 turn is spent", 1},
	} {
		var buf bytes.Buffer
		p := &Printer{W: &buf}
		p.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: c.status, Reason: c.reason, Turns: 1}})
		if n := strings.Count(buf.String(), c.reason); n != c.want {
			t.Errorf("%s: %q printed %d times:\n%s", c.status, c.reason, n, buf.String())
		}
	}
}

// TestPrinterCounts: a count of one is followed by the singular, any
// other by the plural, in every line that counts something.
func TestPrinterCounts(t *testing.T) {
	call := &model.ToolCall{ID: "1", Name: "bash", Input: `{"command":"x"}`}
	for _, tc := range []struct {
		name string
		ev   agent.Event
		want string
	}{
		{"run of one", agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted, Turns: 1, Calls: 1, Usage: model.Usage{InputTokens: 5, OutputTokens: 1}}},
			"completed after 1 turn and 1 tool call · 5 input / 1 output token\n"},
		{"run of two", agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted, Turns: 2, Calls: 0, Usage: model.Usage{InputTokens: 5, OutputTokens: 2}}},
			"completed after 2 turns and 0 tool calls · 5 input / 2 output tokens\n"},
		{"compaction of one", agent.Event{Type: agent.EventCompacted, Compaction: &compact.Record{Reason: "auto", Replaced: 1, TokensBefore: 9, TokensAfter: 1}},
			"context compacted (auto): 1 item replaced by a summary, about 9 → 1 token\n"},
		{"compaction of two", agent.Event{Type: agent.EventCompacted, Compaction: &compact.Record{Reason: "auto", Replaced: 2, TokensBefore: 9, TokensAfter: 3}},
			"context compacted (auto): 2 items replaced by a summary, about 9 → 3 tokens\n"},
		{"one more line", agent.Event{Type: agent.EventCallCompleted, Call: call, Result: &model.ToolResult{Text: "1\n2\n3\n4\n5\n6\n7"}}, "… 1 more line\n"},
		{"two more lines", agent.Event{Type: agent.EventCallCompleted, Call: call, Result: &model.ToolResult{Text: "1\n2\n3\n4\n5\n6\n7\n8"}}, "… 2 more lines\n"},
	} {
		var buf bytes.Buffer
		(&Printer{W: &buf}).Observe(tc.ev)
		if !strings.Contains(buf.String(), tc.want) {
			t.Errorf("%s: printed %q, want %q in it", tc.name, buf.String(), tc.want)
		}
	}
}

// Package openai binds the Responses API's client-executed typed tools:
// apply_patch (one create/update/delete operation with a V4A diff) and shell
// (a list of commands run in order in the session's shell).
package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

// Name is the surface name.
const Name = "openai"

// ApplyPatch binds {"type":"apply_patch"}: the call's input is its operation
// object {"type", "path", "diff"}.
type ApplyPatch struct{}

// Spec implements surface.Binding.
func (ApplyPatch) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolTyped, Name: "apply_patch", Type: "apply_patch"}
}

// Decode implements surface.Binding.
func (ApplyPatch) Decode(c model.ToolCall) ([]tool.Call, error) {
	var op tool.PatchOpArgs
	if err := surface.DecodeJSON("apply_patch", c.Input, &op, "type", "path"); err != nil {
		return nil, err
	}
	if op.Type != "delete_file" && op.Diff == "" && op.Type != "create_file" {
		return nil, tool.Errorf(tool.ErrInvalidInput, "apply_patch: %s needs a diff", op.Type)
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpPatchOp, Raw: tool.Raw(c.Input), Args: &op}}, nil
}

// Status is the apply_patch_call_output status of a result.
func Status(r model.ToolResult) string {
	if r.IsError {
		return "failed"
	}
	return "completed"
}

// Encode implements surface.Binding: the output text of an
// apply_patch_call_output (status completed or failed).
func (ApplyPatch) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	if r.Err != nil {
		return model.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Text: r.Err.Message}
	}
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: r.Output}
}

// Shell binds {"type":"shell"}: the call's input is its action
// {"commands": [...], "timeout_ms", "max_output_length"}.
type Shell struct{}

// Spec implements surface.Binding.
func (Shell) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolTyped, Name: "shell", Type: "shell", Options: map[string]any{"environment": map[string]any{"type": "local"}}}
}

type shellAction struct {
	Commands        []string `json:"commands"`
	TimeoutMS       int64    `json:"timeout_ms"`
	MaxOutputLength int      `json:"max_output_length"`
}

// Decode implements surface.Binding: one OpExec per command, in order.
func (Shell) Decode(c model.ToolCall) ([]tool.Call, error) {
	var a shellAction
	if err := surface.DecodeJSON("shell", c.Input, &a, "commands"); err != nil {
		return nil, err
	}
	if len(a.Commands) == 0 {
		return nil, tool.Errorf(tool.ErrInvalidInput, "shell: commands is empty")
	}
	calls := make([]tool.Call, len(a.Commands))
	for i, cmd := range a.Commands {
		calls[i] = tool.Call{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpExec, Raw: tool.Raw(c.Input), Args: &tool.ExecArgs{Command: cmd, TimeoutMS: a.TimeoutMS}}
	}
	return calls, nil
}

// OutputEntry is one command's entry of a shell_call_output.
type OutputEntry struct {
	Stdout  string  `json:"stdout"`
	Stderr  string  `json:"stderr"`
	Outcome Outcome `json:"outcome"`
}

// Outcome is an entry's outcome: {"type":"exit","exit_code":N} or
// {"type":"timeout"}.
type Outcome struct {
	Type     string `json:"type"`
	ExitCode *int   `json:"exit_code,omitempty"`
}

// Encode implements surface.Binding: Native holds the shell_call_output's
// entries (cut to max_output_length characters per stream, head and tail),
// Text a readable rendering of them.
func (Shell) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	var a shellAction
	json.Unmarshal([]byte(c.Input), &a)
	entries := make([]OutputEntry, len(rs))
	var sb strings.Builder
	failed := false
	for i, r := range rs {
		e := OutputEntry{Stdout: cut(r.Stdout, a.MaxOutputLength), Stderr: cut(r.Stderr, a.MaxOutputLength)}
		switch {
		case r.TimedOut:
			e.Outcome = Outcome{Type: "timeout"}
			failed = true
		case r.ExitCode != nil:
			code := *r.ExitCode
			e.Outcome = Outcome{Type: "exit", ExitCode: &code}
			failed = failed || code != 0
		default:
			code := -1
			e.Outcome = Outcome{Type: "exit", ExitCode: &code}
			if r.Err != nil {
				e.Stderr += r.Err.Message
			}
			failed = true
		}
		entries[i] = e
		if len(rs) > 1 {
			fmt.Fprintf(&sb, "$ %s\n", a.Commands[i])
		}
		sb.WriteString(e.Stdout)
		if e.Stderr != "" {
			if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
				sb.WriteByte('\n')
			}
			sb.WriteString("[stderr]\n" + e.Stderr)
		}
		if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
			sb.WriteByte('\n')
		}
		if e.Outcome.Type == "timeout" {
			fmt.Fprintf(&sb, "[timed out after %s]\n", time.Duration(a.TimeoutMS)*time.Millisecond)
		} else {
			fmt.Fprintf(&sb, "[exit code: %d]\n", *e.Outcome.ExitCode)
		}
	}
	native, _ := json.Marshal(entries)
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: strings.TrimSuffix(sb.String(), "\n"), IsError: failed, Native: native}
}

// cut keeps the head and tail of s within n characters (0 = no limit).
func cut(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	half := n / 2
	return s[:half] + fmt.Sprintf("\n[... %d characters omitted ...]\n", len(s)-2*half) + s[len(s)-half:]
}

// Bindings returns the openai surface: the typed shell and apply_patch.
func Bindings(surface.Profile) []surface.Binding {
	return []surface.Binding{Shell{}, ApplyPatch{}}
}

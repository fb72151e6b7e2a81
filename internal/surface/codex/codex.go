// Package codex binds the tools OpenAI's codex-family models are trained on:
// apply_patch as a freeform custom tool, constrained by its Lark grammar,
// taking the whole "*** Begin Patch" … "*** End Patch" envelope, and the
// shell_command function tool.
package codex

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

// Name is the surface name.
const Name = "codex"

// Grammar is the Lark grammar of apply_patch's input, as Codex declares it.
//
//go:embed apply_patch.lark
var Grammar string

// ApplyPatch binds the freeform apply_patch tool.
type ApplyPatch struct{}

// Spec implements surface.Binding.
func (ApplyPatch) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolCustom, Name: "apply_patch",
		Description: "Use the `apply_patch` tool to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON.",
		Options:     map[string]any{"format": map[string]any{"type": "grammar", "syntax": "lark", "definition": Grammar}}}
}

// Decode implements surface.Binding: the input is the envelope itself.
func (ApplyPatch) Decode(c model.ToolCall) ([]tool.Call, error) {
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpPatch, Raw: tool.Raw(c.Input), Args: &tool.PatchArgs{Text: c.Input}}}, nil
}

// noFilesModified is the message of a patch without any file operation,
// Codex's (and the patch engine's): Codex reports it from applying the
// patch, not from verifying it.
const noFilesModified = "No files were modified."

// Encode implements surface.Binding, in Codex's words: a patch that does
// not parse or does not apply to the files as they are fails verification
// ("apply_patch verification failed: " and the reason); a verified patch is
// applied as a command is run, so its result is rendered as one (Exit code
// 0, the wall time, and the summary as its output; exit code 1 and the
// reason when writing failed or the patch changes no file). A patch the
// session refuses to apply at all (a read-only sandbox's, tool.ErrReadOnly
// with the reason "sandbox") is "patch rejected: " and why, as Codex
// rejects one its sandbox policy does not allow.
func (ApplyPatch) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	if r.Err == nil {
		return model.ToolResult{CallID: c.ID, Name: c.Name, Text: execOutput(0, r.Wall, r.Output)}
	}
	text := "apply_patch verification failed: " + r.Err.Message
	switch {
	case r.Err.Kind == tool.ErrIO, r.Err.Kind == tool.ErrCanceled, r.Err.Message == noFilesModified:
		text = execOutput(1, r.Wall, r.Err.Message+"\n")
	case r.Err.Kind == tool.ErrReadOnly && r.Err.Reason == "sandbox":
		text = "patch rejected: " + r.Err.Message
	}
	return model.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Text: text}
}

// ShellCommand binds shell_command, the function tool the codex family is
// trained on for running commands: a script for the user's shell, with an
// optional working directory and timeout. Each command runs in the
// session's persistent shell; with workdir it runs in a subshell there, so
// the session's own directory does not move (Codex starts a fresh process
// in workdir). "login" is accepted and ignored: the session's shell is set
// up once.
//
// The result is Codex's rendering (execOutput):
//
//	Exit code: 0
//	Wall time: 0.4 seconds
//	Output:
//	<stdout and stderr>
//
// A command that times out reports exit code 124 and starts its output with
// "command timed out after N milliseconds", N how long it ran, as Codex
// does.
//
// With Escalation set, the tool also declares Codex's optional
// sandbox_permissions and justification parameters (see
// surface.EscalationProps), through which the model asks to run a command
// with more than the sandbox allows; the call carries the request in
// tool.ExecArgs.Escalate for the approval layer.
type ShellCommand struct {
	Escalation bool
}

// Escalating implements surface.Escalator.
func (ShellCommand) Escalating() surface.Binding { return ShellCommand{Escalation: true} }

// Spec implements surface.Binding.
func (s ShellCommand) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolFunction, Name: "shell_command",
		Description: "Runs a shell command and returns its output.\n- Always set the `workdir` param when using the shell_command function. Do not use `cd` unless absolutely necessary.",
		Parameters: surface.Schema(surface.WithEscalationProps(map[string]any{
			"command":    map[string]any{"type": "string", "description": "The shell script to execute in the user's default shell"},
			"workdir":    map[string]any{"type": "string", "description": "The working directory to execute the command in"},
			"login":      map[string]any{"type": "boolean", "description": "Whether to run the shell with login shell semantics. Defaults to true."},
			"timeout_ms": map[string]any{"type": "number", "description": "The timeout for the command in milliseconds"},
		}, s.Escalation), "command")}
}

// Decode implements surface.Binding. The escalation parameters are decoded
// whether or not they were declared.
func (ShellCommand) Decode(c model.ToolCall) ([]tool.Call, error) {
	var in struct {
		Command       string  `json:"command"`
		Workdir       string  `json:"workdir"`
		Login         *bool   `json:"login"`
		TimeoutMS     float64 `json:"timeout_ms"`
		Permissions   string  `json:"sandbox_permissions"`
		Justification string  `json:"justification"`
	}
	if err := surface.DecodeJSON("shell_command", c.Input, &in, "command"); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Command) == "" {
		return nil, tool.Errorf(tool.ErrInvalidInput, "shell_command: command is empty")
	}
	if in.TimeoutMS < 0 || in.TimeoutMS > maxTimeoutMS {
		return nil, tool.Errorf(tool.ErrInvalidInput, "shell_command: timeout_ms must be between 0 and %d (24 hours), got %g", maxTimeoutMS, in.TimeoutMS)
	}
	escalate, why, err := surface.DecodeEscalation("shell_command", in.Permissions, in.Justification)
	if err != nil {
		return nil, err
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpExec, Raw: tool.Raw(c.Input),
		Args: &tool.ExecArgs{Command: in.Command, TimeoutMS: int64(in.TimeoutMS), Dir: in.Workdir, Escalate: escalate, Justification: why}}}, nil
}

// maxTimeoutMS is the longest timeout a call may ask for.
const maxTimeoutMS = 24 * 60 * 60 * 1000

// timeoutExitCode is the exit code Codex reports for a command it killed at
// its timeout.
const timeoutExitCode = 124

// Encode implements surface.Binding.
func (ShellCommand) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	out := r.Stdout
	if r.Stderr != "" {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += r.Stderr
	}
	code := -1
	switch {
	case r.TimedOut:
		code = timeoutExitCode
		out = fmt.Sprintf("command timed out after %d milliseconds\n", r.Wall.Milliseconds()) + out
	case r.ExitCode != nil:
		code = *r.ExitCode
		if r.Err != nil && r.Err.Kind != tool.ErrExit {
			out += "\n" + r.Err.Message
		}
	case r.Err != nil:
		// A cancelled command keeps what it printed before it was killed.
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += r.Err.Message
	}
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: execOutput(code, r.Wall, out), IsError: code != 0}
}

// Bindings returns the codex surface: the freeform apply_patch and
// shell_command.
func Bindings(surface.Profile) []surface.Binding {
	return []surface.Binding{ShellCommand{}, ApplyPatch{}}
}

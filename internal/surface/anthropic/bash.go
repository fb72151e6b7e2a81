package anthropic

import (
	"fmt"
	"strings"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// Bash binds bash_20250124 to the persistent shell.
//
// Output: stdout, then stderr, each without its final newline (as the
// reference strips it), joined by a newline; a non-zero exit adds
// "Exit code: N" and makes the result an error. The reference drops stdout
// whenever there is stderr and reports no exit code; Truss keeps both,
// since a model that cannot see the output of a failing build cannot fix it.
type Bash struct{}

// Spec implements surface.Binding.
func (Bash) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolTyped, Name: "bash", Type: "bash_20250124"}
}

// Decode implements surface.Binding.
func (Bash) Decode(c model.ToolCall) ([]tool.Call, error) {
	var in struct {
		Command *string `json:"command"`
		Restart bool    `json:"restart"`
	}
	if err := decodeInput("bash", c.Input, &in); err != nil {
		return nil, err
	}
	if in.Restart {
		return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpRestart, Raw: tool.Raw(c.Input)}}, nil
	}
	if in.Command == nil || strings.TrimSpace(*in.Command) == "" {
		return nil, inputErr("no command provided.")
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpExec, Raw: tool.Raw(c.Input), Args: &tool.ExecArgs{Command: *in.Command}}}, nil
}

// EncodeError implements surface.ErrorEncoder.
func (Bash) EncodeError(c model.ToolCall, err error) model.ToolResult {
	return errorResult(c, err.Error())
}

// Encode implements surface.Binding.
func (Bash) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	if r.Op == tool.OpRestart {
		if r.Err != nil {
			return errorResult(c, r.Err.Message)
		}
		return textResult(c, "tool has been restarted.")
	}
	out := strings.TrimSuffix(r.Stdout, "\n")
	if e := strings.TrimSuffix(r.Stderr, "\n"); e != "" {
		if out != "" {
			out += "\n"
		}
		out += e
	}
	switch {
	case r.TimedOut:
		msg := fmt.Sprintf("timed out: bash has not returned in %s and was restarted (the working directory and exported variables were kept)", seconds(r))
		if out != "" {
			msg = out + "\n" + msg
		}
		return errorResult(c, msg)
	case r.Err != nil && r.Err.Kind == tool.ErrExit:
		if out != "" {
			out += "\n"
		}
		return errorResult(c, fmt.Sprintf("%sExit code: %d", out, *r.ExitCode))
	case r.Err != nil && r.ExitCode != nil:
		if out != "" {
			out += "\n"
		}
		return errorResult(c, fmt.Sprintf("%sbash has exited with returncode %d; a new session starts with the next command", out, *r.ExitCode))
	case r.Err != nil:
		// A cancelled command keeps what it printed before it was killed.
		if out != "" {
			return errorResult(c, out+"\n"+r.Err.Message)
		}
		return errorResult(c, r.Err.Message)
	}
	if strings.TrimSpace(out) == "" {
		// The API refuses a blank text block; say that there was none.
		return textResult(c, NoOutput)
	}
	return textResult(c, out)
}

// NoOutput is the result of a command that printed nothing (or only
// whitespace), in the words Claude Code uses.
const NoOutput = "(Bash completed with no output)"

func seconds(r tool.Result) string {
	// The shell's message carries the duration ("after 2m0s"); the model
	// reads the reference's "120.0 seconds" form.
	if i := strings.Index(r.Err.Message, "after "); i >= 0 {
		var d string
		fmt.Sscan(r.Err.Message[i+6:], &d)
		return d
	}
	return "the time limit"
}

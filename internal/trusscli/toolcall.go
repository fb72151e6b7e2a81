package trusscli

import (
	"context"
	"encoding/json"
	"flag"
	"github.com/trussdev/truss/internal/cli"
	"io"
	"os"
	"strings"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
)

// defaultMaxResultChars is how many characters of a tool result the model
// sees by default (--max-result-chars of run, exec and tool call).
const defaultMaxResultChars = 30000

// toolCallOutput is the --json form of truss tool call.
type toolCallOutput struct {
	IsError bool `json:"is_error"`
	// Output is the text the model reads, cut as the agent loop cuts it;
	// FullOutput the text before the cut, when the cut changed it.
	Output     string `json:"output"`
	FullOutput string `json:"full_output,omitempty"`
	// Native is the structured result a typed tool's wire form carries
	// (a Responses shell_call_output's entries).
	Native  json.RawMessage `json:"native,omitempty"`
	Surface string          `json:"surface"`
	Tool    string          `json:"tool"`
	Calls   []tool.Call     `json:"calls,omitempty"`
	Results []tool.Result   `json:"results,omitempty"`
}

// cmdToolCall executes exactly one call locally, as the model would have sent
// it, and prints the text the model would receive: cut to
// --max-result-chars as the agent loop cuts it, with nothing added, its
// controls neutralised as run's transcript shows them (--json carries the
// exact bytes). Exit status: 0 for a success result, 1 for an error
// result, 2 for a usage error.
func cmdToolCall(args []string, stdout, stderr io.Writer) error {
	fset := cli.NewFlagSet("tool call", stderr)
	var w workspaceFlags
	w.register(fset)
	surfaceName := fset.String("surface", "generic", "the surface the call arrives through")
	name := fset.String("tool", "", "the tool name, as the model calls it")
	input := fset.String("input", "", "the call's input as the model sent it (JSON arguments, or freeform text)")
	inputFile := fset.String("input-file", "", "read the input from this file (- for standard input)")
	asJSON := fset.Bool("json", false, "print the normalized result as one JSON object")
	maxResult := fset.Int("max-result-chars", defaultMaxResultChars, "cut the result text to this many characters (head and tail), as a run does")
	if err := cli.ParseNone(fset, args); err != nil {
		return err
	}
	if *name == "" {
		return cli.Usagef("--tool is required")
	}
	if *maxResult < 1 {
		return cli.Usagef("--max-result-chars must be at least 1")
	}
	given := map[string]bool{}
	fset.Visit(func(f *flag.Flag) { given[f.Name] = true })
	in := *input
	switch {
	case !given["input"] && !given["input-file"]:
		return cli.Usagef("give the call's input with --input JSON or --input-file FILE (--input '{}' for none)")
	case *inputFile != "" && *input != "":
		return cli.Usagef("give --input or --input-file, not both")
	case *inputFile == "-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return cli.Usagef("reading standard input: %v", err)
		}
		in = string(b)
	case *inputFile != "":
		b, err := os.ReadFile(*inputFile)
		if err != nil {
			return cli.Usagef("--input-file: %v", err)
		}
		in = string(b)
	}
	if fi, err := os.Stat(w.root); err != nil || !fi.IsDir() {
		return cli.Usagef("--root %s is not a directory", w.root)
	}
	set, err := harness.ToolCallSet(*surfaceName)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	// The memory tool's directory is the project's under the user's data
	// directory, as truss run's (--memory-dir's default): never in the
	// workspace, where a session's commands could have made it a link
	// to anywhere.
	// validate is offered on every surface when the project's checks are
	// known (detected, or from .truss/config.toml).
	o := harness.Options{Version: version, NoModel: true, NoSession: true, Tools: set, OnWarning: warner(stderr)}
	if err := w.options(&o); err != nil {
		return err
	}
	s, err := harness.Open(context.Background(), o)
	if err != nil {
		if harness.IsConfigError(err) {
			return err
		}
		return cli.Usagef("%v", err)
	}
	defer s.Close()

	mc := model.ToolCall{ID: "call_local", Name: *name, Kind: model.ToolFunction, Input: in}
	out := toolCallOutput{Surface: set.Surface, Tool: *name}
	var res model.ToolResult
	if b, ok := set.Lookup(*name); !ok {
		res = set.UnknownTool(mc)
	} else if spec := b.Spec(); true {
		mc.Kind = spec.Kind
		calls, err := b.Decode(mc)
		if err != nil {
			res = surface.DecodeFailure(b, mc, err)
		} else {
			results := make([]tool.Result, len(calls))
			for i, c := range calls {
				results[i] = s.Execute(context.Background(), c)
			}
			res = b.Encode(mc, results)
			out.Calls, out.Results = calls, results
		}
	}
	text := agent.Truncate(res.Text, *maxResult)
	out.IsError, out.Output, out.Native = res.IsError, text, res.Native
	if text != res.Text {
		out.FullOutput = res.Text
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else if err := writeModelText(stdout, text, cli.IsTerminal(stdout)); err != nil {
		return err
	}
	if res.IsError {
		return cli.ExitError{Code: 1}
	}
	return nil
}

// writeModelText prints the text the model reads for a person, as run's
// transcript does: neutralised by termsafe wherever it goes (a pipe to a
// pager or to cat reaches the terminal too), so that a file's or a
// command's escape sequences cannot act on the user's screen, and with
// nothing added but, on a terminal, a final newline. --json carries the
// exact bytes.
func writeModelText(w io.Writer, text string, terminal bool) error {
	text = termsafe.String(text)
	if terminal && text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	_, err := io.WriteString(w, text)
	return err
}

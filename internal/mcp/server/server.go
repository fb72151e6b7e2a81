// Package server is Truss's MCP server: it exposes Truss's own executors
// (view, create, replace, insert, patch, shell and, when the project's
// checks are known, validate) to any MCP client, on the official go-sdk.
// Every tool has an outputSchema, and each result carries complete
// structured content beside the text, which is rendered as Truss's generic
// surface renders it. Calls are reported to an agent.Observer as the agent
// loop reports them, each call its own turn, so a session's recorder
// writes and seals them.
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/tool"
)

// Surface is the surface name of calls that arrive through Truss's
// own MCP server.
const Surface = "mcp-server"

// Config configures Truss's MCP server.
type Config struct {
	// Name and Version are the server's implementation info.
	Name, Version string
	// Exec runs the calls: the same executors (workspace confinement,
	// sandboxed shell, ledger decorators) a session's agent uses.
	Exec tool.Executor
	// Observer sees every call as the agent loop reports it (call started
	// and completed, each call its own turn), so the session's recorder
	// writes and seals it; nil sees nothing.
	Observer agent.Observer
	// Validate offers the validate tool (the project's checks are known).
	Validate bool
	// Instructions are sent to clients in the handshake.
	Instructions string
}

// The tools' inputs.
type (
	viewIn struct {
		Path      string `json:"path" jsonschema:"the file or directory, relative to the workspace root or absolute inside it"`
		StartLine int    `json:"start_line,omitempty" jsonschema:"the first line to show (1-based); a file only"`
		EndLine   int    `json:"end_line,omitempty" jsonschema:"the last line to show, -1 for the end of the file"`
	}
	createIn struct {
		Path    string `json:"path" jsonschema:"the file to create or overwrite"`
		Content string `json:"content" jsonschema:"the whole content of the file"`
	}
	replaceIn struct {
		Path       string `json:"path" jsonschema:"the file to edit"`
		OldStr     string `json:"old_str" jsonschema:"the exact text to replace; it must occur exactly once unless replace_all is set"`
		NewStr     string `json:"new_str" jsonschema:"the text to put in its place"`
		ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence"`
	}
	insertIn struct {
		Path string `json:"path" jsonschema:"the file to edit"`
		Line int    `json:"line" jsonschema:"insert after this line (0 inserts at the start)"`
		Text string `json:"text" jsonschema:"the text to insert"`
	}
	patchIn struct {
		Patch string `json:"patch" jsonschema:"a patch in the apply_patch format: *** Begin Patch, then *** Add File / *** Update File (with @@ hunks) / *** Delete File sections, then *** End Patch"`
	}
	shellIn struct {
		Command   string `json:"command" jsonschema:"the bash command to run in the session's persistent shell"`
		TimeoutMS int64  `json:"timeout_ms,omitempty" jsonschema:"the command's timeout in milliseconds"`
		Workdir   string `json:"workdir,omitempty" jsonschema:"the directory to run in, relative to the shell's; the shell's own directory is unchanged"`
	}
	validateIn struct{}
)

// Tools returns the names of the tools New offers, in the
// order it adds them.
func Tools(validate bool) []string {
	names := []string{"view", "create", "replace", "insert", "patch", "shell"}
	if validate {
		names = append(names, "validate")
	}
	return names
}

// New returns Truss's MCP server: view, create, replace, insert,
// patch, shell and (when configured) validate, each executed by cfg.Exec.
func New(cfg Config) *sdk.Server {
	if cfg.Name == "" {
		cfg.Name = "truss"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: cfg.Name, Title: "Truss", Version: cfg.Version},
		&sdk.ServerOptions{Instructions: cfg.Instructions})
	h := &handler{cfg: cfg}
	ro, destructive := true, false
	add(s, h, &sdk.Tool{Name: "view", Description: "Read a file (with line numbers, optionally a line range) or list a directory two levels deep.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: ro, DestructiveHint: &destructive, IdempotentHint: true}},
		func(in viewIn) (tool.Op, any) {
			return tool.OpView, &tool.ViewArgs{Path: in.Path, Start: in.StartLine, End: in.EndLine}
		}, func(in viewIn, r tool.Result) (viewOut, string, bool) { return viewResult(in.Path, r) })
	add(s, h, &sdk.Tool{Name: "create", Description: "Create a file, or overwrite it, with the given content (parent directories are made)."},
		func(in createIn) (tool.Op, any) {
			return tool.OpWrite, &tool.CreateArgs{Path: in.Path, Content: in.Content}
		}, edited[createIn])
	add(s, h, &sdk.Tool{Name: "replace", Description: "Replace an exact, unique piece of text in a file."},
		func(in replaceIn) (tool.Op, any) {
			return tool.OpReplace, &tool.ReplaceArgs{Path: in.Path, Old: in.OldStr, New: in.NewStr, All: in.ReplaceAll}
		}, edited[replaceIn])
	add(s, h, &sdk.Tool{Name: "insert", Description: "Insert text after a line of a file."},
		func(in insertIn) (tool.Op, any) {
			return tool.OpInsert, &tool.InsertArgs{Path: in.Path, Line: in.Line, Text: in.Text}
		}, edited[insertIn])
	add(s, h, &sdk.Tool{Name: "patch", Description: "Apply a multi-file patch in the apply_patch format, all or nothing."},
		func(in patchIn) (tool.Op, any) { return tool.OpPatch, &tool.PatchArgs{Text: in.Patch} }, edited[patchIn])
	add(s, h, &sdk.Tool{Name: "shell", Description: "Run a bash command in the session's persistent shell, inside Truss's sandbox; returns its output and exit code."},
		func(in shellIn) (tool.Op, any) {
			return tool.OpExec, &tool.ExecArgs{Command: in.Command, TimeoutMS: in.TimeoutMS, Dir: in.Workdir}
		}, func(_ shellIn, r tool.Result) (shellOut, string, bool) { return shellResult(r) })
	if cfg.Validate {
		add(s, h, &sdk.Tool{Name: "validate", Description: "Run the project's checks (its test command) in a fresh sandboxed shell and report passed and failed counts and the first failures."},
			func(validateIn) (tool.Op, any) { return tool.OpValidate, &tool.ValidateArgs{} },
			func(_ validateIn, r tool.Result) (validateOut, string, bool) { return validateResult(r) })
	}
	return s
}

// The tools' structured results. Each is complete — the output the text
// block shows is in it too, since some clients (Claude Code) give the model
// only the structured content and others (Codex) only the text — and the
// text block is rendered from it, so the two always agree.
type (
	// errorOut is a failed call's error.
	errorOut struct {
		Kind    tool.ErrorKind `json:"kind" jsonschema:"the kind of failure (invalid_input, not_found, outside_workspace, no_match, exit_status, timeout, ...)"`
		Message string         `json:"message" jsonschema:"what went wrong, as a sentence"`
	}
	entryOut struct {
		Path  string `json:"path" jsonschema:"the entry's path relative to the listed directory"`
		IsDir bool   `json:"is_dir,omitempty" jsonschema:"the entry is a directory"`
	}
	viewOut struct {
		// A text file's shown lines.
		Content    string `json:"content,omitempty" jsonschema:"the shown lines of a text file, exactly as in the file, without the line numbers the text block adds"`
		StartLine  int    `json:"start_line,omitempty" jsonschema:"the number of the first shown line (1-based)"`
		EndLine    int    `json:"end_line,omitempty" jsonschema:"the number of the last shown line"`
		TotalLines int    `json:"total_lines,omitempty" jsonschema:"how many lines the file has"`
		// A binary file's facts instead of its bytes.
		Binary *tool.Binary `json:"binary,omitempty" jsonschema:"set when the file is binary: its size, detected media type and why it is not text; nothing of it is shown"`
		// A directory's entries, two levels deep.
		Entries   []entryOut `json:"entries,omitempty" jsonschema:"a directory's entries, two levels deep, hidden ones left out"`
		Truncated bool       `json:"truncated,omitempty" jsonschema:"the listing was cut short"`
		Error     *errorOut  `json:"error,omitempty"`
	}
	changeOut struct {
		Path    string          `json:"path" jsonschema:"the file, relative to the workspace root"`
		Kind    tool.ChangeKind `json:"kind" jsonschema:"add, update or delete"`
		MovedTo string          `json:"moved_to,omitempty" jsonschema:"the file's new path when it was moved"`
	}
	snippetOut struct {
		StartLine int    `json:"start_line" jsonschema:"the number of the snippet's first line (1-based)"`
		Text      string `json:"text" jsonschema:"the lines around the edit as they now read, without line numbers"`
	}
	editOut struct {
		Output  string      `json:"output,omitempty" jsonschema:"what was done, as a sentence"`
		Snippet *snippetOut `json:"snippet,omitempty" jsonschema:"the edited lines with a few lines of context, as the file now reads (replace and insert)"`
		Changes []changeOut `json:"changes,omitempty" jsonschema:"the files changed"`
		Error   *errorOut   `json:"error,omitempty"`
	}
	shellOut struct {
		Stdout    string    `json:"stdout" jsonschema:"the command's standard output (head and tail when it passed 1 MiB)"`
		Stderr    string    `json:"stderr" jsonschema:"the command's standard error (head and tail when it passed 1 MiB)"`
		ExitCode  *int      `json:"exit_code,omitempty" jsonschema:"the exit status; absent when the command did not finish"`
		TimedOut  bool      `json:"timed_out" jsonschema:"the command outlived its timeout and was killed"`
		Truncated bool      `json:"truncated,omitempty" jsonschema:"an output passed 1 MiB and only its head and tail are kept"`
		Error     *errorOut `json:"error,omitempty" jsonschema:"why the command did not complete (timeout, the shell ended, cancelled); a non-zero exit is only exit_code"`
	}
	validateOut struct {
		Passed   bool   `json:"passed" jsonschema:"the checks passed"`
		Summary  string `json:"summary" jsonschema:"the verdict, the test command, passed and failed counts and the first failures"`
		TimedOut bool   `json:"timed_out,omitempty" jsonschema:"the test command outlived its timeout"`
	}
)

func errOut(r tool.Result) *errorOut {
	if r.Err == nil {
		return nil
	}
	return &errorOut{Kind: r.Err.Kind, Message: r.Err.Message}
}

// viewResult is a view's structured result and text block: the text is
// generic's read_file rendering, the structured content the same lines
// unnumbered (long lines whole), a binary file's facts, or the entries.
func viewResult(path string, r tool.Result) (viewOut, string, bool) {
	out := viewOut{Error: errOut(r)}
	if out.Error != nil {
		return out, "Error: " + out.Error.Message, true
	}
	f := r.File
	if f == nil {
		for _, e := range r.Entries {
			out.Entries = append(out.Entries, entryOut{Path: e.Path, IsDir: e.IsDir})
		}
		out.Truncated = r.Truncated
		return out, generic.RenderEntries(r.Entries, r.Truncated), false
	}
	if f.Binary != nil {
		out.Binary = f.Binary
		return out, generic.RenderBinary(path, f.Binary, "view"), true
	}
	text := generic.RenderNumbered(f, generic.DefaultReadLines)
	total := f.TotalLines
	if f.FinalNewline {
		total-- // the piece after the final newline is not a line here
	}
	if total == 0 || (total == 1 && f.Content == "") {
		return out, text, false // the file is empty
	}
	lines := strings.SplitN(f.Content, "\n", generic.DefaultReadLines+1)
	n := min(generic.DefaultReadLines, total-f.StartLine+1, len(lines))
	out.Content = strings.Join(lines[:n], "\n")
	out.StartLine, out.EndLine, out.TotalLines = f.StartLine, f.StartLine+n-1, total
	return out, text, false
}

// editResult is the structured result and text of create, replace, insert
// and patch: what was done, the edited lines (numbered in the text), and
// the files changed.
func editResult(r tool.Result) (editOut, string, bool) {
	out := editOut{Output: strings.TrimSpace(r.Output), Error: errOut(r)}
	if out.Error != nil {
		return out, "Error: " + out.Error.Message, true
	}
	var sb strings.Builder
	sb.WriteString(out.Output)
	if r.Edit != nil {
		first, lines := generic.SnippetLines(r.Edit, 3)
		out.Snippet = &snippetOut{StartLine: first, Text: strings.Join(lines, "\n")}
		sb.WriteString(". The edited lines now read:\n" + generic.NumberLines(first, lines))
	}
	for _, ch := range r.Changes {
		out.Changes = append(out.Changes, changeOut{Path: ch.Path, Kind: ch.Kind, MovedTo: ch.MovedTo})
		if sb.Len() > 0 {
			sb.WriteString("\n")
		}
		fmt.Fprintf(&sb, "%s %s", ch.Kind, ch.Path)
		if ch.MovedTo != "" {
			fmt.Fprintf(&sb, " -> %s", ch.MovedTo)
		}
	}
	if sb.Len() == 0 {
		sb.WriteString("done")
	}
	return out, sb.String(), false
}

// shellResult is a command's structured result and text: the generic
// bash rendering of the same output, exit code and error.
func shellResult(r tool.Result) (shellOut, string, bool) {
	out := shellOut{Stdout: r.Stdout, Stderr: r.Stderr, ExitCode: r.ExitCode, TimedOut: r.TimedOut, Truncated: r.Truncated, Error: errOut(r)}
	if r.Err != nil && r.Err.Kind == tool.ErrExit {
		out.Error = nil // a non-zero exit_code says it, as the text's [exit code: N] does
	}
	return out, generic.RenderShell(r), r.Err != nil
}

// validateResult is the checks' verdict: the summary the text shows.
func validateResult(r tool.Result) (validateOut, string, bool) {
	out := validateOut{Passed: r.Err == nil, Summary: r.Output, TimedOut: r.TimedOut}
	if r.Err != nil {
		if out.Summary == "" {
			out.Summary = r.Err.Message
		}
		return out, "Error: " + out.Summary, true
	}
	return out, out.Summary, false
}

// edited is the result of an editing tool, whatever its input.
func edited[In any](_ In, r tool.Result) (editOut, string, bool) { return editResult(r) }

// handler runs the calls and reports them.
type handler struct {
	cfg Config
	mu  sync.Mutex
	n   int
}

// add registers a tool whose typed input becomes one operation and whose
// result becomes the structured content Out (its schema is the tool's
// outputSchema) and the text block.
func add[In, Out any](s *sdk.Server, h *handler, t *sdk.Tool, op func(In) (tool.Op, any), result func(In, tool.Result) (Out, string, bool)) {
	sdk.AddTool(s, t, func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
		o, args := op(in)
		raw, _ := json.Marshal(req.Params.Arguments)
		var out Out
		res := h.call(ctx, t.Name, o, args, raw, func(r tool.Result) (string, bool) {
			var text string
			var isErr bool
			out, text, isErr = result(in, r)
			return text, isErr
		})
		return res, out, nil
	})
}

// call runs one call, renders its result with render and reports it to
// the observer.
func (h *handler) call(ctx context.Context, name string, op tool.Op, args any, raw []byte, render func(tool.Result) (string, bool)) *sdk.CallToolResult {
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	id := fmt.Sprintf("mcp_%d", n)
	c := tool.Call{ID: id, Tool: name, Surface: Surface, Op: op, Args: args, Raw: tool.Raw(raw)}
	mc := &model.ToolCall{ID: id, Name: name, Input: string(raw), Kind: model.ToolFunction}
	obs := h.cfg.Observer
	if obs != nil {
		obs.Observe(agent.Event{Type: agent.EventCallStarted, Turn: n, Call: mc, Ops: []tool.Call{c}})
	}
	r, p := agent.Execute(ctx, h.cfg.Exec, c)
	r.CallID = id
	text, isErr := render(r)
	if obs != nil {
		mr := &model.ToolResult{CallID: id, Name: name, Text: text, IsError: isErr}
		ev := agent.Event{Type: agent.EventCallCompleted, Turn: n, Call: mc, Ops: []tool.Call{c}, Results: []tool.Result{r}, Result: mr, FullText: text}
		if p != nil {
			ev.Err, ev.FullText = p, fmt.Sprintf("%s\n\n[%v]\n%s", text, p, p.Stack)
		}
		obs.Observe(ev)
		obs.Observe(agent.Event{Type: agent.EventTurnCompleted, Turn: n})
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: isErr}
}

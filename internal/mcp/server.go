package mcp

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

// ServerSurface is the surface name of calls that arrive through Truss's
// own MCP server.
const ServerSurface = "mcp-server"

// ServeConfig configures Truss's MCP server.
type ServeConfig struct {
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

// ServedTools returns the names of the tools NewServer offers, in the
// order it adds them.
func ServedTools(validate bool) []string {
	names := []string{"view", "create", "replace", "insert", "patch", "shell"}
	if validate {
		names = append(names, "validate")
	}
	return names
}

// NewServer returns Truss's MCP server: view, create, replace, insert,
// patch, shell and (when configured) validate, each executed by cfg.Exec.
func NewServer(cfg ServeConfig) *sdk.Server {
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
		})
	add(s, h, &sdk.Tool{Name: "create", Description: "Create a file, or overwrite it, with the given content (parent directories are made)."},
		func(in createIn) (tool.Op, any) {
			return tool.OpWrite, &tool.CreateArgs{Path: in.Path, Content: in.Content}
		})
	add(s, h, &sdk.Tool{Name: "replace", Description: "Replace an exact, unique piece of text in a file."},
		func(in replaceIn) (tool.Op, any) {
			return tool.OpReplace, &tool.ReplaceArgs{Path: in.Path, Old: in.OldStr, New: in.NewStr, All: in.ReplaceAll}
		})
	add(s, h, &sdk.Tool{Name: "insert", Description: "Insert text after a line of a file."},
		func(in insertIn) (tool.Op, any) {
			return tool.OpInsert, &tool.InsertArgs{Path: in.Path, Line: in.Line, Text: in.Text}
		})
	add(s, h, &sdk.Tool{Name: "patch", Description: "Apply a multi-file patch in the apply_patch format, all or nothing."},
		func(in patchIn) (tool.Op, any) { return tool.OpPatch, &tool.PatchArgs{Text: in.Patch} })
	add(s, h, &sdk.Tool{Name: "shell", Description: "Run a bash command in the session's persistent shell, inside Truss's sandbox; returns its output and exit code."},
		func(in shellIn) (tool.Op, any) {
			return tool.OpExec, &tool.ExecArgs{Command: in.Command, TimeoutMS: in.TimeoutMS, Dir: in.Workdir}
		})
	if cfg.Validate {
		add(s, h, &sdk.Tool{Name: "validate", Description: "Run the project's checks (its test command) in a fresh sandboxed shell and report passed and failed counts and the first failures."},
			func(validateIn) (tool.Op, any) { return tool.OpValidate, &tool.ValidateArgs{} })
	}
	return s
}

// handler runs the calls and reports them.
type handler struct {
	cfg ServeConfig
	mu  sync.Mutex
	n   int
}

// add registers a tool whose typed input becomes one operation.
func add[In any](s *sdk.Server, h *handler, t *sdk.Tool, op func(In) (tool.Op, any)) {
	sdk.AddTool(s, t, func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
		o, args := op(in)
		raw, _ := json.Marshal(req.Params.Arguments)
		return h.call(ctx, t.Name, o, args, raw), nil, nil
	})
}

func (h *handler) call(ctx context.Context, name string, op tool.Op, args any, raw []byte) *sdk.CallToolResult {
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	id := fmt.Sprintf("mcp_%d", n)
	c := tool.Call{ID: id, Tool: name, Surface: ServerSurface, Op: op, Args: args, Raw: tool.Raw(raw)}
	mc := &model.ToolCall{ID: id, Name: name, Input: string(raw), Kind: model.ToolFunction}
	obs := h.cfg.Observer
	if obs != nil {
		obs.Observe(agent.Event{Type: agent.EventCallStarted, Turn: n, Call: mc, Ops: []tool.Call{c}})
	}
	r := h.cfg.Exec.Execute(ctx, c)
	r.CallID = id
	text := render(r)
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: r.Err != nil}
	if st := structured(r); st != nil {
		res.StructuredContent = st
	}
	if obs != nil {
		mr := &model.ToolResult{CallID: id, Name: name, Text: text, IsError: r.Err != nil}
		obs.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: n, Call: mc, Ops: []tool.Call{c}, Results: []tool.Result{r}, Result: mr, FullText: text})
		obs.Observe(agent.Event{Type: agent.EventTurnCompleted, Turn: n})
	}
	return res
}

// render is the text a client reads: the generic surface's rendering.
func render(r tool.Result) string {
	if r.Err != nil && r.Op != tool.OpExec {
		return "Error: " + r.Err.Message
	}
	switch r.Op {
	case tool.OpView:
		if r.File != nil {
			return generic.RenderNumbered(r.File, generic.DefaultReadLines)
		}
		return generic.RenderEntries(r.Entries, r.Truncated)
	case tool.OpExec:
		return generic.RenderShell(r)
	}
	var sb strings.Builder
	sb.WriteString(strings.TrimSpace(r.Output))
	for _, ch := range r.Changes {
		if sb.Len() > 0 {
			sb.WriteString("\n")
		}
		fmt.Fprintf(&sb, "%s %s", ch.Kind, ch.Path)
	}
	if sb.Len() == 0 {
		return "done"
	}
	return sb.String()
}

// structured is the machine-readable part of a result.
func structured(r tool.Result) map[string]any {
	m := map[string]any{}
	if r.ExitCode != nil {
		m["exit_code"] = *r.ExitCode
		m["timed_out"] = r.TimedOut
	}
	if len(r.Changes) > 0 {
		m["changes"] = r.Changes
	}
	if r.Err != nil {
		m["error_kind"] = r.Err.Kind
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// Package generic is Truss's own surface: JSON-schema function tools that
// any tool-calling model can use (Ollama, OpenAI-compatible servers, unknown
// models, and any model when --surface generic forces the baseline).
//
// The tools are read_file, write_file, list_dir, edit_file and bash. Views
// are numbered like `cat -n` (six-wide line number, a tab, the line verbatim),
// so the text after the tab can be copied into edit_file byte for byte.
package generic

import (
	"fmt"
	"strings"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

// Name is the surface name.
const Name = "generic"

// Limits of what a view shows the model.
const (
	DefaultReadLines = 2000 // lines a read_file shows when no limit is given
	MaxLineChars     = 2000 // longer lines are cut, with a marker
)

// Bindings returns the generic tools.
func Bindings() []surface.Binding {
	return []surface.Binding{ReadFile{}, WriteFile{}, ListDir{}, EditFile{}, Bash{}}
}

func prop(typ, desc string) map[string]any { return map[string]any{"type": typ, "description": desc} }

// ReadFile binds read_file.
type ReadFile struct{}

// Spec implements surface.Binding.
func (ReadFile) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolFunction, Name: "read_file",
		Description: "Read a text file. Lines are numbered like `cat -n`: the number, a tab, then the line exactly as in the file. " +
			"Use offset and limit for long files. A directory is listed two levels deep instead.",
		Parameters: surface.Schema(map[string]any{
			"path":   prop("string", "Path of the file, relative to the workspace root or absolute inside it."),
			"offset": prop("integer", "1-based line to start at (default 1)."),
			"limit":  prop("integer", fmt.Sprintf("Number of lines to read (default %d).", DefaultReadLines)),
		}, "path")}
}

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

// Decode implements surface.Binding.
func (b ReadFile) Decode(c model.ToolCall) ([]tool.Call, error) {
	var a readArgs
	if err := surface.DecodeJSON(c.Name, c.Input, &a, "path"); err != nil {
		return nil, err
	}
	if a.Offset < 0 || a.Limit < 0 {
		return nil, tool.Errorf(tool.ErrInvalidInput, "read_file: offset and limit must not be negative")
	}
	// The view runs from offset to the end of the file and Encode cuts it
	// at limit, so a limit past the end is not an error.
	args := &tool.ViewArgs{Path: a.Path}
	if a.Offset > 0 {
		args.Start, args.End = a.Offset, -1
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpView, Raw: []byte(c.Input), Args: args}}, nil
}

// Encode implements surface.Binding.
func (b ReadFile) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	if r.Err != nil {
		return errResult(c, r)
	}
	if r.File == nil {
		return model.ToolResult{CallID: c.ID, Name: c.Name, Text: RenderEntries(r.Entries, r.Truncated)}
	}
	if b := r.File.Binary; b != nil {
		return model.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Text: RenderBinary(r.File.Path, b, c.Name)}
	}
	var a readArgs
	surface.DecodeJSON(c.Name, c.Input, &a)
	limit := a.Limit
	if limit == 0 {
		limit = DefaultReadLines
	}
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: RenderNumbered(r.File, limit)}
}

// RenderBinary says that the file at path is binary, for the tool named
// toolName, instead of showing its bytes.
func RenderBinary(path string, b *tool.Binary, toolName string) string {
	return fmt.Sprintf("Error: %s is a binary file (%s); %s shows only text files.", path, b.Describe(), toolName)
}

// RenderNumbered renders up to limit lines of a view, cat -n style, with a
// closing note when lines remain, and the view's Note in parentheses last
// when it has one (a file past the file tools' bound). The empty piece
// after a final newline is not a line here.
func RenderNumbered(f *tool.FileView, limit int) string {
	total := f.TotalLines
	if f.FinalNewline {
		total--
	}
	if total == 0 || (total == 1 && f.Content == "") {
		return "(the file is empty)"
	}
	var sb strings.Builder
	sb.Grow(len(f.Content) + len(f.Content)/8 + 64)
	n := f.StartLine
	rest := f.Content
	for n <= total && n-f.StartLine < limit {
		line, tail, more := strings.Cut(rest, "\n")
		if len(line) > MaxLineChars {
			line = line[:MaxLineChars] + fmt.Sprintf("… [line cut at %d characters]", MaxLineChars)
		}
		fmt.Fprintf(&sb, "%6d\t%s\n", n, line)
		n++
		rest = tail
		if !more {
			break // the end of a line range
		}
	}
	if n <= total {
		fmt.Fprintf(&sb, "(showing lines %d-%d of %d; use offset=%d to read on)\n", f.StartLine, n-1, total, n)
	}
	if f.Note != "" {
		// A file past the file tools' bound: only its first bytes were read.
		fmt.Fprintf(&sb, "(%s)\n", f.Note)
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// RenderEntries renders a listing, one path a line, directories with a
// trailing slash.
func RenderEntries(es []tool.Entry, truncated bool) string {
	if len(es) == 0 {
		return "(the directory is empty)"
	}
	var sb strings.Builder
	for _, e := range es {
		sb.WriteString(e.Path)
		if e.IsDir {
			sb.WriteByte('/')
		}
		sb.WriteByte('\n')
	}
	if truncated {
		sb.WriteString("(listing cut short; list a subdirectory to see more)\n")
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

func errResult(c model.ToolCall, r tool.Result) model.ToolResult {
	return model.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Text: surface.ErrorText(r)}
}

func okResult(c model.ToolCall, text string) model.ToolResult {
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: text}
}

// WriteFile binds write_file.
type WriteFile struct{}

// Spec implements surface.Binding.
func (WriteFile) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolFunction, Name: "write_file",
		Description: "Create a file or overwrite it with the given content. Parent directories are created. Prefer edit_file to change part of an existing file.",
		Parameters: surface.Schema(map[string]any{
			"path":    prop("string", "Path of the file, relative to the workspace root or absolute inside it."),
			"content": prop("string", "The complete new content of the file."),
		}, "path", "content")}
}

// Decode implements surface.Binding.
func (WriteFile) Decode(c model.ToolCall) ([]tool.Call, error) {
	var a struct{ Path, Content string }
	if err := surface.DecodeJSON(c.Name, c.Input, &a, "path", "content"); err != nil {
		return nil, err
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpWrite, Raw: []byte(c.Input),
		Args: &tool.CreateArgs{Path: a.Path, Content: a.Content}}}, nil
}

// Encode implements surface.Binding.
func (WriteFile) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	if rs[0].Err != nil {
		return errResult(c, rs[0])
	}
	return okResult(c, rs[0].Output)
}

// ListDir binds list_dir.
type ListDir struct{}

// Spec implements surface.Binding.
func (ListDir) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolFunction, Name: "list_dir",
		Description: "List a directory, two levels deep by default, leaving out hidden entries. Directories end with '/'.",
		Parameters: surface.Schema(map[string]any{
			"path":  prop("string", "Directory to list (default: the workspace root)."),
			"depth": prop("integer", "How many levels to descend (default 2)."),
		})}
}

// Decode implements surface.Binding.
func (ListDir) Decode(c model.ToolCall) ([]tool.Call, error) {
	var a struct {
		Path  string `json:"path"`
		Depth int    `json:"depth"`
	}
	if err := surface.DecodeJSON(c.Name, c.Input, &a); err != nil {
		return nil, err
	}
	if a.Depth < 0 {
		return nil, tool.Errorf(tool.ErrInvalidInput, "list_dir: depth must not be negative")
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpList, Raw: []byte(c.Input),
		Args: &tool.ListArgs{Path: a.Path, Depth: a.Depth}}}, nil
}

// Encode implements surface.Binding.
func (ListDir) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	if rs[0].Err != nil {
		return errResult(c, rs[0])
	}
	return okResult(c, RenderEntries(rs[0].Entries, rs[0].Truncated))
}

// EditFile binds edit_file.
type EditFile struct{}

// Spec implements surface.Binding.
func (EditFile) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolFunction, Name: "edit_file",
		Description: "Replace old_string by new_string in a file. old_string must match the file exactly (whitespace and tabs included) " +
			"and occur exactly once, unless replace_all is true; include surrounding lines to make it unique.",
		Parameters: surface.Schema(map[string]any{
			"path":        prop("string", "Path of the file, relative to the workspace root or absolute inside it."),
			"old_string":  prop("string", "The exact text to replace."),
			"new_string":  prop("string", "The text to put in its place."),
			"replace_all": prop("boolean", "Replace every occurrence (default false)."),
		}, "path", "old_string", "new_string")}
}

// Decode implements surface.Binding.
func (EditFile) Decode(c model.ToolCall) ([]tool.Call, error) {
	var a struct {
		Path       string `json:"path"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if err := surface.DecodeJSON(c.Name, c.Input, &a, "path", "old_string", "new_string"); err != nil {
		return nil, err
	}
	if a.OldString == a.NewString {
		return nil, tool.Errorf(tool.ErrInvalidInput, "edit_file: old_string and new_string are the same; nothing would change")
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpReplace, Raw: []byte(c.Input),
		Args: &tool.ReplaceArgs{Path: a.Path, Old: a.OldString, New: a.NewString, All: a.ReplaceAll}}}, nil
}

// Encode implements surface.Binding.
func (EditFile) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	if r.Err != nil {
		return errResult(c, r)
	}
	text := r.Output
	if r.Edit != nil {
		text += ". The edited lines now read:\n" + Snippet(r.Edit, 3)
	}
	return okResult(c, text)
}

// Snippet renders the lines around an edit, numbered, with ctx lines of
// context on each side (at most tool.SnippetContext).
func Snippet(e *tool.EditSpan, ctx int) string {
	first, lines := SnippetLines(e, ctx)
	return NumberLines(first, lines)
}

// SnippetLines returns the lines Snippet shows, unnumbered, and the 1-based
// number of the first.
func SnippetLines(e *tool.EditSpan, ctx int) (first int, lines []string) {
	all := strings.Split(e.Window, "\n")
	if e.EOF && len(all) > 1 && all[len(all)-1] == "" {
		all = all[:len(all)-1] // the piece after the final newline is not a line here
	}
	from := max(0, e.Line-ctx-e.WindowStart)
	to := min(len(all)-1, e.Line+e.NewLines-1+ctx-e.WindowStart)
	if to < from {
		return e.WindowStart + from + 1, nil
	}
	return e.WindowStart + from + 1, all[from : to+1]
}

// NumberLines renders lines cat -n style, the first numbered first, without
// a final newline.
func NumberLines(first int, lines []string) string {
	var sb strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&sb, "%6d\t%s\n", first+i, l)
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// Bash binds bash. With Escalation set it also declares Codex's optional
// sandbox_permissions and justification parameters (see
// surface.EscalationProps): the model may ask to run one command with more
// than the sandbox allows, and the call carries the request in
// tool.ExecArgs.Escalate for the approval layer.
type Bash struct {
	Escalation bool
}

// Escalating implements surface.Escalator.
func (Bash) Escalating() surface.Binding { return Bash{Escalation: true} }

// Spec implements surface.Binding.
func (b Bash) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolFunction, Name: "bash",
		Description: "Run a command in a persistent bash session: the working directory and exported variables persist between calls. " +
			"Standard input is empty, so interactive programs do not work. Returns stdout, stderr and the exit code. " +
			"Set restart to true to start a fresh session.",
		Parameters: surface.Schema(surface.WithEscalationProps(map[string]any{
			"command":    prop("string", "The command to run."),
			"timeout_ms": prop("integer", "Timeout in milliseconds (default 120000)."),
			"restart":    prop("boolean", "Restart the shell instead of running a command."),
		}, b.Escalation))}
}

// Decode implements surface.Binding. The escalation parameters are decoded
// whether or not they were declared.
func (Bash) Decode(c model.ToolCall) ([]tool.Call, error) {
	var a struct {
		Command       string `json:"command"`
		TimeoutMS     int64  `json:"timeout_ms"`
		Restart       bool   `json:"restart"`
		Permissions   string `json:"sandbox_permissions"`
		Justification string `json:"justification"`
	}
	if err := surface.DecodeJSON(c.Name, c.Input, &a); err != nil {
		return nil, err
	}
	if a.Restart {
		return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpRestart, Raw: []byte(c.Input)}}, nil
	}
	if strings.TrimSpace(a.Command) == "" {
		return nil, tool.Errorf(tool.ErrInvalidInput, "bash: missing required parameter \"command\" (or set restart to true)")
	}
	if a.TimeoutMS < 0 {
		return nil, tool.Errorf(tool.ErrInvalidInput, "bash: timeout_ms must not be negative")
	}
	escalate, why, err := surface.DecodeEscalation(c.Name, a.Permissions, a.Justification)
	if err != nil {
		return nil, err
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpExec, Raw: []byte(c.Input),
		Args: &tool.ExecArgs{Command: a.Command, TimeoutMS: a.TimeoutMS, Escalate: escalate, Justification: why}}}, nil
}

// Encode implements surface.Binding.
func (Bash) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	if r.Op == tool.OpRestart {
		if r.Err != nil {
			return errResult(c, r)
		}
		return okResult(c, "The shell was restarted.")
	}
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: RenderShell(r), IsError: r.Err != nil}
}

// RenderShell renders a command's result: stdout, then stderr under a
// marker, then the exit status (or the failure).
func RenderShell(r tool.Result) string {
	var sb strings.Builder
	sb.WriteString(r.Stdout)
	if r.Stderr != "" {
		if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
			sb.WriteByte('\n')
		}
		sb.WriteString("[stderr]\n")
		sb.WriteString(r.Stderr)
	}
	if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
		sb.WriteByte('\n')
	}
	switch {
	case r.Err != nil && r.Err.Kind == tool.ErrExit:
		fmt.Fprintf(&sb, "[exit code: %d]", *r.ExitCode)
	case r.Err != nil && r.Err.Kind == tool.ErrShell && r.ExitCode != nil:
		fmt.Fprintf(&sb, "[exit code: %d] (%s)", *r.ExitCode, r.Err.Message)
	case r.Err != nil:
		sb.WriteString("Error: " + r.Err.Message)
	case sb.Len() == 0:
		sb.WriteString("[no output; exit code: 0]")
	default:
		sb.WriteString("[exit code: 0]")
	}
	return sb.String()
}

// Validate binds validate, offered on every surface when the project's
// checks are known: it runs them in the sandbox and returns a summary
// (passed and failed counts, the first failures).
type Validate struct{}

// Spec implements surface.Binding.
func (Validate) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolFunction, Name: "validate",
		Description: "Run the project's checks (its test command) in a fresh sandboxed shell and report the passed and failed counts and the first failures. Run it before you finish: the same checks decide whether the task is done.",
		Parameters:  surface.Schema(map[string]any{})}
}

// Decode implements surface.Binding.
func (Validate) Decode(c model.ToolCall) ([]tool.Call, error) {
	var in tool.ValidateArgs
	if err := surface.DecodeJSON("validate", c.Input, &in); err != nil {
		return nil, err
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpValidate, Raw: tool.Raw(c.Input), Args: &in}}, nil
}

// Encode implements surface.Binding.
func (Validate) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: r.Output, IsError: r.Err != nil}
}

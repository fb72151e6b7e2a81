// Package anthropic binds Truss's capabilities to Anthropic's client tools:
// the text editor (text_editor_20250728 "str_replace_based_edit_tool", and
// text_editor_20250124 "str_replace_editor" with undo_edit for older models),
// bash (bash_20250124) and memory (memory_20250818).
//
// Inputs are decoded and results rendered exactly as Anthropic's reference
// implementation does — the `cat -n` views, the snippets, the clipping note,
// the directory listing and the error strings — because that is the text
// the models were trained to read. Where Truss departs from the reference it
// is on purpose and listed in docs/anthropic.md: relative paths are accepted
// (resolved in the workspace) instead of refused, tabs are kept verbatim,
// paths outside the workspace are refused, and the bash tool reports exit
// codes and keeps stdout when there is stderr.
package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

// Name is the surface name.
const Name = "anthropic"

// The reference's limits and notes.
const (
	MaxResponseLen   = 16000
	TruncatedMessage = "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>"
	snippetLines     = 4
)

// Editor binds a text editor tool version.
type Editor struct {
	// Type is "text_editor_20250728" or "text_editor_20250124".
	Type string
	// MaxCharacters, for 20250728, clips file views at that many characters
	// instead of 16000 (0 = the default).
	MaxCharacters int
}

// NewEditor returns the editor binding of a tool type.
func NewEditor(typ string) Editor { return Editor{Type: typ} }

func (e Editor) name() string {
	if e.Type == "text_editor_20250124" {
		return "str_replace_editor"
	}
	return "str_replace_based_edit_tool"
}

func (e Editor) commands() string {
	if e.Type == "text_editor_20250124" {
		return "view, create, str_replace, insert, undo_edit"
	}
	return "view, create, str_replace, insert"
}

// Spec implements surface.Binding.
func (e Editor) Spec() model.ToolSpec {
	s := model.ToolSpec{Kind: model.ToolTyped, Name: e.name(), Type: e.Type}
	if e.MaxCharacters > 0 && e.Type == "text_editor_20250728" {
		s.Options = map[string]any{"max_characters": e.MaxCharacters}
	}
	return s
}

type editorInput struct {
	Command    string          `json:"command"`
	Path       *string         `json:"path"`
	FileText   *string         `json:"file_text"`
	ViewRange  json.RawMessage `json:"view_range"`
	OldStr     *string         `json:"old_str"`
	NewStr     *string         `json:"new_str"`
	InsertLine *int            `json:"insert_line"`
	InsertText *string         `json:"insert_text"`
}

func inputErr(format string, args ...any) error {
	return &tool.Error{Kind: tool.ErrInvalidInput, Message: fmt.Sprintf(format, args...)}
}

// Decode implements surface.Binding.
func (e Editor) Decode(c model.ToolCall) ([]tool.Call, error) {
	var in editorInput
	if err := decodeInput(e.name(), c.Input, &in); err != nil {
		return nil, err
	}
	if in.Command == "" {
		return nil, inputErr("Parameter `command` is required. The allowed commands for the %s tool are: %s", e.name(), e.commands())
	}
	call := func(op tool.Op, args any) []tool.Call {
		return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: op, Args: args, Raw: tool.Raw(c.Input)}}
	}
	known := map[string]bool{"view": true, "create": true, "str_replace": true, "insert": true, "undo_edit": e.Type == "text_editor_20250124"}
	if !known[in.Command] {
		return nil, inputErr("Unrecognized command %s. The allowed commands for the %s tool are: %s", in.Command, e.name(), e.commands())
	}
	if in.Path == nil {
		return nil, inputErr("Parameter `path` is required for command: %s", in.Command)
	}
	path := *in.Path
	switch in.Command {
	case "view":
		a := &tool.ViewArgs{Path: path}
		if len(in.ViewRange) > 0 && string(in.ViewRange) != "null" {
			var vr []json.Number
			d := json.NewDecoder(strings.NewReader(string(in.ViewRange)))
			d.UseNumber()
			if d.Decode(&vr) != nil || len(vr) != 2 {
				return nil, inputErr("Invalid `view_range`. It should be a list of two integers.")
			}
			s, err1 := vr[0].Int64()
			t, err2 := vr[1].Int64()
			if err1 != nil || err2 != nil {
				return nil, inputErr("Invalid `view_range`. It should be a list of two integers.")
			}
			if s == 0 && t == 0 {
				// [0, 0] would read as "no range"; the reference rejects it.
				return nil, inputErr("Invalid `view_range`: [0, 0]. Its first element `0` should be within the range of lines of the file")
			}
			a.Start, a.End = int(s), int(t)
		}
		return call(tool.OpView, a), nil
	case "create":
		if in.FileText == nil {
			return nil, inputErr("Parameter `file_text` is required for command: create")
		}
		return call(tool.OpCreate, &tool.CreateArgs{Path: path, Content: *in.FileText}), nil
	case "str_replace":
		if in.OldStr == nil {
			return nil, inputErr("Parameter `old_str` is required for command: str_replace")
		}
		newStr := ""
		if in.NewStr != nil {
			newStr = *in.NewStr
		}
		return call(tool.OpReplace, &tool.ReplaceArgs{Path: path, Old: *in.OldStr, New: newStr}), nil
	case "insert":
		if in.InsertLine == nil {
			return nil, inputErr("Parameter `insert_line` is required for command: insert")
		}
		text := in.InsertText
		field := "insert_text"
		if e.Type == "text_editor_20250124" {
			text, field = in.NewStr, "new_str"
		}
		if text == nil { // accept the other version's field name too
			text = firstNonNil(in.InsertText, in.NewStr)
		}
		if text == nil {
			return nil, inputErr("Parameter `%s` is required for command: insert", field)
		}
		return call(tool.OpInsert, &tool.InsertArgs{Path: path, Line: *in.InsertLine, Text: *text}), nil
	default: // undo_edit
		return call(tool.OpUndo, &tool.UndoArgs{Path: path}), nil
	}
}

func firstNonNil(ps ...*string) *string {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

func orEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}

// Encode implements surface.Binding.
func (e Editor) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	var in editorInput
	json.Unmarshal([]byte(orEmpty(c.Input)), &in)
	path := ""
	if in.Path != nil {
		path = *in.Path
	}
	if r.Err != nil {
		return errorResult(c, e.errorText(in, path, r.Err))
	}
	limit := MaxResponseLen
	if e.MaxCharacters > 0 {
		limit = e.MaxCharacters
	}
	switch r.Op {
	case tool.OpView:
		if r.File == nil {
			return textResult(c, DirListing(path, r.Entries))
		}
		if b := r.File.Binary; b != nil {
			return errorResult(c, fmt.Sprintf("The file %s is a binary file (%s) and cannot be viewed as text.", path, b.Describe()))
		}
		out := MakeOutput(r.File.Content, path, r.File.StartLine, limit)
		if r.File.Note != "" {
			// A file past the file tools' bound: only its first bytes were read.
			out += "<NOTE>" + r.File.Note + "</NOTE>\n"
		}
		return textResult(c, out)
	case tool.OpCreate:
		return textResult(c, "File created successfully at: "+path)
	case tool.OpReplace:
		return textResult(c, fmt.Sprintf("The file %s has been edited. ", path)+
			MakeOutput(r.Edit.Window, "a snippet of "+path, r.Edit.WindowStart+1, MaxResponseLen)+
			"Review the changes and make sure they are as expected. Edit the file again if necessary.")
	case tool.OpInsert:
		return textResult(c, fmt.Sprintf("The file %s has been edited. ", path)+
			MakeOutput(r.Edit.Window, "a snippet of the edited file", r.Edit.WindowStart+1, MaxResponseLen)+
			"Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.")
	case tool.OpUndo:
		if r.File == nil {
			return textResult(c, fmt.Sprintf("Last edit to %s undone successfully. The file did not exist before it and was removed.", path))
		}
		return textResult(c, fmt.Sprintf("Last edit to %s undone successfully. ", path)+MakeOutput(r.File.Content, path, 1, limit))
	}
	return textResult(c, r.Output)
}

// errorText renders a failure in the reference's words.
func (e Editor) errorText(in editorInput, path string, err *tool.Error) string {
	switch err.Kind {
	case tool.ErrNotFound:
		if in.Command == "undo_edit" && err.Reason == "history_dropped" {
			return err.Message
		}
		if in.Command == "undo_edit" {
			return fmt.Sprintf("No edit history found for %s.", path)
		}
		return fmt.Sprintf("The path %s does not exist. Please provide a valid path.", path)
	case tool.ErrExists:
		return fmt.Sprintf("File already exists at: %s. Cannot overwrite files using command `create`.", path)
	case tool.ErrIsDir:
		return fmt.Sprintf("The path %s is a directory and only the `view` command can be used on directories", path)
	case tool.ErrNoMatch:
		return fmt.Sprintf("No replacement was performed, old_str `%s` did not appear verbatim in %s.", deref(in.OldStr), path)
	case tool.ErrMultipleMatches:
		return fmt.Sprintf("No replacement was performed. Multiple occurrences of old_str `%s` in lines %s. Please ensure it is unique", deref(in.OldStr), pyList(err.Containing))
	case tool.ErrInvalidRange:
		if in.Command == "insert" {
			return fmt.Sprintf("Invalid `insert_line` parameter: %d. It should be within the range of lines of the file: [0, %d]", *in.InsertLine, err.Limit)
		}
		var vr []int
		json.Unmarshal(in.ViewRange, &vr)
		if len(vr) != 2 || err.Reason == "past_bound" {
			return err.Message
		}
		s, t, n := vr[0], vr[1], err.Limit
		switch err.Reason {
		case "start":
			return fmt.Sprintf("Invalid `view_range`: %s. Its first element `%d` should be within the range of lines of the file: [1, %d]", pyList(vr), s, n)
		case "end_past":
			return fmt.Sprintf("Invalid `view_range`: %s. Its second element `%d` should be smaller than the number of lines in the file: `%d`", pyList(vr), t, n)
		default:
			return fmt.Sprintf("Invalid `view_range`: %s. Its second element `%d` should be larger or equal than its first `%d`", pyList(vr), t, s)
		}
	case tool.ErrInvalidInput:
		if err.Reason == "range_on_directory" {
			return "The `view_range` parameter is not allowed when `path` points to a directory."
		}
	case tool.ErrOutsideRoot:
		return fmt.Sprintf("The path %s is outside the workspace. Only paths inside the workspace can be used.", path)
	case tool.ErrIO:
		return fmt.Sprintf("Ran into %s while trying to access %s", err.Message, path)
	}
	return err.Message
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// pyList renders ints as Python prints a list: [3, 7].
func pyList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// MakeOutput renders content as the reference's `cat -n` view: the header,
// each line as "%6d\t%s" numbered from initLine, and a final newline. The
// content is first clipped to limit characters, with the clipping note.
func MakeOutput(content, descriptor string, initLine, limit int) string {
	content = MaybeTruncate(content, limit)
	var sb strings.Builder
	sb.Grow(len(content) + len(content)/6 + 80)
	sb.WriteString("Here's the result of running `cat -n` on ")
	sb.WriteString(descriptor)
	sb.WriteString(":\n")
	n := initLine
	for {
		line, rest, more := strings.Cut(content, "\n")
		fmt.Fprintf(&sb, "%6d\t%s", n, line)
		if !more {
			break
		}
		sb.WriteByte('\n')
		content = rest
		n++
	}
	sb.WriteByte('\n')
	return sb.String()
}

// MaybeTruncate clips s to limit characters (Unicode code points, as the
// reference counts them) and appends the clipping note.
func MaybeTruncate(s string, limit int) string {
	if limit <= 0 || len(s) <= limit || utf8.RuneCountInString(s) <= limit {
		return s
	}
	i, n := 0, 0
	for i < len(s) && n < limit {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
		n++
	}
	return s[:i] + TruncatedMessage
}

// DirListing renders a directory view as the reference does with
// `find {path} -maxdepth 2 -not -path '*/\.*'`: the header, the path itself,
// then each entry joined to it, one a line.
func DirListing(path string, es []tool.Entry) string {
	var sb strings.Builder
	sb.WriteString(path)
	sb.WriteByte('\n')
	prefix := strings.TrimSuffix(path, "/")
	for _, e := range es {
		sb.WriteString(prefix)
		sb.WriteByte('/')
		sb.WriteString(e.Path)
		sb.WriteByte('\n')
	}
	return fmt.Sprintf("Here's the files and directories up to 2 levels deep in %s, excluding hidden items:\n%s\n", path, MaybeTruncate(sb.String(), MaxResponseLen))
}

// textResult is a successful result. Text that is empty or only
// whitespace becomes "(no output)": the Messages API refuses a blank text
// block, also inside a tool_result, and would end the session.
func textResult(c model.ToolCall, text string) model.ToolResult {
	if strings.TrimSpace(text) == "" {
		text = "(no output)"
	}
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: text}
}

func errorResult(c model.ToolCall, text string) model.ToolResult {
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: text, IsError: true}
}

var _ surface.Binding = Editor{}

// EncodeError implements surface.ErrorEncoder: the reference returns its
// messages as they are.
func (Editor) EncodeError(c model.ToolCall, err error) model.ToolResult {
	return errorResult(c, err.Error())
}

// Bindings returns the anthropic surface for a model profile: the editor
// version the model is trained on, bash, and memory when the model knows it.
func Bindings(p surface.Profile) []surface.Binding {
	editor := p.Editor
	if editor == "" {
		editor = "text_editor_20250728"
	}
	bs := []surface.Binding{NewEditor(editor), Bash{}}
	if p.Memory || p.Editor == "" {
		bs = append(bs, Memory{})
	}
	return bs
}

package anthropic

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

// Memory binds memory_20250818 to the memory store, with the return strings
// Anthropic documents as the ones the models know.
type Memory struct{}

// Spec implements surface.Binding.
func (Memory) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolTyped, Name: "memory", Type: "memory_20250818"}
}

type memoryInput struct {
	Command    string          `json:"command"`
	Path       *string         `json:"path"`
	ViewRange  json.RawMessage `json:"view_range"`
	FileText   *string         `json:"file_text"`
	OldStr     *string         `json:"old_str"`
	NewStr     *string         `json:"new_str"`
	InsertLine *int            `json:"insert_line"`
	InsertText *string         `json:"insert_text"`
	OldPath    *string         `json:"old_path"`
	NewPath    *string         `json:"new_path"`
}

// Decode implements surface.Binding.
func (Memory) Decode(c model.ToolCall) ([]tool.Call, error) { return DecodeMemory(c, Name) }

// DecodeMemory decodes a memory command (the typed tool's input, which the
// generic memory function tool shares).
func DecodeMemory(c model.ToolCall, surfaceName string) ([]tool.Call, error) {
	var in memoryInput
	if err := decodeInput(c.Name, c.Input, &in); err != nil {
		return nil, err
	}
	call := func(op tool.Op, args any) []tool.Call {
		return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: surfaceName, Op: op, Args: args, Raw: tool.Raw(c.Input)}}
	}
	need := func(name string, ok bool) error {
		if !ok {
			return inputErr("Error: missing required parameter `%s` for command `%s`", name, in.Command)
		}
		return nil
	}
	if in.Command != "rename" {
		if err := need("path", in.Path != nil); err != nil && in.Command != "" {
			return nil, err
		}
	}
	switch in.Command {
	case "view":
		a := &tool.ViewArgs{Path: *in.Path}
		if len(in.ViewRange) > 0 && string(in.ViewRange) != "null" {
			// As in the reference, a list that is not of two lines views the
			// whole file; one that is not a list of integers is refused.
			var vr []int
			if json.Unmarshal(in.ViewRange, &vr) != nil {
				return nil, inputErr("Invalid `view_range`: %s. It should be a list of two integers.", in.ViewRange)
			}
			if len(vr) == 2 {
				a.Start, a.End = vr[0], vr[1]
			}
		}
		return call(tool.OpMemoryView, a), nil
	case "create":
		if err := need("file_text", in.FileText != nil); err != nil {
			return nil, err
		}
		return call(tool.OpMemoryCreate, &tool.CreateArgs{Path: *in.Path, Content: *in.FileText}), nil
	case "str_replace":
		if err := need("old_str", in.OldStr != nil); err != nil {
			return nil, err
		}
		return call(tool.OpMemoryReplace, &tool.ReplaceArgs{Path: *in.Path, Old: *in.OldStr, New: deref(in.NewStr)}), nil
	case "insert":
		if err := need("insert_line", in.InsertLine != nil); err != nil {
			return nil, err
		}
		text := firstNonNil(in.InsertText, in.NewStr)
		if err := need("insert_text", text != nil); err != nil {
			return nil, err
		}
		return call(tool.OpMemoryInsert, &tool.InsertArgs{Path: *in.Path, Line: *in.InsertLine, Text: *text}), nil
	case "delete":
		return call(tool.OpMemoryDelete, &tool.DeleteArgs{Path: *in.Path, Recursive: true}), nil
	case "rename":
		if err := need("old_path", in.OldPath != nil); err != nil {
			return nil, err
		}
		if err := need("new_path", in.NewPath != nil); err != nil {
			return nil, err
		}
		return call(tool.OpMemoryRename, &tool.RenameArgs{From: *in.OldPath, To: *in.NewPath}), nil
	}
	return nil, inputErr("Error: unknown command `%s`. The memory tool's commands are: view, create, str_replace, insert, delete, rename", in.Command)
}

// EncodeError implements surface.ErrorEncoder.
func (Memory) EncodeError(c model.ToolCall, err error) model.ToolResult {
	return errorResult(c, err.Error())
}

// Encode implements surface.Binding.
func (Memory) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult { return EncodeMemory(c, rs) }

// EncodeMemory renders a memory result in the words of the reference
// implementation of the memory tool in Anthropic's SDK helpers
// (BetaLocalFilesystemMemoryTool), byte for byte: its successes as they
// are, its errors (which it raises as tool errors) as error results with
// the error's text alone.
func EncodeMemory(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	var in memoryInput
	json.Unmarshal([]byte(orEmpty(c.Input)), &in)
	path := deref(in.Path)
	if r.Err != nil {
		return errorResult(c, memoryError(in, path, r.Err))
	}
	switch r.Op {
	case tool.OpMemoryView:
		if r.File == nil {
			return textResult(c, memoryListing(path, r.Entries))
		}
		if b := r.File.Binary; b != nil {
			return errorResult(c, fmt.Sprintf("The file %s is a binary file (%s) and cannot be viewed as text.", path, b.Describe()))
		}
		text, err := memoryFile(path, r.File.Content, in.ViewRange)
		if err != "" {
			return errorResult(c, err)
		}
		return textResult(c, text)
	case tool.OpMemoryCreate:
		return textResult(c, "File created successfully at: "+path)
	case tool.OpMemoryReplace:
		return textResult(c, "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"+
			numberLines(strings.Split(r.Edit.Window, "\n"), r.Edit.WindowStart+1))
	case tool.OpMemoryInsert:
		return textResult(c, fmt.Sprintf("The file %s has been edited.", path))
	case tool.OpMemoryDelete:
		return textResult(c, "Successfully deleted "+path)
	case tool.OpMemoryRename:
		return textResult(c, fmt.Sprintf("Successfully renamed %s to %s", deref(in.OldPath), deref(in.NewPath)))
	}
	return textResult(c, r.Output)
}

func memoryError(in memoryInput, path string, err *tool.Error) string {
	switch err.Kind {
	case tool.ErrNotFound:
		switch in.Command {
		case "delete":
			return fmt.Sprintf("The path %s does not exist", path)
		case "rename":
			return fmt.Sprintf("The path %s does not exist", deref(in.OldPath))
		}
		return fmt.Sprintf("The path %s does not exist. Please provide a valid path.", path)
	case tool.ErrExists:
		if in.Command == "rename" {
			return fmt.Sprintf("The destination %s already exists", deref(in.NewPath))
		}
		return fmt.Sprintf("File %s already exists", path)
	case tool.ErrIsDir:
		if in.Command == "create" {
			return fmt.Sprintf("File %s already exists", path)
		}
		return fmt.Sprintf("The path %s is not a file.", path)
	}
	// The store's own messages are the reference's: the prefix and escape
	// checks, the root's deletion, str_replace's and insert's errors.
	return err.Message
}

// MaxMemoryLines is the most lines a memory file may have to be viewed; a
// longer file is an error, as in the reference.
const MaxMemoryLines = 999999

// memoryFile renders a file view as the reference does: the content split
// on "\n" (a final newline leaves a last, empty, numbered line), the lines
// of view_range selected as a Python slice would ([max(1, s)-1 : e], e = -1
// for the end; a range that is not two numbers views the whole file), each
// as "%6d\t%s". It returns the error text instead for a file of more than
// MaxMemoryLines lines.
func memoryFile(path, content string, viewRange json.RawMessage) (string, string) {
	lines := strings.Split(content, "\n")
	if len(lines) > MaxMemoryLines {
		return "", fmt.Sprintf("File %s exceeds maximum line limit of 999,999 lines.", path)
	}
	from := 1
	var vr []int
	if json.Unmarshal(viewRange, &vr) == nil && len(vr) == 2 {
		start := max(1, vr[0]) - 1
		end := len(lines)
		if vr[1] != -1 {
			end = vr[1]
		}
		lines = pySlice(lines, start, end)
		from = start + 1
	}
	return fmt.Sprintf("Here's the content of %s with line numbers:\n", path) + numberLines(lines, from), ""
}

// pySlice returns xs[start:end] with Python's slice semantics: negative
// bounds count from the end, bounds past either end are clamped.
func pySlice[T any](xs []T, start, end int) []T {
	n := len(xs)
	clamp := func(i int) int {
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n)
	}
	start, end = clamp(start), clamp(end)
	if start >= end {
		return nil
	}
	return xs[start:end]
}

// numberLines renders lines as "%6d\t%s" from the line number from, joined
// by "\n".
func numberLines(lines []string, from int) string {
	var sb strings.Builder
	for i, l := range lines {
		if i > 0 {
			sb.WriteByte('\n')
		}
		fmt.Fprintf(&sb, "%6d\t%s", from+i, l)
	}
	return sb.String()
}

// memoryListing renders a directory view as the reference does: the
// header, then the directory and each entry two levels deep (hidden entries
// left out), each as its size and its path, a directory's path with a
// final "/". The first entry is the directory itself (Path "."); sizes are
// the entries' own sizes (a directory's as the file system reports it).
func memoryListing(path string, es []tool.Entry) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Here're the files and directories up to 2 levels deep in %s, excluding hidden items:", path)
	for _, e := range es {
		if e.Path == "." {
			fmt.Fprintf(&sb, "\n%s\t%s", FileSize(e.Size), path)
			continue
		}
		slash := ""
		if e.IsDir {
			slash = "/"
		}
		fmt.Fprintf(&sb, "\n%s\t%s/%s%s", FileSize(e.Size), path, e.Path, slash)
	}
	return sb.String()
}

// FileSize formats a byte count as the reference's helper does: 0B, 100B,
// 4K, 1.5K, 2M, a whole number without a decimal and one decimal otherwise.
func FileSize(n int64) string {
	if n <= 0 {
		return "0B"
	}
	units := []string{"B", "K", "M", "G"}
	i := min((bits.Len64(uint64(n))-1)/10, len(units)-1)
	v := float64(n) / math.Pow(1024, float64(i))
	if v == math.Trunc(v) {
		return fmt.Sprintf("%d%s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f%s", v, units[i])
}

// MemoryFunction offers the memory capability as a plain function tool, for
// providers without Anthropic's typed one. It takes the typed tool's
// commands and answers with the same strings.
type MemoryFunction struct{}

// Spec implements surface.Binding.
func (MemoryFunction) Spec() model.ToolSpec {
	str := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	return model.ToolSpec{Kind: model.ToolFunction, Name: "memory",
		Description: "A memory directory that persists across sessions, addressed as /memories. Check it before starting a task " +
			"and record what later work will need. Commands: view (a directory or a file, optional view_range), create, " +
			"str_replace, insert, delete, rename.",
		Parameters: surface.Schema(map[string]any{
			"command":     map[string]any{"type": "string", "enum": []string{"view", "create", "str_replace", "insert", "delete", "rename"}},
			"path":        str("A path under /memories (all commands but rename)."),
			"view_range":  map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "description": "view: [first line, last line], -1 for the end."},
			"file_text":   str("create: the file's content."),
			"old_str":     str("str_replace: the exact text to replace, which must be unique."),
			"new_str":     str("str_replace: the new text."),
			"insert_line": map[string]any{"type": "integer", "description": "insert: the line after which to insert (0 = the top)."},
			"insert_text": str("insert: the text to insert."),
			"old_path":    str("rename: the current path."),
			"new_path":    str("rename: the new path, which must not exist."),
		}, "command")}
}

// Decode implements surface.Binding.
func (MemoryFunction) Decode(c model.ToolCall) ([]tool.Call, error) {
	return DecodeMemory(c, "generic")
}

// EncodeError implements surface.ErrorEncoder.
func (MemoryFunction) EncodeError(c model.ToolCall, err error) model.ToolResult {
	return errorResult(c, err.Error())
}

// Encode implements surface.Binding.
func (MemoryFunction) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	return EncodeMemory(c, rs)
}

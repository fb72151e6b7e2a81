package anthropic

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/memory"
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
	if err := json.Unmarshal([]byte(orEmpty(c.Input)), &in); err != nil {
		return nil, inputErr("Error: invalid input for the memory tool: %v", err)
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
			var vr []int
			if json.Unmarshal(in.ViewRange, &vr) != nil || len(vr) != 2 {
				return nil, inputErr("Error: invalid `view_range`. It should be a list of two integers.")
			}
			a.Start, a.End = vr[0], vr[1]
		}
		return call(memory.OpView, a), nil
	case "create":
		if err := need("file_text", in.FileText != nil); err != nil {
			return nil, err
		}
		return call(memory.OpCreate, &tool.CreateArgs{Path: *in.Path, Content: *in.FileText}), nil
	case "str_replace":
		if err := need("old_str", in.OldStr != nil); err != nil {
			return nil, err
		}
		return call(memory.OpReplace, &tool.ReplaceArgs{Path: *in.Path, Old: *in.OldStr, New: deref(in.NewStr)}), nil
	case "insert":
		if err := need("insert_line", in.InsertLine != nil); err != nil {
			return nil, err
		}
		text := firstNonNil(in.InsertText, in.NewStr)
		if err := need("insert_text", text != nil); err != nil {
			return nil, err
		}
		return call(memory.OpInsert, &tool.InsertArgs{Path: *in.Path, Line: *in.InsertLine, Text: *text}), nil
	case "delete":
		return call(memory.OpDelete, &tool.DeleteArgs{Path: *in.Path, Recursive: true}), nil
	case "rename":
		if err := need("old_path", in.OldPath != nil); err != nil {
			return nil, err
		}
		if err := need("new_path", in.NewPath != nil); err != nil {
			return nil, err
		}
		return call(memory.OpRename, &tool.RenameArgs{From: *in.OldPath, To: *in.NewPath}), nil
	}
	return nil, inputErr("Error: unknown command `%s`. The memory tool's commands are: view, create, str_replace, insert, delete, rename", in.Command)
}

// EncodeError implements surface.ErrorEncoder.
func (Memory) EncodeError(c model.ToolCall, err error) model.ToolResult {
	return errorResult(c, err.Error())
}

// Encode implements surface.Binding.
func (Memory) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult { return EncodeMemory(c, rs) }

// EncodeMemory renders a memory result.
func EncodeMemory(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	var in memoryInput
	json.Unmarshal([]byte(orEmpty(c.Input)), &in)
	path := deref(in.Path)
	if r.Err != nil {
		return errorResult(c, memoryError(in, path, r.Err))
	}
	switch r.Op {
	case memory.OpView:
		if r.File == nil {
			return textResult(c, memoryListing(path, r.Entries))
		}
		if b := r.File.Binary; b != nil {
			return errorResult(c, fmt.Sprintf("The file %s is a binary file (%s) and cannot be viewed as text.", path, b.Describe()))
		}
		return textResult(c, memoryFile(path, r.File))
	case memory.OpCreate:
		return textResult(c, "File created successfully at: "+path)
	case memory.OpReplace:
		return textResult(c, "The memory file has been edited.\n"+numbered(r.Edit.Window, r.Edit.WindowStart+1, r.Edit.EOF))
	case memory.OpInsert:
		return textResult(c, fmt.Sprintf("The file %s has been edited.", path))
	case memory.OpDelete:
		return textResult(c, "Successfully deleted "+path)
	case memory.OpRename:
		return textResult(c, fmt.Sprintf("Successfully renamed %s to %s", deref(in.OldPath), deref(in.NewPath)))
	}
	return textResult(c, r.Output)
}

func memoryError(in memoryInput, path string, err *tool.Error) string {
	switch err.Kind {
	case tool.ErrNotFound:
		switch in.Command {
		case "delete":
			return fmt.Sprintf("Error: The path %s does not exist", path)
		case "rename":
			return fmt.Sprintf("Error: The path %s does not exist", deref(in.OldPath))
		}
		return fmt.Sprintf("The path %s does not exist. Please provide a valid path.", path)
	case tool.ErrExists:
		if in.Command == "rename" {
			return fmt.Sprintf("Error: The destination %s already exists", deref(in.NewPath))
		}
		return fmt.Sprintf("Error: File %s already exists", path)
	case tool.ErrIsDir:
		if in.Command == "str_replace" {
			return fmt.Sprintf("The path %s does not exist. Please provide a valid path.", path)
		}
		return fmt.Sprintf("The path %s is not a file.", path)
	case tool.ErrNoMatch:
		return fmt.Sprintf("No replacement was performed, old_str `%s` did not appear verbatim in %s.", deref(in.OldStr), path)
	case tool.ErrMultipleMatches:
		return fmt.Sprintf("No replacement was performed. Multiple occurrences of old_str `%s` in lines: %s. Please ensure it is unique", deref(in.OldStr), braceList(err.Containing))
	case tool.ErrInvalidRange:
		if in.Command == "insert" {
			return fmt.Sprintf("Error: Invalid `insert_line` parameter: %d. It should be within the range of lines of the file: [0, %d]", *in.InsertLine, err.Limit)
		}
		return "Error: Invalid `view_range`: " + err.Message
	}
	return err.Message // the store's own messages: prefix, escape, root deletion
}

func braceList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// MaxMemoryLines is the longest memory file a view shows.
const MaxMemoryLines = 999999

func memoryFile(path string, f *tool.FileView) string {
	if f.TotalLines > MaxMemoryLines {
		return fmt.Sprintf("File %s exceeds maximum line limit of 999,999 lines.", path)
	}
	return fmt.Sprintf("Here's the content of %s with line numbers:\n", path) + numbered(f.Content, f.StartLine, f.FinalNewline && (f.StartLine+strings.Count(f.Content, "\n") == f.TotalLines))
}

// numbered renders lines as "%6d\t%s", without the empty piece a final
// newline leaves when dropFinal is set.
func numbered(content string, from int, dropFinal bool) string {
	lines := strings.Split(content, "\n")
	if dropFinal && len(lines) > 1 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var sb strings.Builder
	for i, l := range lines {
		if i > 0 {
			sb.WriteByte('\n')
		}
		fmt.Fprintf(&sb, "%6d\t%s", from+i, l)
	}
	return sb.String()
}

// memoryListing renders a directory view: the directory first, then each
// entry two levels deep (hidden entries and node_modules left out), each with
// a du-style size (a directory counts itself and everything below it).
func memoryListing(path string, es []tool.Entry) string {
	var kept []tool.Entry
	for _, e := range es {
		if strings.Contains("/"+e.Path+"/", "/node_modules/") {
			continue
		}
		kept = append(kept, e)
	}
	sizes := make([]int64, len(kept))
	var total int64 = 4096
	for i, e := range kept {
		sizes[i] = e.Size
		if e.IsDir {
			sizes[i] = 4096
		}
		total += sizes[i]
	}
	for i, e := range kept {
		if !e.IsDir {
			continue
		}
		for j, f := range kept {
			if strings.HasPrefix(f.Path, e.Path+"/") {
				sizes[i] += sizes[j]
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Here're the files and directories up to 2 levels deep in %s, excluding hidden items and node_modules:\n", path)
	fmt.Fprintf(&sb, "%s\t%s", HumanSize(total), path)
	prefix := strings.TrimSuffix(path, "/")
	for i, e := range kept {
		fmt.Fprintf(&sb, "\n%s\t%s/%s", HumanSize(sizes[i]), prefix, e.Path)
	}
	return sb.String()
}

// HumanSize formats a byte count as `du -h` does: bytes below 1 KiB as a
// number, else rounded up to one decimal below 10 units and to a whole unit
// from 10.
func HumanSize(n int64) string {
	if n < 1024 {
		return fmt.Sprint(n)
	}
	v := float64(n)
	for _, unit := range []string{"K", "M", "G", "T"} {
		v /= 1024
		if v < 1024 || unit == "T" {
			if v < 10 {
				c := math.Ceil(v*10) / 10
				if c < 10 {
					return fmt.Sprintf("%.1f%s", c, unit)
				}
				return fmt.Sprintf("%d%s", int(c), unit)
			}
			return fmt.Sprintf("%d%s", int(math.Ceil(v)), unit)
		}
	}
	return fmt.Sprint(n)
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

// Package memory executes the memory capability: a directory of notes the
// model keeps across sessions, which it addresses as /memories.
//
// Paths are virtual: "/memories" is the store's root and "/memories/a/b.md"
// a file below it. Anything else — "/memoriesX", "/etc", "../x", a
// percent-encoded or backslash traversal, a symlink leading out — is refused
// before any file is touched. Files are created 0600 and directories 0700;
// every write is atomic. view, str_replace and insert follow the reference
// implementation of the memory tool in Anthropic's SDK helpers (see
// edit.go); create, delete and rename reuse the file executor on the
// store's root.
//
// A file view returns the whole file, read as text ("\r\n" and "\r" become
// "\n"); the binding selects the lines of a view range. A directory view's
// first entry is the directory itself, with Path ".".
package memory

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
)

// Root is the virtual root of the store as the model sees it.
const Root = tool.MemoryRoot

// Ops lists the operations a Store executes (tool.OpMemoryView, ...):
// the file operations' arguments with virtual paths.
var Ops = []tool.Op{tool.OpMemoryView, tool.OpMemoryCreate, tool.OpMemoryReplace, tool.OpMemoryInsert, tool.OpMemoryDelete, tool.OpMemoryRename}

// fileOp is the file operation that carries out each memory operation.
func fileOp(op tool.Op) (tool.Op, bool) {
	switch op {
	case tool.OpMemoryView:
		return tool.OpView, true
	case tool.OpMemoryCreate:
		return tool.OpCreate, true
	case tool.OpMemoryReplace:
		return tool.OpReplace, true
	case tool.OpMemoryInsert:
		return tool.OpInsert, true
	case tool.OpMemoryDelete:
		return tool.OpDelete, true
	case tool.OpMemoryRename:
		return tool.OpRename, true
	}
	return "", false
}

// Store is a memory directory.
type Store struct {
	dir string
	ws  *fs.Workspace
	fx  *fs.Executor
}

// Open opens (creating, 0700) the memory directory dir.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("memory directory: %w", err)
	}
	ws, err := fs.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("memory directory: %w", err)
	}
	return &Store{dir: ws.Dir(), ws: ws, fx: &fs.Executor{W: ws, Opts: fs.Options{FileMode: 0o600, DirMode: 0o700, NoStaleCheck: true}}}, nil
}

// Dir returns the real directory.
func (s *Store) Dir() string { return s.dir }

// Close releases the store.
func (s *Store) Close() error { return s.ws.Close() }

// Resolve checks a virtual path and returns it relative to the store's root
// ("." for the root itself).
func Resolve(v string) (string, error) {
	if v != Root && !strings.HasPrefix(v, Root+"/") {
		return "", &tool.Error{Kind: tool.ErrInvalidInput, Path: v, Message: fmt.Sprintf("Path must start with %s, got: %s", Root, v)}
	}
	lower := strings.ToLower(v)
	if strings.Contains(v, `\`) || strings.Contains(lower, "%2e") || strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.ContainsRune(v, 0) {
		return "", escape(v)
	}
	depth := 0
	for _, part := range strings.Split(strings.TrimPrefix(v, Root), "/") {
		switch part {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return "", escape(v)
			}
		default:
			depth++
		}
	}
	rel := strings.TrimPrefix(path.Clean(v), Root)
	rel = strings.TrimPrefix(rel, "/")
	if rel == "" {
		rel = "."
	}
	return rel, nil
}

func escape(v string) error {
	return &tool.Error{Kind: tool.ErrOutsideRoot, Path: v, Message: fmt.Sprintf("Path %s would escape %s directory", v, Root)}
}

// Mutates implements tool.MutatingExecutor: every memory operation but a
// view changes the store's files (never the workspace's).
func (s *Store) Mutates(call tool.Call) bool { return call.Op != tool.OpMemoryView }

// Execute implements tool.Executor.
func (s *Store) Execute(ctx context.Context, call tool.Call) tool.Result {
	op, ok := fileOp(call.Op)
	if !ok {
		return tool.Failed(call, tool.Errorf(tool.ErrUnsupported, "operation %s is not a memory operation", call.Op))
	}
	var args any
	var virt []string // virtual paths, for error messages
	rel := func(v string) (string, error) {
		virt = append(virt, v)
		r, err := Resolve(v)
		return r, err
	}
	var err error
	switch a := call.Args.(type) {
	case *tool.ViewArgs:
		c := *a
		c.Path, err = rel(a.Path)
		args = &c
	case *tool.CreateArgs:
		c := *a
		c.Path, err = rel(a.Path)
		args = &c
	case *tool.ReplaceArgs:
		c := *a
		c.Path, err = rel(a.Path)
		args = &c
	case *tool.InsertArgs:
		c := *a
		c.Path, err = rel(a.Path)
		args = &c
	case *tool.DeleteArgs:
		c := *a
		c.Path, err = rel(a.Path)
		if err == nil && c.Path == "." {
			err = &tool.Error{Kind: tool.ErrInvalidInput, Path: a.Path, Message: "Cannot delete the /memories directory itself"}
		}
		args = &c
	case *tool.RenameArgs:
		c := *a
		if c.From, err = rel(a.From); err == nil {
			c.To, err = rel(a.To)
		}
		args = &c
	default:
		err = tool.Errorf(tool.ErrInvalidInput, "operation %s got arguments of type %T", call.Op, call.Args)
	}
	if err != nil {
		return tool.Failed(call, err)
	}
	var r tool.Result
	switch a := args.(type) {
	case *tool.ViewArgs:
		r, err = s.view(virt[0], a.Path)
	case *tool.ReplaceArgs:
		r, err = s.replace(virt[0], a.Path, a)
	case *tool.InsertArgs:
		r, err = s.insert(virt[0], a.Path, a)
	default:
		r = s.fx.Execute(ctx, tool.Call{ID: call.ID, Op: op, Args: args})
	}
	if err != nil {
		r = tool.Failed(call, err)
	}
	r.CallID, r.Op = call.ID, call.Op
	if r.Err != nil && r.Err.Kind == tool.ErrOutsideRoot {
		r.Err = escape(virt[0]).(*tool.Error)
	}
	for i := range r.Changes {
		r.Changes[i].Path = virtual(r.Changes[i].Path)
		if r.Changes[i].MovedTo != "" {
			r.Changes[i].MovedTo = virtual(r.Changes[i].MovedTo)
		}
	}
	if r.File != nil && len(virt) > 0 {
		r.File.Path = virt[0]
	}
	return r
}

func virtual(rel string) string {
	if rel == "." || rel == "" {
		return Root
	}
	return Root + "/" + strings.TrimPrefix(rel, "/")
}

package fs

import (
	"context"
	"fmt"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
)

// Preview implements tool.Previewer for the operations that change files
// (every one but a view and a listing): the unified diff (Diff) of the
// changes the call would make if it ran now, computed by the same code
// that makes them — the same resolution, the same reads (hostfs: no link
// leading outside a root followed, no FIFO or device opened, reads
// capped at Options.MaxFileBytes), the same checks, the stale check
// included — without writing, creating a directory or taking an entry
// off the undo history. It holds the workspace's lock while it reads, so
// that it sees no change half made. It fails with the error the call
// would fail with, and with tool.ErrNoPreview for a view or a listing.
func (e *Executor) Preview(ctx context.Context, call tool.Call) (string, error) {
	if !e.Mutates(call) {
		return "", tool.ErrNoPreview
	}
	if err := ctx.Err(); err != nil {
		return "", &tool.Error{Kind: tool.ErrCanceled, Message: "the call was canceled before its preview", Err: err}
	}
	defer e.W.Lock()()
	if !e.Opts.NoStaleCheck {
		if err := e.fresh(call); err != nil {
			return "", err
		}
	}
	changes, err := e.Plan(call)
	if err != nil {
		return "", err
	}
	return Diff(changes), nil
}

// Plan returns the changes that the method a call names (Write, Replace,
// Insert, Delete, Rename, Undo) would make if called now, without making
// them, or the error it would fail with; tool.ErrNoPreview for a view or
// a listing. Like those methods called directly, it takes no lock and
// makes no stale check: the caller holds the workspace's lock if it needs
// a consistent view (Preview does, and so does the patch engine).
func (e *Executor) Plan(call tool.Call) ([]tool.FileChange, error) {
	switch a := call.Args.(type) {
	case *tool.CreateArgs:
		p, change, err := e.planWrite(a, call.Op == tool.OpCreate)
		if err != nil {
			return nil, err
		}
		// The write's own first check, which the plan leaves to it.
		if err := p.writable(); err != nil {
			return nil, err
		}
		return []tool.FileChange{change}, nil
	case *tool.ReplaceArgs:
		p, b, nb, _, _, err := e.planReplace(a)
		if err != nil {
			return nil, err
		}
		return []tool.FileChange{update(p, b, nb)}, nil
	case *tool.InsertArgs:
		p, b, nb, _, err := e.planInsert(a)
		if err != nil {
			return nil, err
		}
		return []tool.FileChange{update(p, b, nb)}, nil
	case *tool.DeleteArgs:
		_, _, changes, err := e.planDelete(a)
		return changes, err
	case *tool.RenameArgs:
		_, _, changes, err := e.planRename(a)
		return changes, err
	case *tool.UndoArgs:
		_, _, change, err := e.planUndo(a, false)
		if err != nil {
			return nil, err
		}
		return []tool.FileChange{change}, nil
	case *tool.ViewArgs, *tool.ListArgs:
		return nil, tool.ErrNoPreview
	}
	return nil, tool.Errorf(tool.ErrInvalidInput, "operation %s got arguments of type %T", call.Op, call.Args)
}

func update(p Resolved, b, nb []byte) tool.FileChange {
	return tool.FileChange{Path: p.Display(), Kind: tool.ChangeUpdate, Before: tool.Digest(b), After: tool.Digest(nb), BeforeData: b, AfterData: nb}
}

// DiffMaxBytes is the largest content, before or after, that Diff
// compares line by line; a larger file's change is named with its sizes.
const DiffMaxBytes = 4 << 20

// Diff renders changes, in order, as one unified diff of the contents
// they carry (BeforeData, AfterData): "--- a/PATH" and "+++ b/PATH" with
// hunks of three lines of context for each file ("/dev/null" for a side
// where the file does not exist; an absolute path, outside the primary
// root, is shown without the prefix). A rename is "rename from PATH" and
// "rename to PATH" lines, then the hunks if the content changed. Every
// PATH is shown by termsafe.Name: a name the model chose is shown whole
// and inert on a terminal (an escape sequence, a carriage return or a
// bidirectional override in it written as a visible escape, a newline
// too, so that a name never makes a line of the diff of its own). A binary file
// is git's "Binary files … differ" line; a file whose content the change
// does not carry (a symbolic link, a special or unreadable file) or that
// is over DiffMaxBytes is named with a line in parentheses saying so.
// The same changes always render the same text, so that a preview can be
// compared with the diff of the changes a call made.
func Diff(changes []tool.FileChange) string {
	var b strings.Builder
	for _, c := range changes {
		from, to := label("a/", c.Path), label("b/", c.Path)
		if c.MovedTo != "" {
			to = label("b/", c.MovedTo)
			fmt.Fprintf(&b, "rename from %s\nrename to %s\n", termsafe.Name(c.Path), termsafe.Name(c.MovedTo))
		}
		switch c.Kind {
		case tool.ChangeAdd:
			from = "/dev/null"
		case tool.ChangeDelete:
			to = "/dev/null"
		}
		// A side where a file is whose content the change does not carry
		// (a moved symbolic link carries none and is only renamed).
		hasBefore, hasAfter := c.Kind != tool.ChangeAdd, c.Kind != tool.ChangeDelete
		if c.MovedTo != "" {
			hasBefore, hasAfter = c.Before != "", c.After != ""
		}
		switch {
		case hasBefore && missing(c.Before, c.BeforeData) || hasAfter && missing(c.After, c.AfterData):
			fmt.Fprintf(&b, "--- %s\n+++ %s\n(a symbolic link, a special file or an unreadable file: its contents are not shown)\n", from, to)
		case len(c.BeforeData) > DiffMaxBytes || len(c.AfterData) > DiffMaxBytes:
			fmt.Fprintf(&b, "--- %s\n+++ %s\n(%d bytes before, %d bytes after: too large to show line by line)\n", from, to, len(c.BeforeData), len(c.AfterData))
		case Sniff(c.BeforeData) != nil || Sniff(c.AfterData) != nil:
			fmt.Fprintf(&b, "Binary files %s and %s differ\n", from, to)
		default:
			d := udiff.Unified(from, to, string(c.BeforeData), string(c.AfterData))
			if d == "" && c.MovedTo == "" {
				// A new empty file, a deleted empty one, or the same content.
				d = fmt.Sprintf("--- %s\n+++ %s\n", from, to)
			}
			b.WriteString(d)
		}
	}
	return b.String()
}

// emptyDigest is the digest of no bytes.
const emptyDigest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// missing reports that a side with this digest has no content in the
// change: its data is nil and it is not an empty file.
func missing(digest string, data []byte) bool { return data == nil && digest != emptyDigest }

// label is how Diff names path on one side: termsafe.Name's form.
func label(side, path string) string {
	if strings.HasPrefix(path, "/") {
		return termsafe.Name(path)
	}
	return side + termsafe.Name(path)
}

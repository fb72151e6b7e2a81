package changes

import (
	"context"
	"slices"
	"strings"

	"github.com/trussdev/truss/internal/tool"
)

// fileOps are the operations whose executors change files themselves and
// report each change in their result.
var fileOps = []tool.Op{tool.OpCreate, tool.OpWrite, tool.OpReplace, tool.OpInsert, tool.OpDelete,
	tool.OpRename, tool.OpUndo, tool.OpPatch, tool.OpPatchOp}

// Wrap returns an executor that runs calls with e and keeps t told:
//
//   - After a call of an operation in Options.ScanAfter (by default
//     shell.exec and check.validate) — when it failed or timed out too —
//     it scans and appends the changes found to the result's Changes.
//     The command itself runs without holding the tracker, so a long
//     command does not hold up other agents; only its scan is serialized.
//   - A file operation (create, write, replace, insert, delete, rename,
//     undo, patch) runs holding the tracker, so no scan sees it half done,
//     and its result's changes are noted (Note): no scan reports them.
//   - Any other call's reported changes are noted after it, except a
//     sub-agent's (agent.spawn): a sub-agent sharing the workspace runs its
//     calls through an executor wrapped with the same tracker, which has
//     seen them already.
//
// Read-only calls pass through untouched. Every call that may change the
// roots waits for the baseline first.
//
// Attribution: the tracker tells apart what a file tool did from what a
// command did, always. Two commands running at the same time (sibling
// agents sharing the workspace, or a command's background process) cannot
// be told apart: a change made while both run is reported by whichever
// scan comes first.
//
// A nil t (no tracker: Open failed) returns e itself.
func Wrap(e tool.Executor, t *Tracker) tool.Executor {
	if t == nil {
		return e
	}
	return &wrapped{e: e, t: t}
}

type wrapped struct {
	e tool.Executor
	t *Tracker
}

// Unwrap returns the wrapped executor, so that a caller can look for the
// optional interfaces it implements.
func (w *wrapped) Unwrap() tool.Executor { return w.e }

// Execute implements tool.Executor.
func (w *wrapped) Execute(ctx context.Context, call tool.Call) tool.Result {
	t := w.t
	switch {
	case !tool.Mutates(w.e, call):
		return w.e.Execute(ctx, call)
	case slices.Contains(t.scanAfter, call.Op):
		t.Ready(ctx)
		res := w.e.Execute(ctx, call)
		// The command ran even when the call was cancelled (a timeout):
		// what it changed is recorded all the same. A call cancelled
		// while the scan runs cuts it (the changes it left are the
		// next scan's), as closing the tracker does.
		sctx := ctx
		if ctx.Err() != nil {
			sctx = context.WithoutCancel(ctx)
		}
		found, err := t.Scan(sctx)
		if len(found) > 0 {
			res.Changes = append(slices.Clip(res.Changes), found...)
		}
		if err != nil {
			// What could not be looked at is said where the model and
			// the user read the command's output.
			res.Stderr = scanNote(res.Stderr, err)
		}
		return res
	case slices.Contains(fileOps, call.Op):
		if err := t.Ready(ctx); err != nil && ctx.Err() != nil {
			return tool.Failed(call, &tool.Error{Kind: tool.ErrCanceled, Message: "the call was canceled before it ran", Err: err})
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		res := w.e.Execute(ctx, call)
		t.note(res.Changes)
		return res
	default:
		res := w.e.Execute(ctx, call)
		if len(res.Changes) > 0 && call.Op != tool.OpSpawn {
			t.Note(res.Changes)
		}
		return res
	}
}

// maxScanNote bounds the text a scan's error adds to a command's stderr.
const maxScanNote = 2048

// scanNote appends to stderr a line saying that the changes of the
// command may be incomplete, and why (cut to maxScanNote bytes).
func scanNote(stderr string, err error) string {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	if len(msg) > maxScanNote {
		msg = strings.ToValidUTF8(msg[:maxScanNote], "") + " …"
	}
	if stderr != "" && !strings.HasSuffix(stderr, "\n") {
		stderr += "\n"
	}
	return stderr + "truss: the changes this command made may be incomplete: " + msg + "\n"
}

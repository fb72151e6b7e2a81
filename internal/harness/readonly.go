package harness

import (
	"context"
	"strings"

	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool"
)

// modeSource says which sandbox mode is in force now. The file tools'
// gate (fileWrites) asks it at every call rather than once, so that a
// session whose mode changes — re-opened with another (the interactive
// /sandbox), or switched in place — has its file tools follow from the
// next call on. *Session is one.
type modeSource interface {
	SandboxMode() sandbox.Mode
}

// SandboxMode is the sandbox mode in force: the one the session's plan
// resolved (Options.Sandbox.Mode, else the project's configuration, else
// workspace-write), whatever the host enforces of it. The file tools,
// which run in Truss and not in the sandbox, hold to it themselves:
// read-only refuses every change they would make (fileWrites).
func (s *Session) SandboxMode() sandbox.Mode {
	if s.w == nil || s.w.sandbox == nil {
		return ""
	}
	return s.w.sandbox.Plan().Policy.Mode
}

// fileWrites is the gate of the file tools' changes, around everything
// else of an agent's executor (Session.compose): while the sandbox mode
// is read-only, every call that would change a file (approval.IsEdit:
// the editors' create, str_replace, insert and undo, generic write_file
// and edit_file, delete, rename, every apply_patch form) is refused
// before anything sees it — no approval is asked for an edit that could
// not be made, nothing is read or written — with an ErrReadOnly error
// (Reason "sandbox") the model can act on: what was not done, that the
// mode is read-only, that reading still works, and how the user can
// change the mode. Views and listings, commands (which the sandbox
// itself confines) and the memory tool (whose store is Truss's, outside
// the workspace) pass. Its capabilities are those of what it wraps
// (tool.Wrapper).
type fileWrites struct {
	next tool.Executor
	mode modeSource
}

// Execute implements tool.Executor.
func (f fileWrites) Execute(ctx context.Context, call tool.Call) tool.Result {
	if err := f.refusal(call); err != nil {
		return tool.Failed(call, err)
	}
	return f.next.Execute(ctx, call)
}

// Unwrap implements tool.Wrapper.
func (f fileWrites) Unwrap() tool.Executor { return f.next }

// Preview implements tool.Previewer: the refusal, while it holds, else
// the preview of what it wraps.
func (f fileWrites) Preview(ctx context.Context, call tool.Call) (string, error) {
	if err := f.refusal(call); err != nil {
		return "", err
	}
	return tool.Preview(ctx, f.next, call)
}

// refusal is the error of call in the mode now, nil when it may run.
func (f fileWrites) refusal(call tool.Call) error {
	if !approval.IsEdit(call.Op) || f.mode.SandboxMode() != sandbox.ReadOnly {
		return nil
	}
	what, path := notDone(call)
	return &tool.Error{Kind: tool.ErrReadOnly, Reason: "sandbox", Path: path, Message: what +
		": this session's sandbox is read-only, so the file tools change no file. Reading still works: viewing files, " +
		"listing directories and commands that only read. The user can allow changes by switching the sandbox to " +
		"workspace-write (--sandbox workspace-write, or /sandbox workspace-write in an interactive session). " +
		"Do not try to make the change another way; say in your answer what you would change."}
}

// notDone says what call would have done and did not ("g.go was not
// edited"), and the path it names, if one.
func notDone(call tool.Call) (what, path string) {
	switch a := call.Args.(type) {
	case *tool.CreateArgs:
		if call.Op == tool.OpCreate {
			return a.Path + " was not created", a.Path
		}
		return a.Path + " was not written", a.Path
	case *tool.ReplaceArgs:
		return a.Path + " was not edited", a.Path
	case *tool.InsertArgs:
		return a.Path + " was not edited", a.Path
	case *tool.DeleteArgs:
		return a.Path + " was not deleted", a.Path
	case *tool.RenameArgs:
		return a.From + " was not renamed", a.From
	case *tool.UndoArgs:
		return "The last edit of " + a.Path + " was not undone", a.Path
	case *tool.PatchOpArgs:
		return "The patch was not applied (" + strings.ReplaceAll(a.Type, "_", " ") + " " + a.Path + ")", a.Path
	case *tool.PatchArgs:
		return "The patch was not applied", ""
	}
	return "The change was not made", ""
}

package patch

import (
	"context"
	"errors"
	"time"

	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
)

// Ops lists the operations Executor handles.
var Ops = []tool.Op{tool.OpPatch, tool.OpPatchOp}

// Executor runs OpPatch and OpPatchOp with an Engine. A parse error is an
// ErrInvalidInput result, a patch that does not apply an ErrNoMatch result;
// both leave every file as it was; an error while writing is the kind the
// file system gave (ErrIO when none). The Output of a success is the summary
// ("Success. Updated the following files: ..."); Wall is how long the call
// took. A call holds the workspace's lock (Workspace.Lock) from reading
// the patch's files to writing them, so that no other change falls in
// between; its file changes carry the contents read and written.
type Executor struct{ Engine *Engine }

// NewExecutor returns an executor on a workspace's file executor.
func NewExecutor(fx *tfs.Executor) *Executor { return &Executor{Engine: &Engine{W: fx.W, FX: fx}} }

// Execute implements tool.Executor.
func (x *Executor) Execute(ctx context.Context, call tool.Call) tool.Result {
	start := time.Now()
	defer x.Engine.W.Lock()()
	plan, err := x.plan(call)
	if err == nil {
		var changes []tool.FileChange
		if changes, err = x.Engine.Apply(ctx, plan); err == nil {
			return tool.Result{CallID: call.ID, Op: call.Op, Output: plan.Summary, Changes: changes, Wall: time.Since(start)}
		}
	}
	r := tool.Failed(call, toolError(err))
	r.Wall = time.Since(start)
	return r
}

// plan parses and plans the call's patch.
func (x *Executor) plan(call tool.Call) (*Plan, error) {
	switch a := call.Args.(type) {
	case *tool.PatchArgs:
		p, err := Parse(a.Text)
		if err != nil {
			return nil, err
		}
		return x.Engine.PlanPatch(p)
	case *tool.PatchOpArgs:
		return x.Engine.PlanOperation(a.Type, a.Path, a.Diff)
	}
	return nil, tool.Errorf(tool.ErrInvalidInput, "operation %s got arguments of type %T", call.Op, call.Args)
}

// toolError is the error a result carries for err: a parse error is
// ErrInvalidInput, a patch that does not apply ErrNoMatch.
func toolError(err error) error {
	var pe *ParseError
	var ae *Error
	switch {
	case errors.As(err, &pe):
		return &tool.Error{Kind: tool.ErrInvalidInput, Message: pe.Error(), Err: err}
	case errors.As(err, &ae):
		return &tool.Error{Kind: tool.ErrNoMatch, Message: ae.Message, Err: err}
	}
	return err
}

// Preview implements tool.Previewer: the unified diff (fs.Diff) of the
// changes the patch would make if applied now. It parses and plans the
// patch as Execute does, under the workspace's lock, then asks the file
// executor for the changes of each planned write and delete (fs.Executor
// .Plan), which Apply makes with that executor's Write and Delete: so the
// files are read as the file tools read them (no link leading outside a
// root followed, no FIFO or device opened, reads capped), nothing is
// written, and the preview is the diff of the changes Execute returns
// when nothing changed in between. A patch that does not parse or apply
// fails with the error Execute would return.
func (x *Executor) Preview(ctx context.Context, call tool.Call) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", &tool.Error{Kind: tool.ErrCanceled, Message: "the call was canceled before its preview", Err: err}
	}
	defer x.Engine.W.Lock()()
	plan, err := x.plan(call)
	if err != nil {
		return "", toolError(err)
	}
	var changes []tool.FileChange
	for _, f := range plan.Files {
		c := tool.Call{ID: call.ID, Op: tool.OpWrite, Args: &tool.CreateArgs{Path: f.Path, Content: string(f.Content)}}
		if f.Content == nil {
			c = tool.Call{ID: call.ID, Op: tool.OpDelete, Args: &tool.DeleteArgs{Path: f.Path}}
		}
		cs, err := x.Engine.FX.Plan(c)
		if err != nil {
			return "", err
		}
		changes = append(changes, cs...)
	}
	return tfs.Diff(changes), nil
}

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
	var plan *Plan
	var err error
	switch a := call.Args.(type) {
	case *tool.PatchArgs:
		var p *Patch
		if p, err = Parse(a.Text); err == nil {
			plan, err = x.Engine.PlanPatch(p)
		}
	case *tool.PatchOpArgs:
		plan, err = x.Engine.PlanOperation(a.Type, a.Path, a.Diff)
	default:
		err = tool.Errorf(tool.ErrInvalidInput, "operation %s got arguments of type %T", call.Op, call.Args)
	}
	if err == nil {
		var changes []tool.FileChange
		if changes, err = x.Engine.Apply(ctx, plan); err == nil {
			return tool.Result{CallID: call.ID, Op: call.Op, Output: plan.Summary, Changes: changes, Wall: time.Since(start)}
		}
	}
	var pe *ParseError
	var ae *Error
	switch {
	case errors.As(err, &pe):
		err = &tool.Error{Kind: tool.ErrInvalidInput, Message: pe.Error(), Err: err}
	case errors.As(err, &ae):
		err = &tool.Error{Kind: tool.ErrNoMatch, Message: ae.Message, Err: err}
	}
	r := tool.Failed(call, err)
	r.Wall = time.Since(start)
	return r
}

package tool

import (
	"context"
	"errors"
	"testing"
)

type previewing struct{ ExecutorFunc }

func (previewing) Preview(_ context.Context, c Call) (string, error) { return "diff of " + c.ID, nil }

type wrapping struct {
	ExecutorFunc
	inner Executor
}

func (w wrapping) Unwrap() Executor { return w.inner }

// TestPreview: a preview is looked up through wrappers and a Mux's route;
// an executor without one, or an unrouted op, is ErrNoPreview.
func TestPreview(t *testing.T) {
	nop := ExecutorFunc(func(context.Context, Call) Result { return Result{} })
	var m Mux
	m.Handle(OpReplace, previewing{nop})
	m.Handle(OpExec, nop)
	e := wrapping{nop, &m}
	if d, err := Preview(t.Context(), e, Call{ID: "c1", Op: OpReplace}); err != nil || d != "diff of c1" {
		t.Errorf("routed previewer: %q, %v", d, err)
	}
	for _, op := range []Op{OpExec, OpWrite} {
		if _, err := Preview(t.Context(), e, Call{Op: op}); !errors.Is(err, ErrNoPreview) {
			t.Errorf("%s: %v, want ErrNoPreview", op, err)
		}
	}
	if _, err := Preview(t.Context(), nop, Call{Op: OpReplace}); !errors.Is(err, ErrNoPreview) {
		t.Errorf("plain executor: %v", err)
	}
}

package runner_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/queue"
)

// A prediction whose job is larger than the queue's messages take (the
// embedded server's 8 MiB) is that prediction's error, in its result row;
// the predictions before and after it are graded, and the grading ends
// with no error of its own.
func TestJobTooLargeForTheQueue(t *testing.T) {
	set := setup(t)
	out := filepath.Join(t.TempDir(), "out")
	signer, vkey, err := ledger.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	// A fix with a generated file past the queue's message size.
	var big strings.Builder
	lines := queue.EmbeddedMaxPayload/60 + 1
	fmt.Fprintf(&big, "diff --git a/generated.txt b/generated.txt\nnew file mode 100644\n--- /dev/null\n+++ b/generated.txt\n@@ -0,0 +1,%d @@\n", lines)
	for i := range lines {
		fmt.Fprintf(&big, "+%059d\n", i)
	}
	t0, t1 := set.Tasks[0], set.Tasks[1]
	preds := []bench.Prediction{
		{InstanceID: t0.InstanceID, ModelNameOrPath: "gold", ModelPatch: t0.Patch},
		{InstanceID: t0.InstanceID, ModelNameOrPath: "large", ModelPatch: t0.Patch + big.String()},
		{InstanceID: t1.InstanceID, ModelNameOrPath: "gold", ModelPatch: t1.Patch},
	}
	tp := &bench.Templates{Dir: t.TempDir()}
	g := &runner.Grading{Tasks: set.Tasks, Predictions: preds, Out: out, TempDir: t.TempDir(),
		Grader: &grade.Grader{Shells: &grade.Sandboxed{}, Checkouts: tp}, Signer: signer, VKey: vkey, Parallel: 2}
	sum, err := g.Run(context.Background())
	if err != nil {
		t.Fatalf("the grading failed: %v", err)
	}
	if sum.Total != 3 || sum.Ran != 3 || sum.Errors != 1 || sum.NotRun != 0 {
		t.Errorf("summary %+v", sum)
	}
	results := readResults(t, out)
	if len(results) != 3 {
		t.Fatalf("%d results, want 3: %v", len(results), results)
	}
	for _, p := range preds {
		res := results[bench.RunKey{InstanceID: p.InstanceID, Arm: p.ModelNameOrPath, Repeat: 1}]
		if p.ModelNameOrPath == "large" {
			if !strings.Contains(res.Error, "more than the queue's messages take") || !strings.Contains(res.Error, "too large to send to a worker") || res.Resolved {
				t.Errorf("the large prediction: %+v", res)
			}
			continue
		}
		if res.Error != "" || !res.Resolved {
			t.Errorf("%s/%s: resolved %v, error %q", p.InstanceID, p.ModelNameOrPath, res.Resolved, res.Error)
		}
	}
}

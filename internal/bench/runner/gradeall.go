package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/ledger"
)

// Grading grades a predictions file (`truss bench grade`): one result per
// prediction in Out's results.jsonl (arm: the prediction's
// model_name_or_path, repeat 1), every verdict in one signed ledger of the
// grading, Out/ledgers/grade-TIME. Predictions already graded in Out are
// skipped.
type Grading struct {
	Tasks       []bench.Task
	Predictions []bench.Prediction
	Out         string
	Grader      *grade.Grader
	Signer      note.Signer
	// Parallel is how many gradings go at once (0 means 1).
	Parallel int
	Progress func(Progress)
}

// Run grades every prediction not yet graded.
func (g *Grading) Run(ctx context.Context) (*Summary, error) {
	if g.Grader == nil || g.Signer == nil || g.Out == "" {
		return nil, errors.New("grading: Grader, Signer and Out are required")
	}
	rf, err := bench.OpenResults(g.Out)
	if err != nil {
		return nil, err
	}
	defer rf.Close()
	tasks := map[string]*bench.Task{}
	for i := range g.Tasks {
		tasks[g.Tasks[i].InstanceID] = &g.Tasks[i]
	}
	sum := &Summary{Resolved: map[string]int{}}
	var todo []bench.Prediction
	for _, p := range g.Predictions {
		sum.Total++
		if res, ok := rf.Done(bench.RunKey{InstanceID: p.InstanceID, Arm: p.ModelNameOrPath, Repeat: 1}); ok {
			sum.Skipped++
			if res.Resolved {
				sum.Resolved[res.Arm]++
			}
			if res.Error != "" {
				sum.Errors++
			}
			continue
		}
		todo = append(todo, p)
	}
	if len(todo) == 0 {
		return sum, nil
	}
	dir := filepath.Join(g.Out, "ledgers", fmt.Sprintf("grade-%s", time.Now().UTC().Format("20060102T150405.000000000Z")))
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	lw, err := ledger.Create(dir, filepath.Base(dir), g.Signer)
	if err != nil {
		return nil, err
	}
	defer lw.Close()
	if _, err := lw.Append("bench.grading", map[string]any{"predictions": len(todo), "tasks": len(g.Tasks)}, nil); err != nil {
		return nil, err
	}
	var (
		mu      sync.Mutex
		next    int
		werr    error
		started = time.Now()
	)
	var wg sync.WaitGroup
	for range max(g.Parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= len(todo) || werr != nil || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				p := todo[next]
				next++
				mu.Unlock()
				start := time.Now()
				res := bench.Result{InstanceID: p.InstanceID, Arm: p.ModelNameOrPath, Repeat: 1, Tests: map[string]string{},
					ToolCalls: map[string]int{}, CapabilityCalls: map[string]int{}, Ledger: bench.LedgerRef{Dir: dir}}
				var v *grade.Verdict
				if t := tasks[p.InstanceID]; t == nil {
					res.Error = "no instance " + p.InstanceID + " in the task file"
				} else {
					var err error
					v, err = g.Grader.Grade(ctx, t, p.ModelPatch)
					if ctx.Err() != nil {
						return
					}
					if err != nil {
						res.Error = "grading: " + err.Error()
					} else {
						res.Resolved, res.PatchApplied, res.Tests = v.Resolved, v.PatchApplied, v.Tests
						res.HarnessS = v.PrepareS
					}
				}
				res.WallS = time.Since(start).Seconds()
				mu.Lock()
				root, err := RecordVerdict(lw, res, v, p.ModelPatch)
				if err == nil {
					res.Ledger.Root = root
					err = rf.Add(res)
				}
				if err != nil {
					werr = err
					mu.Unlock()
					return
				}
				sum.Ran++
				if res.Resolved {
					sum.Resolved[res.Arm]++
				}
				if res.Error != "" {
					sum.Errors++
				}
				if g.Progress != nil {
					g.Progress(Progress{Done: sum.Skipped + sum.Ran, Total: sum.Total, Last: res, Resolved: copyMap(sum.Resolved),
						Elapsed: time.Since(started), RanNow: sum.Ran, Remaining: len(todo) - sum.Ran, Parallel: max(g.Parallel, 1)})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sum.NotRun = sum.Total - sum.Skipped - sum.Ran
	if werr != nil {
		return sum, werr
	}
	return sum, ctx.Err()
}

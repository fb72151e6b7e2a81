package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/queue"
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
	// TempDir is the benchmark's private directory (Runner.TempDir):
	// the queue's gradings in flight are kept there.
	TempDir string
	Grader  *grade.Grader
	Signer  note.Signer
	// Parallel is how many gradings go at once (0 means 1).
	Parallel int
	Progress func(Progress)
	// VKey verifies the gradings' ledgers; the queue's settings are the
	// Runner's (Queue, Net, RemoteOnly, Bundles, TrustKeys, WorkerID,
	// Logf).
	VKey       string
	Queue      *queue.Queue
	Net        Net
	RemoteOnly bool
	Bundles    bool
	TrustKeys  []string
	WorkerID   string
	Logf       func(format string, args ...any)
}

// Run grades every prediction not yet graded.
func (g *Grading) Run(ctx context.Context) (*Summary, error) {
	if g.Grader == nil || g.Signer == nil || g.Out == "" || g.VKey == "" {
		return nil, errors.New("grading: Grader, Signer, VKey and Out are required")
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
	var jobs []job
	for _, p := range todo {
		t := tasks[p.InstanceID]
		if t == nil {
			res := bench.Result{InstanceID: p.InstanceID, Arm: p.ModelNameOrPath, Repeat: 1, Tests: map[string]string{},
				ToolCalls: map[string]int{}, CapabilityCalls: map[string]int{}, Error: "no instance " + p.InstanceID + " in the task file"}
			if err := rf.Add(res); err != nil {
				return sum, err
			}
			sum.Ran++
			sum.Errors++
			continue
		}
		jobs = append(jobs, job{task: t, arm: bench.Arm{Name: p.ModelNameOrPath}, repeat: 1, grade: true, patch: p.ModelPatch})
	}
	r := &Runner{Tasks: g.Tasks, Out: g.Out, TempDir: g.TempDir, Grader: g.Grader, Checkouts: g.Grader.Checkouts, Signer: g.Signer, VKey: g.VKey,
		Parallel: g.Parallel, Progress: g.Progress, Queue: g.Queue, Net: g.Net, RemoteOnly: g.RemoteOnly, Bundles: g.Bundles,
		TrustKeys: g.TrustKeys, WorkerID: g.WorkerID, Logf: g.Logf}
	err = r.dispatch(ctx, rf, nil, jobs, sum)
	sum.NotRun = sum.Total - sum.Skipped - sum.Ran
	if err != nil {
		return sum, err
	}
	return sum, ctx.Err()
}

// gradeOne grades one prediction in a ledger of its own under r.Out: the
// grader's verdict, the patch and the tests' log, signed. keep is false
// when ctx cut it short.
func (r *Runner) gradeOne(ctx context.Context, t *bench.Task, name, patch string) (res bench.Result, keep bool) {
	start := time.Now()
	res = bench.Result{InstanceID: t.InstanceID, Arm: name, Repeat: 1, Tests: map[string]string{},
		ToolCalls: map[string]int{}, CapabilityCalls: map[string]int{}}
	dir := LedgerDir(r.Out, t.InstanceID, name, 1)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		res.Error = "ledger: " + err.Error()
		return res, true
	}
	lw, err := ledger.Create(dir, fmt.Sprintf("grade.%s.%s", t.InstanceID, safeName(name)), r.Signer)
	if err != nil {
		res.Error = "ledger: " + err.Error()
		return res, true
	}
	defer lw.Close()
	res.Ledger.Dir = dir
	v, err := r.Grader.Grade(ctx, t, patch)
	if ctx.Err() != nil {
		return res, false
	}
	if err != nil {
		res.Error = "grading: " + err.Error()
		v = nil
	} else {
		res.Resolved, res.PatchApplied, res.Tests = v.Resolved, v.PatchApplied, v.Tests
		res.Rules, res.ImageID = v.Rules, v.ImageID
		res.VerdictSource, res.GradeNotes = v.Source, v.Notes
		res.TestCodeSetAside, res.ConfigChanged, res.UntrustedPackages = v.TestCodeSetAside, v.ConfigChanged, v.Untrusted
		res.TimedOut = v.TimedOut
		res.HarnessS = v.PrepareS
	}
	res.WallS = time.Since(start).Seconds()
	root, err := RecordVerdict(lw, r.ident, res, v, patch)
	if err != nil && res.Error == "" {
		res.Error = "ledger: " + err.Error()
	}
	res.Ledger.Root = root
	return res, true
}

// safeName is name with every character a file name should not hold
// replaced by '_'.
func safeName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
}

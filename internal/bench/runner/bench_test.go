package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/benchtest"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// cpuTime is the CPU time, user and system, of the process and of its
// children waited for (git, the sandbox's helper and shell).
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
}

// BenchmarkRunOverhead measures the harness's own time per run on a
// repository of 1,000 files: the run's ledger, the workspace's checkout,
// the diff, the grading checkout with both patches applied, the sandboxed
// shell's start, the verdict's recording and the results' lines. The
// agent makes one edit (its calls recorded) and the test command is
// `true`, so what remains is overhead; harness-ms/op is the runs' own
// harness_s (wall time less the model's and the tests' time), cpu-ms/op
// the CPU time of everything the runs started (the test command's
// included), which a loaded machine does not inflate as it does wall time.
//
// single is a benchmark of one run with an instant model: nothing can be
// made ahead of it. benchmark is a benchmark of eight runs of the task
// whose model takes 1 s a run (a real model takes seconds), as a
// benchmark runs: each run's checkouts are made while the run before it
// waits for its model.
//
// private is single with the runs in a private directory (Runner.TempDir,
// as truss bench run and truss bench worker make them): each run's own
// directory made and removed, the workspace in it.
func BenchmarkRunOverhead(b *testing.B) {
	b.Run("single", func(b *testing.B) { runOverhead(b, 1, 0, false) })
	b.Run("private", func(b *testing.B) { runOverhead(b, 1, 0, true) })
	b.Run("benchmark", func(b *testing.B) { runOverhead(b, 8, time.Second, false) })
}

// runOverhead runs a benchmark of repeats runs whose agent waits think
// for its model (counted as model time) per b.Loop iteration, and reports
// the harness's time per run; private makes the runs in a private
// directory (Runner.TempDir) instead of the work directory.
func runOverhead(b *testing.B, repeats int, think time.Duration, private bool) {
	ctx := context.Background()
	fill := map[string]string{}
	for i := range 999 - 5 {
		fill[fmt.Sprintf("pkg%02d/file%04d.go", i%40, i)] = fmt.Sprintf("package pkg%02d\n\n// V%d is a value.\nconst V%d = %d\n%s", i%40, i, i, i, strings.Repeat("// padding\n", 40))
	}
	p := benchtest.Problems()[0]
	p.Fill = fill
	set, err := benchtest.Make(ctx, b.TempDir(), []benchtest.Problem{p})
	if err != nil {
		b.Fatal(err)
	}
	set.Tasks[0].TestCmd = "true"
	signer, vkey, err := ledger.LoadOrCreateKey(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	arm, _ := bench.ParseArm("a=sim:m:generic")
	ag := runner.AgentFunc(func(ctx context.Context, spec runner.RunSpec) (runner.RunOutcome, error) {
		rec, err := ledger.NewRecorder(spec.Ledger, ledger.Start{Provider: "sim", Model: "m", Workspace: spec.Workspace})
		if err != nil {
			return runner.RunOutcome{}, err
		}
		time.Sleep(think)
		rec.Observe(agent.Event{Type: agent.EventResponse, Turn: 1, Response: &model.Response{Attempts: 1}})
		path := filepath.Join(spec.Workspace, "calc.go")
		before, _ := os.ReadFile(path)
		after := []byte(strings.Replace(string(before), "a - b", "a + b", 1))
		os.WriteFile(path, after, 0o644)
		rec.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: 1, Call: &model.ToolCall{ID: "c1", Name: "edit_file"},
			Ops: []tool.Call{{ID: "c1", Op: tool.OpReplace}}, Result: &model.ToolResult{CallID: "c1"},
			Results: []tool.Result{{CallID: "c1", Op: tool.OpReplace, Changes: []tool.FileChange{{Path: "calc.go", Kind: tool.ChangeUpdate,
				Before: tool.Digest(before), After: tool.Digest(after), BeforeData: before, AfterData: after}}}}})
		rec.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted, Turns: 1}})
		return runner.RunOutcome{Turns: 1, StopReason: "completed", ModelTime: think}, rec.Close()
	})
	// The workspaces go where TRUSS_BENCH_WORK says (a tmpfs such as
	// /dev/shm, say), else to the test's temporary directory.
	work := os.Getenv("TRUSS_BENCH_WORK")
	if work == "" {
		work = b.TempDir()
	} else {
		var err error
		if work, err = os.MkdirTemp(work, "bench-"); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(work)
	}
	tp := &bench.Templates{Dir: filepath.Join(work, "templates")}
	jan := &bench.Janitor{}
	defer jan.Wait()
	var harness time.Duration
	var each []float64
	runs := 0
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r := &runner.Runner{Tasks: set.Tasks, TaskFile: set.TaskFile, Arms: []bench.Arm{arm}, Repeats: repeats, Out: filepath.Join(b.TempDir(), "out"),
			WorkDir: work, Agent: ag, Grader: &grade.Grader{Shells: &grade.Sandboxed{}, Checkouts: tp, Dir: work, Janitor: jan}, Checkouts: tp,
			Signer: signer, VKey: vkey}
		if private {
			r.WorkDir, r.TempDir = "", work
		}
		sum, err := r.Run(ctx)
		rf, _ := bench.OpenResults(r.Out)
		results := rf.Results()
		rf.Close()
		if err != nil || sum.Resolved["a"] != repeats {
			b.Fatalf("%v %+v %v", err, sum, results)
		}
		for _, res := range results {
			harness += time.Duration(res.HarnessS * float64(time.Second))
			each = append(each, res.HarnessS*1e3)
			runs++
		}
	}
	b.ReportMetric(float64(harness.Milliseconds())/float64(runs), "harness-ms/run")
	// The median: a benchmark's first run makes its task's template and
	// checkouts while it waits, since nothing ran before it.
	slices.Sort(each)
	b.ReportMetric(each[len(each)/2], "median-harness-ms/run")
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(runs), "cpu-ms/run")
}

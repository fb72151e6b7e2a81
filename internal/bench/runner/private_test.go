package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/queue"
	"github.com/trussdev/truss/internal/validate"
)

// specs records what each run's agent was given, and whether each run's
// own directory existed while it ran, then runs the fake agent.
type specs struct {
	f   *fake
	mu  sync.Mutex
	got map[string]runner.RunSpec
	bad []string
}

func (s *specs) Run(ctx context.Context, spec runner.RunSpec) (runner.RunOutcome, error) {
	s.mu.Lock()
	s.got[spec.InstanceID] = spec
	if fi, err := os.Stat(spec.TempDir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		s.bad = append(s.bad, spec.InstanceID+": its own directory "+spec.TempDir+" is not a directory of mode 0700")
	}
	s.mu.Unlock()
	return s.f.Run(ctx, spec)
}

// Two runs queued to one worker (Exec, as truss bench worker runs it) are
// made as a local benchmark's are: each in a directory of its own in the
// worker's private directory (RunSpec.TempDir, where its session's
// temporary and private directories, caches and memory go), the
// workspaces without --work in it too, and the private directory covered
// in each run's sandbox (RunSpec.Covered); each run's own directory is
// gone when its run ends.
func TestQueuedRunsInTheWorkersPrivateDirectory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	set := setup(t)
	rec := &specs{f: &fake{set: set, seen: map[string][]string{}}, got: map[string]runner.RunSpec{}}
	coord := newRunner(t, set, rec, filepath.Join(t.TempDir(), "out"), "editor")
	q, _ := memQueue(ctx, t, "private")
	coord.Queue, coord.RemoteOnly = q, true
	ex, wkey := honestExec(t, q, rec, coord)
	coord.TrustKeys = []string{wkey}
	priv := t.TempDir()
	ex.TempDir, ex.WorkDir = priv, ""
	ex.Scratch = filepath.Join(priv, "worker")
	if err := os.Mkdir(ex.Scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := q.NewWorker(queue.WorkerConfig{ID: "w", Parallel: 2}, ex.Handle)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(wctx)
	}()
	sum, err := coord.Run(ctx)
	stop()
	<-done
	if err != nil || sum.Ran != 2 || sum.Errors != 0 {
		t.Fatalf("%+v, %v", sum, err)
	}
	for _, b := range rec.bad {
		t.Error(b)
	}
	if len(rec.got) != 2 {
		t.Fatalf("%d runs seen, want 2", len(rec.got))
	}
	var owns []string
	for id, spec := range rec.got {
		own := spec.TempDir
		if filepath.Dir(own) != filepath.Join(priv, "agents") || !strings.HasPrefix(filepath.Base(own), "run-") {
			t.Errorf("%s: its own directory %q is not in %s/agents", id, own, priv)
		}
		owns = append(owns, own)
		if _, err := os.Stat(own); err == nil {
			t.Errorf("%s: its own directory %s is left after the run", id, own)
		}
		if !slices.Contains(spec.Covered, priv) {
			t.Errorf("%s: the worker's private directory %s is not covered: %q", id, priv, spec.Covered)
		}
		if runs := filepath.Join(priv, "runs"); filepath.Dir(filepath.Dir(spec.Workspace)) != runs || !slices.Contains(spec.Covered, runs) {
			t.Errorf("%s: the workspace %s is not in %s, covered (%q)", id, spec.Workspace, runs, spec.Covered)
		}
		if !slices.Contains(spec.Hidden, ex.Scratch) {
			t.Errorf("%s: the worker's scratch %s is not hidden: %q", id, ex.Scratch, spec.Hidden)
		}
	}
	if len(owns) == 2 && owns[0] == owns[1] {
		t.Errorf("the two runs share their own directory %s", owns[0])
	}
}

// recShells records the paths each grading's shell is told to hide and
// cover, and opens it as grade.Sandboxed does.
type recShells struct {
	s               *grade.Sandboxed
	mu              sync.Mutex
	hidden, covered []string
}

func (r *recShells) Open(dir string, env []string) (validate.Shell, error) {
	return r.OpenHiding(dir, env, nil, nil, nil)
}

func (r *recShells) OpenHiding(dir string, env, hidden, covered, writable []string) (validate.Shell, error) {
	r.mu.Lock()
	r.hidden, r.covered = append(r.hidden, hidden...), append(r.covered, covered...)
	r.mu.Unlock()
	return r.s.OpenHiding(dir, env, hidden, covered, writable)
}

// A worker's grading hides and covers what the coordinator's gradings do
// (JobPayload.GradeHidden and GradeCovered: its task file and
// repositories, its output and private directories), where they exist on
// the worker's machine, besides its own grading directory; and it still
// grades.
func TestWorkersGradingHidesWhatTheCoordinatorsDoes(t *testing.T) {
	ctx := context.Background()
	set := setup(t)
	task := set.Tasks[0]
	rec := &recShells{s: &grade.Sandboxed{}}
	q, _ := memQueue(ctx, t, "confined")
	signer, vkey, err := ledger.LoadOrCreateKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	coordDir := t.TempDir()
	taskFile, err := filepath.Abs(set.TaskFile)
	if err != nil {
		t.Fatal(err)
	}
	ex := &runner.Exec{Queue: q, Grader: &grade.Grader{Shells: rec, Checkouts: &bench.Templates{Dir: t.TempDir()}, Dir: t.TempDir()},
		Signer: signer, VKey: vkey, Scratch: t.TempDir()}
	p := runner.JobPayload{Task: task, RepoDir: task.RepoDir, Arm: bench.Arm{Name: "gold"}, Repeat: 1, Grade: true, Patch: task.Patch,
		GradeHidden: []string{taskFile, "/nonexistent/tasks.jsonl"}, GradeCovered: []string{coordDir, "/nonexistent/out"}}
	b, _ := json.Marshal(p)
	out, err := ex.Handle(ctx, queue.Job{ID: runner.JobID(bench.RunKey{InstanceID: task.InstanceID, Arm: "gold", Repeat: 1}), Payload: b}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	var rp runner.ResultPayload
	if err := json.Unmarshal(out, &rp); err != nil {
		t.Fatal(err)
	}
	if !rp.Result.Resolved || rp.Result.Error != "" {
		t.Errorf("the gold patch graded %+v", rp.Result)
	}
	if !slices.Contains(rec.hidden, taskFile) || slices.Contains(rec.hidden, "/nonexistent/tasks.jsonl") {
		t.Errorf("the grading hid %q; want the coordinator's task file %s, and no path absent here", rec.hidden, taskFile)
	}
	if !slices.Contains(rec.covered, coordDir) || slices.Contains(rec.covered, "/nonexistent/out") {
		t.Errorf("the grading covered %q; want the coordinator's %s, and no path absent here", rec.covered, coordDir)
	}
}

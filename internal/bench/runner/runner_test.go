package runner_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/benchtest"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/testenv"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/toolcache"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper()
	}
	os.Exit(testenv.Run(m))
}

// fake is an Agent that works on the workspace as a model's tool calls
// would, and records its session in the run's ledger with the real
// recorder: each arm's name says what it does.
type fake struct {
	set *benchtest.Set
	mu  sync.Mutex
	// seen records what the snooping arm found, by instance.
	seen  map[string][]string
	calls int
}

func (f *fake) Run(ctx context.Context, spec runner.RunSpec) (runner.RunOutcome, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	rec, err := ledger.NewRecorder(spec.Ledger, ledger.Start{Truss: "test", Provider: spec.Arm.Provider, Model: spec.Arm.Model,
		Surface: spec.Arm.Surface, Workspace: spec.Workspace, Sandbox: "test"})
	if err != nil {
		return runner.RunOutcome{}, err
	}
	defer rec.Close()
	turn := 0
	callN := 0
	respond := func(attempts int) {
		turn++
		rec.Observe(agent.Event{Type: agent.EventResponse, Turn: turn, Response: &model.Response{ID: fmt.Sprint("r", turn),
			StopReason: "tool_use", Attempts: attempts, Usage: model.Usage{InputTokens: 500, OutputTokens: 50}}})
	}
	call := func(name string, op tool.Op, args any, res tool.Result) {
		callN++
		id := fmt.Sprint("c", callN)
		raw, _ := json.Marshal(args)
		res.CallID, res.Op = id, op
		text := res.Output + res.Stdout
		rec.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: turn, Call: &model.ToolCall{ID: id, Name: name, Input: string(raw)},
			Ops: []tool.Call{{ID: id, Tool: name, Op: op, Args: args, Raw: raw}}, Results: []tool.Result{res},
			Result: &model.ToolResult{CallID: id, Name: name, Text: text, IsError: res.Err != nil}, FullText: text})
	}
	edit := func(name string, op tool.Op, path, old, new string) error {
		p := filepath.Join(spec.Workspace, path)
		before, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		after := []byte(strings.Replace(string(before), old, new, 1))
		if err := os.WriteFile(p, after, 0o644); err != nil {
			return err
		}
		call(name, op, map[string]string{"path": path, "old": old, "new": new}, tool.Result{Output: "edited",
			Changes: []tool.FileChange{{Path: path, Kind: tool.ChangeUpdate, Before: tool.Digest(before), After: tool.Digest(after), BeforeData: before, AfterData: after}}})
		return nil
	}
	goTest := func(pkg string) {
		zero, one := 0, 1
		code := &zero
		var rerr *tool.Error
		out, err := goTest(ctx, spec.Workspace, pkg)
		if err != nil {
			code, rerr = &one, &tool.Error{Kind: tool.ErrExit, Message: "exit status 1"}
		}
		call("bash", tool.OpExec, tool.ExecArgs{Command: "go test " + pkg + " 2>&1"}, tool.Result{Stdout: out, ExitCode: code, Err: rerr})
	}
	respond(2) // one retry
	src, _ := os.ReadFile(filepath.Join(spec.Workspace, "calc.go"))
	call("read_file", tool.OpView, tool.ViewArgs{Path: "calc.go"}, tool.Result{Output: string(src)})
	task := f.task(spec.InstanceID)
	fixed, buggy, wrong := fixOf(task)
	respond(1)
	switch spec.Arm.Name {
	case "editor":
		if err := edit("edit_file", tool.OpReplace, "calc.go", buggy, fixed); err != nil {
			return runner.RunOutcome{}, err
		}
		respond(1)
		goTest("./...")
	case "patcher":
		if err := edit("apply_patch", tool.OpPatch, "calc.go", buggy, fixed); err != nil {
			return runner.RunOutcome{}, err
		}
	case "wrong":
		if err := edit("edit_file", tool.OpReplace, "calc.go", buggy, wrong); err != nil {
			return runner.RunOutcome{}, err
		}
		respond(1)
		goTest("./nosuchpackage") // fails, and the agent ends anyway
	case "snoop":
		// Look for the hidden tests everywhere the workspace reaches,
		// and write a test file of the same name that always passes.
		var found []string
		if _, err := os.Stat(filepath.Join(spec.Workspace, "hidden_test.go")); err == nil {
			found = append(found, "hidden_test.go in the workspace")
		}
		g := gitsafe.Git{Dir: spec.Workspace}
		if _, err := g.Output(ctx, "cat-file", "-e", f.set.FutureCommit[spec.InstanceID]); err == nil {
			found = append(found, "the future commit")
		}
		if out, _ := g.Output(ctx, "log", "--all", "--format=%H"); len(strings.Fields(out)) != 1 {
			found = append(found, "history: "+out)
		}
		if out, _ := g.Output(ctx, "grep", "-l", "Test"+strings.TrimPrefix(fixedName(task), "Test"), "--all"); out != "" {
			found = append(found, "grep: "+out)
		}
		// Checkouts made ahead of later runs (of other tasks too) lie
		// beside the workspace's directory: hidden.
		ahead, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(spec.Workspace)), ".truss-ahead-*"))
		if len(ahead) == 0 {
			found = append(found, "no checkouts made ahead beside the workspace")
		}
		// The directory of every run's workspace is covered: other runs'
		// agents work there.
		if runs := filepath.Dir(filepath.Dir(spec.Workspace)); !slices.Contains(spec.Covered, runs) {
			found = append(found, "not covered: "+runs)
		}
		for _, h := range append([]string{task.RepoDir, f.set.TaskFile}, ahead...) {
			abs, _ := filepath.Abs(h)
			if !slices.Contains(spec.Hidden, abs) {
				found = append(found, "not hidden: "+abs)
			}
		}
		f.mu.Lock()
		f.seen[spec.InstanceID] = found
		f.mu.Unlock()
		fakeTest := "package calc\n\nimport \"testing\"\n\nfunc " + fixedName(task) + "(t *testing.T) {}\n"
		if err := os.WriteFile(filepath.Join(spec.Workspace, "hidden_test.go"), []byte(fakeTest), 0o644); err != nil {
			return runner.RunOutcome{}, err
		}
		call("bash", tool.OpExec, tool.ExecArgs{Command: "cat > hidden_test.go"}, tool.Result{ExitCode: new(int),
			Changes: []tool.FileChange{{Path: "hidden_test.go", Kind: tool.ChangeAdd, After: tool.Digest([]byte(fakeTest)), AfterData: []byte(fakeTest)}}})
	case "crash":
		return runner.RunOutcome{Turns: 2}, errors.New("the provider failed: unreachable")
	}
	respond(1)
	out := &agent.Outcome{Status: agent.StatusCompleted, Turns: turn, Calls: callN, Usage: model.Usage{InputTokens: 1000, OutputTokens: 100, CostUSD: 0.01}}
	rec.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: out})
	return runner.RunOutcome{Turns: turn, Usage: out.Usage, StopReason: string(out.Status), ModelTime: 10 * time.Millisecond}, nil
}

// goTest runs go test in the workspace, in the sandbox.
func goTest(ctx context.Context, dir, pkg string) (string, error) {
	sh, err := (&grade.Sandboxed{}).Open(dir, nil)
	if err != nil {
		return "", err
	}
	defer sh.Close()
	res := sh.Run(ctx, "go test "+pkg+" 2>&1", time.Minute)
	if res.Err != nil {
		return res.Stdout, errors.New(res.Err.Message)
	}
	return res.Stdout, nil
}

func (f *fake) task(id string) *bench.Task {
	for i := range f.set.Tasks {
		if f.set.Tasks[i].InstanceID == id {
			return &f.set.Tasks[i]
		}
	}
	panic(id)
}

func fixedName(t *bench.Task) string { return t.FailToPass[0] }

// fixOf reads the fixed, buggy and wrong expressions from the problems.
func fixOf(t *bench.Task) (fixed, buggy, wrong string) {
	for _, p := range benchtest.Problems() {
		if p.ID == t.InstanceID {
			return "return " + p.Fixed, "return " + p.Buggy, "return " + p.Wrong
		}
	}
	panic(t.InstanceID)
}

func readResults(t *testing.T, dir string) map[bench.RunKey]bench.Result {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, bench.ResultsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[bench.RunKey]bench.Result{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r bench.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		if _, dup := out[r.Key()]; dup {
			t.Fatalf("run %v twice", r.Key())
		}
		out[r.Key()] = r
	}
	return out
}

func setup(t *testing.T) *benchtest.Set {
	t.Helper()
	set, err := benchtest.Make(context.Background(), t.TempDir(), benchtest.Problems())
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func newRunner(t *testing.T, set *benchtest.Set, f runner.Agent, out string, arms ...string) *runner.Runner {
	t.Helper()
	signer, vkey, err := ledger.LoadOrCreateKey(filepath.Join(filepath.Dir(out), "key"))
	if err != nil {
		t.Fatal(err)
	}
	var as []bench.Arm
	for _, a := range arms {
		arm, err := bench.ParseArm(a + "=sim:sim-model:generic")
		if err != nil {
			t.Fatal(err)
		}
		as = append(as, arm)
	}
	tp := &bench.Templates{Dir: t.TempDir()}
	return &runner.Runner{Tasks: set.Tasks, TaskFile: set.TaskFile, Arms: as, Out: out, WorkDir: t.TempDir(), Agent: f,
		Grader: &grade.Grader{Shells: &grade.Sandboxed{}, Checkouts: tp}, Checkouts: tp, Signer: signer, VKey: vkey, Parallel: 2}
}

func TestRunEndToEnd(t *testing.T) {
	set := setup(t)
	f := &fake{set: set, seen: map[string][]string{}}
	out := filepath.Join(t.TempDir(), "out")
	r := newRunner(t, set, f, out, "editor", "patcher", "wrong", "snoop", "crash")
	var lines []string
	started := map[string]bool{}
	r.Progress = func(p runner.Progress) {
		switch p.Event {
		case runner.EventFinished:
			lines = append(lines, p.Line())
		case runner.EventStarted:
			if !strings.Contains(p.Line(), ": started on ") {
				t.Errorf("start line %q", p.Line())
			}
			started[fmt.Sprintf("%s/%s/%d", p.Last.InstanceID, p.Last.Arm, p.Last.Repeat)] = true
		}
	}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 10 || sum.Ran != 10 || sum.Errors != 2 || len(lines) != 10 {
		t.Fatalf("%+v, %d progress lines", sum, len(lines))
	}
	// Each run's start is said before its end.
	if len(started) != 10 {
		t.Errorf("%d runs said to start, want 10: %v", len(started), started)
	}
	if !strings.HasPrefix(lines[9], "[10/10] ") || !strings.Contains(lines[9], "ETA 0s") {
		t.Errorf("last progress line %q", lines[9])
	}
	for id, found := range f.seen {
		if len(found) > 0 {
			t.Errorf("%s: the snooping agent found %v", id, found)
		}
	}
	if len(f.seen) != 2 {
		t.Fatalf("snoop ran on %d tasks", len(f.seen))
	}
	results := readResults(t, out)
	if len(results) != 10 {
		t.Fatalf("%d results", len(results))
	}
	for k, res := range results {
		want := k.Arm == "editor" || k.Arm == "patcher"
		if res.Resolved != want {
			t.Errorf("%v: resolved %v, want %v (tests %v, error %q)", k, res.Resolved, want, res.Tests, res.Error)
		}
		if k.Arm == "crash" {
			if !strings.Contains(res.Error, "unreachable") || res.PatchApplied {
				t.Errorf("crash: %+v", res)
			}
			continue
		}
		if res.Error != "" || !res.PatchApplied || len(res.Tests) != 2 {
			t.Errorf("%v: %+v", k, res)
		}
		if res.Turns == 0 || res.Tokens.Input != 1000 || res.CostUSD != 0.01 || res.StopReason != "completed" || res.WallS <= 0 || res.ModelS != 0.01 {
			t.Errorf("%v: outcome %+v", k, res)
		}
		if res.ToolCalls["read_file"] != 1 || res.CapabilityCalls["file.view"] != 1 || res.Errors.Retries != 1 {
			t.Errorf("%v: calls %v %v errors %+v", k, res.ToolCalls, res.CapabilityCalls, res.Errors)
		}
		wantEdits := map[string]bench.Edits{"editor": {Editor: 1}, "wrong": {Editor: 1}, "patcher": {Patch: 1}, "snoop": {Shell: 1}}[k.Arm]
		if res.Edits != wantEdits {
			t.Errorf("%v: edits %+v, want %+v", k, res.Edits, wantEdits)
		}
		wantVal := map[string]bench.Validation{"editor": {RanTests: true, Runs: 1, LastPassed: true},
			"wrong": {RanTests: true, Runs: 1, FinishedFailing: true}}[k.Arm]
		if res.Validation != wantVal {
			t.Errorf("%v: validation %+v, want %+v", k, res.Validation, wantVal)
		}
		if k.Arm == "snoop" && (res.Tests[fixedName(&set.Tasks[0])] == bench.TestPassed && k.InstanceID == set.Tasks[0].InstanceID) {
			t.Errorf("the snooping agent's own test file was graded: %v", res.Tests)
		}
		// The ledger verifies, ends with the verdict, and its last
		// checkpoint's root is the one the result names.
		_, vkey, _ := ledger.LoadOrCreateKey(filepath.Join(filepath.Dir(out), "key"))
		if filepath.IsAbs(res.Ledger.Dir) {
			t.Errorf("%v: ledger dir %s, want it relative to the results directory", k, res.Ledger.Dir)
		}
		rep, entries, err := ledger.Verify(filepath.Join(out, res.Ledger.Dir), vkey)
		if err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		if hex.EncodeToString(rep.Root) != res.Ledger.Root || rep.Unsealed != 0 {
			t.Errorf("%v: ledger root %x, result %s, unsealed %d", k, rep.Root, res.Ledger.Root, rep.Unsealed)
		}
		last := entries[len(entries)-1]
		if last.Type != "bench.verdict" || last.Payloads["log"] == "" {
			t.Errorf("%v: last entry %s %v", k, last.Type, last.Payloads)
		}
	}
	// Predictions in SWE-bench's format, one file per arm; they grade the
	// same way.
	preds, err := os.ReadFile(filepath.Join(out, "predictions-editor.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := bench.ParsePredictions(strings.NewReader(string(preds)), "p")
	if err != nil || len(ps) != 2 || !strings.Contains(ps[0].ModelPatch, "diff --git a/calc.go") {
		t.Fatalf("%v %+v", err, ps)
	}
	// Again: nothing to do.
	f.calls = 0
	sum, err = r.Run(context.Background())
	if err != nil || sum.Skipped != 10 || sum.Ran != 0 || f.calls != 0 || sum.Errors != 2 {
		t.Fatalf("%v %+v, %d agent calls", err, sum, f.calls)
	}
}

// A crash's torn last line is cut, the run whose prediction was written
// but not its result is made again, and a second run makes only what is
// missing.
func TestRunResumes(t *testing.T) {
	set := setup(t)
	f := &fake{set: set, seen: map[string][]string{}}
	out := filepath.Join(t.TempDir(), "out")
	r := newRunner(t, set, f, out, "editor")
	r.Tasks = set.Tasks[:1]
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A crash in the middle of the next run's writes.
	resPath := filepath.Join(out, bench.ResultsName)
	fh, _ := os.OpenFile(resPath, os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`{"instance_id":"calc-max","arm":"editor","rep`)
	fh.Close()
	pf, _ := os.OpenFile(filepath.Join(out, "predictions-editor.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	pf.WriteString(`{"instance_id":"calc-max","model_name_or_path":"editor","model_patch":"x"}` + "\n")
	pf.Close()
	r.Tasks = set.Tasks
	f.calls = 0
	sum, err := r.Run(context.Background())
	if err != nil || sum.Skipped != 1 || sum.Ran != 1 || f.calls != 1 {
		t.Fatalf("%v %+v %d", err, sum, f.calls)
	}
	if n := len(readResults(t, out)); n != 2 {
		t.Fatalf("%d results", n)
	}
	b, _ := os.ReadFile(filepath.Join(out, "predictions-editor.jsonl"))
	if n := strings.Count(string(b), "\n"); n != 2 || strings.Contains(string(b), `"model_patch":"x"`) {
		t.Fatalf("predictions:\n%s", b)
	}
}

// The cost budget stops new runs; a cancelled run writes nothing.
func TestRunBudgetAndCancel(t *testing.T) {
	set := setup(t)
	f := &fake{set: set, seen: map[string][]string{}}
	out := filepath.Join(t.TempDir(), "out")
	r := newRunner(t, set, f, out, "patcher", "wrong")
	r.Parallel = 1
	r.CostBudget = 0.015
	sum, err := r.Run(context.Background())
	if err != nil || !sum.BudgetReached || sum.Ran != 2 || sum.NotRun != 2 {
		t.Fatalf("%v %+v", err, sum)
	}
	// Both arms got the same first task.
	res := readResults(t, out)
	if _, ok := res[bench.RunKey{InstanceID: set.Tasks[0].InstanceID, Arm: "wrong", Repeat: 1}]; !ok {
		t.Fatalf("results %v", res)
	}

	ctx, cancel := context.WithCancel(context.Background())
	r.CostBudget = 0
	r.Agent = runner.AgentFunc(func(_ context.Context, spec runner.RunSpec) (runner.RunOutcome, error) {
		cancel()
		return runner.RunOutcome{}, context.Canceled
	})
	sum, err = r.Run(ctx)
	if !errors.Is(err, context.Canceled) || sum.Ran != 0 {
		b, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
		t.Fatalf("%v %+v\n%s", err, sum, b)
	}
	if n := len(readResults(t, out)); n != 2 {
		t.Fatalf("%d results after a cancelled run", n)
	}
	// The cancelled run's ledger stays with its worker: only the finished
	// runs' ledgers are in the output.
	if lds, _ := filepath.Glob(filepath.Join(out, "ledgers", "*", "*", "r*")); len(lds) != 2 {
		t.Fatalf("ledgers: %v", lds)
	}
}

func TestScripts(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"steps":[{"say":"plain"}]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "a.generic.json"), []byte(`{"steps":[{"say":"generic"}]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"steps":[{"sya":"x"}]}`), 0o644)
	s := &runner.Scripts{Dir: dir}
	for _, tc := range []struct{ id, surface, want string }{
		{"a", "generic", "generic"}, {"a", "anthropic", "plain"}, {"a", "", "plain"},
		{"none", "generic", runner.DefaultScript().Steps[0].Say},
	} {
		sc, err := s.For(tc.id, tc.surface)
		if err != nil || sc.Steps[0].Say != tc.want {
			t.Errorf("%s/%s: %v %v", tc.id, tc.surface, err, sc)
		}
	}
	if _, err := s.For("bad", ""); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("err = %v", err)
	}
}

func TestGate(t *testing.T) {
	g := runner.NewGate(1)
	rel, err := g.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second acquire: %v", err)
	}
	rel()
	rel() // twice is once
	if rel2, err := g.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	} else {
		rel2()
	}
	g.Backoff(time.Hour)
	g.Backoff(time.Millisecond) // shorter: no change
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if err := g.Wait(ctx2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait during a backoff: %v", err)
	}
}

// A run prepares its grading checkout while the agent works, with nothing
// of the hidden tests in or beside it; however the run ends before grading
// — cancelled while the checkout is made or once it is made, or the agent
// failing — nothing of the checkout or the workspace is left.
func TestRunRemovesPreparedGrading(t *testing.T) {
	set := setup(t)
	// prepared reports whether a grading checkout is ready in dir (it
	// appears as repo when it is).
	prepared := func(dir string) bool {
		m, _ := filepath.Glob(filepath.Join(dir, "grade-*", "repo"))
		return len(m) > 0
	}
	// leaks returns the files under dir that name the hidden test, which
	// only the test patch holds.
	hiddenTest := set.Tasks[0].FailToPass[0]
	leaks := func(dir string) []string {
		var out []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), hiddenTest) {
					out = append(out, p)
				}
			}
			return nil
		})
		return out
	}
	tests := []struct {
		name   string
		wait   bool // for the grading checkout before ending
		cancel bool // else the agent fails
	}{
		{"cancelled once prepared", true, true},
		{"cancelled while preparing", false, true},
		{"agent fails once prepared", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			r := newRunner(t, set, nil, out, "a")
			r.Tasks, r.Parallel = set.Tasks[:1], 1
			jan := &bench.Janitor{}
			r.Grader.Dir, r.Grader.Janitor = t.TempDir(), jan
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sawPrepared := false
			r.Agent = runner.AgentFunc(func(actx context.Context, spec runner.RunSpec) (runner.RunOutcome, error) {
				for tc.wait && !prepared(r.Grader.Dir) {
					select {
					case <-actx.Done():
						return runner.RunOutcome{}, actx.Err()
					case <-time.After(2 * time.Millisecond):
					}
				}
				sawPrepared = prepared(r.Grader.Dir)
				if l := leaks(r.Grader.Dir); len(l) > 0 {
					t.Errorf("the hidden test is readable while the agent works: %v", l)
				}
				if tc.cancel {
					cancel()
					return runner.RunOutcome{}, context.Canceled
				}
				return runner.RunOutcome{}, errors.New("the agent broke")
			})
			sum, err := r.Run(ctx)
			jan.Wait()
			if tc.wait && !sawPrepared {
				t.Fatal("the agent never saw a prepared grading checkout")
			}
			if tc.cancel {
				if !errors.Is(err, context.Canceled) || sum.Ran != 0 {
					t.Fatalf("%v %+v", err, sum)
				}
			} else {
				res := readResults(t, out)
				got := res[bench.RunKey{InstanceID: set.Tasks[0].InstanceID, Arm: "a", Repeat: 1}]
				if err != nil || !strings.Contains(got.Error, "the agent broke") {
					t.Fatalf("%v %+v", err, got)
				}
			}
			for _, d := range []string{r.Grader.Dir, r.WorkDir} {
				if left, _ := os.ReadDir(d); len(left) != 0 {
					t.Errorf("left in %s: %v", d, left)
				}
			}
		})
	}
}

// The grader's directory and its commands' caches are hidden from the
// agents' commands: with runs in parallel, another run of the same task
// may be graded there, its hidden tests applied, while this run's agent
// works. The agents' cache (toolcache.SharedEnv) is not the gradings':
// it stays the agents', and a shared grading cache is hidden all the same.
func TestGradingDirHidden(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	r := &runner.Runner{Grader: &grade.Grader{Dir: dir, Shells: &grade.Sandboxed{CacheDir: cache}}}
	if h := r.HiddenPaths(); !slices.Contains(h, dir) || !slices.Contains(h, cache) {
		t.Errorf("hidden %v lacks the grading directory %s or its cache %s", h, dir, cache)
	}
	t.Setenv(toolcache.SharedEnv, cache)
	r = &runner.Runner{Grader: &grade.Grader{Dir: dir, Shells: &grade.Sandboxed{}}}
	if h := r.HiddenPaths(); !slices.Contains(h, dir) || slices.Contains(h, cache) {
		t.Errorf("with the agents' shared cache, hidden %v", h)
	}
	r = &runner.Runner{Grader: &grade.Grader{Dir: dir, Shells: &grade.Sandboxed{Caches: grade.CacheShared}}}
	h := r.HiddenPaths()
	if slices.Contains(h, cache) || len(h) != 2 {
		t.Errorf("shared gradings with the agents' shared cache set: hidden %v, want the grading directory and a cache of the gradings' own", h)
	}
}

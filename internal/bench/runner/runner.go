package runner

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/report"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/queue"
	"github.com/trussdev/truss/internal/sim"
)

// Runner runs a benchmark.
type Runner struct {
	// Tasks are the instances; TaskFile their file (hidden from the
	// agent's commands with every repository the tasks name).
	Tasks    []bench.Task
	TaskFile string
	Arms     []bench.Arm
	// Repeats is how many runs each task gets per arm; 0 means 1.
	Repeats int
	// Out is the benchmark's directory: results.jsonl, the predictions
	// files and ledgers/INSTANCE/ARM/rN, the runs' ledgers.
	Out string
	// WorkDir is where the runs' workspaces are made (and removed); ""
	// means the system's temporary directory. It must not be under Out.
	WorkDir string
	// TempDir, when set, is the benchmark's private directory (or a
	// worker's: Exec.TempDir), where it makes what its runs need besides
	// their workspaces: the queue's bundles, TempDir/agents/run-* the
	// directory of each run's own (RunSpec.TempDir: its session's
	// temporary and private directories and caches, its memory), and
	// TempDir/runs the workspaces' directory when WorkDir is "". Every
	// run's agent sees it and the whole temporary directory
	// (bench.TempCover) covered (RunSpec.Covered), its own workspace,
	// temporary directory and caches bound back. "" leaves the runs'
	// directories in the system's temporary directory, uncovered.
	TempDir string
	Agent   Agent
	Grader  *grade.Grader
	// Checkouts, when set, makes the runs' workspaces from templates,
	// one fetch per task instead of one per run (the grader may share
	// it).
	Checkouts *bench.Templates

	// janitor removes the runs' workspaces in the background.
	janitor bench.Janitor
	// ident is what the verdicts of a worker's runs name: the benchmark,
	// the run and its job (set by Exec).
	ident RunIdentity
	// Signer signs the runs' ledgers; VKey verifies them when the
	// behaviour is read back.
	Signer note.Signer
	VKey   string
	// Budgets bound each run; CostBudget the whole benchmark in USD
	// (results already in Out count): once reached, no new run starts.
	Budgets    Budgets
	CostBudget float64
	// Parallel is how many runs go at once (0 means 1); ProviderCap,
	// per provider, how many of them may be in the agent loop at once (0
	// or absent means Parallel).
	Parallel    int
	ProviderCap map[string]int
	// Scripts finds the simulated model's script of an instance (sim
	// arms only); nil plays DefaultScript.
	Scripts *Scripts
	// ShowHints adds the task's hints_text to the task text.
	ShowHints bool
	// Hidden are further paths hidden from the agent's commands; Covered
	// further directories they see covered (a coordinator's, on a
	// worker of its machine).
	Hidden  []string
	Covered []string
	// Progress, when set, is told of each finished run.
	Progress func(Progress)

	// Queue is the work queue every run goes through; nil opens it as
	// Net says (by default an embedded NATS server on loopback, its store
	// in Out/queue, for the benchmark's life). Parallel is the number of runs this process
	// works on (the slots of a worker in it); RemoteOnly leaves every run
	// to workers elsewhere (truss bench worker).
	Queue      *queue.Queue
	Net        Net
	RemoteOnly bool
	// Bundles puts a git bundle of each task's repository in the queue's
	// artifact store, for workers that do not share this machine's file
	// system.
	Bundles bool
	// TrustKeys are the verifier keys of remote workers' ledgers, besides
	// VKey, which is always trusted.
	TrustKeys []string
	// WorkerID names this process's worker ("" for the queue's default).
	WorkerID string
	// AllowMixedVersions accepts results of workers whose grader or
	// protocol version differs from this binary's (each result line
	// records its worker's version); without it they are refused.
	AllowMixedVersions bool
	// Logf, when set, receives what the queue reports without failing: a
	// rejected result, a status it could not write.
	Logf func(format string, args ...any)
}

// Summary is a benchmark's outcome.
type Summary struct {
	Total    int // runs in the benchmark
	Skipped  int // finished before, not run again
	Ran      int // finished now
	Errors   int // runs (old and new) whose result has an error
	NotRun   int // runs the cost budget or a cancellation left out
	CostUSD  float64
	Resolved map[string]int // per arm, old and new
	// BudgetReached is set when the cost budget stopped new runs.
	BudgetReached bool
}

// job is one run to make.
type job struct {
	task   *bench.Task
	arm    bench.Arm
	repeat int
	// script is the simulated model's script (sim arms).
	script *sim.Script
	// grade makes the job a grading of patch (bench grade): no agent.
	grade bool
	patch string
	// progress, when set, is told of the run's steps ("turn 3",
	// "grading"): the queue's progress note.
	progress func(note string)
}

// Run runs every run not yet in Out's results. It returns when every
// run has finished, the cost budget is reached, or ctx ends; a run ctx
// cut short is not written (the next Run makes it again).
func (r *Runner) Run(ctx context.Context) (*Summary, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	rf, err := bench.OpenResults(r.Out)
	if err != nil {
		return nil, err
	}
	defer rf.Close()
	sum := &Summary{Resolved: map[string]int{}}
	repeats := max(r.Repeats, 1)
	if r.WorkDir != "" {
		if err := os.MkdirAll(r.WorkDir, 0o755); err != nil {
			return nil, err
		}
	}
	if err := report.WriteManifest(r.Out, r.Manifest()); err != nil {
		return nil, fmt.Errorf("the benchmark's manifest: %w", err)
	}
	var jobs []job
	for rep := 1; rep <= repeats; rep++ {
		for i := range r.Tasks {
			for _, a := range r.Arms {
				sum.Total++
				k := bench.RunKey{InstanceID: r.Tasks[i].InstanceID, Arm: a.Name, Repeat: rep}
				if res, ok := rf.Done(k); ok {
					sum.Skipped++
					sum.CostUSD += res.CostUSD
					if res.Resolved {
						sum.Resolved[a.Name]++
					}
					if res.Error != "" {
						sum.Errors++
					}
					continue
				}
				jobs = append(jobs, job{task: &r.Tasks[i], arm: a, repeat: rep})
			}
		}
	}
	preds, err := r.openPredictions(rf, repeats)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, j := range preds {
			j.Close()
		}
	}()
	err = r.dispatch(ctx, rf, preds, jobs, sum)
	sum.NotRun = sum.Total - sum.Skipped - sum.Ran
	if err != nil {
		return sum, err
	}
	return sum, ctx.Err()
}

func copyMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// check checks the configuration.
func (r *Runner) check() error {
	switch {
	case len(r.Tasks) == 0:
		return errors.New("no tasks")
	case len(r.Arms) == 0:
		return errors.New("no arms")
	case r.Agent == nil || r.Grader == nil || r.Signer == nil || r.VKey == "":
		return errors.New("runner: Agent, Grader, Signer and VKey are required")
	case r.Out == "":
		return errors.New("runner: no output directory")
	}
	names := map[string]bool{}
	for _, a := range r.Arms {
		if names[a.Name] {
			return fmt.Errorf("two arms named %s", a.Name)
		}
		names[a.Name] = true
	}
	if r.WorkDir != "" {
		out, errOut := bench.ResolvePath(r.Out)
		work, errWork := bench.ResolvePath(r.WorkDir)
		if rel, err := filepath.Rel(out, work); errOut == nil && errWork == nil && err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return fmt.Errorf("the workspaces' directory %s is under the output directory %s, which the agent's commands cannot read", r.WorkDir, r.Out)
		}
	}
	return nil
}

// Manifest describes the benchmark for its report (DIR/bench.json): the
// arms, the task file, the repeats, and the settings every arm shares.
// Run writes it before its first run, and again on every resumption.
func (r *Runner) Manifest() report.Manifest {
	m := report.Manifest{Tasks: r.TaskFile, Repeats: max(r.Repeats, 1), Settings: map[string]string{
		"max_turns":  fmt.Sprint(r.Budgets.MaxTurns),
		"max_tokens": fmt.Sprint(r.Budgets.MaxTokens),
		"max_cost":   fmt.Sprintf("%g", r.Budgets.MaxCostUSD),
		"wall_time":  r.Budgets.WallTime.String(),
		"hints":      fmt.Sprint(r.ShowHints),
		"instances":  fmt.Sprint(len(r.Tasks)),
	}}
	if r.CostBudget > 0 {
		m.Settings["cost_budget"] = fmt.Sprintf("%g", r.CostBudget)
	}
	for _, a := range r.Arms {
		m.Arms = append(m.Arms, report.Arm{Name: a.Name, Provider: a.Provider, Model: a.Model, Surface: cmpOr(a.Surface, "auto")})
	}
	return m
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// hidden is what the agent's commands must not read.
func (r *Runner) hidden() []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if abs, err := bench.ResolvePath(p); err == nil {
			p = abs
		}
		out = append(out, p)
	}
	add(r.TaskFile)
	add(r.Out)
	seen := map[string]bool{}
	for _, t := range r.Tasks {
		if !seen[t.RepoDir] {
			seen[t.RepoDir] = true
			add(t.RepoDir)
		}
	}
	if r.Scripts != nil {
		add(r.Scripts.Dir)
	}
	for _, h := range r.Hidden {
		add(h)
	}
	// The grading checkouts and caches: with runs in parallel, another run
	// of the same task is graded, its hidden tests applied, while this
	// run's agent works.
	if r.Grader != nil {
		for _, p := range r.Grader.Private() {
			add(p)
		}
	}
	// Checkouts made ahead, of this and other tasks.
	for _, p := range r.Checkouts.Private() {
		add(p)
	}
	return out
}

type predKey struct {
	arm    string
	repeat int
}

// openPredictions opens each arm's and repeat's predictions file.
func (r *Runner) openPredictions(rf *bench.ResultsFile, repeats int) (map[predKey]*bench.Journal, error) {
	out := map[predKey]*bench.Journal{}
	for _, a := range r.Arms {
		for rep := 1; rep <= repeats; rep++ {
			k := predKey{a.Name, rep}
			j, err := bench.OpenPredictions(filepath.Join(r.Out, bench.PredictionsName(a.Name, rep)), func(id string) bool {
				_, ok := rf.Done(bench.RunKey{InstanceID: id, Arm: a.Name, Repeat: rep})
				return ok
			})
			if err != nil {
				for _, j := range out {
					j.Close()
				}
				return nil, err
			}
			out[k] = j
		}
	}
	return out, nil
}

// LedgerDir is where a run's ledger is kept under the benchmark's
// directory.
func LedgerDir(out, instanceID, arm string, repeat int) string {
	return filepath.Join(out, "ledgers", instanceID, safeName(arm), fmt.Sprintf("r%d", repeat))
}

// TaskText is the text an agent is given for a task.
func TaskText(t *bench.Task, hints bool) string {
	s := t.ProblemStatement
	if hints && t.HintsText != "" {
		s += "\n\nHints:\n" + t.HintsText
	}
	return s
}

// runOne makes one run. keep is false when ctx ended it: nothing of it is
// written, and its ledger is moved aside.
func (r *Runner) runOne(ctx context.Context, j job, gate *Gate, hidden []string) (res bench.Result, patch string, keep bool) {
	start := time.Now()
	res = bench.Result{InstanceID: j.task.InstanceID, Arm: j.arm.Name, Repeat: j.repeat, Tests: map[string]string{},
		ToolCalls: map[string]int{}, CapabilityCalls: map[string]int{}}
	var modelTime, toolTime, testTime time.Duration
	defer func() {
		res.WallS = time.Since(start).Seconds()
		res.ModelS = modelTime.Seconds()
		res.ToolS = toolTime.Seconds()
		res.HarnessS = max(0, res.WallS-res.ModelS-res.ToolS-testTime.Seconds())
	}()
	fail := func(format string, args ...any) {
		res.Error = fmt.Sprintf(format, args...)
		res.Resolved = false
	}

	// The grading checkout at base_commit does not depend on the agent's
	// work: it is made while the agent works, and waits for the diff. It
	// starts once the workspace is checked out, not with it: the two
	// checkouts contend for the disk, and the workspace's is on the
	// run's critical path. Whatever way the run ends, it is removed.
	pctx, stopPrep := context.WithCancel(ctx)
	prepDone, wsDone := make(chan struct{}), make(chan struct{})
	var prep *grade.Prepared
	var prepErr error
	go func() {
		defer close(prepDone)
		select {
		case <-wsDone:
			prep, prepErr = r.Grader.Prepare(pctx, j.task)
		case <-pctx.Done():
			prepErr = pctx.Err()
		}
	}()
	defer func() {
		stopPrep()
		<-prepDone
		if prep != nil {
			prep.Close()
		}
	}()

	dir := LedgerDir(r.Out, j.task.InstanceID, j.arm.Name, j.repeat)
	if err := setAside(dir); err != nil {
		fail("ledger: %v", err)
		return res, "", ctx.Err() == nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		fail("ledger: %v", err)
		return res, "", ctx.Err() == nil
	}
	session := fmt.Sprintf("bench.%s.%s.r%d", j.task.InstanceID, j.arm.Name, j.repeat)
	lw, err := ledger.Create(dir, session, r.Signer)
	if err != nil {
		fail("ledger: %v", err)
		return res, "", ctx.Err() == nil
	}
	closed := false
	closeLedger := func() {
		if !closed {
			closed = true
			lw.Close()
		}
	}
	defer closeLedger()
	res.Ledger.Dir = dir
	abandon := func() (bench.Result, string, bool) {
		closeLedger()
		setAside(dir)
		return res, "", false
	}

	ws, err := os.MkdirTemp(r.runsDir(), "truss-bench-run-")
	if err != nil {
		fail("workspace: %v", err)
		return r.finish(ctx, lw, res, nil, "")
	}
	defer r.janitor.Remove(ws)
	repo := filepath.Join(ws, "repo")
	base, err := r.Checkouts.Checkout(ctx, j.task.RepoDir, j.task.BaseCommit, repo)
	if err != nil {
		if ctx.Err() != nil {
			return abandon()
		}
		fail("workspace: %v", err)
		return r.finish(ctx, lw, res, nil, "")
	}
	close(wsDone)
	own, err := r.ownDir()
	if err != nil {
		fail("the run's directory: %v", err)
		return r.finish(ctx, lw, res, nil, "")
	}
	if own != "" {
		defer r.janitor.Remove(own)
	}
	// The directory of every run's workspace (WorkDir, or the temporary
	// directory), where other runs' agents work: the agent sees its own.
	runs := filepath.Dir(ws)
	spec := RunSpec{InstanceID: j.task.InstanceID, Repeat: j.repeat, Arm: j.arm, Workspace: repo, BaseCommit: base,
		Task: TaskText(j.task, r.ShowHints), Budgets: r.Budgets, TestCmd: j.task.TestCmd, SetupCmd: j.task.SetupCmd,
		Image: j.task.Image, Workdir: j.task.Workdir, Hidden: hidden, Covered: r.covered(runs), TempDir: own,
		Ledger: lw, Session: session, RateLimit: gate}
	if j.arm.Provider == "sim" {
		spec.Script = j.script
	}
	spec.Progress = j.progress
	if j.arm.Provider == "sim" && spec.Script == nil {
		if spec.Script, err = r.Scripts.For(j.task.InstanceID, j.arm.Surface); err != nil {
			fail("%v", err)
			return r.finish(ctx, lw, res, nil, "")
		}
	}
	release, err := gate.Acquire(ctx)
	if err != nil {
		return abandon()
	}
	out, err := r.Agent.Run(ctx, spec)
	release()
	if ctx.Err() != nil {
		return abandon()
	}
	modelTime, toolTime = out.ModelTime, out.ToolTime
	res.Turns, res.StopReason, res.CostUSD, res.CostUnknown = out.Turns, out.StopReason, out.Usage.CostUSD, out.Usage.CostUnknown
	res.Tokens = bench.Tokens{Input: out.Usage.InputTokens, Output: out.Usage.OutputTokens,
		CacheRead: out.Usage.CacheReadTokens, CacheWrite: out.Usage.CacheWriteTokens}
	if err != nil {
		fail("agent: %v", err)
		return r.finish(ctx, lw, res, nil, "")
	}
	if _, err := lw.Flush(); err != nil {
		fail("ledger: %v", err)
		return r.finish(ctx, lw, res, nil, "")
	}
	_, entries, err := ledger.Verify(dir, r.VKey)
	if err != nil {
		fail("the run's ledger does not verify: %v", err)
		return r.finish(ctx, lw, res, nil, "")
	}
	beh, err := ReadBehaviour(entries, j.task.TestCmd)
	if err != nil {
		fail("reading the run's ledger: %v", err)
		return r.finish(ctx, lw, res, nil, "")
	}
	res.ToolCalls, res.CapabilityCalls, res.Edits, res.Validation, res.Errors = beh.ToolCalls, beh.CapabilityCalls, beh.Edits, beh.Validation, beh.Errors

	patch, err = bench.Diff(ctx, repo, base)
	if err != nil {
		if ctx.Err() != nil {
			return abandon()
		}
		fail("%v", err)
		return r.finish(ctx, lw, res, nil, "")
	}
	if j.progress != nil {
		j.progress("grading")
	}
	<-prepDone
	var v *grade.Verdict
	err = prepErr
	if err == nil {
		v, err = prep.Grade(ctx, patch)
	}
	if ctx.Err() != nil {
		return abandon()
	}
	if err != nil {
		fail("grading: %v", err)
		return r.finish(ctx, lw, res, nil, patch)
	}
	testTime = time.Duration(v.TestS * float64(time.Second))
	res.Resolved, res.PatchApplied, res.Tests = v.Resolved, v.PatchApplied, v.Tests
	res.Rules, res.ImageID = v.Rules, v.ImageID
	res.VerdictSource, res.GradeNotes = v.Source, v.Notes
	res.TestCodeSetAside, res.ConfigChanged, res.UntrustedPackages = v.TestCodeSetAside, v.ConfigChanged, v.Untrusted
	res.TimedOut = v.TimedOut
	return r.finish(ctx, lw, res, v, patch)
}

// finish appends the run's verdict (or its error) to its ledger and seals
// it.
func (r *Runner) finish(ctx context.Context, lw *ledger.Writer, res bench.Result, v *grade.Verdict, patch string) (bench.Result, string, bool) {
	root, err := RecordVerdict(lw, r.ident, res, v, patch)
	if err != nil && res.Error == "" {
		res.Error = fmt.Sprintf("ledger: %v", err)
		res.Resolved = false
	}
	res.Ledger.Root = root
	return res, patch, true
}

// RecordVerdict appends a "bench.verdict" entry — the run's key and
// identity (the benchmark, the run, the job's digest), the verdict (nil
// when there is none) or the run's error, the patch and the tests' log as
// payloads — seals the ledger and returns its root hash (hex).
func RecordVerdict(lw *ledger.Writer, id RunIdentity, res bench.Result, v *grade.Verdict, patch string) (string, error) {
	data := map[string]any{"instance_id": res.InstanceID, "arm": res.Arm, "repeat": res.Repeat, "resolved": res.Resolved}
	if id.Bench != "" {
		data["bench"], data["run"], data["job_digest"] = id.Bench, id.Run, id.JobDigest
		data["worker_version"] = id.Version
	}
	payloads := map[string]string{}
	if patch != "" {
		d, err := lw.Put([]byte(patch))
		if err != nil {
			return "", err
		}
		payloads["patch"] = d
	}
	if v != nil {
		data["verdict"] = v
		data["text"] = v.String()
		if len(v.Log) > 0 {
			d, err := lw.Put(v.Log)
			if err != nil {
				return "", err
			}
			payloads["log"] = d
		}
	}
	if res.Error != "" {
		data["error"] = res.Error
	}
	if _, err := lw.Append("bench.verdict", data, payloads); err != nil {
		return "", err
	}
	_, root, _, err := lw.Seal()
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(root), nil
}

// setAside moves the ledger of a run that did not finish (a crash, a
// Ctrl-C) out of the way, keeping it: dir.incomplete-UNIXNANO.
func setAside(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return os.Rename(dir, fmt.Sprintf("%s.incomplete-%d", dir, time.Now().UnixNano()))
}

// runsDir is the directory of the runs' workspaces: WorkDir, else
// TempDir/runs (made on first use), else the system's temporary
// directory.
func (r *Runner) runsDir() string {
	if r.WorkDir != "" || r.TempDir == "" {
		return r.WorkDir
	}
	d := filepath.Join(r.TempDir, "runs")
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return r.TempDir
	}
	return d
}

// ownDir makes the directory of one run's own in TempDir/agents (mode
// 0700): RunSpec.TempDir, where the run's session makes its temporary and
// private directories and its memory, bound back in the run's sandbox
// alone. Without a TempDir it is "" (the system's temporary directory).
func (r *Runner) ownDir() (string, error) {
	if r.TempDir == "" {
		return "", nil
	}
	agents := filepath.Join(r.TempDir, "agents")
	if err := os.Mkdir(agents, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	return os.MkdirTemp(agents, "run-")
}

// covered are the directories a run's agent sees covered: the directory
// of every run's workspace, the benchmark's private one, the whole
// temporary directory (bench.TempCover) and the parent of every
// benchmark's private directory (bench.PrivateCover), where other
// benchmarks, live or crashed, keep theirs.
func (r *Runner) covered(runs string) []string {
	var out []string
	for _, d := range append([]string{runs, r.TempDir, bench.TempCover(), bench.PrivateCover()}, r.Covered...) {
		if d == "" {
			continue
		}
		if abs, err := bench.ResolvePath(d); err == nil {
			d = abs
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// coveredOnWorkers are the directories of this benchmark's runs that a
// worker on this machine covers too (JobPayload.Covered): the private
// directory and the workspaces', absolute.
func (r *Runner) coveredOnWorkers() []string {
	var out []string
	for _, d := range []string{r.TempDir, r.WorkDir} {
		if d == "" {
			continue
		}
		if abs, err := bench.ResolvePath(d); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

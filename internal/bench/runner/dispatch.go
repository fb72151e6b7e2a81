package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/queue"
)

// jobHeadroom is what a job's message needs beside its payload: its
// headers (the message id, the job's id).
const jobHeadroom = 4 << 10

// dispatch runs jobs through the queue: it publishes them (once; a
// resumed benchmark finds those still queued), runs a worker in this
// process unless RemoteOnly, and accepts exactly one verified result per
// run into results.jsonl and the arm's predictions.
func (r *Runner) dispatch(ctx context.Context, rf *bench.ResultsFile, preds map[predKey]*bench.Journal, jobs []job, sum *Summary) error {
	q := r.Queue
	if q == nil {
		var err error
		var closeQ func()
		if q, closeQ, err = OpenQueue(ctx, r.Net, r.Out); err != nil {
			return err
		}
		defer closeQ()
	}
	if r.Logf != nil && (r.Net.URL != "" || q.Config().Replicas > 1) {
		if pl, err := q.CheckPlacement(ctx); err == nil && len(pl) > 0 {
			r.Logf("truss: queue %s: %d replicas of each stream (jobs on %s)", q.Name(), pl[0].Replicas, strings.Join(pl[0].Peers, ", "))
		}
	}
	tmp, err := os.MkdirTemp(r.TempDir, "truss-bench-queue-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// A job names exactly one commit: a revision name is resolved here,
	// in the coordinator's repository, before the job is published.
	for _, j := range jobs {
		if IsFullObjectID(j.task.BaseCommit) {
			continue
		}
		id, err := ResolveBase(ctx, j.task)
		if err != nil {
			return err
		}
		j.task.BaseCommit = id
	}
	var bundles map[string]Bundle
	if r.Bundles {
		if bundles, err = PutBundles(ctx, q, r.Tasks, tmp); err != nil {
			return err
		}
	}
	if !r.RemoteOnly {
		// This process's worker takes the jobs about in the order they
		// are published: their checkouts are made ahead of their runs.
		withdraw := r.Checkouts.Plan(ctx, r.wants(jobs), 2*max(r.Parallel, 1))
		defer withdraw()
	}
	hidden, covered := r.hidden(), r.coveredOnWorkers()
	gradeHidden, gradeCovered := r.Grader.Confinement()
	byID := map[string]job{}
	expect := map[string]ExpectedRun{}
	var qjobs []queue.Job
	for _, j := range jobs {
		if j.arm.Provider == "sim" {
			sc, err := r.Scripts.For(j.task.InstanceID, j.arm.Surface)
			if err != nil {
				return err
			}
			j.script = sc
		}
		bundle := bundles[j.task.RepoDir]
		p := JobPayload{Task: *j.task, RepoDir: j.task.RepoDir, RepoBundle: bundle.Name, RepoBundleSHA256: bundle.SHA256, Arm: j.arm, Repeat: j.repeat,
			Budgets: r.Budgets, ShowHints: r.ShowHints, Script: j.script, Hidden: hidden, Covered: covered, Grade: j.grade, Patch: j.patch}
		if r.Grader != nil {
			p.Rules = string(r.Grader.Rules)
			p.GradeHidden, p.GradeCovered = gradeHidden, gradeCovered
		}
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		id := JobID(bench.RunKey{InstanceID: j.task.InstanceID, Arm: j.arm.Name, Repeat: j.repeat})
		exp := ExpectedRun{InstanceID: j.task.InstanceID, Arm: j.arm.Name, Repeat: j.repeat, JobDigest: JobDigest(b)}
		if j.grade {
			exp.Repeat = 1
		}
		if max := q.MaxPayload(); max > 0 && int64(len(b)) > max-jobHeadroom {
			// One job too large for the queue is that run's error, not
			// the benchmark's: the others go on.
			res := bench.Result{InstanceID: j.task.InstanceID, Arm: j.arm.Name, Repeat: exp.Repeat,
				Error: fmt.Sprintf("the job is %d bytes, more than the queue's messages take (%d bytes less headers): its task or prediction is too large to send to a worker", len(b), max)}
			if err := rf.Add(res); err != nil {
				return err
			}
			sum.Ran++
			sum.Errors++
			continue
		}
		byID[id] = j
		expect[id] = exp
		qjobs = append(qjobs, queue.Job{ID: id, Payload: b})
	}
	if len(qjobs) == 0 {
		return nil
	}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	parallel := max(r.Parallel, 1)
	if !r.RemoteOnly {
		// The worker in this process runs as `truss bench worker` does,
		// in the benchmark's private directory.
		ex := &Exec{Queue: q, Agent: r.Agent, Grader: r.Grader, Checkouts: r.Checkouts, Signer: r.Signer, VKey: r.VKey,
			TempDir: r.TempDir, Scratch: filepath.Join(tmp, "worker"), WorkDir: r.WorkDir, ProviderCap: r.ProviderCap}
		if err := os.MkdirAll(ex.Scratch, 0o700); err != nil {
			return err
		}
		w, err := q.NewWorker(queue.WorkerConfig{ID: r.WorkerID, Parallel: parallel, Logf: r.Logf}, ex.Handle)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Run(cctx)
		}()
		defer stop() // the worker stops before the wait above
	}
	ver := &Verifier{Queue: q, Keys: append([]string{r.VKey}, r.TrustKeys...), Incoming: filepath.Join(tmp, "incoming"), Runs: expect,
		AllowMixed: r.AllowMixedVersions}
	var mu sync.Mutex
	started := time.Now()
	if r.Progress != nil {
		// Live lines: a run's start on a worker, then each note its
		// worker gives (its turns, its grading), before its result.
		// Progress is called under mu, one call at a time.
		notes := map[string]string{}
		wait, err := q.WatchStatus(cctx, func(st queue.JobStatus) {
			j, ok := byID[st.ID]
			if !ok || st.State != queue.Running || notes[st.ID] == st.Note {
				return
			}
			notes[st.ID] = st.Note
			ev := EventNote
			if st.Note == "running" || st.Note == "grading" && j.grade {
				ev = EventStarted
			}
			mu.Lock()
			defer mu.Unlock()
			if _, done := rf.Done(bench.RunKey{InstanceID: j.task.InstanceID, Arm: j.arm.Name, Repeat: j.repeat}); done {
				return // a late note of a run already reported
			}
			r.Progress(Progress{Event: ev, Note: st.Note, Worker: st.Worker, Done: sum.Skipped + sum.Ran, Total: sum.Total,
				Last: bench.Result{InstanceID: j.task.InstanceID, Arm: j.arm.Name, Repeat: j.repeat}, Resolved: copyMap(sum.Resolved),
				CostUSD: sum.CostUSD, Elapsed: time.Since(started), RanNow: sum.Ran, Remaining: len(jobs) - sum.Ran, Parallel: parallel})
		})
		if err != nil {
			return err
		}
		defer wait()
		defer stop()
	}
	accept := func(_ context.Context, qr queue.Result) error {
		mu.Lock()
		defer mu.Unlock()
		j, ok := byID[qr.JobID]
		if !ok {
			return nil
		}
		res, patch, err := r.accepted(qr, j, ver)
		if err != nil {
			return err
		}
		if pj := preds[predKey{j.arm.Name, j.repeat}]; pj != nil {
			if err := pj.Append(bench.Prediction{InstanceID: j.task.InstanceID, ModelNameOrPath: j.arm.Name, ModelPatch: patch}); err != nil {
				return err
			}
		}
		if err := rf.Add(res); err != nil {
			return err
		}
		sum.Ran++
		sum.CostUSD += res.CostUSD
		if res.Resolved {
			sum.Resolved[j.arm.Name]++
		}
		if res.Error != "" {
			sum.Errors++
		}
		if r.Progress != nil {
			r.Progress(Progress{Done: sum.Skipped + sum.Ran, Total: sum.Total, Last: res, Resolved: copyMap(sum.Resolved),
				CostUSD: sum.CostUSD, Elapsed: time.Since(started), RanNow: sum.Ran, Remaining: len(jobs) - sum.Ran, Parallel: parallel})
		}
		if r.CostBudget > 0 && sum.CostUSD >= r.CostBudget && sum.Ran < len(jobs) {
			sum.BudgetReached = true
			stop()
		}
		return nil
	}
	_, err = q.Coordinate(cctx, qjobs, queue.CoordinatorConfig{
		Done: func(id string) bool {
			j, ok := byID[id]
			if !ok {
				return false
			}
			_, done := rf.Done(bench.RunKey{InstanceID: j.task.InstanceID, Arm: j.arm.Name, Repeat: j.repeat})
			return done
		},
		Verify: ver.Verify,
		Accept: accept,
		Rejected: func(qr queue.Result, source string, err error) {
			if r.Logf != nil {
				r.Logf("truss: the result of %s from worker %q is rejected (signed by %s): %v", qr.JobID, qr.Worker, cmp.Or(source, "no trusted key for this run"), err)
			}
		},
		Logf: r.Logf,
	})
	stop()
	if sum.BudgetReached || ctx.Err() != nil {
		return nil
	}
	return err
}

// accepted turns a verified queue result into a result line: the run's
// ledger moved under Out, the worker and the deliveries recorded.
func (r *Runner) accepted(qr queue.Result, j job, ver *Verifier) (bench.Result, string, error) {
	res := bench.Result{InstanceID: j.task.InstanceID, Arm: j.arm.Name, Repeat: j.repeat, Tests: map[string]string{},
		ToolCalls: map[string]int{}, CapabilityCalls: map[string]int{}}
	var patch string
	if qr.Seq == 0 {
		// The coordinator's own decision: given up, or rejected too
		// often. A worker's result always comes from the stream, and
		// its error, if any, from its verified verdict.
		res.Error = cmp.Or(qr.Error, "given up")
	} else {
		var p ResultPayload
		if err := json.Unmarshal(qr.Payload, &p); err != nil {
			res.Error = fmt.Sprintf("the worker's result: %v", err)
		} else {
			res, patch = p.Result, p.Patch
			in := ver.incoming(qr)
			if _, err := os.Stat(in); err == nil {
				dir := LedgerDir(r.Out, j.task.InstanceID, j.arm.Name, j.repeat)
				if err := setAside(dir); err != nil {
					return res, "", err
				}
				if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
					return res, "", err
				}
				if err := os.Rename(in, dir); err != nil {
					return res, "", err
				}
				res.Ledger.Dir = dir
			}
		}
	}
	res.Worker, res.Deliveries = qr.Worker, qr.Deliveries
	return res, patch, nil
}

// wants are the checkouts jobs will ask r.Checkouts for, in order: each
// run's workspace (under WorkDir), then its grading checkout (under the
// grader's directory) when the grader makes it from the same templates.
func (r *Runner) wants(jobs []job) []bench.Want {
	var out []bench.Want
	for _, j := range jobs {
		if !j.grade {
			out = append(out, bench.Want{Repo: j.task.RepoDir, Commit: j.task.BaseCommit, Near: r.runsDir()})
		}
		if r.Grader != nil && r.Grader.Checkouts == r.Checkouts {
			out = append(out, bench.Want{Repo: j.task.RepoDir, Commit: j.task.BaseCommit, Near: r.Grader.Dir})
		}
	}
	return out
}

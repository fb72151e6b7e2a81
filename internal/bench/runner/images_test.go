package runner_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/container"
	"github.com/trussdev/truss/internal/container/containertest"
	"github.com/trussdev/truss/internal/queue"
)

// A task whose image cannot be pulled is that run's error, in its result
// row ("grading: image X: not found locally and the pull failed: …"), on
// this machine and on a worker (whose result is then sent, not handed
// back), while the other tasks' runs go on.
func TestMissingImageIsTheRunsError(t *testing.T) {
	ctx := context.Background()
	set := setup(t)
	engine, err := containertest.NewFake(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const ref = "swebench/sweb.eval.x86_64.nobody_1776_nothing-1:latest"
	tasks := append([]bench.Task(nil), set.Tasks...)
	tasks[0].Image = ref
	want := "grading: image " + ref + ": not found locally and the pull failed: Error: initializing source docker://docker.io/" + ref + ": reading manifest latest in docker.io/" + ref + ": manifest unknown"
	newGrader := func() *grade.Grader {
		return &grade.Grader{Shells: &grade.InImage{Engine: &container.Engine{Name: container.Podman, Path: engine.Path}, PerTask: true},
			Checkouts: &bench.Templates{Dir: t.TempDir()}}
	}

	f := &fake{set: set, seen: map[string][]string{}}
	out := filepath.Join(t.TempDir(), "out")
	r := newRunner(t, set, f, out, "patcher")
	r.Tasks, r.Grader = tasks[:1], newGrader()
	r.Checkouts = r.Grader.Checkouts
	sum, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res := readResults(t, out)[bench.RunKey{InstanceID: tasks[0].InstanceID, Arm: "patcher", Repeat: 1}]
	if res.Error != want || sum.Errors != 1 {
		t.Errorf("result error %q (summary %+v)\nwant %q", res.Error, sum, want)
	}

	// A worker: the same row, sent as the run's result.
	q, _ := memQueue(ctx, t, "test")
	g := newGrader()
	ex := &runner.Exec{Queue: q, Agent: f, Grader: g, Checkouts: g.Checkouts, Signer: r.Signer, VKey: r.VKey,
		Scratch: t.TempDir(), WorkDir: t.TempDir()}
	p := runner.JobPayload{Task: tasks[0], RepoDir: tasks[0].RepoDir, Arm: r.Arms[0], Repeat: 1, Script: runner.DefaultScript()}
	b, _ := json.Marshal(p)
	payload, err := ex.Handle(ctx, queue.Job{ID: runner.JobID(bench.RunKey{InstanceID: tasks[0].InstanceID, Arm: "patcher", Repeat: 1}), Payload: b}, func(string) {})
	if err != nil {
		t.Fatalf("the worker handed the run back: %v", err)
	}
	var rp runner.ResultPayload
	if err := json.Unmarshal(payload, &rp); err != nil {
		t.Fatal(err)
	}
	if rp.Result.Error != want || !strings.Contains(rp.Patch, "calc.go") {
		t.Errorf("worker's result error %q\nwant %q", rp.Result.Error, want)
	}
}

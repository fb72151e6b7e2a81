package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/queue"
)

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@a", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@a")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// guardedQueue starts an embedded server that admits workers by token
// with a worker's permissions, opens the queue name on the coordinator's
// own connection, and returns it with a function that joins it as a
// worker holding the token.
func guardedQueue(ctx context.Context, t *testing.T, name string) (*queue.Queue, func() *queue.Queue) {
	t.Helper()
	srv, err := queue.StartServer(ctx, queue.ServerConfig{Dir: t.TempDir(), Auth: queue.Auth{Token: "s3cret"}, Queue: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	cnc, err := srv.Connect("coordinator")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cnc.Close)
	q, err := queue.Open(ctx, cnc, name, queue.Config{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	return q, func() *queue.Queue {
		nc, err := queue.Connect(ctx, srv.URL(), queue.ConnectOptions{Token: "s3cret"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		wq, err := queue.Join(ctx, nc, name)
		if err != nil {
			t.Fatal(err)
		}
		return wq
	}
}

// TestBundleGuarded: a client holding a worker's token could replace the
// repository bundle in the artifact store, and an honest worker then
// graded the attacker's repository and signed the verdict. Now the store
// refuses the worker's write; a task's revision name is resolved to the
// commit it names by the coordinator; and a bundle that is not the one
// the job names (a store tampered with some other way) is refused by the
// worker before it clones it, with a signed error the coordinator
// accepts as the run's failure.
func TestBundleGuarded(t *testing.T) {
	ctx := context.Background()
	set := setup(t)
	f := &fake{set: set, seen: map[string][]string{}}
	coord := newRunner(t, set, f, filepath.Join(t.TempDir(), "out"), "wrong")
	task := set.Tasks[0]
	gitOut(t, task.RepoDir, "branch", "-f", "release", task.BaseCommit)

	// A revision name is resolved to the full id it names.
	for _, tc := range []struct {
		rev, want, err string
		noRepo         bool
	}{
		{rev: task.BaseCommit, want: task.BaseCommit},
		{rev: "release", want: task.BaseCommit},
		{rev: task.BaseCommit[:10], want: task.BaseCommit},
		{rev: "no-such-branch", err: "names no commit"},
		{rev: "release", noRepo: true, err: "no repository"},
		{rev: task.BaseCommit, noRepo: true, want: task.BaseCommit},
	} {
		tt := task
		tt.BaseCommit = tc.rev
		if tc.noRepo {
			tt.RepoDir = ""
		}
		got, err := runner.ResolveBase(ctx, &tt)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ResolveBase(%q) = %q, %v; want %q, %q", tc.rev, got, err, tc.want, tc.err)
		}
	}

	q, join := guardedQueue(ctx, t, "bundles")
	bundles, err := runner.PutBundles(ctx, q, []bench.Task{task}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := bundles[task.RepoDir]
	if b.Name != "repo/"+b.SHA256 || len(b.SHA256) != 64 {
		t.Fatalf("bundle %+v", b)
	}
	// The attacker's repository: the fix committed on the branch.
	evil := filepath.Join(t.TempDir(), "evil")
	gitOut(t, filepath.Dir(evil), "clone", "-q", task.RepoDir, evil)
	gitOut(t, evil, "checkout", "-q", "-B", "release", task.BaseCommit)
	fixed := gitOut(t, evil, "show", set.FutureCommit[task.InstanceID]+":calc.go")
	if err := os.WriteFile(filepath.Join(evil, "calc.go"), []byte(fixed+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitOut(t, evil, "commit", "-q", "-am", "innocent")
	bundleFile := filepath.Join(t.TempDir(), "evil.bundle")
	gitOut(t, evil, "bundle", "create", "-q", bundleFile, "--all")
	evilBundle, err := os.ReadFile(bundleFile)
	if err != nil {
		t.Fatal(err)
	}
	aq := join()
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = aq.PutArtifact(pctx, b.Name, bytes.NewReader(evilBundle))
	cancel()
	if err == nil {
		t.Fatal("a worker's token replaced the coordinator's bundle")
	}
	if a, err := q.StatArtifact(ctx, b.Name); err != nil || a.Size == uint64(len(evilBundle)) {
		t.Fatalf("the bundle after the attempt: %+v, %v", a, err)
	}

	// A store that holds another bundle under the name anyway.
	if _, err := q.PutArtifact(ctx, b.Name, bytes.NewReader(evilBundle)); err != nil {
		t.Fatal(err)
	}
	ex, wkey := honestExec(t, join(), f, coord)
	p := runner.JobPayload{Task: task, RepoDir: "/nonexistent/" + task.InstanceID, RepoBundle: b.Name, RepoBundleSHA256: b.SHA256,
		Arm: coord.Arms[0], Repeat: 1, Script: runner.DefaultScript()}
	pb, _ := json.Marshal(p)
	id := runner.JobID(bench.RunKey{InstanceID: task.InstanceID, Arm: "wrong", Repeat: 1})
	out, err := ex.Handle(ctx, queue.Job{ID: id, Payload: pb}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	var rp runner.ResultPayload
	if err := json.Unmarshal(out, &rp); err != nil {
		t.Fatal(err)
	}
	if rp.Result.Resolved || !strings.Contains(rp.Result.Error, runner.ErrBundleMismatch.Error()) || f.calls != 0 {
		t.Fatalf("the run on a bundle the job does not name: resolved %t, error %q, %d agent calls", rp.Result.Resolved, rp.Result.Error, f.calls)
	}
	v := &runner.Verifier{Queue: q, Keys: []string{coord.VKey, wkey}, Incoming: t.TempDir(),
		Runs: map[string]runner.ExpectedRun{id: {InstanceID: task.InstanceID, Arm: "wrong", Repeat: 1, JobDigest: runner.JobDigest(pb)}}}
	if source, err := v.Verify(ctx, queue.Result{JobID: id, Worker: "honest", Deliveries: 1, Seq: 1, Payload: out}); err != nil || source != runner.KeyName(wkey) {
		t.Errorf("the signed error: %q, %v", source, err)
	}
	// A job without the bundle's digest is refused too.
	p.RepoBundleSHA256 = ""
	pb, _ = json.Marshal(p)
	out, err = ex.Handle(ctx, queue.Job{ID: id, Payload: pb}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &rp); err != nil || !strings.Contains(rp.Result.Error, "without its SHA-256") {
		t.Errorf("a job without the bundle's digest: %q, %v", rp.Result.Error, err)
	}
}

// TestLedgerUploadGuarded: a ledger too large for its result message is
// uploaded; the coordinator reads exactly the upload the result names by
// its run, its root, its size and its digest. A worker's token cannot
// read it or replace it; a result stating a huge upload is refused
// before anything is read; a genuine result replayed under another run
// finds no upload.
func TestLedgerUploadGuarded(t *testing.T) {
	ctx := context.Background()
	set := setup(t)
	f := &fake{set: set, seen: map[string][]string{}}
	coord := newRunner(t, set, f, filepath.Join(t.TempDir(), "out"), "patcher")
	task := set.Tasks[0]
	q, join := guardedQueue(ctx, t, "ledgers")
	ex, wkey := honestExec(t, join(), f, coord)
	runner.SetInlineLedger(ex, 1) // every ledger is uploaded
	p := runner.JobPayload{Task: task, RepoDir: task.RepoDir, Arm: coord.Arms[0], Repeat: 1, Script: runner.DefaultScript()}
	pb, _ := json.Marshal(p)
	id := runner.JobID(bench.RunKey{InstanceID: task.InstanceID, Arm: "patcher", Repeat: 1})
	other := runner.JobID(bench.RunKey{InstanceID: task.InstanceID, Arm: "patcher", Repeat: 2})
	out, err := ex.Handle(ctx, queue.Job{ID: id, Payload: pb}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	var rp runner.ResultPayload
	if err := json.Unmarshal(out, &rp); err != nil {
		t.Fatal(err)
	}
	if len(rp.Ledger) != 0 || rp.LedgerSize == 0 || len(rp.LedgerSHA256) != 64 || !rp.Result.Resolved {
		t.Fatalf("an uploaded ledger's result: %+v (size %d, digest %q)", rp.Result, rp.LedgerSize, rp.LedgerSHA256)
	}
	runs := map[string]runner.ExpectedRun{
		id:    {InstanceID: task.InstanceID, Arm: "patcher", Repeat: 1, JobDigest: runner.JobDigest(pb)},
		other: {InstanceID: task.InstanceID, Arm: "patcher", Repeat: 2, JobDigest: runner.JobDigest(pb)},
	}
	v := &runner.Verifier{Queue: q, Keys: []string{coord.VKey, wkey}, Incoming: t.TempDir(), Runs: runs, MaxLedger: 64 << 20}
	seq := uint64(0)
	verify := func(runID string, payload []byte) (string, error) {
		seq++
		return v.Verify(ctx, queue.Result{JobID: runID, Worker: "w", Deliveries: 1, Seq: seq, Payload: payload})
	}
	if source, err := verify(id, out); err != nil || source != runner.KeyName(wkey) {
		t.Fatalf("the honest result: %q, %v", source, err)
	}

	// A worker's token can neither read the upload nor replace it.
	aq := join()
	u := queue.Upload{Name: runner.LedgerUploadName(id, rp.Result.Ledger.Root), Size: rp.LedgerSize, SHA256: rp.LedgerSHA256}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	var got bytes.Buffer
	err = aq.GetUpload(rctx, u, &got)
	cancel()
	if err == nil || got.Len() > 0 {
		t.Errorf("a worker's token read another run's ledger: %d bytes, %v", got.Len(), err)
	}
	if _, err := aq.PutUpload(ctx, u.Name, []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	if _, err := verify(id, out); err != nil {
		t.Errorf("the honest result after another upload under its name: %v", err)
	}

	forged := func(size int64, sha string) []byte {
		f := rp
		f.LedgerSize, f.LedgerSHA256 = size, sha
		b, _ := json.Marshal(f)
		return b
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, tc := range []struct {
		name, run string
		payload   []byte
		want      string
	}{
		{"512 MiB stated", id, forged(512<<20, rp.LedgerSHA256), "at most"},
		{"a negative size", id, forged(-1, rp.LedgerSHA256), "at most"},
		{"another digest", id, forged(rp.LedgerSize, strings.Repeat("ab", 32)), "of its"},
		{"no digest", id, forged(rp.LedgerSize, "x"), "no signed ledger"},
		{"replayed under another run", other, out, "no such upload"},
	} {
		if tc.name == "no digest" {
			tc.payload = forged(rp.LedgerSize, "")
		}
		source, err := verify(tc.run, tc.payload)
		if err == nil || !strings.Contains(err.Error(), tc.want) || source != "" {
			t.Errorf("%s: %q, %v; want an anonymous refusal with %q", tc.name, source, err, tc.want)
		}
	}
	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	if grew > 32<<20 {
		t.Errorf("the refusals allocated %d MiB", grew>>20)
	}
	t.Logf("the five refusals allocated %d KiB in all", grew>>10)
}

package runner_test

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/queue"
)

// A worker that does not see the task's repository clones the bundle the
// coordinator put in the artifact store; its result verifies only against
// its own key, and only as it was sent.
func TestExecBundleAndVerify(t *testing.T) {
	ctx := context.Background()
	set := setup(t)
	f := &fake{set: set, seen: map[string][]string{}}
	coord := newRunner(t, set, f, filepath.Join(t.TempDir(), "out"), "patcher")
	q, _ := memQueue(ctx, t, "test")
	bundles, err := runner.PutBundles(ctx, q, set.Tasks[:1], t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	task := set.Tasks[0]
	ex, wkey := honestExec(t, q, f, coord)
	p := runner.JobPayload{Task: task, RepoDir: "/nonexistent/" + task.InstanceID, RepoBundle: bundles[task.RepoDir].Name,
		RepoBundleSHA256: bundles[task.RepoDir].SHA256, Arm: coord.Arms[0], Repeat: 1, Script: runner.DefaultScript()}
	b, _ := json.Marshal(p)
	id := runner.JobID(bench.RunKey{InstanceID: task.InstanceID, Arm: "patcher", Repeat: 1})
	out, err := ex.Handle(ctx, queue.Job{ID: id, Payload: b}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	var rp runner.ResultPayload
	if err := json.Unmarshal(out, &rp); err != nil {
		t.Fatal(err)
	}
	if !rp.Result.Resolved || rp.Result.Error != "" || len(rp.Ledger) == 0 || !strings.Contains(rp.Patch, "calc.go") ||
		rp.Result.WorkerVersion != runner.ThisVersion().String() {
		t.Fatalf("result %+v", rp.Result)
	}
	runs := map[string]runner.ExpectedRun{id: {InstanceID: task.InstanceID, Arm: "patcher", Repeat: 1, JobDigest: runner.JobDigest(b)}}
	// Without the bundle, a worker that does not see the repository says
	// so, in a verdict it signs: its error proves itself as a result does.
	nb := p
	nb.RepoBundle = ""
	nbb, _ := json.Marshal(nb)
	nbOut, err := ex.Handle(ctx, queue.Job{ID: id, Payload: nbb}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	var nbp runner.ResultPayload
	if err := json.Unmarshal(nbOut, &nbp); err != nil || !strings.Contains(nbp.Result.Error, "no bundle") || len(nbp.Ledger) == 0 {
		t.Fatalf("no bundle: %+v, %v", nbp.Result, err)
	}
	// A second run of the benchmark, to replay results under.
	other := runner.JobID(bench.RunKey{InstanceID: task.InstanceID, Arm: "patcher", Repeat: 2})
	runs[other] = runner.ExpectedRun{InstanceID: task.InstanceID, Arm: "patcher", Repeat: 2, JobDigest: runner.JobDigest(b)}

	tampered := rp
	tampered.Result.Resolved = false
	tb, _ := json.Marshal(tampered)
	renamed := rp
	renamed.Result.InstanceID = "another-instance"
	rb, _ := json.Marshal(renamed)
	bare, _ := json.Marshal(runner.ResultPayload{Result: bench.Result{InstanceID: task.InstanceID, Arm: "patcher", Repeat: 1, Error: "repository cannot be checked out"}})
	trusted := []string{coord.VKey, wkey}
	for _, tc := range []struct {
		name    string
		keys    []string
		id      string
		digest  string // of the job the coordinator published ("" for b's)
		res     queue.Result
		want    string
		charged bool // the rejection counts against the worker's key
		coord   runner.Version
		mixed   bool
	}{
		{name: "untrusted worker", keys: []string{coord.VKey}, res: queue.Result{Payload: out}, want: "no trusted key"},
		{name: "trusted worker", keys: trusted, res: queue.Result{Payload: out}},
		{name: "signed error", keys: trusted, digest: runner.JobDigest(nbb), res: queue.Result{Payload: nbOut}},
		{name: "signed error of another job", keys: trusted, res: queue.Result{Payload: nbOut}, want: "another run"},
		{name: "verdict changed", keys: trusted, res: queue.Result{Payload: tb}, want: "is not the result's", charged: true},
		{name: "another instance named", keys: trusted, res: queue.Result{Payload: rb}, want: "the result names", charged: true},
		{name: "verdict appended after the last checkpoint", keys: trusted, res: queue.Result{Payload: forgedTail(t, tampered)}, want: "unsealed"},
		{name: "replayed under another run", keys: trusted, id: other, res: queue.Result{Payload: out}, want: "another run"},
		{name: "job changed since", keys: trusted, digest: runner.JobDigest([]byte("{}")), res: queue.Result{Payload: out}, want: "another run"},
		{name: "unknown run", keys: trusted, id: "nope/x/r1", res: queue.Result{Payload: out}, want: "no such run"},
		{name: "error without a ledger", keys: trusted, res: queue.Result{Payload: bare}, want: "no signed ledger"},
		{name: "error header alone", keys: trusted, res: queue.Result{Error: "boom"}, want: "result of"},
		{name: "another grader version", keys: trusted, res: queue.Result{Payload: out}, want: "grader or protocol differs",
			coord: runner.Version{Build: "0.0.9", Grader: runner.GraderVersion + 1, Protocol: queue.ProtocolVersion}},
		{name: "another protocol version, mixed allowed", keys: trusted, res: queue.Result{Payload: out}, mixed: true,
			coord: runner.Version{Build: "0.0.9", Grader: runner.GraderVersion, Protocol: queue.ProtocolVersion - 1}},
		{name: "same versions, another build", keys: trusted, res: queue.Result{Payload: out},
			coord: runner.Version{Build: "0.0.9", Grader: runner.GraderVersion, Protocol: queue.ProtocolVersion}},
	} {
		rid := cmp.Or(tc.id, id)
		rs := maps.Clone(runs)
		if tc.digest != "" {
			e := rs[rid]
			e.JobDigest = tc.digest
			rs[rid] = e
		}
		v := &runner.Verifier{Queue: q, Keys: tc.keys, Incoming: t.TempDir(), Runs: rs, Version: tc.coord, AllowMixed: tc.mixed}
		r := tc.res
		r.JobID, r.Worker, r.Deliveries, r.Seq = rid, "w", 1, 1
		source, err := v.Verify(ctx, r)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v", tc.name, err)
		}
		if wantSource := tc.want == "" || tc.charged; wantSource != (source == runner.KeyName(wkey)) || !wantSource && source != "" {
			t.Errorf("%s: source %q", tc.name, source)
		}
	}
}

// forgedTail is rp with a bench.verdict for rp.Result appended to its
// ledger after the last checkpoint, chained as the next entry would be:
// what a worker that wants another verdict could send. Only a signature
// covers an entry, so it must not count.
func forgedTail(t *testing.T, rp runner.ResultPayload) []byte {
	t.Helper()
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	tr := tar.NewReader(bytes.NewReader(rp.Ledger))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(h.Name) == "entries.jsonl" {
			lines := bytes.SplitAfter(b, []byte("\n"))
			lines = lines[:len(lines)-1]
			var last map[string]any
			if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(append([]byte{0}, bytes.TrimSuffix(lines[len(lines)-1], []byte("\n"))...))
			forged, _ := json.Marshal(map[string]any{"v": last["v"], "seq": len(lines), "time": last["time"], "session": last["session"],
				"type": "bench.verdict", "prev": hex.EncodeToString(sum[:]), "payloads": map[string]string{},
				"data": map[string]any{"instance_id": rp.Result.InstanceID, "arm": rp.Result.Arm, "repeat": rp.Result.Repeat, "resolved": rp.Result.Resolved}})
			b = append(b, append(forged, '\n')...)
			h.Size = int64(len(b))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	rp.Ledger = out.Bytes()
	b, _ := json.Marshal(rp)
	return b
}

// A genuine signed result replayed under another run's id, an error
// result with no ledger and a bare error header, all published on the
// results subject before the run they name is made: the coordinator
// refuses them, runs that run itself, and finishes with one honest line
// per run.
func TestForgedResultsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	set := setup(t)
	f := &fake{set: set, seen: map[string][]string{}}
	out := filepath.Join(t.TempDir(), "out")
	r := newRunner(t, set, f, out, "editor")
	r.Tasks = set.Tasks[:1]
	q, nc := memQueue(ctx, t, "forged")
	r.Queue = q
	var logs []string
	r.Logf = func(format string, args ...any) {
		fmt.Printf(format+"\n", args...)
		logs = append(logs, fmt.Sprintf(format, args...))
	}
	if _, err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	res, err := js.Stream(ctx, "TRUSS_forged_RESULTS")
	if err != nil {
		t.Fatal(err)
	}
	genuine, err := res.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	r2 := runner.JobID(bench.RunKey{InstanceID: set.Tasks[0].InstanceID, Arm: "editor", Repeat: 2})
	send := func(h nats.Header, data []byte) {
		m := &nats.Msg{Subject: "truss.forged.results", Header: h, Data: data}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	replay := nats.Header{}
	for k, v := range genuine.Header {
		if k != "Nats-Msg-Id" {
			replay[k] = v
		}
	}
	replay.Set("Truss-Job", r2)
	replay.Set("Truss-Worker", "rogue")
	send(replay, genuine.Data)
	bare, _ := json.Marshal(runner.ResultPayload{Result: bench.Result{InstanceID: set.Tasks[0].InstanceID, Arm: "editor", Repeat: 2,
		Error: "repository cannot be checked out", Resolved: true}})
	send(nats.Header{"Truss-Job": {r2}, "Truss-Worker": {"rogue"}, "Truss-Deliveries": {"1"}}, bare)
	send(nats.Header{"Truss-Job": {r2}, "Truss-Worker": {"rogue"}, "Truss-Deliveries": {"1"}, "Truss-Error": {`"boom"`}}, nil)

	f.calls = 0
	r.Repeats = 2
	logs = nil
	sum, err := r.Run(ctx)
	if err != nil || sum.Ran != 1 || sum.Skipped != 1 || f.calls != 1 {
		t.Fatalf("second run: %v, %+v, %d agent calls; want the second repeat run here", err, sum, f.calls)
	}
	got := readResults(t, out)
	line := got[bench.RunKey{InstanceID: set.Tasks[0].InstanceID, Arm: "editor", Repeat: 2}]
	if line.Error != "" || line.Worker == "rogue" || line.Ledger.Dir == "" {
		t.Errorf("the second repeat's line %+v", line)
	}
	joined := strings.Join(logs, "\n")
	for _, want := range []string{"another run", "no signed ledger", "rejected"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no rejection reported with %q:\n%s", want, joined)
		}
	}
}

// memQueue opens a queue named name, in memory, on an embedded server of
// its own; the test's end closes both. It returns the queue's connection
// too, for a test that talks to JetStream itself.
func memQueue(ctx context.Context, t *testing.T, name string) (*queue.Queue, *nats.Conn) {
	t.Helper()
	srv, err := queue.StartServer(ctx, queue.ServerConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	q, err := queue.Open(ctx, nc, name, queue.Config{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	return q, nc
}

// honestExec is a worker of q with a signing key of its own (returned as
// its verifier key), coord's grader and private directories.
func honestExec(t *testing.T, q *queue.Queue, a runner.Agent, coord *runner.Runner) (*runner.Exec, string) {
	t.Helper()
	wsigner, wkey, err := ledger.LoadOrCreateKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &runner.Exec{Queue: q, Agent: a, Grader: coord.Grader, Checkouts: &bench.Templates{Dir: t.TempDir()}, Signer: wsigner, VKey: wkey,
		Scratch: t.TempDir(), WorkDir: t.TempDir()}, wkey
}

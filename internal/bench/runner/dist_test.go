package runner_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

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
	srv, err := queue.StartServer(ctx, queue.ServerConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	q, err := queue.Open(ctx, nc, "test", queue.Config{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	bundles, err := runner.PutBundles(ctx, q, set.Tasks[:1], t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	task := set.Tasks[0]
	wsigner, wkey, err := ledger.LoadOrCreateKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ex := &runner.Exec{Queue: q, Agent: f, Grader: coord.Grader, Checkouts: &bench.Templates{Dir: t.TempDir()}, Signer: wsigner, VKey: wkey,
		Scratch: t.TempDir(), WorkDir: t.TempDir()}
	p := runner.JobPayload{Task: task, RepoDir: "/nonexistent/" + task.InstanceID, RepoBundle: bundles[task.RepoDir],
		Arm: coord.Arms[0], Repeat: 1, Script: runner.DefaultScript()}
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
	if !rp.Result.Resolved || rp.Result.Error != "" || len(rp.Ledger) == 0 || !strings.Contains(rp.Patch, "calc.go") {
		t.Fatalf("result %+v", rp.Result)
	}
	// Without the bundle, a worker that does not see the repository says so.
	p.RepoBundle = ""
	b, _ = json.Marshal(p)
	if _, err := ex.Handle(ctx, queue.Job{ID: id, Payload: b}, func(string) {}); err == nil || !strings.Contains(err.Error(), "no bundle") {
		t.Fatalf("no bundle: %v", err)
	}

	tampered := rp
	tampered.Result.Resolved = false
	tb, _ := json.Marshal(tampered)
	for _, tc := range []struct {
		name    string
		keys    []string
		payload []byte
		want    string
	}{
		{"untrusted worker", []string{coord.VKey}, out, "no trusted key"},
		{"trusted worker", []string{coord.VKey, wkey}, out, ""},
		{"verdict changed", []string{coord.VKey, wkey}, tb, "is not the result's"},
		{"verdict appended after the last checkpoint", []string{coord.VKey, wkey}, forgedTail(t, tampered), "unsealed"},
	} {
		v := &runner.Verifier{Queue: q, Keys: tc.keys, Incoming: t.TempDir()}
		err := v.Verify(ctx, queue.Result{JobID: id, Worker: "w", Deliveries: 1, Payload: tc.payload, Seq: 1})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v", tc.name, err)
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

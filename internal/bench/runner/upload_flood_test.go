package runner_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/queue"
)

// floodSetup is a verifier of one run and a worker-permissioned queue of
// the same server, as a worker's token holder has.
func floodSetup(t *testing.T, name string) (*runner.Verifier, *queue.Queue, string, bench.Task) {
	ctx := context.Background()
	set := setup(t)
	f := &fake{set: set, seen: map[string][]string{}}
	coord := newRunner(t, set, f, filepath.Join(t.TempDir(), "out"), "patcher")
	task := set.Tasks[0]
	q, join := guardedQueue(ctx, t, name)
	id := runner.JobID(bench.RunKey{InstanceID: task.InstanceID, Arm: "patcher", Repeat: 1})
	runs := map[string]runner.ExpectedRun{id: {InstanceID: task.InstanceID, Arm: "patcher", Repeat: 1, JobDigest: "x"}}
	v := &runner.Verifier{Queue: q, Keys: []string{coord.VKey}, Incoming: t.TempDir(), Runs: runs, MaxLedger: 8 << 20}
	return v, join(), id, task
}

func randomRoot() string {
	var r [32]byte
	rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

// A flood of small forged results stating one large upload costs the
// coordinator its reading once: an upload read whole and refused is
// refused again without being read.
func TestForgedResultsReadAnUploadOnce(t *testing.T) {
	ctx := context.Background()
	v, aq, id, task := floodSetup(t, "flood")
	root := randomRoot()
	u, err := aq.PutUpload(ctx, runner.LedgerUploadName(id, root), make([]byte, 4<<20)) // zeros: an empty archive
	if err != nil {
		t.Fatal(err)
	}
	var p runner.ResultPayload
	p.Result.Ledger.Root = root
	p.Result.InstanceID, p.Result.Arm, p.Result.Repeat = task.InstanceID, "patcher", 1
	p.LedgerSize, p.LedgerSHA256 = u.Size, u.SHA256
	pb, _ := json.Marshal(p)
	for i := 1; i <= 3; i++ {
		source, err := v.Verify(ctx, queue.Result{JobID: id, Worker: "w", Deliveries: 1, Seq: uint64(i), Payload: pb})
		if source != "" || err == nil || !strings.Contains(err.Error(), "no trusted key") {
			t.Fatalf("forged result %d: source %q, err %v", i, source, err)
		}
		if again := strings.Contains(err.Error(), "already read and refused"); again != (i > 1) {
			t.Errorf("forged result %d: %v", i, err)
		}
	}
}

// Parts another client adds under an upload's name with another digest
// are skipped only up to the upload's stated size and one part: a result
// stating a small upload cannot make the coordinator read a large stream.
func TestSkippedUploadPartsBounded(t *testing.T) {
	ctx := context.Background()
	v, aq, id, _ := floodSetup(t, "skip")
	root := randomRoot()
	name := runner.LedgerUploadName(id, root)
	if _, err := aq.PutUpload(ctx, name, make([]byte, 4<<20)); err != nil {
		t.Fatal(err)
	}
	u, err := aq.PutUpload(ctx, name, make([]byte, 1024))
	if err != nil {
		t.Fatal(err)
	}
	var p runner.ResultPayload
	p.Result.Ledger.Root = root
	p.LedgerSize, p.LedgerSHA256 = u.Size, u.SHA256
	pb, _ := json.Marshal(p)
	_, err = v.Verify(ctx, queue.Result{JobID: id, Worker: "w", Deliveries: 1, Seq: 1, Payload: pb})
	if err == nil || !strings.Contains(err.Error(), "of other parts before its own") {
		t.Fatalf("err %v", err)
	}
}

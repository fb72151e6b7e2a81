//go:build linux && heavy && !race

package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/ledger"
)

// wait100k is a session whose one command waits while 100,000 files
// appear: the test makes them (100 directories of 1,000 empty files) once
// the command has begun, outside the sandbox, whose CPU weight would make
// a loaded machine take minutes over it.
const wait100k = `{"steps": [
 {"actions": [{"kind": "run", "command": "touch .started; while [ ! -e .ready ]; do sleep 0.1; done"}]},
 {"say": "Made."}
]}`

// make100k makes the 100,000 files in root once .started is there, then
// .ready.
func make100k(t *testing.T, root string) (wait func()) {
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(root, ".started")); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		for d := range 100 {
			dir := filepath.Join(root, fmt.Sprintf("d%02d", d))
			if err := os.Mkdir(dir, 0o755); err != nil {
				done <- err
				return
			}
			for i := range 1000 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
					done <- err
					return
				}
			}
		}
		done <- os.WriteFile(filepath.Join(root, ".ready"), nil, 0o644)
	}()
	return func() {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// bulkSessionHeap is the most heap a session whose command makes 100,000
// files may hold above the test's own: the change tracker's budgets (a
// run of diffs, the index's overlay, a chunk of the manifest), the
// recorder's budget of final digests and the session itself. What grows
// with the files — the scan's diffs, the manifest, the final digests and
// the final_files payload — is on disk past its budget (it measured 10 MB;
// the scan alone held 43 MB when they were held whole).
const bulkSessionHeap = 24 << 20

// TestBulkSessionMemory: a session whose command makes 100,000 files,
// through the harness (the tracker, the recorder, the ledger), holds a
// bounded heap, sampled every millisecond from Open to Close (the
// collector at 20 %, so that the samples are close to what is live), and
// its ledger verifies with every file in its final list. (Not under the
// race detector, whose shadow memory makes a heap bound meaningless.)
func TestBulkSessionMemory(t *testing.T) {
	o := fixture(t, wait100k)
	o.Validation = ValidationOptions{Off: true}
	ctx := context.Background()
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	peak := base
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	sess, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	wait := make100k(t, o.Root)
	out, err := sess.Run(ctx, "Make the files.")
	wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	close(done)
	wg.Wait()
	if out.Agent.Status != agent.StatusCompleted {
		t.Fatalf("%s: %s", out.Agent.Status, out.Agent.Reason)
	}
	t.Logf("session making 100,000 files: heap peaked %.1f MB above the test's", float64(peak-base)/(1<<20))
	if peak-base > bulkSessionHeap {
		t.Errorf("the heap peaked %.1f MB above the test's, past %d MB", float64(peak-base)/(1<<20), bulkSessionHeap>>20)
	}
	_, entries := verified(t, o.KeyDir, out.LedgerDir)
	final, err := ledger.FinalFiles(out.LedgerDir, entries[len(entries)-1])
	if err != nil {
		t.Fatal(err)
	}
	if len(final) != 100_002 || final["d42/f0042"] != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("final files: %d, d42/f0042 %q", len(final), final["d42/f0042"])
	}
}

//go:build linux

package changes

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

	"github.com/trussdev/truss/internal/tool"
)

// TestTrackerMemory: the tracker's heap does not grow with the number of
// files a root holds. On a tree of 100,000 files of their own content, the
// heap above what the test held before Open stays under memoryBound through
// the baseline (every file copied into the store), a scan of a command
// that changed nothing, a full stat walk, a scan of three rewritten files,
// and a command that makes and then one that removes 2,000 files (a bulk
// change each). TestTrackerMemoryMillion (heavy) holds a million files to
// the same bound.
func TestTrackerMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 files")
	}
	if raceDetector {
		t.Skip("measures memory, which the race detector distorts (.ci/run runs it without)")
	}
	trackerMemory(t, 100_000)
}

// memoryBound is the most heap the tracker may hold above the test's own,
// whatever the tree: the index's overlay (DefaultIndexMemory entries), a
// chunk of the baseline, the walk's workers and a scan's changes.
const memoryBound = 24 << 20

// heapObjects is the runtime/metrics sample of the heap's objects, live
// and not yet swept.
const heapObjects = "/memory/classes/heap/objects:bytes"

// peakHeap samples the heap until stop is called, which returns the
// highest sample.
func peakHeap() (stop func() uint64) {
	s := []metrics.Sample{{Name: heapObjects}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
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
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

func trackerMemory(t *testing.T, n int) {
	root := t.TempDir()
	const perDir = 500
	content := make([]byte, 64)
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i/perDir/100), fmt.Sprintf("e%03d", i/perDir%100))
		if i%perDir == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		copy(content, fmt.Sprintf("file %08d\n", i))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i%perDir)), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Garbage is collected early, so that what is sampled is close to
	// what the tracker holds, not to when the collector last ran.
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	runtime.GC()
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	base := s[0].Value.Uint64()

	ctx := context.Background()
	steps := []struct {
		name  string
		run   func() error
		files int // changed files the step's scan reports
	}{
		{"scan, nothing changed", func() error { return nil }, 0},
		{"full walk, nothing changed", nil, 0},
		{"three files rewritten", func() error {
			for _, f := range []string{"d000/e000/f000.txt", "d000/e001/f007.txt", "d000/e002/f499.txt"} {
				if err := os.WriteFile(filepath.Join(root, f), []byte("rewritten\n"), 0o644); err != nil {
					return err
				}
			}
			return nil
		}, 3},
		{"2,000 files made", func() error {
			sh(t, root, `mkdir new && cd new && for i in $(seq 2000); do : > f$i; done`)
			return nil
		}, 2000},
		{"2,000 files removed", func() error { sh(t, root, `rm -r new`); return nil }, 2000},
	}
	stop := peakHeap()
	tr := open(t, []string{root}, Options{StoreDir: t.TempDir(), IndexMemory: DefaultIndexMemory})
	baseline := stop()
	t.Logf("%d files: baseline %.1f MB above the test's heap", n, mb(baseline-min(base, baseline)))
	worst := baseline
	for _, st := range steps {
		if st.run != nil {
			if err := st.run(); err != nil {
				t.Fatal(err)
			}
		}
		stop := peakHeap()
		var err error
		var files int
		if st.run == nil {
			got, e := tr.ScanAll(ctx)
			err, files = e, count(got)
		} else {
			got, e := tr.Scan(ctx)
			err, files = e, count(got)
		}
		peak := stop()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if files != st.files {
			t.Errorf("%s: %d files changed, want %d", st.name, files, st.files)
		}
		t.Logf("%d files: %s: %.1f MB", n, st.name, mb(peak-min(base, peak)))
		worst = max(worst, peak)
	}
	if worst > base+memoryBound {
		t.Errorf("%d files: the tracker's heap peaked %.1f MB above the test's, past %.0f MB",
			n, mb(worst-base), mb(memoryBound))
	}
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// count is how many files changes name: a bulk change counts its files.
func count(changes []tool.FileChange) int {
	n := 0
	for _, c := range changes {
		n += max(c.Files, 1)
	}
	return n
}

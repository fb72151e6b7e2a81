package ledger

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// peakHeap samples the heap's live objects every millisecond until the
// returned stop is called, which returns the largest sample in bytes.
func peakHeap() (stop func() uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
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

// BenchmarkRecordFinalBytes measures the recorder's peak heap
// (peak-heap-MB, sampled every millisecond, less the heap before) while it
// records a bulk change whose manifest (in a file, as the tracker passes a
// large one) lists files with long paths, and writes session.end's final
// list: 16,000 files with 4,000-byte paths (64 MB of paths), and 100,000
// with 40-byte ones. The final digests are what grows with the paths.
func BenchmarkRecordFinalBytes(b *testing.B) {
	for _, shape := range []struct {
		name  string
		files int
		path  int
	}{
		{"paths=4000B", 16_000, 4000},
		{"paths=40B", 100_000, 40},
	} {
		b.Run(shape.name, func(b *testing.B) {
			dir := b.TempDir()
			var m bytes.Buffer
			d := digestOf("x")
			for i := range shape.files {
				p := fmt.Sprintf("%s/f%06d", strings.Repeat("d", shape.path-8), i)
				m.WriteString(manifestLine(tool.ChangeAdd, "file", "", d, 1, p, ""))
			}
			mf := filepath.Join(dir, "manifest")
			if err := os.WriteFile(mf, m.Bytes(), 0o600); err != nil {
				b.Fatal(err)
			}
			size := int64(m.Len())
			after := tool.Digest(m.Bytes())
			m = bytes.Buffer{}
			b.StopTimer()
			var heap float64
			for range b.N {
				signer, _ := newKey(b, "truss/test")
				w, err := Create(filepath.Join(b.TempDir(), "ledger"), "S", signer)
				if err != nil {
					b.Fatal(err)
				}
				rec, err := NewRecorder(w, Start{Model: "m"})
				if err != nil {
					b.Fatal(err)
				}
				ch := tool.FileChange{Path: ".", Kind: tool.ChangeUpdate, After: after, AfterFile: fileContent{mf, size}, Files: shape.files}
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				stop := peakHeap()
				b.StartTimer()
				rec.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: 1,
					Call:    &model.ToolCall{ID: "c", Name: "bash", Kind: model.ToolFunction, Input: "{}"},
					Ops:     []tool.Call{{ID: "c", Op: tool.OpExec, Args: &tool.ExecArgs{Command: "make"}}},
					Results: []tool.Result{{CallID: "c", Op: tool.OpExec, Changes: []tool.FileChange{ch}}},
					Result:  &model.ToolResult{CallID: "c"}})
				rec.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted}})
				if err := rec.Close(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				peak := stop()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				heap += float64(peak-min(peak, ms.HeapAlloc)) / (1 << 20)
			}
			b.ReportMetric(heap/float64(b.N), "peak-heap-MB")
		})
	}
}

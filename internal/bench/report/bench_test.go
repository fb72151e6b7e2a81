package report

import (
	"fmt"
	"io"
	"testing"

	"github.com/trussdev/truss/internal/bench"
)

// synthetic is a results set the size of SWE-bench Verified: 500 tasks,
// the given arms, 3 repeats.
func synthetic(arms int) *Data {
	d := &Data{Dir: "bench", Manifest: &Manifest{Version: 1}}
	for a := range arms {
		d.Manifest.Arms = append(d.Manifest.Arms, Arm{Name: fmt.Sprintf("arm%d", a), Provider: "p", Model: "m"})
	}
	for task := range 500 {
		for a := range arms {
			for rep := 1; rep <= 3; rep++ {
				d.Results = append(d.Results, bench.Result{
					InstanceID: fmt.Sprintf("org__repo-%05d", task), Arm: fmt.Sprintf("arm%d", a), Repeat: rep,
					Resolved: (task*7+a*3+rep)%5 < 2, PatchApplied: true, Turns: 10 + task%20, CostUSD: 0.1,
					ToolCalls: map[string]int{"bash": 3, "str_replace_based_edit_tool": 5}, CapabilityCalls: map[string]int{"shell.exec": 3, "file.edit": 5},
					Edits:  bench.Edits{Editor: 2, Shell: 1},
					Ledger: bench.LedgerRef{Dir: fmt.Sprintf("/l/%d/%d/%d", task, a, rep), Root: "ab"},
				})
			}
		}
	}
	return d
}

// BenchmarkReport measures the analysis (with the bootstrap's 10,000
// resamples per pair) and both renderings of 500 tasks × 2 arms × 3 repeats.
func BenchmarkReport(b *testing.B) {
	d := synthetic(2)
	b.ReportAllocs()
	for b.Loop() {
		rep := Analyze(d, Options{})
		if err := rep.Markdown(io.Discard); err != nil {
			b.Fatal(err)
		}
		if err := rep.HTML(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBootstrap measures one pair's bootstrap over 500 tasks.
func BenchmarkBootstrap(b *testing.B) {
	x, y := make([]float64, 500), make([]float64, 500)
	for i := range x {
		x[i], y[i] = float64(i%3)/2, float64(i%2)
	}
	for b.Loop() {
		BootstrapDiff(x, y, DefaultResamples, DefaultSeed, 0.05)
	}
}

// BenchmarkHTML measures the HTML page alone of 500 tasks × 2 arms × 3
// repeats (about 1 MB).
func BenchmarkHTML(b *testing.B) {
	rep := Analyze(synthetic(2), Options{Resamples: 100})
	var n countingWriter
	b.ReportAllocs()
	for b.Loop() {
		if err := rep.HTML(&n); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(n.n / int64(b.N))
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

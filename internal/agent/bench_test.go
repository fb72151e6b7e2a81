package agent_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/shell"
)

// BenchmarkToolRoundTrip measures the client turnaround of one tool round
// trip against the simulated model: from the moment a model response is
// complete to the moment the next request has reached the model, minus the
// time the tool itself ran. It reports the median as turnaround-µs.
func BenchmarkToolRoundTrip(b *testing.B) {
	for _, d := range dialects {
		for _, step := range []string{
			`{"actions": [{"kind": "view", "path": "stats.go"}]}`,
			`{"actions": [{"kind": "run", "command": "true"}]}`,
		} {
			name := d.name + "/view"
			if strings.Contains(step, "run") {
				name = d.name + "/shell-true"
			}
			b.Run(name, func(b *testing.B) { benchRoundTrip(b, d, step, false) })
			if d.name == "anthropic" {
				b.Run(name+"/ledger", func(b *testing.B) { benchLedgerAB(b, d, step, 0) })
				// The same with a model that takes 20 ms to answer (real
				// ones take hundreds): the ledger's background work then
				// falls in the model's time.
				b.Run(name+"/ledger-model-20ms", func(b *testing.B) { benchLedgerAB(b, d, step, 20) })
			}
		}
	}
}

// benchLedgerAB measures what the ledger adds to the turnaround: sessions
// without and with the ledger alternate, so that the machine's drift over
// the run falls on both alike. It reports both medians and the difference.
func benchLedgerAB(b *testing.B, d dialect, step string, latencyMS int) {
	var plain, ledgered, fg []time.Duration
	for i := 0; i < b.N; i += 2 * roundTripTurns {
		p, _ := roundTripSession(b, d, step, false, latencyMS)
		l, f := roundTripSession(b, d, step, true, latencyMS)
		plain, ledgered, fg = append(plain, p...), append(ledgered, l...), append(fg, f)
	}
	b.StopTimer()
	mp, ml := median(plain), median(ledgered)
	b.ReportMetric(float64(mp.Microseconds()), "plain-µs")
	b.ReportMetric(float64(ml.Microseconds()), "turnaround-µs")
	b.ReportMetric(100*float64(ml-mp)/float64(mp), "added-%")
	var total time.Duration
	for _, f := range fg {
		total += f
	}
	b.ReportMetric(float64(total.Microseconds())/float64(len(ledgered)), "recorder-µs/turn")
}

func median(x []time.Duration) time.Duration {
	if len(x) == 0 {
		return 0
	}
	sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
	return x[len(x)/2]
}

// roundTripTurns is the number of tool round trips in one session.
const roundTripTurns = 40

func benchRoundTrip(b *testing.B, d dialect, step string, withLedger bool) {
	var samples []time.Duration
	for i := 0; i < b.N; i += roundTripTurns {
		s, _ := roundTripSession(b, d, step, withLedger, 0)
		samples = append(samples, s...)
	}
	b.StopTimer()
	b.ReportMetric(float64(median(samples).Microseconds()), "turnaround-µs")
	b.ReportMetric(float64(samples[len(samples)*9/10].Microseconds()), "p90-µs")
}

// roundTripSession runs one session of roundTripTurns tool round trips,
// the simulated model answering each request after latencyMS, and returns
// each round trip's client turnaround and the time spent in the ledger's
// recorder on the loop's path.
func roundTripSession(b *testing.B, d dialect, step string, withLedger bool, latencyMS int) (samples []time.Duration, fg time.Duration) {
	const turns = roundTripTurns
	script := `{"latency_ms": ` + strconv.Itoa(latencyMS) + `, "steps": [` + strings.Repeat(step+",", turns) + `{"say": "done"}]}`
	s, err := sim.ParseScript([]byte(script))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "stats.go"), []byte(strings.Repeat("package stats // line\n", 200)), 0o644)
	ws, _ := fs.Open(dir)
	defer ws.Close()
	sh := shell.New(shell.Config{Dir: dir})
	defer sh.Close()
	var mux tool.Mux
	fx := &fs.Executor{W: ws}
	mux.HandleAll(fs.Ops, fx)
	mux.HandleAll(shell.Ops, sh)
	set, _ := surface.NewSet(generic.Name, generic.Bindings()...)
	{
		b.StopTimer()
		srv := sim.New(s)
		ctx, cancel := context.WithCancel(context.Background())
		base, _ := srv.Listen(ctx)
		var respDone []time.Time
		var execTime []time.Duration
		var inner tool.Executor = &mux
		obs := agent.Observers{agent.ObserverFunc(func(ev agent.Event) {
			if ev.Type == agent.EventResponse {
				respDone = append(respDone, time.Now())
			}
		})}
		var lw *ledger.Writer
		var rec *ledger.Recorder
		if withLedger {
			skey, _, _ := note.GenerateKey(rand.Reader, "truss/bench")
			signer, _ := note.NewSigner(skey)
			lw, _ = ledger.Create(filepath.Join(b.TempDir(), "ledger"), "bench", signer)
			rec, _ = ledger.NewRecorder(lw, ledger.Start{Model: "sim-coder"})
			obs = append(obs, agent.ObserverFunc(func(ev agent.Event) {
				t0 := time.Now()
				rec.Observe(ev)
				fg += time.Since(t0)
			}))
			inner = ledger.Contents(lw, func(p string) ([]byte, error) {
				r, err := ws.Resolve(p)
				if err != nil {
					return nil, err
				}
				return r.ReadFile()
			}, inner)
		}
		exec := tool.ExecutorFunc(func(ctx context.Context, c tool.Call) tool.Result {
			t0 := time.Now()
			r := inner.Execute(ctx, c)
			execTime = append(execTime, time.Since(t0))
			return r
		})
		a := agent.New(agent.Config{Provider: d.new(base), Tools: set, Exec: exec, Model: "sim-coder",
			RepeatLimit: 1 << 30, RepeatWindow: 1, Observer: obs}, nil)
		b.StartTimer()
		out := a.Run(ctx, "bench")
		b.StopTimer()
		if out.Status != agent.StatusCompleted {
			b.Fatalf("%+v", out)
		}
		if lw != nil {
			rec.Close()
			lw.Close()
		}
		reqs := srv.Requests()
		for k := 0; k+1 < len(reqs) && k < len(execTime); k++ {
			samples = append(samples, reqs[k+1].Received.Sub(respDone[k])-execTime[k])
		}
		cancel()
	}
	return samples, fg
}

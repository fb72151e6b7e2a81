package agent_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/perfmeter"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
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
			b.Run(name, func(b *testing.B) { benchRoundTrip(b, d, step, arm{}) })
			if d.name != "anthropic" {
				continue
			}
			// The ledger, with an instant model and with one that takes
			// 20 ms to answer (real ones take hundreds), by when the
			// ledger's background work is done. Then the controls: no
			// ledger, but a goroutine woken 2 ms after each response (when
			// the ledger works) to compute for 30 or 300 µs, touching no
			// memory: what any background work between turns does to the
			// next turnaround on the machine.
			for _, a := range []arm{{ledger: true}, {work: 30 * time.Microsecond}, {work: 300 * time.Microsecond}} {
				for _, latency := range []int{0, 20} {
					sub := name + "/" + a.String()
					if latency > 0 {
						sub += "-model-" + strconv.Itoa(latency) + "ms"
					}
					b.Run(sub, func(b *testing.B) { benchAB(b, d, step, a, latency) })
				}
			}
		}
	}
}

// arm is what a round-trip session runs besides the loop: the ledger
// (recorder and file contents), or work computed on a goroutine woken
// ledger.Defer after each response; the zero arm runs nothing.
type arm struct {
	ledger bool
	work   time.Duration
}

func (a arm) String() string {
	switch {
	case a.ledger:
		return "ledger"
	case a.work > 0:
		return fmt.Sprintf("wake-%dus", a.work.Microseconds())
	}
	return "plain"
}

// benchAB measures what an arm adds to the turnaround: sessions without
// it and with it alternate, so that the machine's drift over the run falls
// on both alike. It reports both medians of the client turnaround and
// their difference (added-%), the time the loop spent in the ledger's
// recorder per turn (recorder-µs/turn) and as a share of the plain
// turnaround (onpath-%), and the process CPU time the arm added per turn
// (cpu-µs/turn).
func benchAB(b *testing.B, d dialect, step string, a arm, latencyMS int) {
	var samples [2][]time.Duration // without the arm, with it
	var cpu [2]time.Duration
	var fg time.Duration // only the ledger's arm has a recorder
	for i := 0; i < b.N; i += 2 * roundTripTurns {
		for k, x := range []arm{{}, a} {
			c0 := perfmeter.ProcessCPU()
			s, f := roundTripSession(b, d, step, x, latencyMS)
			cpu[k] += perfmeter.ProcessCPU() - c0
			samples[k] = append(samples[k], s...)
			fg += f
		}
	}
	b.StopTimer()
	mp, mw := median(samples[0]), median(samples[1])
	turns := float64(len(samples[1]))
	b.ReportMetric(float64(mp.Microseconds()), "plain-µs")
	b.ReportMetric(float64(mw.Microseconds()), "turnaround-µs")
	b.ReportMetric(100*float64(mw-mp)/float64(mp), "added-%")
	b.ReportMetric(float64((cpu[1]-cpu[0]).Microseconds())/turns, "cpu-µs/turn")
	if a.ledger {
		b.ReportMetric(float64(fg.Microseconds())/turns, "recorder-µs/turn")
		b.ReportMetric(100*float64(fg)/turns/float64(mp), "onpath-%")
	}
}

// spin computes for d, touching no memory, and returns what it computed.
func spin(d time.Duration) uint64 {
	x := uint64(1)
	for t0 := time.Now(); time.Since(t0) < d; {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

func median(x []time.Duration) time.Duration {
	if len(x) == 0 {
		return 0
	}
	slices.Sort(x)
	return x[len(x)/2]
}

// roundTripTurns is the number of tool round trips in one session.
const roundTripTurns = 40

func benchRoundTrip(b *testing.B, d dialect, step string, a arm) {
	var samples []time.Duration
	for i := 0; i < b.N; i += roundTripTurns {
		s, _ := roundTripSession(b, d, step, a, 0)
		samples = append(samples, s...)
	}
	b.StopTimer()
	b.ReportMetric(float64(median(samples).Microseconds()), "turnaround-µs")
	b.ReportMetric(float64(samples[len(samples)*9/10].Microseconds()), "p90-µs")
}

// roundTripSession runs one session of roundTripTurns tool round trips,
// the simulated model answering each request after latencyMS, with what
// arm a adds, and returns each round trip's client turnaround and the time
// spent in the ledger's recorder on the loop's path.
func roundTripSession(b *testing.B, d dialect, step string, a arm, latencyMS int) (samples []time.Duration, fg time.Duration) {
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
		srv := simtest.New(s)
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
		// The control's computations, waited for before the session ends
		// so that none falls in the next session's CPU time.
		var spins sync.WaitGroup
		defer spins.Wait()
		if a.work > 0 {
			var spun atomic.Uint64
			obs = append(obs, agent.ObserverFunc(func(ev agent.Event) {
				if ev.Type == agent.EventResponse {
					spins.Add(1)
					time.AfterFunc(ledger.Defer, func() { defer spins.Done(); spun.Store(spin(a.work)) })
				}
			}))
		}
		if a.ledger {
			skey, _, _ := note.GenerateKey(rand.Reader, "truss/bench")
			signer, _ := note.NewSigner(skey)
			lw, _ = ledger.Create(filepath.Join(b.TempDir(), "ledger"), "bench", signer)
			rec, _ = ledger.NewRecorder(lw, ledger.Start{Model: "sim-coder"})
			obs = append(obs, agent.ObserverFunc(func(ev agent.Event) {
				t0 := time.Now()
				rec.Observe(ev)
				fg += time.Since(t0)
			}))
		}
		exec := tool.ExecutorFunc(func(ctx context.Context, c tool.Call) tool.Result {
			t0 := time.Now()
			r := inner.Execute(ctx, c)
			execTime = append(execTime, time.Since(t0))
			return r
		})
		loop := agent.New(agent.Config{Provider: d.new(base), Tools: set, Exec: exec, Model: "sim-coder",
			RepeatLimit: 1 << 30, RepeatWindow: 1, Observer: obs}, nil)
		b.StartTimer()
		out := loop.Run(ctx, "bench")
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

package tui

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// turnEvents are the events of one scripted task: reasoning, text, an
// edit with its diff, a command with 40 lines of output, a markdown answer.
func turnEvents(i int) []agent.Event {
	var evs []agent.Event
	add := func(ev agent.Event) { evs = append(evs, ev) }
	add(agent.Event{Type: agent.EventUser, Items: []model.Item{{Kind: model.KindUser, Text: fmt.Sprintf("task %d: make the tests pass", i)}}})
	add(agent.Event{Type: agent.EventTurnStarted, Turn: 1})
	for _, w := range strings.Fields("I need to read the failing test first and then fix the function it exercises.") {
		add(agent.Event{Type: agent.EventDelta, Delta: &model.Delta{Kind: model.KindReasoning, Text: w + " "}})
	}
	for _, w := range strings.Fields("Let me fix `Add` and run the tests.") {
		add(agent.Event{Type: agent.EventDelta, Delta: &model.Delta{Kind: model.KindAssistant, Text: w + " "}})
	}
	add(agent.Event{Type: agent.EventResponse, Response: &model.Response{}})
	before := strings.Repeat("line\n", 30) + "return a - b\n" + strings.Repeat("tail\n", 30)
	after := strings.Repeat("line\n", 30) + "return a + b\n" + strings.Repeat("tail\n", 30)
	call := &model.ToolCall{ID: fmt.Sprintf("e%d", i), Name: "edit_file"}
	op := tool.Call{Op: tool.OpReplace, Args: &tool.ReplaceArgs{Path: "calc.go"}}
	add(agent.Event{Type: agent.EventCallStarted, Call: call, Ops: []tool.Call{op}})
	add(agent.Event{Type: agent.EventCallCompleted, Call: call, Ops: []tool.Call{op}, Result: &model.ToolResult{Text: "edited"},
		Results: []tool.Result{{Changes: []tool.FileChange{{Path: "calc.go", Kind: tool.ChangeUpdate, Before: "x", After: "y", BeforeData: []byte(before), AfterData: []byte(after)}}}}})
	call = &model.ToolCall{ID: fmt.Sprintf("b%d", i), Name: "bash"}
	op = tool.Call{Op: tool.OpExec, Args: &tool.ExecArgs{Command: "go test ./..."}}
	out := strings.Repeat("=== RUN   TestSomething\n--- PASS: TestSomething (0.00s)\n", 20)
	add(agent.Event{Type: agent.EventCallStarted, Call: call, Ops: []tool.Call{op}})
	add(agent.Event{Type: agent.EventCallCompleted, Call: call, Ops: []tool.Call{op}, Result: &model.ToolResult{Text: out}, FullText: out})
	add(agent.Event{Type: agent.EventTurnCompleted, Usage: model.Usage{InputTokens: 1000, OutputTokens: 100}})
	add(agent.Event{Type: agent.EventTurnStarted, Turn: 2})
	for _, w := range strings.Fields("**Done.** The tests pass:\n\n- `calc.go`: fixed `Add`\n- `go test ./...` passes") {
		add(agent.Event{Type: agent.EventDelta, Delta: &model.Delta{Kind: model.KindAssistant, Text: w + " "}})
	}
	add(agent.Event{Type: agent.EventResponse, Response: &model.Response{}})
	add(agent.Event{Type: agent.EventTurnCompleted, Usage: model.Usage{InputTokens: 1100, OutputTokens: 50}})
	add(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted, Turns: 2, Calls: 2}})
	return evs
}

// transcript returns a model that has drawn n tasks at 100×40.
func transcript(tb testing.TB, n int) *uiModel {
	u := New(Options{})
	m := newModel(context.Background(), newFake(u), u.q, true)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 40})
	for i := range n {
		m.add(blockUser, fmt.Sprintf("task %d", i))
		var its []item
		for _, ev := range turnEvents(i) {
			if e := convert(ev); e != nil {
				its = append(its, item{ev: e})
			}
		}
		m.Update(batchMsg(its))
	}
	m.View()
	return m
}

// BenchmarkKeystroke measures a key typed into the input with 1,000
// tasks in the transcript: the update and the frame it draws.
func BenchmarkKeystroke(b *testing.B) {
	m := transcript(b, 1000)
	keys := []tea.KeyPressMsg{keyOf("a"), keyOf("b"), {Code: tea.KeyBackspace}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m.Update(keys[i%len(keys)])
		_ = m.View()
	}
}

// BenchmarkStreamDelta streams 10,000 deltas of assistant text (about
// 10,000 tokens) into one message, drawing a frame after every delta (a
// program draws at most 60 a second, so this is the worst case); it
// reports the time per delta.
func BenchmarkStreamDelta(b *testing.B) {
	const deltas = 10_000
	evs := make([]*event, deltas)
	for i := range evs {
		text := "token "
		if i%12 == 11 {
			text = "token\n"
		}
		if i%200 == 199 {
			text = "token\n\n"
		}
		evs[i] = convert(agent.Event{Type: agent.EventDelta, Delta: &model.Delta{Kind: model.KindAssistant, Text: text}})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		m := transcript(b, 10)
		m.Update(batchMsg{{ev: convert(agent.Event{Type: agent.EventTurnStarted})}})
		b.StartTimer()
		for _, e := range evs {
			m.Update(batchMsg{{ev: e}})
			_ = m.View()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*deltas), "ns/delta")
}

// BenchmarkTranscriptMemory reports the heap a 1,000-task transcript
// holds, drawn and scrolled through once (every block's lines cached).
func BenchmarkTranscriptMemory(b *testing.B) {
	var ms runtime.MemStats
	for range b.N {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		m := transcript(b, 1000)
		for m.scroll < 1_000_000 {
			prev := m.scroll
			m.Update(keyOf("pgup"))
			m.View()
			if m.scroll == prev {
				break
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc-base)/(1<<20), "MB")
		runtime.KeepAlive(m)
	}
}

// firstFrame is a writer that reports when the program first draws the
// status line.
type firstFrame struct {
	once sync.Once
	done chan struct{}
	buf  strings.Builder
}

func (f *firstFrame) Write(p []byte) (int, error) {
	f.buf.Write(p)
	if strings.Contains(f.buf.String(), "sim-model") {
		f.once.Do(func() { close(f.done) })
	}
	return len(p), nil
}

// BenchmarkFirstFrame measures the time from making the UI to the first
// frame a Bubble Tea program writes (model, program start, first render).
func BenchmarkFirstFrame(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		out := &firstFrame{done: make(chan struct{})}
		pr, pw := io.Pipe()
		start := time.Now()
		u := New(Options{Input: pr, Output: out, Width: 100, Height: 40, Env: []string{"TERM=xterm-256color"}})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- u.Run(ctx, newFake(u)) }()
		<-out.done
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms/first-frame")
		cancel()
		pw.Close()
		<-errc
	}
}

// BenchmarkDiffOf measures the diff of one changed line in a file just
// under maxDiffInput, computed on the agent loop's goroutine.
func BenchmarkDiffOf(b *testing.B) {
	line := "some ordinary line of source code, about sixty bytes long.\n"
	n := maxDiffInput / len(line)
	before := strings.Repeat(line, n)
	after := strings.Repeat(line, n/2) + "a changed line\n" + strings.Repeat(line, n-n/2-1)
	c := tool.FileChange{Path: "big.txt", Kind: tool.ChangeUpdate, Before: "x", After: "y", BeforeData: []byte(before), AfterData: []byte(after)}
	b.ReportAllocs()
	for range b.N {
		if d := diffOf(c); d.adds != 1 || d.dels != 1 {
			b.Fatalf("diff +%d -%d", d.adds, d.dels)
		}
	}
}

package ledger

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/perfmeter"
	"github.com/trussdev/truss/internal/tool"
)

// BenchmarkRecordSession records sessions of 40 turns the way a session
// grows: each turn's request has the earlier turns' messages as cached parts
// plus two new ones, one view call returns a 4.4 KB file, and the turn
// ends with its checkpoint. Turns come every pace (the model's time): at
// 12 ms every turn is sealed on its own; at 1 ms turns are sealed together
// (SealInterval); at 0 the recorder's Defer batches them too. Sessions
// with the ledger alternate with the same sessions without it, and the
// difference in the process's CPU time (user and system, all threads: the
// background encoding, hashing, signing, writes and fdatasyncs, and the
// ledger's creation and closing) is reported per turn as cpu-µs/turn; the
// loop's own time in Observe as onpath-µs/turn.
func BenchmarkRecordSession(b *testing.B) {
	for _, pace := range []time.Duration{0, time.Millisecond, 12 * time.Millisecond} {
		b.Run(fmt.Sprintf("paced-%s", pace), func(b *testing.B) {
			s, _ := newKey(b, "truss/bench")
			file := strings.Repeat("package stats // line\n", 200)
			text := strings.Repeat("     1\tpackage stats // line\n", 200)
			call := &model.ToolCall{ID: "toolu_1", Name: "str_replace_based_edit_tool", Kind: model.ToolTyped, Type: "tool_use", Input: `{"command":"view","path":"/repo/stats.go"}`}
			ops := []tool.Call{{ID: "toolu_1", Op: tool.OpView, Surface: "anthropic", Args: &tool.ViewArgs{Path: "/repo/stats.go"}}}
			results := []tool.Result{{CallID: "toolu_1", Op: tool.OpView, Output: text}}
			var onPath time.Duration
			var cpu [2]time.Duration // without the ledger, with it
			turns := 0
			// session runs up to 40 turns, recording them when withLedger.
			session := func(withLedger bool, n int) {
				var rec *Recorder
				var w *Writer
				if withLedger {
					w, _ = Create(filepath.Join(b.TempDir(), "l"), "S", s)
					rec, _ = NewRecorder(w, Start{Model: "m"})
				}
				var parts [][]byte
				var digests []string
				add := func(p []byte) { parts, digests = append(parts, p), append(digests, tool.Digest(p)) }
				add([]byte(`{"model":"m","max_tokens":8192,"system":"You are a coding agent.","messages":[`))
				add([]byte(`{"role":"user","content":"Fix the failing test."}`))
				for i := 0; i < n; i++ {
					add([]byte(fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"str_replace_based_edit_tool","input":{"command":"view","path":"/repo/stats.go"}}]}`, i)))
					add([]byte(fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":%q}]}`, i, file)))
					resp := &model.Response{ID: fmt.Sprint("msg_", i), Model: "m", StopReason: model.StopToolUse, Attempts: 1,
						Items: []model.Item{{Kind: model.KindToolCall, Call: call}},
						Wire: &model.Wire{Parts: parts[:len(parts):len(parts)], Digests: digests[:len(digests):len(digests)],
							Response: []byte(fmt.Sprintf("event: message_start\ndata: {\"id\":\"msg_%d\"}\n\n%s", i, strings.Repeat("event: x\ndata: {}\n\n", 12)))}}
					if rec != nil {
						t0 := time.Now()
						rec.Observe(agent.Event{Type: agent.EventResponse, Turn: i, Response: resp})
						rec.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: i, Call: call, Ops: ops, Results: results,
							Result: &model.ToolResult{CallID: "toolu_1", Text: text}, FullText: text})
						rec.Observe(agent.Event{Type: agent.EventTurnCompleted, Turn: i})
						onPath += time.Since(t0)
					}
					time.Sleep(pace)
				}
				if rec != nil {
					rec.Close()
					w.Close()
				}
			}
			for turns < b.N {
				n := min(40, b.N-turns)
				for k, withLedger := range []bool{false, true} {
					c0 := perfmeter.ProcessCPU()
					session(withLedger, n)
					cpu[k] += perfmeter.ProcessCPU() - c0
				}
				turns += n
			}
			b.ReportMetric(float64(onPath.Nanoseconds())/1e3/float64(turns), "onpath-µs/turn")
			b.ReportMetric(float64((cpu[1]-cpu[0]).Nanoseconds())/1e3/float64(turns), "cpu-µs/turn")
		})
	}
}

// TestRecorderDefer: events wait at most Defer, not for the run's end: a
// long tool call's events reach the ledger while it runs.
func TestRecorderDefer(t *testing.T) {
	s, _ := newKey(t, "truss/test")
	w, err := Create(filepath.Join(t.TempDir(), "l"), "S", s)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := NewRecorder(w, Start{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	rec.Observe(agent.Event{Type: agent.EventUser, Items: []model.Item{{Kind: model.KindUser, Text: "task"}}})
	for w.Size() < 2 {
		time.Sleep(time.Millisecond) // the test's deadline bounds the wait
	}
	rec.Close()
	w.Close()
}

// TestRecorderEnd: End ends a run whose entries do not end with
// session.end (session.start alone, a compaction or a failed one after the
// last task, a task's entries cut by the close) with a session.end of
// status closed, and leaves a run that has ended (its last task's
// session.end, followed or not by a validation) as it is; either way the
// run then ends as CheckEnded requires.
func TestRecorderEnd(t *testing.T) {
	signer, vkey := newKey(t, "truss/end")
	user := agent.Event{Type: agent.EventUser, Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}
	done := agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted, Turns: 1}}
	compacted := agent.Event{Type: agent.EventCompacted, Compaction: &compact.Record{Reason: "manual", Replaced: 1, Digest: strings.Repeat("a", 64)}}
	failed := agent.Event{Type: agent.EventCompactFailed, Err: fmt.Errorf("no summary")}
	for _, tc := range []struct {
		name       string
		events     []agent.Event
		validation bool
		want       []string // the entries' types after End
		closed     bool     // End wrote the last session.end
	}{
		{"nothing but session.start", nil, false, []string{"session.start", "session.end"}, true},
		{"a task ended", []agent.Event{user, done}, false, []string{"session.start", "user", "session.end"}, false},
		{"a task ended, then checked", []agent.Event{user, done}, true, []string{"session.start", "user", "session.end", "validation"}, false},
		{"a check alone", nil, true, []string{"session.start", "validation", "session.end"}, true},
		{"a compaction after the task", []agent.Event{user, done, compacted}, false, []string{"session.start", "user", "session.end", "context.compact", "session.end"}, true},
		{"a failed compaction after the task", []agent.Event{user, done, failed}, false, []string{"session.start", "user", "session.end", "context.compact_failed", "session.end"}, true},
		{"a task with no end", []agent.Event{user}, false, []string{"session.start", "user", "session.end"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ledger")
			w, err := Create(dir, "S", signer)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := NewRecorder(w, Start{Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range tc.events {
				rec.Observe(ev)
			}
			if tc.validation {
				rec.Validation(map[string]any{"boundary": true}, []byte("ok\n"))
			}
			rec.End("closed by the test", model.Usage{OutputTokens: 7})
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r, entries, err := Verify(dir, vkey)
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, e := range entries {
				types = append(types, e.Type)
			}
			if strings.Join(types, " ") != strings.Join(tc.want, " ") {
				t.Errorf("entries %q, want %q", types, tc.want)
			}
			if err := CheckEnded(entries, r.Sealed); err != nil {
				t.Errorf("after End: %v", err)
			}
			var end map[string]any
			for _, e := range entries {
				if e.Type == "session.end" {
					end, _ = e.Data.(map[string]any)
				}
			}
			if got := end["status"] == StatusClosed; got != tc.closed {
				t.Errorf("the last session.end is %v, want one of End's: %v", end, tc.closed)
			} else if got && (end["reason"] != "closed by the test" || fmt.Sprint(end["turns"], " ", end["calls"]) != "0 0") {
				t.Errorf("End's session.end: %v", end)
			}
		})
	}
}

// TestEndsAfterSpill: a run whose changed files spilled to disk before
// its first session.end lists them all in every later one (the next
// task's, End's after a compaction), the files changed since included.
func TestEndsAfterSpill(t *testing.T) {
	signer, vkey := newKey(t, "truss/spill")
	dir := filepath.Join(t.TempDir(), "ledger")
	w, err := Create(dir, "S", signer)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := NewRecorder(w, Start{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	rec.final.max = 2 // set before the first event: spills every second path
	changed := func(paths ...string) agent.Event {
		var chs []tool.FileChange
		for _, p := range paths {
			chs = append(chs, tool.FileChange{Path: p, Kind: tool.ChangeAdd, After: tool.Digest([]byte(p)), AfterData: []byte(p)})
		}
		return agent.Event{Type: agent.EventCallCompleted, Call: &model.ToolCall{ID: "c"}, Ops: []tool.Call{{ID: "c", Op: tool.OpCreate}},
			Results: []tool.Result{{CallID: "c", Op: tool.OpCreate, Changes: chs}}, Result: &model.ToolResult{CallID: "c"}}
	}
	done := agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted}}
	rec.Observe(changed("a", "b", "c"))
	rec.Observe(done)
	rec.Observe(changed("d", "e"))
	rec.Observe(done)
	rec.Observe(agent.Event{Type: agent.EventCompacted, Compaction: &compact.Record{Reason: "manual", Digest: strings.Repeat("a", 64)}})
	rec.End("closed by the test", model.Usage{})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, entries, err := Verify(dir, vkey)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e.Type != "session.end" {
			continue
		}
		files, err := FinalFiles(dir, e)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join(slices.Sorted(maps.Keys(files)), ","))
	}
	if want := []string{"a,b,c", "a,b,c,d,e", "a,b,c,d,e"}; !slices.Equal(got, want) {
		t.Errorf("the session.ends' files: %q, want %q", got, want)
	}
}

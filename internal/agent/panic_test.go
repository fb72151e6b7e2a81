package agent_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

// scripted is a provider that answers each turn with the next response and
// keeps the requests.
type scripted struct {
	mu        sync.Mutex
	responses []*model.Response
	requests  []*model.Request
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Turn(_ context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, &model.Request{Items: append([]model.Item(nil), req.Items...)})
	if len(s.responses) == 0 {
		return nil, errors.New("no more responses")
	}
	r := s.responses[0]
	s.responses = s.responses[1:]
	return r, nil
}

// panicky is a binding that decodes a call into one operation and encodes
// its results as text; it panics where told to.
type panicky struct {
	name                     string
	op                       tool.Op
	panicDecode, panicEncode bool
	panicEncodeError         bool
}

func (b panicky) Spec() model.ToolSpec {
	return model.ToolSpec{Name: b.name, Kind: model.ToolFunction, Parameters: []byte(`{"type":"object"}`)}
}

func (b panicky) Decode(c model.ToolCall) ([]tool.Call, error) {
	if b.panicDecode {
		panic("decoder exploded")
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Op: b.op, Raw: tool.Raw(c.Input)}}, nil
}

func (b panicky) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	if b.panicEncode {
		_ = rs[len(rs)] // a runtime error, not a string
	}
	var sb strings.Builder
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(&sb, "failed: %s", r.Err.Message)
		} else {
			fmt.Fprintf(&sb, "ok: %s", r.Output)
		}
	}
	return model.ToolResult{Text: sb.String(), IsError: rs[0].Err != nil}
}

// errorEncoding is a panicky binding that renders errors in its own format.
type errorEncoding struct{ panicky }

func (b errorEncoding) EncodeError(c model.ToolCall, err error) model.ToolResult {
	if b.panicEncodeError {
		panic("the error encoder exploded too")
	}
	return model.ToolResult{Text: "TOOL ERROR: " + err.Error()}
}

// TestPanicsBecomeErrorResults runs a turn whose calls hit a panicking
// decoder, executor and encoder, sequentially (a mutating operation) and
// in parallel (read-only ones): the run goes on to its next turn, every
// call is answered exactly once, the model reads that the tool failed with
// an internal error and the panic's value but no stack, and the observers
// get each panic with its stack.
func TestPanicsBecomeErrorResults(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   tool.Op
	}{{"sequential", tool.OpWrite}, {"parallel", tool.OpView}} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := surface.NewSet("test",
				errorEncoding{panicky{name: "bad_decode", op: tc.op, panicDecode: true}},
				errorEncoding{panicky{name: "bad_decode_and_error", op: tc.op, panicDecode: true, panicEncodeError: true}},
				panicky{name: "good", op: tc.op},
				panicky{name: "bad_encode", op: tc.op, panicEncode: true},
			)
			if err != nil {
				t.Fatal(err)
			}
			var executed sync.Map // call id → times run
			exec := tool.ExecutorFunc(func(ctx context.Context, c tool.Call) tool.Result {
				n, _ := executed.LoadOrStore(c.ID, new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
				if c.ID == "call_exec" {
					panic(fmt.Errorf("executor exploded on %s", c.Op))
				}
				return tool.Result{CallID: c.ID, Op: c.Op, Output: "did " + c.ID}
			})
			calls := []struct{ id, tool string }{
				{"call_decode", "bad_decode"},
				{"call_decode2", "bad_decode_and_error"},
				{"call_exec", "good"},
				{"call_encode", "bad_encode"},
				{"call_ok", "good"},
			}
			first := &model.Response{StopReason: model.StopToolUse}
			for _, c := range calls {
				first.Items = append(first.Items, model.Item{Kind: model.KindToolCall, Call: &model.ToolCall{ID: c.id, Name: c.tool, Kind: model.ToolFunction, Input: "{}"}})
			}
			prov := &scripted{responses: []*model.Response{first, {StopReason: model.StopEndTurn, Items: []model.Item{{Kind: model.KindAssistant, Text: "Done."}}}}}
			var mu sync.Mutex
			completed := map[string][]agent.Event{}
			rec, vkey, closeLedger := newLedger(t)
			a := agent.New(agent.Config{Provider: prov, Tools: set, Exec: exec, Model: "m",
				Observer: agent.Observers{rec, agent.ObserverFunc(func(ev agent.Event) {
					if ev.Type == agent.EventCallCompleted {
						mu.Lock()
						completed[ev.Call.ID] = append(completed[ev.Call.ID], ev)
						mu.Unlock()
					}
				})}}, nil)
			out := a.Run(context.Background(), "Go.")
			dir := closeLedger()
			if out.Status != agent.StatusCompleted || out.Turns != 2 || out.Text != "Done." {
				t.Fatalf("outcome %s after %d turns (%s): the loop did not go on", out.Status, out.Turns, out.Reason)
			}
			// The second request answers every call exactly once, in order.
			var answered []model.ToolResult
			for _, it := range prov.requests[1].Items {
				if it.Kind == model.KindToolResult {
					answered = append(answered, *it.Result)
				}
			}
			if len(answered) != len(calls) {
				t.Fatalf("%d results for %d calls", len(answered), len(calls))
			}
			for i, c := range calls {
				if answered[i].CallID != c.id {
					t.Errorf("result %d answers %s, want %s", i, answered[i].CallID, c.id)
				}
				if evs := completed[c.id]; len(evs) != 1 {
					t.Errorf("%s: %d call_completed events", c.id, len(evs))
				}
			}
			byID := map[string]model.ToolResult{}
			for _, r := range answered {
				byID[r.CallID] = r
			}
			for _, tt := range []struct {
				id, stage   string
				prefix      string // how the model's text starts
				value, more string // the panic value, and what else the text says
				runs        int32  // how often the executor ran the call
			}{
				{"call_decode", "decode", "TOOL ERROR: the bad_decode tool failed with an internal error", "panic: decoder exploded", "the call was not run", 0},
				{"call_decode2", "decode", "Error: the bad_decode_and_error tool failed with an internal error", "panic: decoder exploded", "the call was not run", 0},
				{"call_exec", "execute", "failed: " + string(tc.op) + " failed with an internal error", "panic: executor exploded on " + string(tc.op), "check before retrying", 1},
				{"call_encode", "encode", "Error: the bad_encode tool failed with an internal error", "panic: runtime error: index out of range [1] with length 1", string(tc.op) + " succeeded", 1},
			} {
				r := byID[tt.id]
				if !r.IsError || !strings.HasPrefix(r.Text, tt.prefix) || !strings.Contains(r.Text, tt.value) || !strings.Contains(r.Text, tt.more) {
					t.Errorf("%s: the model read (error %v) %q; want it to start %q and say %q and %q", tt.id, r.IsError, r.Text, tt.prefix, tt.value, tt.more)
				}
				if strings.Contains(r.Text, "goroutine") || strings.Contains(r.Text, "panic_test.go") {
					t.Errorf("%s: the model read a stack: %q", tt.id, r.Text)
				}
				var runs int32
				if n, ok := executed.Load(tt.id); ok {
					runs = n.(*atomic.Int32).Load()
				}
				if runs != tt.runs {
					t.Errorf("%s: executed %d times, want %d", tt.id, runs, tt.runs)
				}
				ev := completed[tt.id][0]
				var pe *agent.PanicError
				if !errors.As(ev.Err, &pe) || pe.Stage != tt.stage || !strings.Contains(fmt.Sprint(pe.Value), strings.TrimPrefix(tt.value, "panic: ")) {
					t.Errorf("%s: the observers got %v, want a %s panic", tt.id, ev.Err, tt.stage)
					continue
				}
				// The stack names the function that panicked, in this file.
				if !strings.Contains(string(pe.Stack), "panic_test.go") || !strings.Contains(ev.FullText, string(pe.Stack)) {
					t.Errorf("%s: the stack is not in the event:\n%s\nfull text:\n%s", tt.id, pe.Stack, ev.FullText)
				}
				if ev.Result.Text != r.Text {
					t.Errorf("%s: the event's result %q is not what the model read %q", tt.id, ev.Result.Text, r.Text)
				}
			}
			if r := byID["call_exec"]; completed["call_exec"][0].Results[0].Err.Kind != tool.ErrInternal {
				t.Errorf("call_exec: result kind %v (%q)", completed["call_exec"][0].Results[0].Err, r.Text)
			}
			// The ledger records each panicked call as failed, with the
			// stack in its full output and not in what the model read.
			_, entries, err := ledger.Verify(dir, vkey)
			if err != nil {
				t.Fatalf("the ledger does not verify: %v", err)
			}
			pack := readPack(t, dir)
			recorded := map[string]bool{}
			for _, e := range entries {
				d, _ := e.Data.(map[string]any)
				id, _ := d["call_id"].(string)
				if e.Type != "tool.result" || id == "call_ok" {
					continue
				}
				recorded[id] = true
				full, forModel := pack[e.Payloads["output"]], pack[e.Payloads["model_output"]]
				if d["is_error"] != true || !bytes.Contains(full, []byte("panic_test.go")) || forModel == nil || bytes.Contains(forModel, []byte("goroutine")) {
					t.Errorf("%s: recorded %v with output %q and model output %q", id, d, full, forModel)
				}
				if rs, _ := d["results"].([]any); id == "call_exec" && (len(rs) != 1 || rs[0].(map[string]any)["error_kind"] != string(tool.ErrInternal)) {
					t.Errorf("%s: recorded results %v", id, d["results"])
				}
			}
			if len(recorded) != 4 {
				t.Errorf("tool.result entries of the panicked calls: %v", recorded)
			}
			if r := byID["call_ok"]; r.IsError || r.Text != "ok: did call_ok" || completed["call_ok"][0].Err != nil {
				t.Errorf("call_ok: %+v, err %v", r, completed["call_ok"][0].Err)
			}
		})
	}
}

// newLedger returns a recorder on a new ledger, the ledger's verifier key,
// and a function that closes it and returns its directory.
func newLedger(t *testing.T) (*ledger.Recorder, string, func() string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, "truss/test")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ledger")
	lw, err := ledger.Create(dir, "S", signer)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ledger.NewRecorder(lw, ledger.Start{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	return rec, vkey, func() string {
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := lw.Seal(); err != nil {
			t.Fatal(err)
		}
		if err := lw.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
}

// readPack returns a ledger's payloads by digest.
func readPack(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	p, err := ledger.Payloads(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

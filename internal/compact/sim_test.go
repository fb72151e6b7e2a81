package compact_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	anthropicprov "github.com/trussdev/truss/internal/provider/anthropic"
	"github.com/trussdev/truss/internal/provider/chatcompat"
	"github.com/trussdev/truss/internal/provider/ollama"
	openaiprov "github.com/trussdev/truss/internal/provider/openai"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
	"github.com/trussdev/truss/internal/surface/generic"
)

var fastRetry = provider.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

var dialects = []struct {
	name string
	new  func(base string) provider.Provider
}{
	{"ollama", func(u string) provider.Provider { return &ollama.Client{Host: u, Retry: fastRetry} }},
	{"chat", func(u string) provider.Provider {
		return chatcompat.New(chatcompat.Config{BaseURL: u + "/v1", APIKey: "sk-test", Retry: fastRetry})
	}},
	{"anthropic", func(u string) provider.Provider {
		return anthropicprov.New(anthropicprov.Config{BaseURL: u, APIKey: "sk-test", Retry: fastRetry})
	}},
	{"responses", func(u string) provider.Provider {
		return openaiprov.New(openaiprov.Config{BaseURL: u + "/v1", APIKey: "sk-test", Retry: fastRetry})
	}},
}

// script is a long run: twelve turns of two parallel commands each, then
// a final word.
func script(compaction string) *sim.Script {
	var steps []string
	for i := range 12 {
		steps = append(steps, fmt.Sprintf(`{"say":"Turn %d.","actions":[{"kind":"run","command":"echo a%d"},{"kind":"run","command":"echo b%d"}]}`, i, i, i))
	}
	steps = append(steps, `{"say":"Done."}`)
	s, err := sim.ParseScript([]byte(`{"steps":[` + strings.Join(steps, ",") + `]` + compaction + `}`))
	if err != nil {
		panic(err)
	}
	return s
}

const system = "You are a test agent."

func user(s string) model.Item { return model.Item{Kind: model.KindUser, Text: s} }

// converse plays turns of the conversation: each call is answered with a
// result of a few hundred bytes, as a loop would.
func converse(t *testing.T, p provider.Provider, tools []model.ToolSpec, items []model.Item, turns int) []model.Item {
	t.Helper()
	for range turns {
		resp, err := p.Turn(t.Context(), &model.Request{Model: "sim-coder", System: system, Items: items, Tools: tools, MaxTokens: 1000}, nil)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, resp.Items...)
		for _, c := range resp.Calls() {
			r := &model.ToolResult{CallID: c.ID, Name: c.Name, Text: c.Input + "\n" + strings.Repeat("output line\n", 30)}
			items = append(items, model.Item{Kind: model.KindToolResult, Result: r})
		}
	}
	return items
}

// TestCompactWithSimulatedModel: in every dialect, a long conversation
// with the simulated model is compacted: the summary comes from the model,
// the pinned task stays, the kept tail holds whole call/result pairs, and
// the strict simulator accepts the next request, which goes on with the
// script's next step.
func TestCompactWithSimulatedModel(t *testing.T) {
	tools := []model.ToolSpec{generic.Bash{}.Spec()}
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			srv := simtest.New(script(`,"compaction":{"say":"We ran a0 to a7 and b0 to b7; all printed their names."}`))
			srv.APIKey = "sk-test"
			base, err := srv.Listen(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			p := d.new(base)
			items := converse(t, p, tools, []model.Item{user("TASK: run the echo commands.")}, 8)
			c := &compact.Compactor{Provider: p, Model: "sim-coder", System: system, Tools: func() []model.ToolSpec { return tools }, KeepTokens: 700}
			out, rec, err := c.Compact(t.Context(), items, compact.ReasonAuto)
			if err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if last := reqs[len(reqs)-1]; !last.Summary || last.Status != 200 {
				t.Fatalf("summary request recorded as %+v", last)
			}
			if out[0].Text != "TASK: run the echo commands." || !compact.IsSummary(out[1]) || !strings.Contains(out[1].Text, "We ran a0 to a7") {
				t.Fatalf("head of the new transcript: %+v", out[:2])
			}
			if rec.Cut <= 1 || rec.Cut >= len(items) || len(rec.Calls) == 0 || !slices.Contains(compact.Boundaries(items), rec.Cut) {
				t.Fatalf("record %+v", rec)
			}
			// Every call kept has its result kept, and no result is orphaned.
			calls, results := map[string]int{}, map[string]int{}
			for _, it := range out {
				if it.Call != nil {
					calls[it.Call.ID]++
				}
				if it.Result != nil {
					results[it.Result.CallID]++
				}
			}
			if len(calls) == 0 || !reflect.DeepEqual(calls, results) {
				t.Fatalf("kept calls %v, results %v", calls, results)
			}

			next := converse(t, p, tools, out, 1)
			reqs = srv.Requests()
			last := reqs[len(reqs)-1]
			if last.Status != 200 || last.Summary {
				t.Fatalf("the next request got %d", last.Status)
			}
			if err := last.CheckPairing(); err != nil {
				t.Errorf("pairing: %v", err)
			}
			if last.Step != 8 {
				t.Errorf("the next request played step %d, want 8 (the script goes on)", last.Step)
			}
			if body := string(last.Body); !strings.Contains(body, "TASK: run the echo commands.") || !strings.Contains(body, "We ran a0 to a7") {
				t.Errorf("the next request lost the task or the summary")
			}
			if got := next[len(out)].Text; got != "Turn 8." {
				t.Errorf("the model said %q", got)
			}
		})
	}
}

// TestCompactSummaryRefused: a summary request the API refuses leaves the
// transcript unchanged, with an error that says so and why.
func TestCompactSummaryRefused(t *testing.T) {
	tools := []model.ToolSpec{generic.Bash{}.Spec()}
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			srv := simtest.New(script(`,"compaction":{"faults":[{"kind":"status","status":400,"message":"prompt is too long: 210000 tokens > 200000 maximum"}]}`))
			srv.APIKey = "sk-test"
			base, _ := srv.Listen(t.Context())
			p := d.new(base)
			items := converse(t, p, tools, []model.Item{user("TASK")}, 4)
			before := slices.Clone(items)
			c := &compact.Compactor{Provider: p, Model: "sim-coder", System: system, Tools: func() []model.ToolSpec { return tools }, KeepTokens: 300}
			out, rec, err := c.Compact(t.Context(), items, compact.ReasonAuto)
			if out != nil || rec != nil || err == nil || !strings.Contains(err.Error(), "the conversation is unchanged") || !strings.Contains(err.Error(), "prompt is too long") {
				t.Fatalf("%v %v %v", out, rec, err)
			}
			if !reflect.DeepEqual(items, before) {
				t.Error("the transcript changed")
			}
			// The conversation goes on uncompacted.
			converse(t, p, tools, items, 1)
		})
	}
}

package agent_test

import (
	"testing"

	"github.com/trussdev/truss/examples"
	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
)

// TestUsageEveryDialect: every dialect's usage reaches the agent with one
// meaning. The simulated model counts a request's prompt as (bytes+3)/4
// tokens and reports it the way its API does (the Messages API as
// input_tokens beside cache reads and writes, OpenAI's and Gemini's as a
// total holding the cached part): Usage.Input of each response is that whole
// prompt, the cached part is within it, and the run's usage is the sum of
// its responses' (Total counting cache reads and writes).
func TestUsageEveryDialect(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			e := runScript(t, d, string(examples.DemoScript), nil)
			if e.outcome.Status != agent.StatusCompleted {
				t.Fatalf("outcome %+v", e.outcome)
			}
			var prompts []int64
			for _, r := range e.srv.Requests() {
				if r.Status == 200 && !r.Summary {
					prompts = append(prompts, (int64(len(r.Body))+3)/4)
				}
			}
			var sum, turns model.Usage
			i := 0
			for _, ev := range e.events {
				switch ev.Type {
				case agent.EventResponse:
					u := ev.Response.Usage
					if i >= len(prompts) {
						t.Fatalf("more responses than answered requests (%d)", len(prompts))
					}
					want := prompts[i]
					if d.name == "ollama" {
						want = min(want, 4096) // Ollama counts what fits its context
					}
					if u.Input() != want {
						t.Errorf("turn %d: Input() = %d (%+v), the simulated model counted %d", i+1, u.Input(), u, want)
					}
					if u.Input() <= 0 || u.InputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 || u.OutputTokens <= 0 {
						t.Errorf("turn %d: usage %+v", i+1, u)
					}
					if u.Total() != u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens+u.OutputTokens {
						t.Errorf("turn %d: Total() = %d, usage %+v", i+1, u.Total(), u)
					}
					sum.Add(u)
					i++
				case agent.EventTurnCompleted:
					turns.Add(ev.Usage)
				}
			}
			if i != len(prompts) {
				t.Errorf("%d responses, %d answered requests", i, len(prompts))
			}
			if got := e.outcome.Usage; got.Total() != sum.Total() || got.Input() != sum.Input() || turns.Total() != sum.Total() {
				t.Errorf("run usage %+v, turns' %+v, responses' %+v", got, turns, sum)
			}
		})
	}
}

// TestTokenBudgetCountsCache: a token budget counts the prompt the cache
// took: the Messages API reports a first turn whose prompt is all written
// to the cache as 0 input_tokens, and a budget of that turn's tokens stops
// the run after it.
func TestTokenBudgetCountsCache(t *testing.T) {
	d := dialects[2]
	if d.name != "anthropic" {
		t.Fatalf("dialects[2] is %s", d.name)
	}
	e := runScript(t, d, string(examples.DemoScript), nil)
	var first model.Usage
	for _, ev := range e.events {
		if ev.Type == agent.EventResponse {
			first = ev.Response.Usage
			break
		}
	}
	if first.InputTokens != 0 || first.CacheWriteTokens == 0 {
		t.Fatalf("the first turn's prompt was not all written to the cache: %+v", first)
	}
	for _, c := range []struct {
		budget int64
		turns  int
	}{{first.Total(), 1}, {first.CacheWriteTokens, 1}, {first.Total() + 1, 2}} {
		e := runScript(t, d, string(examples.DemoScript), func(cfg *agent.Config) { cfg.Budget.MaxTokens = c.budget })
		if e.outcome.Status != agent.StatusBudget || e.outcome.Turns != c.turns || e.outcome.Usage.Total() < c.budget {
			t.Errorf("budget %d: outcome %+v, want a budget stop after %d turns", c.budget, e.outcome, c.turns)
		}
	}
}

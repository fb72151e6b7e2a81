package provider_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/anthropic"
	"github.com/trussdev/truss/internal/provider/chatcompat"
	"github.com/trussdev/truss/internal/provider/ollama"
	"github.com/trussdev/truss/internal/provider/openai"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
)

var fast = provider.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}

// TestSettingsAreSentOnEveryDialect: the session's model settings reach
// the wire in each dialect's own field, on the first request and on a later
// one after a tool call, and the requests validate against the official
// API descriptions where there are some.
func TestSettingsAreSentOnEveryDialect(t *testing.T) {
	set := provider.Settings{ReasoningEffort: "high", ReasoningSummary: "auto", ThinkingTokens: 2048, ContextTokens: 32768, CacheKey: "session-42"}
	openaiDoc, err := apispec.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	anthropicDoc, err := apispec.Anthropic()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dialect string
		new     func(base string) provider.Provider
		want    []string
		header  [2]string
		check   func([]byte) error
	}{
		{"responses", func(base string) provider.Provider {
			return openai.New(openai.Config{BaseURL: base + "/v1", APIKey: "k", Retry: fast, ReasoningEffort: set.ReasoningEffort,
				ReasoningSummary: set.ReasoningSummary, CacheKey: set.CacheKey})
		}, []string{`"reasoning":{"effort":"high","summary":"auto"}`, `"prompt_cache_key":"session-42"`}, [2]string{},
			func(b []byte) error { return openaiDoc.RequestBody("/responses", "POST", b) }},
		{"anthropic", func(base string) provider.Provider {
			return anthropic.New(anthropic.Config{BaseURL: base, APIKey: "k", Retry: fast, ThinkingBudget: int64(set.ThinkingTokens)})
		}, []string{`"thinking":{"budget_tokens":2048,"type":"enabled"}`, `"max_tokens":3072`}, [2]string{"Anthropic-Beta", anthropic.InterleavedThinking},
			func(b []byte) error { return anthropicDoc.RequestBody("/v1/messages", "POST", b) }},
		{"chat", func(base string) provider.Provider {
			return chatcompat.New(chatcompat.Config{BaseURL: base + "/v1", Retry: fast, ReasoningEffort: set.ReasoningEffort})
		}, []string{`"reasoning_effort":"high"`}, [2]string{}, nil},
		{"ollama", func(base string) provider.Provider {
			return &ollama.Client{Host: base, Retry: fast, NumCtx: set.ContextTokens}
		}, []string{`"options":{"num_ctx":32768}`}, [2]string{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.dialect, func(t *testing.T) {
			s, err := sim.ParseScript([]byte(`{"steps": [{"think": "Look first.", "say": "Listing.", "actions": [{"kind": "list"}]}, {"say": "Done."}]}`))
			if err != nil {
				t.Fatal(err)
			}
			srv := simtest.New(s)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			base, err := srv.Listen(ctx)
			if err != nil {
				t.Fatal(err)
			}
			p := tc.new(base)
			tools := []model.ToolSpec{{Kind: model.ToolFunction, Name: "list_dir", Description: "List.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
			req := &model.Request{Model: "sim-model", MaxTokens: 1024, Items: []model.Item{{Kind: model.KindUser, Text: "list"}}, Tools: tools}
			resp, err := p.Turn(ctx, req, nil)
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.Calls()
			if len(calls) != 1 {
				t.Fatalf("calls %+v", calls)
			}
			req.Items = append(req.Items, resp.Items...)
			req.Items = append(req.Items, model.Item{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: calls[0].ID, Name: calls[0].Name, Text: "a.go"}})
			if _, err := p.Turn(ctx, req, nil); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i, r := range reqs {
				for _, want := range tc.want {
					if !strings.Contains(string(r.Body), want) {
						t.Errorf("request %d lacks %s: %s", i, want, r.Body)
					}
				}
				if tc.header[0] != "" && !strings.Contains(r.Header.Get(tc.header[0]), tc.header[1]) {
					t.Errorf("request %d: %s is %q", i, tc.header[0], r.Header.Get(tc.header[0]))
				}
				if tc.check != nil {
					if err := tc.check(r.Body); err != nil {
						t.Errorf("request %d does not validate: %v", i, err)
					}
				}
			}
			if tc.dialect == "anthropic" {
				// The thinking block goes back unchanged, signature and all.
				if !strings.Contains(string(reqs[1].Body), `"signature":"`) || !strings.Contains(string(reqs[1].Body), `"thinking":"Look first."`) {
					t.Errorf("the thinking block was not replayed: %s", reqs[1].Body)
				}
			}
		})
	}
}

// TestOllamaContextLength reads a model's longest context from /api/show.
func TestOllamaContextLength(t *testing.T) {
	srv := simtest.New(&sim.Script{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, err := srv.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := (&ollama.Client{Host: base}).ContextLength(ctx, "llama3.1")
	if err != nil || n != 131072 {
		t.Fatalf("context length %d, %v", n, err)
	}
}

func TestSettingsFieldsAndNearContext(t *testing.T) {
	f := provider.Settings{ReasoningEffort: "medium", ContextTokens: 8192, CacheKey: "s"}.Fields()
	if len(f) != 3 || f["reasoning_effort"] != "medium" || f["context_tokens"] != "8192" || f["prompt_cache_key"] != "s" {
		t.Errorf("fields %v", f)
	}
	for _, tc := range []struct {
		prompt, limit int64
		near          bool
	}{{0, 0, false}, {4096, 0, false}, {3686, 4096, false}, {3687, 4096, true}, {4096, 4096, true}, {9000, 4096, true}} {
		if got := provider.NearContext(tc.prompt, tc.limit); got != tc.near {
			t.Errorf("NearContext(%d, %d) = %v", tc.prompt, tc.limit, got)
		}
	}
}

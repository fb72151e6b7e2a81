package surface

import (
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/tool"
)

func TestDecodeJSON(t *testing.T) {
	type args struct {
		Path  string `json:"path"`
		Limit int    `json:"limit"`
	}
	tests := []struct {
		in   string
		want string // error substring, "" for success
	}{
		{`{"path":"a","limit":3}`, ""},
		{`{"path":"a","extra":true}`, ""},
		{``, `missing required parameter "path"`},
		{`{"path":null}`, `missing required parameter "path"`},
		{`{"path":`, "not a valid JSON object"},
		{`[1]`, "not a valid JSON object"},
		{`{"path":1}`, `parameter "path" must be of type string, got number`},
		{`{"path":"a","limit":"x"}`, `parameter "limit" must be of type number, got string`},
	}
	for _, tt := range tests {
		var a args
		err := DecodeJSON("t", tt.in, &a, "path")
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.in, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || tool.KindOf(err) != tool.ErrInvalidInput):
			t.Errorf("%q: got %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestProfilesAndChoose(t *testing.T) {
	ps := DefaultProfiles()
	if p := ps.Lookup("ollama", "qwen2.5-coder:14b"); p.Guess || p.Surface != "generic" || p.ContextWindow != 32768 {
		t.Errorf("qwen: %+v", p)
	}
	if p := ps.Lookup("chat", "qwen2.5-coder"); !p.Guess {
		t.Errorf("a provider-restricted profile matched another provider: %+v", p)
	}
	if p := ps.Lookup("x", "SIM-Coder"); p.Guess {
		t.Errorf("matching is case-insensitive: %+v", p)
	}
	reg := Registry{"generic": func(Profile) []Binding { return nil }}
	for _, tt := range []struct{ flag, surf, want string }{
		{"auto", "generic", "generic"}, {"", "anthropic", "generic"}, {"generic", "anthropic", "generic"},
	} {
		got, err := reg.Choose(tt.flag, Profile{Surface: tt.surf})
		if err != nil || got != tt.want {
			t.Errorf("Choose(%q, %q) = %q, %v", tt.flag, tt.surf, got, err)
		}
	}
	if _, err := reg.Choose("codex", Profile{}); err == nil || !strings.Contains(err.Error(), "choose auto or one of: generic") {
		t.Errorf("unknown surface: %v", err)
	}
}

func TestPricesCost(t *testing.T) {
	p := Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	got := p.Cost(model.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 1_000_000})
	if want := 3 + 1.5 + 0.6 + 3.75; got < want-1e-9 || got > want+1e-9 {
		t.Fatalf("cost %v, want %v", got, want)
	}
}

func TestSet(t *testing.T) {
	s, err := NewSet("x")
	if err != nil {
		t.Fatal(err)
	}
	r := s.UnknownTool(model.ToolCall{ID: "c", Name: "nope"})
	if !r.IsError || r.CallID != "c" || !strings.Contains(r.Text, `no tool named "nope"`) {
		t.Fatalf("%+v", r)
	}
}

// TestProfileSettings: reasoning models reason by default (medium, with
// summaries for the models Codex runs); a model that does not reason is
// sent no effort; the command line overrides each setting.
func TestProfileSettings(t *testing.T) {
	ps := DefaultProfiles()
	tests := []struct {
		provider, model  string
		effort           string
		thinking, numCtx int
		want             provider.Settings
	}{
		{"responses", "gpt-5.1", "", -1, 0, provider.Settings{ReasoningEffort: "medium", ReasoningSummary: "auto", CacheKey: "s1"}},
		{"responses", "gpt-5.2-codex", "", -1, 0, provider.Settings{ReasoningEffort: "medium", ReasoningSummary: "auto", CacheKey: "s1"}},
		{"responses", "gpt-5-mini", "", -1, 0, provider.Settings{ReasoningEffort: "medium", CacheKey: "s1"}},
		{"responses", "gpt-4.1", "", -1, 0, provider.Settings{CacheKey: "s1"}},
		{"responses", "gpt-5-chat-latest", "", -1, 0, provider.Settings{CacheKey: "s1"}},
		{"responses", "gpt-5.2", "high", -1, 0, provider.Settings{ReasoningEffort: "high", ReasoningSummary: "auto", CacheKey: "s1"}},
		{"responses", "gpt-5.2", "none", -1, 0, provider.Settings{ReasoningEffort: "none", CacheKey: "s1"}},
		{"responses", "mystery-model", "low", -1, 0, provider.Settings{ReasoningEffort: "low", CacheKey: "s1"}},
		{"anthropic", "claude-sonnet-4-5", "", -1, 0, provider.Settings{CacheKey: "s1"}},
		{"anthropic", "claude-sonnet-4-5", "", 16000, 0, provider.Settings{ThinkingTokens: 16000, CacheKey: "s1"}},
		{"ollama", "qwen3-coder:30b", "", -1, 0, provider.Settings{ContextTokens: 32768, CacheKey: "s1"}},
		{"ollama", "llama3.1:8b", "", -1, 0, provider.Settings{ContextTokens: MaxNumCtx, CacheKey: "s1"}},
		{"ollama", "llama3.1:8b", "", -1, 8192, provider.Settings{ContextTokens: 8192, CacheKey: "s1"}},
		{"ollama", "unknown-model", "", -1, 0, provider.Settings{CacheKey: "s1"}},
	}
	for _, tc := range tests {
		if got := ps.Lookup(tc.provider, tc.model).Settings(tc.effort, tc.thinking, tc.numCtx, "s1"); got != tc.want {
			t.Errorf("%s %s (%q, %d, %d): %+v, want %+v", tc.provider, tc.model, tc.effort, tc.thinking, tc.numCtx, got, tc.want)
		}
	}
}

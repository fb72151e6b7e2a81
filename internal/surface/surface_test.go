package surface

import (
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/model"
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

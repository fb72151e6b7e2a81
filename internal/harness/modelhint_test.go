package harness

import (
	"strings"
	"testing"
)

// TestNearestModel: a mistyped model of the provider's catalog is met
// with the one it most likely meant; a model no row is near, or two
// rows are as near, and any model of a provider that serves any maker's
// models, with nothing.
func TestNearestModel(t *testing.T) {
	for _, tc := range []struct{ provider, model, want string }{
		{"anthropic", "claude-sonet-4-5", "claude-sonnet-4-5"},
		{"gemini", "gemini-2.5-pr", "gemini-2.5-pro"},
		{"openai", "gpt-5.2", ""},
		{"anthropic", "claude-opus-4-9", ""}, // 4-8, 4-7, 4-6 … as near
		{"anthropic", "llama3", ""},
		{"bedrock", "anthropic.claude-opus-4-5-20251101-v1", "anthropic.claude-opus-4-5-20251101-v1:0"},
		{"vertex", "claude-sonnet-4-5@2025929", "claude-sonnet-4-5@20250929"},
		{"chat", "gpt-4o", ""},
		{"ollama", "qwen3:8", ""},
	} {
		def, ok := lookupProvider(tc.provider)
		if !ok {
			t.Fatalf("no provider %s", tc.provider)
		}
		if got := def.nearestModel(tc.model); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.provider, tc.model, got, tc.want)
		}
	}
}

// TestModelHint: a 404 about the model says where the model is set and
// where the models are listed; Azure's adapter says its own.
func TestModelHint(t *testing.T) {
	for _, tc := range []struct{ provider, want string }{
		{"anthropic", "check --model or TRUSS_MODEL (truss models lists the models Truss knows)"},
		{"ollama", "check --model or TRUSS_MODEL (ollama list shows the models pulled)"},
		{"azure", ""},
	} {
		def, _ := lookupProvider(tc.provider)
		if got := def.modelHint(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.provider, got, tc.want)
		}
	}
	named := ProviderDef{Name: "corp", Named: true, ConfigFile: "/home/u/.config/truss/config.toml"}
	if got := named.modelHint(); !strings.Contains(got, "model in [providers.corp] of /home/u/.config/truss/config.toml") {
		t.Errorf("named: %q", got)
	}
}

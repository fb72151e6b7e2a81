package harness

import (
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

// TestModelHint: a 404 about the model says where the model came from,
// only that, and where the models are listed; Azure's adapter says its
// own, and an interactive command is named as the session's.
func TestModelHint(t *testing.T) {
	for _, tc := range []struct{ provider, source, want string }{
		{"anthropic", "--model", "check --model (truss models lists the models Truss knows)"},
		{"anthropic", "TRUSS_MODEL", "check TRUSS_MODEL (or pass --model) (truss models lists the models Truss knows)"},
		{"anthropic", "", "the model is anthropic's default: pass --model (truss models lists the models Truss knows)"},
		{"anthropic", "session S1", "the model is session S1's: pass --model (truss models lists the models Truss knows)"},
		{"ollama", "--model", "check --model (ollama list shows the models pulled)"},
		{"azure", "--model", ""},
	} {
		def, _ := lookupProvider(tc.provider)
		if got := def.modelHint(tc.source); got != tc.want {
			t.Errorf("%s from %q: %q, want %q", tc.provider, tc.source, got, tc.want)
		}
	}
	named := ProviderDef{Name: "corp", Named: true, ConfigFile: "/home/u/.config/truss/config.toml"}
	for _, tc := range []struct{ source, want string }{
		{"", "check model in [providers.corp] of /home/u/.config/truss/config.toml (or pass --model) (an interactive session's /model lists the server's models)"},
		{"--model", "check --model (an interactive session's /model lists the server's models)"},
	} {
		if got := named.modelHint(tc.source); got != tc.want {
			t.Errorf("named from %q: %q, want %q", tc.source, got, tc.want)
		}
	}
}

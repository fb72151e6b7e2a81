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
	for _, tc := range []struct{ provider, model, region, want string }{
		// On the platforms, in their form: a profile's id, a Claude API
		// id as the platform's id of it.
		{"bedrock", "us.anthropic.claude-sonet-4-5-20250929-v1:0", "us-east-1", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"bedrock", "claude-sonet-4-5", "eu-west-1", "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"vertex", "claude-sonet-4-5", "us-east5", "claude-sonnet-4-5@20250929"},
		{"anthropic", "claude-sonet-4-5", "", "claude-sonnet-4-5"},
		{"gemini", "gemini-2.5-pr", "", "gemini-2.5-pro"},
		{"openai", "gpt-5.2", "", ""},
		{"anthropic", "claude-opus-4-9", "", ""}, // 4-8, 4-7, 4-6 … as near
		{"anthropic", "llama3", "", ""},
		{"bedrock", "anthropic.claude-opus-4-5-20251101-v1", "", "anthropic.claude-opus-4-5-20251101-v1:0"},
		{"vertex", "claude-sonnet-4-5@2025929", "", "claude-sonnet-4-5@20250929"},
		{"chat", "gpt-4o", "", ""},
		{"ollama", "qwen3:8", "", ""},
	} {
		def, ok := lookupProvider(tc.provider)
		if !ok {
			t.Fatalf("no provider %s", tc.provider)
		}
		if got := def.nearestModel(tc.model, tc.region); got != tc.want {
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

// TestCaseWarning: a model id in capitals whose lower-case form the
// provider's catalog has is warned about (the APIs' ids are
// case-sensitive); a lower-case id, an unknown one and a provider whose
// names are the user's are not.
func TestCaseWarning(t *testing.T) {
	for _, tc := range []struct{ provider, model, want string }{
		{"openai", "GPT-5.2", `model ids are case-sensitive, and the model's id is lower-case: pass --model gpt-5.2, not "GPT-5.2"`},
		{"anthropic", "Claude-Sonnet-4-5", `pass --model claude-sonnet-4-5, not "Claude-Sonnet-4-5"`},
		{"openai", "gpt-5.2", ""},
		{"openai", "My-Model", ""},
		{"azure", "GPT-5.2", ""},
		{"chat", "GPT-5.2", ""},
	} {
		def, _ := lookupProvider(tc.provider)
		if got := def.caseWarning(tc.model); (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s %s: %q, want %q", tc.provider, tc.model, got, tc.want)
		}
	}
}

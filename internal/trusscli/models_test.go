package trusscli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/cli"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/surface"
)

// TestCatalogWiresServed: every catalog row's wire is one a provider of
// the table speaks, so that no row is out of every provider's reach (a
// misspelt wire), and every provider with a dialect of a maker's models
// has rows.
func TestCatalogWiresServed(t *testing.T) {
	wires := map[string]bool{}
	for _, p := range harness.Providers() {
		wires[p.Wire()] = true
	}
	for _, e := range surface.Catalog() {
		if e.Wire != "" && !wires[e.Wire] {
			t.Errorf("%s: wire %q is no provider's", e.Pattern, e.Wire)
		}
	}
	for _, name := range []string{"bedrock", "vertex", "azure", "gemini"} {
		pc, err := catalogRows(name)
		if err != nil || !slices.ContainsFunc(pc.rows, func(r modelRow) bool { return r.Wire != "" }) {
			t.Errorf("%s: no rows of its own (%v)", name, err)
		}
	}
}

// userProviders writes a user's configuration with named providers in a
// Truss directory of the test's own.
func userProviders(t *testing.T, toml string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TRUSS_HOME", dir)
	file := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(file, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

const namedProviders = `
[providers.openrouter]
base_url = "https://openrouter.ai/api/v1"
wire = "chat"
env_key = "OPENROUTER_API_KEY"
model = "anthropic/claude-sonnet-4.5"

[providers.gateway]
base_url = "https://llm.corp.example"
wire = "anthropic"
env_key = "CORP_KEY"
model = "claude-sonnet-4-5"

[providers.local]
base_url = "http://127.0.0.1:8080"
wire = "ollama"
model = "qwen3-coder"

[providers.aigw]
base_url = "https://gw.example/v1"
wire = "responses"
`

// TestCatalogRowsByProvider: a provider lists only the rows its wire and
// adapter can run, a row of any maker (open weights) only on a provider
// that serves any maker's models, and never a row its lookup would not
// reach; a provider of the user's configuration lists its wire's rows
// and says its default model.
func TestCatalogRowsByProvider(t *testing.T) {
	userProviders(t, namedProviders)
	all, err := catalogRows("")
	if err != nil || len(all.rows) != len(surface.Catalog()) {
		t.Fatalf("all rows: %d, %v", len(all.rows), err)
	}
	for _, tc := range []struct {
		provider string
		has      []string // rows listed, by name
		hasNot   []string
		wires    []string // the listed rows' wires
		def      string   // the default model's row ("" for none, "?" for a model the catalog does not know)
	}{
		{"bedrock", []string{"Claude Opus 5.5", "Claude Haiku 5.5"}, []string{"gpt-oss (hosted)", "GPT-5.5", "Gemini 3 Pro"}, []string{"anthropic"}, "claude-sonnet-4-5"},
		{"vertex", []string{"Claude Sonnet 5.5"}, []string{"Qwen (local)", "gpt-oss (hosted)"}, []string{"anthropic"}, "claude-sonnet-4-5"},
		{"anthropic", []string{"Claude Sonnet 4.5"}, []string{"gpt-oss (hosted)"}, []string{"anthropic"}, "claude-sonnet-4-5"},
		{"azure", []string{"GPT-5.5", "GPT-5.3-Codex"}, []string{"Claude Opus 5", "gpt-oss (hosted)"}, []string{"responses"}, ""},
		{"openai", []string{"GPT-5.4 mini"}, []string{"Gemini 2.5 Pro", "gpt-oss (hosted)"}, []string{"responses"}, "gpt-5.2*"},
		{"gemini", []string{"Gemini 2.5 Flash"}, []string{"Claude Opus 5", "gpt-oss (hosted)"}, []string{"gemini"}, "gemini-2.5-pro*"},
		{"vertex-gemini", []string{"Gemini 3 Pro"}, []string{"gpt-oss (hosted)"}, []string{"gemini"}, "gemini-2.5-pro*"},
		{"openai-compatible", []string{"gpt-oss (hosted)"}, []string{"Claude Opus 5", "GPT-5.5"}, []string{""}, ""},
		// Ollama's gpt-oss is the local row; the hosted one behind it is
		// never reached there.
		{"ollama", []string{"gpt-oss (local)", "Qwen (local)"}, []string{"gpt-oss (hosted)", "GPT-5.5"}, []string{"ollama"}, ""},
		{"sim", []string{"the simulated model"}, []string{"Claude Opus 5"}, []string{"sim"}, ""},
		{"openrouter", []string{"gpt-oss (hosted)"}, []string{"Claude Sonnet 4.5", "GPT-5.5"}, []string{""}, "?"},
		{"gateway", []string{"Claude Sonnet 4.5", "gpt-oss (hosted)"}, []string{"GPT-5.5", "Gemini 3 Pro"}, []string{"anthropic", ""}, "claude-sonnet-4-5"},
		{"local", []string{"Qwen (local)", "gpt-oss (local)"}, []string{"gpt-oss (hosted)", "Claude Opus 5"}, []string{"ollama"}, "qwen*"},
		{"aigw", []string{"GPT-5.5", "gpt-oss (hosted)"}, []string{"Claude Opus 5"}, []string{"responses", ""}, ""},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			pc, err := catalogRows(tc.provider)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			def := ""
			for _, r := range pc.rows {
				got = append(got, r.Name)
				if !slices.Contains(tc.wires, r.Wire) {
					t.Errorf("row %s of wire %q", r.Pattern, r.Wire)
				}
				if !slices.Contains(r.Providers, pc.def.Name) {
					t.Errorf("row %s: providers %q without %s", r.Pattern, r.Providers, pc.def.Name)
				}
				if r.Default {
					def = r.Pattern
				}
			}
			for _, n := range tc.has {
				if !slices.Contains(got, n) {
					t.Errorf("%s missing from %q", n, got)
				}
			}
			for _, n := range tc.hasNot {
				if slices.Contains(got, n) {
					t.Errorf("%s listed", n)
				}
			}
			if tc.def == "?" {
				if def != "" || !pc.prof.Guess || !strings.Contains(pc.defaultLine(), "is not in the catalog") {
					t.Errorf("default model: row %q, %q", def, pc.defaultLine())
				}
			} else if def != tc.def {
				t.Errorf("default model's row %q, want %q (%s)", def, tc.def, pc.defaultLine())
			}
		})
	}
	_, err = catalogRows("nowhere")
	var ue cli.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `unknown provider "nowhere": choose chat, openai`) || !strings.Contains(err.Error(), "openrouter") {
		t.Errorf("unknown provider: %v", err)
	}
}

// TestCatalogAllProviders: with no provider, each row names the
// providers of the table that run it; a row of open weights names the
// OpenAI-compatible server, not "any" provider, and never Bedrock.
func TestCatalogAllProviders(t *testing.T) {
	pc, err := catalogRows("")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Claude Opus 5":    "anthropic,vertex,bedrock",
		"GPT-5.5":          "openai,azure",
		"Gemini 3 Pro":     "gemini,vertex-gemini",
		"gpt-oss (hosted)": "chat",
		"gpt-oss (local)":  "ollama",
	}
	for _, r := range pc.rows {
		if w, ok := want[r.Name]; ok && strings.Join(r.Providers, ",") != w {
			t.Errorf("%s: providers %q, want %s", r.Name, r.Providers, w)
		}
		if len(r.Providers) == 0 {
			t.Errorf("%s: no provider runs it", r.Pattern)
		}
	}
}

// TestModelsNamedProvider: truss models --provider NAME takes a provider
// of the user's configuration and says its default model; a user's
// configuration that cannot be read is its error, not an unknown name.
func TestModelsNamedProvider(t *testing.T) {
	file := userProviders(t, namedProviders)
	var out, errb bytes.Buffer
	if err := cmdModels([]string{"--provider", "gateway"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"claude-sonnet-4-5 ", "anthropic,vertex,bedrock,gateway", "The default model of gateway, claude-sonnet-4-5, is the row claude-sonnet-4-5."} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	out.Reset()
	if err := cmdModels([]string{"--provider", "aigw"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Provider aigw has no default model: --model or TRUSS_MODEL names one (or model in [providers.aigw] of "+file+").") {
		t.Errorf("no default model:\n%s", out.String())
	}
	if err := os.WriteFile(file, []byte("[providers.x]\nwire = \"chat\"\napi_key = \"sk-1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := cmdModels([]string{"--provider", "x"}, &out, &errb)
	var ue cli.UsageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "api_key") {
		t.Errorf("a bad configuration: %v", err)
	}
}

// TestModelsNamedProviderLimits: a named provider's context_window and
// max_output are said under the table, as its sessions take them over
// the guess's and the row's.
func TestModelsNamedProviderLimits(t *testing.T) {
	userProviders(t, `
[providers.openrouter]
base_url = "https://openrouter.ai/api/v1"
wire = "chat"
model = "anthropic/claude-sonnet-4.5"
context_window = 200000
max_output = 64000

[providers.gateway]
base_url = "https://llm.corp.example"
wire = "anthropic"
model = "claude-sonnet-4-5"
context_window = 100000
`)
	for _, tc := range []struct{ provider, want string }{
		{"openrouter", "The default model of openrouter, anthropic/claude-sonnet-4.5, is not in the catalog: it runs with a warning, the generic surface and limits of 200K / 64K tokens (context_window 200K and max_output 64K of [providers.openrouter]), at an unknown cost."},
		{"gateway", "The default model of gateway, claude-sonnet-4-5, is the row claude-sonnet-4-5, with the limits of context_window 100K of [providers.gateway] over the row's: 100K / 64K tokens."},
	} {
		var out, errb bytes.Buffer
		if err := cmdModels([]string{"--provider", tc.provider}, &out, &errb); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: output lacks %q:\n%s", tc.provider, tc.want, out.String())
		}
	}
}

// TestVertexGeminiPrices: every priced row vertex-gemini runs says
// plainly that it is charged the Gemini API's list price (the row's
// source), not Vertex AI's, as Bedrock's, Vertex AI's Claude and Azure's
// rows say theirs.
func TestVertexGeminiPrices(t *testing.T) {
	pc, err := catalogRows("vertex-gemini")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range pc.rows {
		if r.Prices.Unknown || r.Wire != "gemini" {
			continue
		}
		n++
		if !strings.Contains(r.Note, "vertex-gemini is charged the Gemini API's list price") || r.Source != "https://ai.google.dev/gemini-api/docs/pricing" {
			t.Errorf("%s: source %s, note %q", r.Pattern, r.Source, r.Note)
		}
	}
	if n == 0 {
		t.Fatal("no priced Gemini row")
	}
}

func TestTokens(t *testing.T) {
	for n, want := range map[int]string{1000000: "1M", 128000: "128K", 1048576: "1048576", 1050000: "1050K", 8192: "8192", 0: "0"} {
		if got := tokens(n); got != want {
			t.Errorf("tokens(%d) = %q, want %q", n, got, want)
		}
	}
}

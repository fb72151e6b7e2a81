package harness

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/sim"
)

// TestProviderTable checks the texts the provider table makes: the help,
// the error when no provider is configured, the errors of missing
// variables, and the provider the environment selects.
func TestProviderTable(t *testing.T) {
	help := ProviderHelp()
	for _, want := range []string{
		"  --provider ollama     Ollama's native API at OLLAMA_HOST (default http://127.0.0.1:11434)\n",
		"  --provider chat       an OpenAI-compatible server at OPENAI_BASE_URL (vLLM, LM Studio, llama.cpp, Ollama /v1)\n",
		"  --provider openai     OpenAI's Responses API with OPENAI_API_KEY (OPENAI_BASE_URL optional)\n",
		"  --provider anthropic  Anthropic's Messages API with ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL optional)\n",
		"  --provider azure      Azure OpenAI's Responses API at AZURE_OPENAI_ENDPOINT (AZURE_OPENAI_API_KEY or an Entra ID token in AZURE_OPENAI_AD_TOKEN; --model names the deployment)\n",
		"  --provider sim        the simulated model in-process, playing --script (no key, no network)\n",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("the help lacks %q:\n%s", want, help)
		}
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // the provider, or the error
	}{
		{"none", nil, "no model provider configured: set OPENAI_BASE_URL (an OpenAI-compatible server), OPENAI_API_KEY (OpenAI), OLLAMA_HOST (Ollama), ANTHROPIC_API_KEY (Anthropic; ANTHROPIC_BASE_URL optional), GEMINI_API_KEY or GOOGLE_API_KEY (Google's Gemini API), ANTHROPIC_VERTEX_PROJECT_ID (Anthropic's models on Vertex AI) or AZURE_OPENAI_ENDPOINT (Azure OpenAI) (chat, ollama and azure take a model too: TRUSS_MODEL or --model); or pass --provider (vertex-gemini and bedrock are chosen only by it); `truss demo` needs none"},
		{"AWS credentials alone", map[string]string{"AWS_BEARER_TOKEN_BEDROCK": "t", "AWS_PROFILE": "dev"},
			"no model provider configured: set OPENAI_BASE_URL (an OpenAI-compatible server), OPENAI_API_KEY (OpenAI), OLLAMA_HOST (Ollama), ANTHROPIC_API_KEY (Anthropic; ANTHROPIC_BASE_URL optional), GEMINI_API_KEY or GOOGLE_API_KEY (Google's Gemini API), ANTHROPIC_VERTEX_PROJECT_ID (Anthropic's models on Vertex AI) or AZURE_OPENAI_ENDPOINT (Azure OpenAI) (chat, ollama and azure take a model too: TRUSS_MODEL or --model); or pass --provider (vertex-gemini and bedrock are chosen only by it); `truss demo` needs none; AWS_BEARER_TOKEN_BEDROCK is set: for Amazon Bedrock pass --provider bedrock"},
		{"base url first", map[string]string{"OPENAI_BASE_URL": "http://x/v1", "OPENAI_API_KEY": "k"}, "chat"},
		{"openai", map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, "openai"},
		{"OpenAI's own base URL is openai's", map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "k"}, "openai"},
		{"OpenAI's own base URL without a key", map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1", "ANTHROPIC_API_KEY": "k"}, "anthropic"},
		{"ollama", map[string]string{"OLLAMA_HOST": "h"}, "ollama"},
		{"anthropic", map[string]string{"ANTHROPIC_API_KEY": "k"}, "anthropic"},
		{"azure", map[string]string{"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com", "AZURE_OPENAI_API_KEY": "k"}, "azure"},
		{"vertex", map[string]string{"ANTHROPIC_VERTEX_PROJECT_ID": "p", "CLOUD_ML_REGION": "us-east5"}, "vertex"},
		{"an Anthropic key before Vertex's project", map[string]string{"ANTHROPIC_VERTEX_PROJECT_ID": "p", "ANTHROPIC_API_KEY": "k"}, "anthropic"},
		{"Google's key alone is Gemini's", map[string]string{"GOOGLE_API_KEY": "k"}, "gemini"},
		{"Google's key after every provider's own variable", map[string]string{"GOOGLE_API_KEY": "k", "ANTHROPIC_VERTEX_PROJECT_ID": "p"}, "vertex"},
		{"an Azure key alone selects nothing", map[string]string{"AZURE_OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, "anthropic"},
	} {
		got, err := detectProvider(func(k string) string { return tc.env[k] })
		if err != nil {
			if !IsConfigError(err) {
				t.Errorf("%s: %T is not a ConfigError", tc.name, err)
			}
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		provider string
		env      map[string]string
		base     string
		err      string
	}{
		{"openai", nil, "", "provider openai needs OPENAI_API_KEY"},
		{"anthropic", nil, "", "provider anthropic needs ANTHROPIC_API_KEY"},
		{"chat", nil, "", "provider chat needs OPENAI_BASE_URL, the server's /v1 URL (for example http://127.0.0.1:8000/v1)"},
		{"openai-compatible", map[string]string{"OPENAI_BASE_URL": "http://h/v1"}, "http://h/v1", ""},
		{"gemini", map[string]string{"GOOGLE_GEMINI_BASE_URL": "http://h/?key=AIzaSECRET", "GEMINI_API_KEY": "k"}, "",
			"GOOGLE_GEMINI_BASE_URL has a query (?…), which a base URL cannot carry (a key goes in GEMINI_API_KEY or GOOGLE_API_KEY): set it to the address alone"},
		{"azure", map[string]string{"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com/openai/deployments/gpt-5.2/chat/completions?api-version=2024-10-21", "AZURE_OPENAI_API_KEY": "k"}, "",
			"AZURE_OPENAI_ENDPOINT has a query (?…), which a base URL cannot carry (a key goes in AZURE_OPENAI_API_KEY, an api-version in AZURE_OPENAI_API_VERSION or --api-version); set it to https://r.openai.azure.com, and pass --model gpt-5.2 (the deployment)"},
		{"ollama", nil, "http://127.0.0.1:11434", ""},
		{"ollama", map[string]string{"OLLAMA_HOST": "10.0.0.1:1234"}, "http://10.0.0.1:1234", ""},
		{"anthropic", map[string]string{"ANTHROPIC_API_KEY": "k"}, "", ""},
		{"azure", nil, "", "provider azure needs AZURE_OPENAI_ENDPOINT, the resource's address (https://RESOURCE.openai.azure.com)"},
		{"azure", map[string]string{"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"}, "", "provider azure needs AZURE_OPENAI_API_KEY, or a token in AZURE_OPENAI_AD_TOKEN"},
		{"azure", map[string]string{"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com", "AZURE_OPENAI_API_KEY": "k"}, "https://r.openai.azure.com", ""},
		{"azure", map[string]string{"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com", "AZURE_OPENAI_AD_TOKEN": "t"}, "https://r.openai.azure.com", ""},
	} {
		def, ok := lookupProvider(tc.provider)
		if !ok {
			t.Fatalf("no provider %s", tc.provider)
		}
		base, _, err := def.endpoint(func(k string) string { return tc.env[k] })
		if got := errText(err); got != tc.err || err == nil && base != tc.base {
			t.Errorf("%s %v: base %q, error %q; want %q, %q", tc.provider, tc.env, base, got, tc.base, tc.err)
		}
	}
	if _, ok := lookupProvider("bogus"); ok {
		t.Error("a bogus provider was found")
	}
	for _, p := range providers {
		if _, ok := dialect(p.Dialect); p.Name != "sim" && !ok {
			t.Errorf("provider %s speaks dialect %q, which has no constructor", p.Name, p.Dialect)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestProviderVariablesWithheld: every variable of the provider table
// (those that look like no secret too: a base URL, a host) is withheld
// from commands, and the user's configuration passes one by name.
func TestProviderVariablesWithheld(t *testing.T) {
	var names []string
	for _, pat := range WithheldEnv() {
		name := strings.ReplaceAll(pat, "*", "SETTING")
		t.Setenv(name, "plain-4711")
		names = append(names, name)
	}
	if len(names) == 0 {
		t.Fatal("the provider table withholds no variable")
	}
	o := fixture(t, `{"steps": [`+runStep(t, "env", nil)+`, {"say": "Done."}]}`)
	o.Validation.Off = true
	o.AllowEnv = []string{names[0]}
	rs := shellResults(&o)
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Run(context.Background(), "env"); err != nil {
		t.Fatal(err)
	}
	out := (*rs)[0].Stdout
	for _, n := range names[1:] {
		if strings.Contains(out, n+"=") {
			t.Errorf("%s reached the command", n)
		}
	}
	if !strings.Contains(out, names[0]+"=plain-4711") {
		t.Errorf("%s, allowed, did not reach the command", names[0])
	}
}

// TestNamedProvider: a provider of the user's configuration is used by
// name: its wire's adapter at its base URL, the key from its variable,
// its headers (the fixed ones and the variables'), its default model;
// its variables reach no command. A missing variable, a built-in's name
// and an unknown name are clear errors.
func TestNamedProvider(t *testing.T) {
	o := fixture(t, `{"steps": [`+runStep(t, "env", nil)+`, {"say": "Done."}]}`)
	o.Validation.Off = true
	sc, err := sim.ParseScript([]byte(`{"steps": [` + runStep(t, "env", nil) + `, {"say": "Done."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := sim.New(sc)
	srv.APIKey = "k-4711"
	srv.Spec = simSpec()
	base, err := srv.Listen(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(o.KeyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	user := `
[providers.mine]
base_url = "` + base + `/v1"
wire = "chat"
env_key = "MINE_K"
model = "sim-coder"
headers = { "X-Title" = "truss" }
env_headers = { "X-Org" = "MINE_ORG" }
`
	if err := os.WriteFile(filepath.Join(o.KeyDir, "config.toml"), []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	o.Provider, o.Script, o.SimDialect, o.Model = "mine", "", "", ""
	o.Surface = ""
	_, err = Open(context.Background(), o)
	if err == nil || err.Error() != "provider mine needs MINE_K" {
		t.Fatalf("without the key's variable: %v", err)
	}
	t.Setenv("MINE_K", "k-4711")
	_, err = Open(context.Background(), o)
	if err == nil || err.Error() != "provider mine needs MINE_ORG (the X-Org header)" {
		t.Fatalf("without the header's variable: %v", err)
	}
	t.Setenv("MINE_ORG", "org-1")
	rs := shellResults(&o)
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Run(context.Background(), "env"); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the provider")
	}
	h := reqs[0].Header
	if h.Get("Authorization") != "Bearer k-4711" || h.Get("X-Title") != "truss" || h.Get("X-Org") != "org-1" || reqs[0].Dialect != "chat" {
		t.Errorf("the request: %s %v", reqs[0].Dialect, h)
	}
	if !strings.Contains(string(reqs[0].Body), `"model":"sim-coder"`) {
		t.Errorf("the default model was not sent: %s", reqs[0].Body)
	}
	out := (*rs)[0].Stdout
	for _, v := range []string{"MINE_K=", "MINE_ORG="} {
		if strings.Contains(out, v) {
			t.Errorf("%s reached the command", v)
		}
	}
	o.Provider = "theirs"
	if _, err := Open(context.Background(), o); err == nil || err.Error() != `unknown provider "theirs": choose chat, openai, ollama, anthropic, gemini, vertex, vertex-gemini, bedrock, azure, sim or mine` {
		t.Errorf("an unknown name: %v", err)
	}
	// IsProvider reads the user's configuration in Truss's directory.
	if err := os.WriteFile(filepath.Join(os.Getenv("TRUSS_HOME"), "config.toml"), []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	if !IsProvider("mine") || !IsProvider("openai-compatible") || IsProvider("theirs") {
		t.Error("IsProvider does not know the user's provider")
	}
	user += "\n[providers.openai]\nbase_url = \"https://h/v1\"\nwire = \"chat\"\n"
	if err := os.WriteFile(filepath.Join(o.KeyDir, "config.toml"), []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), o); err == nil || err.Error() != filepath.Join(o.KeyDir, "config.toml")+": providers.openai: openai is a built-in provider; give yours another name" {
		t.Errorf("a built-in's name: %v", err)
	}
	o.Provider = "mine"
	file := filepath.Join(o.KeyDir, "config.toml")
	for _, tc := range []struct{ wire, want string }{
		{"", `wire is missing: the API the server speaks (anthropic, responses, chat, ollama, gemini or azure)`},
		{"grpc", `wire "grpc" is not one of anthropic, responses, chat, ollama, gemini or azure`},
		{"Chat", `wire "Chat" is not one of anthropic, responses, chat, ollama, gemini or azure; did you mean chat?`},
		{"chatt", `wire "chatt" is not one of anthropic, responses, chat, ollama, gemini or azure; did you mean chat?`},
		{"openai", `wire "openai" is not one of anthropic, responses, chat, ollama, gemini or azure: use responses for OpenAI's Responses API, chat for a Chat Completions server`},
		// A platform's route takes the platform's credentials, no env_key.
		{"vertex", `wire "vertex" is not one of anthropic, responses, chat, ollama, gemini or azure: vertex is a cloud platform's route with the platform's credentials; use --provider vertex`},
		{"bedrock", `wire "bedrock" is not one of anthropic, responses, chat, ollama, gemini or azure: bedrock is a cloud platform's route with the platform's credentials; use --provider bedrock`},
	} {
		user = "[providers.mine]\nbase_url = \"https://h/v1\"\nwire = \"" + tc.wire + "\"\n"
		if err := os.WriteFile(file, []byte(user), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(context.Background(), o); err == nil || err.Error() != file+": providers.mine: "+tc.want {
			t.Errorf("wire %s: %v", tc.wire, err)
		}
	}
	// A named provider without model: the setting that gives it.
	for _, tc := range []struct{ wire, want string }{
		{"chat", `no model given for provider mine: add model = "…" (the model its requests name) to [providers.mine] in ` + file + `, or pass --model or set TRUSS_MODEL`},
		{"azure", `no model given for provider mine: add model = "…" (the deployment its requests name) to [providers.mine] in ` + file + `, or pass --model or set TRUSS_MODEL`},
	} {
		user = "[providers.mine]\nbase_url = \"https://h/v1\"\nwire = \"" + tc.wire + "\"\n"
		if err := os.WriteFile(file, []byte(user), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(context.Background(), o); err == nil || err.Error() != tc.want {
			t.Errorf("wire %s without model: %v", tc.wire, err)
		}
	}
	// chat's other name is a wire too.
	def, err := namedProvider("mine", file, config.Provider{BaseURL: "https://h/v1", Wire: "openai-compatible"})
	if err != nil || def.Dialect != "chat" {
		t.Errorf("openai-compatible: %+v, %v", def, err)
	}
}

// TestStartPredial: the session connects to the server of a provider
// whose adapter sends to its base URL as soon as the provider is known,
// and to nothing for the simulated model or a provider without its base
// URL; Close releases a connection no request took.
func TestStartPredial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("OPENAI_BASE_URL", "http://"+ln.Addr().String()+"/v1")
	for _, tc := range []struct {
		provider string
		env      map[string]string
		dials    bool
	}{
		{"chat", nil, true},
		{"sim", nil, false},
		{"chat", map[string]string{"OPENAI_BASE_URL": ""}, false}, // required, missing: Open reports it
		{"vertex", nil, false},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		s := &Session{opts: Options{Provider: tc.provider}, life: context.Background()}
		p := s.startPredial()
		if (p != nil) != tc.dials {
			t.Fatalf("%s %v: pre-dial %v, want %v", tc.provider, tc.env, p != nil, tc.dials)
		}
		if p == nil {
			continue
		}
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("%s: the unused pre-dialed connection read %d bytes, %v; want EOF", tc.provider, n, err)
		}
		c.Close()
	}
}

// TestCostBudgetNeedsPrices: a budget in dollars for a model the catalog
// has no prices for is refused before anything runs, since it could never
// stop the session; a known model's is taken.
func TestCostBudgetNeedsPrices(t *testing.T) {
	o := fixture(t, `{"steps": [{"say": "Done."}]}`)
	o.Validation.Off = true
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
	t.Setenv("OPENAI_API_KEY", "k")
	o.Provider, o.Script, o.SimDialect, o.Surface = "openai", "", "", ""
	o.Budget.MaxCost = 1
	o.Model = "mystery-model-7"
	_, err := Open(context.Background(), o)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `--max-cost needs the model's prices, and Truss's catalog has none for "mystery-model-7"`) {
		t.Fatalf("err = %v", err)
	}
	o.Model = "gpt-5.2"
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatalf("a known model's budget: %v", err)
	}
	s.Close()
}

// TestModelElsewhere: a model the catalog has under other providers than
// the one chosen is said to be theirs, the same platform's first, as truss
// models lists it; a provider's own model, one no provider's catalog has,
// and a provider that serves any maker's models say nothing.
func TestModelElsewhere(t *testing.T) {
	for _, tc := range []struct{ provider, model, from, want string }{
		{"gemini", "gpt-5.2", "", "a model of provider openai or azure, not of gemini (pass --provider openai)"},
		{"anthropic", "gpt-5.2", "TRUSS_MODEL", "a model of provider openai or azure, not of anthropic (it came from TRUSS_MODEL: pass --model, or unset TRUSS_MODEL)"},
		{"anthropic", "claude-sonnet-4-5", "TRUSS_MODEL", ""},
		{"vertex", "gemini-2.5-pro", "", "a model of provider vertex-gemini or gemini, not of vertex (pass --provider vertex-gemini)"},
		{"vertex-gemini", "claude-sonnet-4-5@20250929", "", "a model of provider vertex, anthropic or bedrock, not of vertex-gemini (pass --provider vertex)"},
		{"openai", "gpt-5.2", "", ""},
		{"vertex", "claude-sonnet-4-5@20250929", "", ""},
		{"gemini", "gemini-2.5-pro", "", ""},
		{"vertex", "foo-1", "", ""},
		{"chat", "gpt-5.2", "", ""},
	} {
		def, ok := lookupProvider(tc.provider)
		if !ok {
			t.Fatalf("no provider %s", tc.provider)
		}
		if got := def.elsewhere(tc.model, tc.from, false); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.provider, tc.model, got, tc.want)
		}
	}
	// Inside an interactive session no flag is passed.
	anth, _ := lookupProvider("anthropic")
	if got, want := anth.elsewhere("gpt-5.2", "", true), "a model of provider openai or azure, not of anthropic (start a session with --provider openai to use it there)"; got != want {
		t.Errorf("interactive: %q, want %q", got, want)
	}
}

// TestNearestProvider: a mistyped --provider is met with the name it most
// likely meant, and nothing when none is near or two are as near.
func TestNearestProvider(t *testing.T) {
	names := ProviderList()
	for _, tc := range []struct{ name, want string }{
		{"bedrok", "bedrock"},
		{"Vertex", "vertex"},
		{"vertex_gemini", "vertex-gemini"},
		{"antropic", "anthropic"},
		{"azur", "azure"},
		{"openrouter", ""},
		{"x", ""},
	} {
		if got := Nearest(tc.name, names); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestBedrockRegionMismatch: a cross-region inference profile of another
// geography than the region is warned about; Bedrock refuses it there.
func TestBedrockRegionMismatch(t *testing.T) {
	bedrock, _ := lookupProvider("bedrock")
	vertex, _ := lookupProvider("vertex")
	for _, tc := range []struct {
		def           ProviderDef
		model, region string
		want          bool
	}{
		{bedrock, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "eu-west-1", true},
		{bedrock, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "us-east-1", false},
		{bedrock, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "us-gov-west-1", false},
		{bedrock, "eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "eu-central-1", false},
		{bedrock, "eu.anthropic.claude-sonnet-4-5-20250929-v1:0", "us-east-1", true},
		{bedrock, "apac.anthropic.claude-sonnet-4-5-20250929-v1:0", "ap-southeast-2", false},
		{bedrock, "anthropic.claude-sonnet-4-5-20250929-v1:0", "eu-west-1", false},
		{bedrock, "arn:aws:bedrock:eu-west-1:1:inference-profile/x", "eu-west-1", false},
		{bedrock, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "", false},
		{vertex, "us.anthropic.x", "eu-west-1", false},
	} {
		got := tc.def.regionMismatch(tc.model, tc.region)
		if (got != "") != tc.want {
			t.Errorf("%s %s in %s: %q", tc.def.Name, tc.model, tc.region, got)
		}
	}
}

// TestNamedProviderLimits: a named provider's context_window and
// max_output are the limits of its models, over the catalog's row and
// the guess (--context still over the window); on an ollama wire the
// window is the num_ctx asked for. The warning of a model the catalog
// does not know says them and where they come from, and Declare (truss
// tools) gives them.
func TestNamedProviderLimits(t *testing.T) {
	for _, tc := range []struct {
		name, wire, model, limits string
		contextFlag               int
		window, output            int
		numCtx                    int
		warn                      string // "" for no warning
	}{
		{name: "a guess, both", wire: "chat", model: "anthropic/claude-sonnet-4.5", limits: "context_window = 200000\nmax_output = 64000\n",
			window: 200000, output: 64000,
			warn: `"anthropic/claude-sonnet-4.5" is not in Truss's model catalog (truss models): using the generic tools, a context of 200000 (context_window of [providers.router]) and an output limit of 64000 tokens (max_output of [providers.router]); its cost is unknown`},
		{name: "a guess, --context over context_window", wire: "chat", model: "m", limits: "context_window = 200000\n", contextFlag: 100000,
			window: 200000, output: 4096,
			warn: `using the generic tools, a context of 100000 (--context) and an output limit of 4096 tokens; its cost is unknown`},
		{name: "a guess, none", wire: "chat", model: "m",
			window: 32768, output: 4096, warn: `using the generic tools, a context of 32768 and an output limit of 4096 tokens; its cost is unknown`},
		{name: "a row of the catalog", wire: "anthropic", model: "claude-sonnet-4-5", limits: "context_window = 100000\n",
			window: 100000, output: 64000},
		{name: "max_output over the window is cut to it", wire: "anthropic", model: "claude-sonnet-4-5", limits: "context_window = 32000\n",
			window: 32000, output: 32000},
		{name: "ollama's num_ctx", wire: "ollama", model: "local-coder:7b", limits: "context_window = 131072\n",
			window: 131072, output: 4096, numCtx: 131072, warn: `a context of 131072 (context_window of [providers.router])`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, `{"steps": [{"say": "Done."}]}`)
			o.Validation.Off = true
			if err := os.MkdirAll(o.KeyDir, 0o700); err != nil {
				t.Fatal(err)
			}
			user := "[providers.router]\nbase_url = \"http://127.0.0.1:9/v1\"\nwire = \"" + tc.wire + "\"\n" + tc.limits
			if err := os.WriteFile(filepath.Join(o.KeyDir, "config.toml"), []byte(user), 0o600); err != nil {
				t.Fatal(err)
			}
			var warnings []string
			o.OnWarning = func(m string) { warnings = append(warnings, m) }
			o.Provider, o.Script, o.SimDialect, o.Surface, o.Model, o.ContextTokens = "router", "", "", "", tc.model, tc.contextFlag
			s, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.prof.ContextWindow != tc.window || s.prof.MaxOutput != tc.output {
				t.Errorf("limits %d / %d, want %d / %d", s.prof.ContextWindow, s.prof.MaxOutput, tc.window, tc.output)
			}
			wantLimit := cmp.Or(tc.contextFlag, tc.window)
			if got := s.contextLimit(); got != int64(wantLimit) {
				t.Errorf("contextLimit %d, want %d", got, wantLimit)
			}
			if tc.numCtx != 0 && s.settings.ContextTokens != tc.numCtx {
				t.Errorf("num_ctx %d, want %d", s.settings.ContextTokens, tc.numCtx)
			}
			got := strings.Join(warnings, "\n")
			if tc.warn == "" && strings.Contains(got, "catalog") || tc.warn != "" && !strings.Contains(got, tc.warn) {
				t.Errorf("warnings %q, want %q", got, tc.warn)
			}
			// truss tools says the limits a session would work with.
			d, err := Declare(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if d.ContextWindow != cmp.Or(tc.contextFlag, tc.window) || d.MaxOutput != tc.output {
				t.Errorf("Declare: %d / %d, want %d / %d", d.ContextWindow, d.MaxOutput, cmp.Or(tc.contextFlag, tc.window), tc.output)
			}
		})
	}
}

// TestGuessLimitsSaid: the warning of a model the catalog does not know
// names the limits it runs with and, for the guess of a model on an
// anthropic wire or a Claude, whose they are, as docs/providers.md says.
func TestGuessLimitsSaid(t *testing.T) {
	for _, tc := range []struct{ provider, model, want string }{
		{"vertex", "foo-1", "a context of 200000 and an output limit of 64000 tokens (Claude Sonnet 4.5's, as for any Claude or model on an anthropic wire the catalog does not know)"},
		{"bedrock", "anthropic.foo-v1:0", "a context of 200000 and an output limit of 64000 tokens (Claude Sonnet 4.5's"},
		{"chat", "claude-opus-9", "a context of 200000 and an output limit of 64000 tokens (Claude Sonnet 4.5's"},
		{"chat", "foo-1", "a context of 32768 and an output limit of 4096 tokens"},
		{"gemini", "foo-1", "a context of 32768 and an output limit of 4096 tokens"},
	} {
		def, ok := lookupProvider(tc.provider)
		if !ok {
			t.Fatalf("no provider %s", tc.provider)
		}
		prof := def.Profile(tc.model)
		got := def.limitsText(prof, 0)
		if !prof.Guess || !strings.HasPrefix(got, tc.want) || !strings.Contains(tc.want, "Sonnet") && strings.Contains(got, "Sonnet") {
			t.Errorf("%s %s: %q, want %q", tc.provider, tc.model, got, tc.want)
		}
	}
}

// TestOllamaKeyHint: the built-in ollama provider sends no key, so a 401
// says how a server that wants one is named; a named provider on an
// ollama wire says its env_key.
func TestOllamaKeyHint(t *testing.T) {
	def, _ := lookupProvider("ollama")
	if _, key := def.hints(); !strings.Contains(key, `[providers.NAME] with wire = "ollama", base_url and env_key`) {
		t.Errorf("the built-in's: %q", key)
	}
	named := ProviderDef{Name: "cloud", Dialect: "ollama", Named: true, KeyEnv: "OLLAMA_API_KEY", ConfigFile: "/h/config.toml"}
	if _, key := named.hints(); key != "check OLLAMA_API_KEY (env_key of [providers.cloud] in /h/config.toml)" {
		t.Errorf("a named one's: %q", key)
	}
}

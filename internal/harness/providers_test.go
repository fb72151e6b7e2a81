package harness

import (
	"context"
	"strings"
	"testing"
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
		{"none", nil, "no model provider configured: set OPENAI_BASE_URL (an OpenAI-compatible server), OPENAI_API_KEY (OpenAI), OLLAMA_HOST (Ollama) or ANTHROPIC_API_KEY (Anthropic; ANTHROPIC_BASE_URL optional), and TRUSS_MODEL or --model; or pass --provider; `truss demo` needs none"},
		{"base url first", map[string]string{"OPENAI_BASE_URL": "http://x/v1", "OPENAI_API_KEY": "k"}, "chat"},
		{"openai", map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, "openai"},
		{"ollama", map[string]string{"OLLAMA_HOST": "h"}, "ollama"},
		{"anthropic", map[string]string{"ANTHROPIC_API_KEY": "k"}, "anthropic"},
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
		{"ollama", nil, "http://127.0.0.1:11434", ""},
		{"ollama", map[string]string{"OLLAMA_HOST": "10.0.0.1:1234"}, "http://10.0.0.1:1234", ""},
		{"anthropic", map[string]string{"ANTHROPIC_API_KEY": "k"}, "", ""},
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

package harness

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/sim"
)

// azureScript runs env through whatever shell the request declares, then
// ends.
const azureScript = `{"steps": [{"actions": [{"kind": "run", "command": "env"}]}, {"say": "Done."}]}`

// TestAzureProvider runs sessions with --provider azure against the
// simulated Azure resource: the endpoint and key from their variables, the
// deployment as the model (a known model's name gets its typed surface, an
// unknown one a warning and the generic tools), the route the API version
// picks, and no Azure variable reaching a command.
func TestAzureProvider(t *testing.T) {
	for _, tc := range []struct {
		name, model, version, token string
		path, surface               string
		guess                       bool
	}{
		{name: "a deployment named like a model", model: "gpt-5.2", path: "/openai/v1/responses", surface: "openai"},
		{name: "a deployment of another name", model: "prod-coder", path: "/openai/v1/responses", surface: "generic", guess: true},
		{name: "the dated route", model: "gpt-5.2", version: "2025-04-01-preview", path: "/openai/responses", surface: "openai"},
		{name: "an Entra ID token", model: "gpt-5.2-codex", token: "k-4711", path: "/openai/v1/responses", surface: "codex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, azureScript)
			o.Validation.Off = true
			sc, err := sim.ParseScript([]byte(azureScript))
			if err != nil {
				t.Fatal(err)
			}
			srv := sim.New(sc)
			srv.APIKey = "k-4711"
			srv.Spec = simSpec()
			srv.Deployments = []string{tc.model}
			base, err := srv.Listen(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("AZURE_OPENAI_ENDPOINT", base)
			t.Setenv("AZURE_OPENAI_API_VERSION", tc.version)
			t.Setenv("AZURE_CLIENT_SECRET", "secret-4711")
			if tc.token != "" {
				t.Setenv("AZURE_OPENAI_AD_TOKEN", tc.token)
				t.Setenv("AZURE_OPENAI_API_KEY", "")
			} else {
				t.Setenv("AZURE_OPENAI_API_KEY", "k-4711")
			}
			var warnings []string
			o.OnWarning = func(msg string) { warnings = append(warnings, msg) }
			o.Provider, o.Script, o.SimDialect, o.Model, o.Surface = "azure", "", "", tc.model, ""
			rs := shellResults(&o)
			s, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.Info().Surface; got != tc.surface {
				t.Errorf("surface %s, want %s", got, tc.surface)
			}
			if _, err := s.Run(context.Background(), "env"); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) < 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i, r := range reqs {
				if r.Dialect != "azure" || r.Path != tc.path || r.Status != 200 {
					t.Errorf("request %d: %s %s answered %d, want azure %s 200", i, r.Dialect, r.Path, r.Status, tc.path)
				}
			}
			if len(*rs) != 1 {
				t.Fatalf("%d commands ran", len(*rs))
			}
			if out := (*rs)[0].Stdout; strings.Contains(out, "AZURE_") || strings.Contains(out, "4711") {
				t.Errorf("an Azure variable reached the command:\n%s", out)
			}
			guessed := slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, tc.model) })
			if guessed != tc.guess {
				t.Errorf("warnings %q: a warning about %s is %v, want %v", warnings, tc.model, guessed, tc.guess)
			}
		})
	}
}

// TestAzureProviderErrors: what --provider azure needs is said before any
// request.
func TestAzureProviderErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no endpoint", map[string]string{"AZURE_OPENAI_API_KEY": "k"}, "provider azure needs AZURE_OPENAI_ENDPOINT"},
		{"no credential", map[string]string{"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"}, "provider azure needs AZURE_OPENAI_API_KEY, or a token in AZURE_OPENAI_AD_TOKEN"},
		{"plain HTTP", map[string]string{"AZURE_OPENAI_ENDPOINT": "http://r.openai.azure.com", "AZURE_OPENAI_API_KEY": "k"}, "plain HTTP"},
		{"not an address", map[string]string{"AZURE_OPENAI_ENDPOINT": "r.openai.azure.com", "AZURE_OPENAI_API_KEY": "k"}, "is not a resource's address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, azureScript)
			for _, k := range []string{"AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"} {
				t.Setenv(k, tc.env[k])
			}
			o.Provider, o.Script, o.SimDialect, o.Model, o.Surface = "azure", "", "", "gpt-5.2", ""
			_, err := Open(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !IsConfigError(err) {
				t.Fatalf("error %v, want a configuration error with %q", err, tc.want)
			}
		})
	}
}

// TestAzureSimDialect: the simulated model speaks Azure's dialect to the
// azure adapter, with the Responses API's typed tools for its GPT model.
func TestAzureSimDialect(t *testing.T) {
	o := fixture(t, azureScript)
	o.Validation.Off = true
	o.SimDialect, o.Surface = "azure", ""
	rs := shellResults(&o)
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if i := s.Info(); i.Model != "sim-gpt" || i.Surface != "openai" || i.Dialect != "responses" {
		t.Errorf("info %+v", i)
	}
	if _, err := s.Run(context.Background(), "env"); err != nil {
		t.Fatal(err)
	}
	if len(*rs) != 1 {
		t.Fatalf("%d commands ran", len(*rs))
	}
}

// TestAzureCredentialFiles: ~/.azure is hidden from commands.
func TestAzureCredentialFiles(t *testing.T) {
	if got := CredentialFiles("/home/u"); !slices.Contains(got, filepath.Join("/home/u", ".azure")) {
		t.Errorf("credential files %v lack ~/.azure", got)
	}
	if !slices.Contains(WithheldEnv(), "AZURE_*") {
		t.Errorf("withheld %v lack AZURE_*", WithheldEnv())
	}
}

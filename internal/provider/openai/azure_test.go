package openai

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// shellStep is a script whose one step runs a command through the typed
// shell, then ends.
const shellStep = `{"steps": [{"say": "Listing.", "actions": [{"kind": "run", "command": "ls"}]}, {"say": "Done."}]}`

// typedTools are the Responses API's typed tools.
var typedTools = []model.ToolSpec{{Kind: model.ToolTyped, Name: "shell", Type: "shell"}, {Kind: model.ToolTyped, Name: "apply_patch", Type: "apply_patch"}}

// TestAzureRoutes runs a turn of typed calls through openai-go's azure
// package against the simulated Azure resource on each route and with
// each credential, and checks what the request carried.
func TestAzureRoutes(t *testing.T) {
	for _, tc := range []struct {
		name, version, key, token, prefix string
		path, query                       string
		suffix                            string // after the endpoint, as the portal shows it
	}{
		{name: "v1 with key", key: "sim", path: "/openai/v1/responses", query: "api-version=v1"},
		{name: "v1 preview", version: "preview", key: "sim", path: "/openai/v1/responses", query: "api-version=preview"},
		{name: "dated route", version: "2025-04-01-preview", key: "sim", path: "/openai/responses", query: "api-version=2025-04-01-preview"},
		{name: "Entra ID token", token: "sim", path: "/openai/v1/responses", query: "api-version=v1"},
		{name: "token wins over key", key: "wrong", token: "sim", path: "/openai/v1/responses", query: "api-version=v1"},
		{name: "gateway path", key: "sim", prefix: "/gw/aoai", path: "/openai/v1/responses", query: "api-version=v1"},
		{name: "the v1 base URL as the endpoint", key: "sim", suffix: "/openai/v1", path: "/openai/v1/responses", query: "api-version=v1"},
		{name: "the v1 base URL with a slash", key: "sim", suffix: "/openai/v1/", path: "/openai/v1/responses", query: "api-version=v1"},
		{name: "the /openai path, dated route", version: "2025-04-01-preview", key: "sim", suffix: "/openai", path: "/openai/responses", query: "api-version=2025-04-01-preview"},
		{name: "gateway path and the v1 base URL", key: "sim", prefix: "/gw/aoai", suffix: "/openai/v1", path: "/openai/v1/responses", query: "api-version=v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, base := simtest.Serve(t, shellStep, "sim")
			var got *http.Request
			if tc.prefix != "" {
				// A gateway in front of the resource: the endpoint has a
				// path, which stays in front of Azure's routes.
				hs := httptest.NewServer(http.StripPrefix(tc.prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					got = r.Clone(r.Context())
					srv.ServeHTTP(w, r)
				})))
				t.Cleanup(hs.Close)
				base = hs.URL + tc.prefix
			}
			c, err := NewAzure(AzureConfig{Endpoint: base + tc.suffix, APIKey: tc.key, Token: tc.token, APIVersion: tc.version, Config: Config{Retry: fast}})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Turn(t.Context(), &model.Request{Model: "gpt-5.2", Items: []model.Item{{Kind: model.KindUser, Text: "list"}}, Tools: typedTools}, nil)
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.Calls()
			if len(calls) != 1 || calls[0].Type != "shell_call" || resp.StopReason != model.StopToolUse {
				t.Fatalf("calls %+v, stop %s", calls, resp.StopReason)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if r.Dialect != "azure" || r.Path != tc.path {
				t.Errorf("request of dialect %s to %s, want azure to %s", r.Dialect, r.Path, tc.path)
			}
			if got != nil && !strings.HasPrefix(got.URL.Path, tc.path) {
				t.Errorf("the gateway saw %s", got.URL.Path)
			}
			switch {
			case tc.token != "":
				if r.Header.Get("Authorization") != "Bearer "+tc.token || r.Header.Get("Api-Key") != "" {
					t.Errorf("token request headers %v", r.Header)
				}
			default:
				if r.Header.Get("Api-Key") != tc.key || r.Header.Get("Authorization") != "" {
					t.Errorf("key request headers %v", r.Header)
				}
			}
			validate(t, r.Body)
		})
	}
}

// TestAzureQuery checks the route's query as sent: the v1 route names
// its version too.
func TestAzureQuery(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"", "api-version=v1"}, {"v1", "api-version=v1"}, {"preview", "api-version=preview"}, {"2024-10-21", "api-version=2024-10-21"},
	} {
		var query, path string
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			query, path = r.URL.RawQuery, r.URL.Path
			w.WriteHeader(http.StatusTeapot)
		}))
		c, err := NewAzure(AzureConfig{Endpoint: hs.URL, APIKey: "k", APIVersion: tc.version, Config: Config{Retry: provider.RetryPolicy{MaxAttempts: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		c.Turn(t.Context(), &model.Request{Model: "d", Items: []model.Item{{Kind: model.KindUser, Text: "x"}}}, nil)
		hs.Close()
		if query != tc.want {
			t.Errorf("version %q: query %q (path %s), want %q", tc.version, query, path, tc.want)
		}
	}
}

// TestAzureErrors checks Azure's error answers as the adapter reports
// them: a wrong key, no such deployment, a route without its version, and
// a 429 whose Retry-After is honoured before the turn succeeds.
func TestAzureErrors(t *testing.T) {
	for _, tc := range []struct {
		name, script, key, version, model string
		deployments                       []string
		kind                              provider.ErrorKind
		status                            int
		msg                               string
	}{
		{name: "wrong key", script: shellStep, key: "wrong", model: "gpt-5.2", kind: provider.ErrAuth, status: 401, msg: "Access denied due to invalid subscription key"},
		{name: "unknown deployment", script: shellStep, key: "sim", model: "gpt-5.3", deployments: []string{"gpt-5.2"}, kind: provider.ErrNotFound, status: 404, msg: "The API deployment for this resource does not exist"},
		{name: "unknown deployment, what --model is", script: shellStep, key: "sim", model: "gpt-5.3", deployments: []string{"gpt-5.2"}, kind: provider.ErrNotFound, status: 404, msg: "; --model names the deployment: check its name among the resource's deployments"},
		{name: "429 then success", script: `{"steps": [{"say": "Hi.", "faults": [{"kind": "status", "status": 429, "retry_after_ms": 200}]}]}`, key: "sim", model: "gpt-5.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, base := simtest.Serve(t, tc.script, "sim")
			srv.Deployments = tc.deployments
			c, err := NewAzure(AzureConfig{Endpoint: base, APIKey: tc.key, APIVersion: tc.version, Config: Config{Retry: fast}})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Turn(t.Context(), &model.Request{Model: tc.model, Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil)
			if tc.kind == "" {
				if err != nil {
					t.Fatal(err)
				}
				reqs := srv.Requests()
				if len(reqs) != 2 || reqs[0].Status != 429 || reqs[1].Status != 200 || resp.StopReason != model.StopEndTurn {
					t.Fatalf("%d requests, stop %s", len(reqs), resp.StopReason)
				}
				if wait := reqs[1].Received.Sub(reqs[0].Received); wait < 200*time.Millisecond {
					t.Errorf("the retry came %v after the 429 that asked for 200 ms", wait)
				}
				return
			}
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != tc.kind || pe.Status != tc.status || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %s %d with %q", err, tc.kind, tc.status, tc.msg)
			}
		})
	}
}

// TestAzureConfig checks the configurations NewAzure refuses.
func TestAzureConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  AzureConfig
		msg  string
	}{
		{"no endpoint", AzureConfig{APIKey: "k"}, "is not a resource's address"},
		{"relative endpoint", AzureConfig{Endpoint: "res.openai.azure.com", APIKey: "k"}, "is not a resource's address"},
		{"query in endpoint", AzureConfig{Endpoint: "https://res.openai.azure.com/?api-version=1", APIKey: "k"}, "is not a resource's address"},
		{"plain HTTP off this machine", AzureConfig{Endpoint: "http://res.openai.azure.com", APIKey: "k"}, "plain HTTP"},
		{"no credential", AzureConfig{Endpoint: "https://res.openai.azure.com"}, "neither an API key nor an Entra ID token"},
		{"a version that is none", AzureConfig{Endpoint: "https://res.openai.azure.com", APIKey: "k", APIVersion: "2024-10-21x"}, `the API version "2024-10-21x" is not one of v1 (the default), preview, or a dated version`},
		{"a variable's version that is none", AzureConfig{Endpoint: "https://res.openai.azure.com", APIKey: "k", APIVersion: "bogus", VersionFrom: "AZURE_OPENAI_API_VERSION"},
			`the API version "bogus" (AZURE_OPENAI_API_VERSION) is not one of v1`},
		{"no scheme", AzureConfig{Endpoint: "myres.openai.azure.com", APIKey: "k"}, `is not a resource's address (https://RESOURCE.openai.azure.com); set it to https://myres.openai.azure.com`},
		{"the target URI", AzureConfig{Endpoint: "https://myres.openai.azure.com/openai/deployments/gpt-5.2/chat/completions?api-version=2025-01-01-preview", APIKey: "k"},
			`; set it to https://myres.openai.azure.com, and pass --model gpt-5.2 (the deployment)`},
		{"the target URI without its query", AzureConfig{Endpoint: "https://myres.openai.azure.com/openai/deployments/gpt-5.2/chat/completions", APIKey: "k"},
			`is a deployment's target URI, not a resource's address (https://RESOURCE.openai.azure.com); set it to https://myres.openai.azure.com, and pass --model gpt-5.2 (the deployment)`},
		{"someday", AzureConfig{Endpoint: "https://res.openai.azure.com", APIKey: "k", APIVersion: "someday"}, "is not one of"},
		{"a dated version", AzureConfig{Endpoint: "https://res.openai.azure.com", APIKey: "k", APIVersion: "2024-10-21"}, ""},
		{"a dated preview", AzureConfig{Endpoint: "https://res.openai.azure.com", APIKey: "k", APIVersion: "2025-04-01-preview"}, ""},
		{"https", AzureConfig{Endpoint: "https://res.openai.azure.com/", APIKey: "k"}, ""},
		{"loopback http", AzureConfig{Endpoint: "http://127.0.0.1:9", Token: "t"}, ""},
		{"localhost http", AzureConfig{Endpoint: "http://localhost:9", APIKey: "k"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewAzure(tc.cfg)
			switch {
			case tc.msg == "" && err != nil:
				t.Fatal(err)
			case tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)):
				t.Fatalf("error %v, want %q", err, tc.msg)
			}
		})
	}
}

// TestAzureModels lists the deployable models on the v1 route.
func TestAzureModels(t *testing.T) {
	_, base := simtest.Serve(t, `{"steps": []}`, "sim")
	c, err := NewAzure(AzureConfig{Endpoint: base, APIKey: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Models(t.Context()); err == nil || !strings.Contains(err.Error(), "/openai/v1/models") {
		t.Fatalf("the simulated resource lists no models; error %v should name the v1 route", err)
	}
}

package sim_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// TestAzureDialect sends requests to the simulated Azure resource and
// checks each answer: the routes and their api-version, the credential
// headers, an unknown deployment, a 429 fault in Azure's shape, and a
// stream identical in form to the Responses dialect's.
func TestAzureDialect(t *testing.T) {
	const script = `{"steps": [{"say": "Hi.", "faults": [{"kind": "status", "status": 429, "retry_after_ms": 1500}]}]}`
	for _, tc := range []struct {
		name, path, model string
		header            map[string]string
		status            int
		code              string // the error's code ("" for a stream)
		msg               string
		retryAfter        string
	}{
		{name: "v1 without a key", path: "/openai/v1/responses", model: "gpt-5.2", status: 401, code: "401", msg: "Access denied due to invalid subscription key"},
		{name: "v1 with a wrong key", path: "/openai/v1/responses", model: "gpt-5.2", header: map[string]string{"Api-Key": "wrong"}, status: 401, code: "401"},
		{name: "a Bearer token", path: "/openai/v1/responses?api-version=v1", model: "gpt-5.2",
			header: map[string]string{"Authorization": "Bearer k"}, status: 429, code: "429", msg: "Please retry after 2 seconds.", retryAfter: "2"},
		{name: "the dated route without a version", path: "/openai/responses", model: "gpt-5.2", header: map[string]string{"Api-Key": "k"}, status: 404, code: "404", msg: "Resource not found"},
		{name: "the dated route with v1", path: "/openai/responses?api-version=v1", model: "gpt-5.2", header: map[string]string{"Api-Key": "k"}, status: 400, code: "BadRequest", msg: "API version not supported"},
		{name: "v1 with a dated version", path: "/openai/v1/responses?api-version=2024-10-21", model: "gpt-5.2", header: map[string]string{"Api-Key": "k"}, status: 400, code: "BadRequest"},
		{name: "an unknown deployment", path: "/openai/v1/responses", model: "gpt-4o", header: map[string]string{"Api-Key": "k"}, status: 404, code: "DeploymentNotFound", msg: "The API deployment for this resource does not exist"},
		{name: "the dated route, rate limited", path: "/openai/responses?api-version=2025-04-01-preview", model: "gpt-5.2", header: map[string]string{"Api-Key": "k"},
			status: 429, code: "429", retryAfter: "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, base := simtest.Serve(t, script, "k")
			srv.Deployments = []string{"gpt-5.2"}
			resp := azurePost(t, base+tc.path, fmt.Sprintf(responsesReq, "true"), tc.model, tc.header)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			var e struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.msg) {
				t.Errorf("error %s (%v), want code %q with %q", b, err, tc.code, tc.msg)
			}
			if got := resp.Header.Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
		})
	}
}

// TestAzureStream: after its fault, the step streams as the Responses
// dialect does, and the request is recorded as Azure's.
func TestAzureStream(t *testing.T) {
	srv, base := simtest.Serve(t, `{"steps": [{"say": "Hi.", "actions": [{"kind": "run", "command": "ls"}]}]}`, "k")
	for _, path := range []string{"/openai/v1/responses", "/openai/responses?api-version=2025-04-01-preview"} {
		resp := azurePost(t, base+path, fmt.Sprintf(responsesReq, "true"), "", map[string]string{"Api-Key": "k"})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		types, _ := sseEvents(t, b)
		if types[0] != "response.created" || types[len(types)-1] != "response.completed" || !strings.Contains(string(b), `"type":"shell_call"`) {
			t.Errorf("%s: events %v", path, types)
		}
	}
	for _, r := range srv.Requests() {
		if r.Dialect != "azure" {
			t.Errorf("request to %s recorded as %s", r.Path, r.Dialect)
		}
	}
}

// TestAzureStrict: a body the Responses API refuses is refused on Azure's
// routes too.
func TestAzureStrict(t *testing.T) {
	_, base := simtest.Serve(t, `{"steps": [{"say": "Hi."}]}`, "")
	resp := azurePost(t, base+"/openai/v1/responses", `{"model":"gpt-5.2","input":[{"type":"function_call_output","call_id":"nope","output":"x"}]}`, "", map[string]string{"Api-Key": "k"})
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "No tool call found for function call output with call_id nope") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

// azurePost sends body (its model replaced when model is set) with headers.
func azurePost(t *testing.T, url, body, model string, header map[string]string) *http.Response {
	t.Helper()
	if model != "" {
		body = strings.Replace(body, `"model":"gpt-5.2"`, `"model":"`+model+`"`, 1)
	}
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// FuzzAzureRequest sends arbitrary versions, credentials and bodies to the
// Azure routes: every request is answered, with a stream or a JSON error
// whose shape is Azure's (401, 404) or the Responses API's (400).
func FuzzAzureRequest(f *testing.F) {
	f.Add("/openai/v1/responses", "", "k", fmt.Sprintf(responsesReq, "true"))
	f.Add("/openai/responses", "2025-04-01-preview", "", `{"model":"gpt-5.2","input":"hi"}`)
	f.Add("/openai/responses", "v1", "k", `{"model":`)
	f.Add("/openai/v1/responses", "preview", "k", `{"model":"other","input":[{"type":"function_call_output","call_id":"x","output":"y"}]}`)
	f.Fuzz(func(t *testing.T, path, version, key, body string) {
		if path != "/openai/v1/responses" {
			path = "/openai/responses"
		}
		s, err := sim.ParseScript([]byte(`{"steps": [{"say": "Hi."}]}`))
		if err != nil {
			t.Fatal(err)
		}
		srv := sim.New(s)
		srv.APIKey, srv.Deployments = "k", []string{"gpt-5.2"}
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		if version != "" {
			req.URL.RawQuery = url.Values{"api-version": {version}}.Encode()
		}
		req.Header.Set("Api-Key", key)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		switch w.Code {
		case 200:
		case 401, 404:
			var e struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%d answered %s", w.Code, w.Body)
			}
		case 400:
			var e struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error.Message == "" {
				t.Fatalf("400 answered %s", w.Body)
			}
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
}

package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// get sends GET base+path with the headers given as name, value pairs.
func get(t *testing.T, url string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func listen(t *testing.T, s *sim.Script, key string) (*sim.Server, string) {
	t.Helper()
	srv := simtest.New(s)
	srv.APIKey = key
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	base, err := srv.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return srv, base
}

// manyModels is a script declaring n models, model-00 the newest.
func manyModels(n int, extra string) *sim.Script {
	var ms []string
	for i := range n {
		ms = append(ms, fmt.Sprintf(`{"id": "model-%02d", "created": "2025-%02d-%02dT00:00:00Z"}`, i, 12-i/28, 28-i%28))
	}
	s, err := sim.ParseScript([]byte(`{"steps": [], "models": [` + strings.Join(ms, ",") + `]` + extra + `}`))
	if err != nil {
		panic(err)
	}
	return s
}

// TestAnthropicModelsMatchSpec pages through Anthropic's model list
// forwards and backwards, checking every page and error against the
// official schemas.
func TestAnthropicModelsMatchSpec(t *testing.T) {
	doc, err := apispec.Anthropic()
	if err != nil {
		t.Fatal(err)
	}
	srv, base := listen(t, manyModels(45, `, "model_faults": [{"kind": "status", "status": 429, "retry_after_ms": 2000}]`), "k")
	h := []string{"Anthropic-Version", "2023-06-01", "X-Api-Key", "k"}
	type page struct {
		Data []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"data"`
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
		HasMore bool    `json:"has_more"`
	}
	// The first request meets the scripted rate limit.
	resp, b := get(t, base+"/v1/models", h...)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || resp.Header.Get("Request-Id") == "" {
		t.Fatalf("429: %d %v", resp.StatusCode, resp.Header)
	}
	if err := doc.Schema("ErrorResponse", b); err != nil || !strings.Contains(string(b), "rate_limit_error") {
		t.Errorf("429 body: %v %s", err, b)
	}
	var ids []string
	query := ""
	for n := 0; ; n++ {
		resp, b := get(t, base+"/v1/models"+query, h...)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("page %d: %d %s", n, resp.StatusCode, b)
		}
		if err := doc.Schema("ListResponse_ModelInfo_", b); err != nil {
			t.Fatalf("page %d: %v\n%s", n, err, b)
		}
		var p page
		json.Unmarshal(b, &p)
		if len(p.Data) == 0 || *p.FirstID != p.Data[0].ID || *p.LastID != p.Data[len(p.Data)-1].ID || p.Data[0].Type != "model" {
			t.Fatalf("page %d: %s", n, b)
		}
		for _, d := range p.Data {
			ids = append(ids, d.ID)
		}
		if !p.HasMore {
			break
		}
		query = "?after_id=" + *p.LastID
	}
	if len(ids) != 45 || ids[0] != "model-00" || ids[44] != "model-44" {
		t.Fatalf("listed %d models: %v", len(ids), ids)
	}
	// A page before a cursor, a limit, an empty page past the end.
	_, b = get(t, base+"/v1/models?before_id=model-25&limit=5", h...)
	var p page
	json.Unmarshal(b, &p)
	if len(p.Data) != 5 || p.Data[0].ID != "model-20" || !p.HasMore {
		t.Errorf("before_id: %s", b)
	}
	_, b = get(t, base+"/v1/models?after_id=model-44", h...)
	if err := doc.Schema("ListResponse_ModelInfo_", b); err != nil || !strings.Contains(string(b), `"first_id":null`) {
		t.Errorf("past the end: %v %s", err, b)
	}
	// Errors: a bad limit, a wrong key, no version.
	for _, c := range []struct {
		query   string
		headers []string
		status  int
	}{
		{"?limit=0", h, 400},
		{"", []string{"Anthropic-Version", "2023-06-01", "X-Api-Key", "wrong"}, 401},
		{"", []string{"X-Api-Key", "k"}, 400},
	} {
		resp, b := get(t, base+"/v1/models"+c.query, c.headers...)
		if resp.StatusCode != c.status {
			t.Errorf("%s %v: status %d, want %d", c.query, c.headers, resp.StatusCode, c.status)
		}
		if err := doc.Schema("ErrorResponse", b); err != nil {
			t.Errorf("%d body: %v", resp.StatusCode, err)
		}
	}
	reqs := srv.ModelRequests()
	if len(reqs) < 5 || reqs[0].Status != 429 || reqs[1].Status != 200 || reqs[2].Query != "after_id=model-19" {
		t.Errorf("recorded %+v", reqs)
	}
}

// TestOpenAIModelsMatchSpec checks the OpenAI-shaped list at both paths
// and its errors against the official schemas, and the default models.
func TestOpenAIModelsMatchSpec(t *testing.T) {
	doc, err := apispec.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sim.ParseScript([]byte(`{"steps": [], "model_faults": [{"kind": "status", "status": 404}, {"kind": "status", "status": 429}]}`))
	_, base := listen(t, s, "sk-test")
	auth := []string{"Authorization", "Bearer sk-test"}
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{"/v1/models", 404, "Invalid URL (GET /v1/models)"},
		{"/v1/models", 429, "rate_limit_exceeded"},
		{"/v1/models", 200, `"object":"list"`},
		{"/models", 200, `"id":"sim-gpt"`},
	} {
		resp, b := get(t, base+c.path, auth...)
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s, want %d with %s", c.path, resp.StatusCode, b, c.status, c.want)
		}
		schema := "ListModelsResponse"
		if c.status != 200 {
			schema = "ErrorResponse"
		}
		if err := doc.Schema(schema, b); err != nil {
			t.Errorf("%s %d: %v\n%s", c.path, c.status, err, b)
		}
		if c.status == 200 && (strings.Contains(string(b), "sim-claude") || !strings.Contains(string(b), "sim-coder")) {
			t.Errorf("the OpenAI list names the wrong default models: %s", b)
		}
	}
	resp, b := get(t, base+"/v1/models")
	if resp.StatusCode != 401 {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
	if err := doc.Schema("ErrorResponse", b); err != nil {
		t.Errorf("401 body: %v", err)
	}
}

// TestOllamaTags: Ollama's list names each model with its tag, with the
// fields Ollama sends.
func TestOllamaTags(t *testing.T) {
	s, _ := sim.ParseScript([]byte(`{"steps": [], "models": [{"id": "qwen3-coder:30b", "apis": ["ollama"]}, {"id": "sim-claude", "apis": ["anthropic"]}, {"id": "llama3.1"}]}`))
	_, base := listen(t, s, "")
	resp, b := get(t, base+"/api/tags")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var raw struct {
		Models []map[string]any `json:"models"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range raw.Models {
		names = append(names, m["name"].(string))
		for _, k := range []string{"model", "modified_at", "size", "digest", "details"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s lacks %s", m["name"], k)
			}
		}
	}
	if strings.Join(names, " ") != "llama3.1:latest qwen3-coder:30b" {
		t.Errorf("names %v", names)
	}
}

// TestModelScriptChecks: a script's models need ids of their own and
// known APIs, and a model list fails only with status faults.
func TestModelScriptChecks(t *testing.T) {
	for _, bad := range []string{
		`{"steps": [], "models": [{"id": ""}]}`,
		`{"steps": [], "models": [{"id": "a"}, {"id": "a"}]}`,
		`{"steps": [], "models": [{"id": "a", "apis": ["gemini"]}]}`,
		`{"steps": [], "model_faults": [{"kind": "truncate"}]}`,
	} {
		if _, err := sim.ParseScript([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

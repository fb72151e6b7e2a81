package chatcompat

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// TestModels lists the simulated model's models through the SDK at a /v1
// base and at a bare one (GET /models), and the errors of a wrong key, a
// rate limit and a server without the endpoint.
func TestModels(t *testing.T) {
	var _ provider.ModelLister = (*Client)(nil)
	for _, c := range []struct {
		name   string
		script string
		path   string // after the simulated model's base URL
		key    string
		want   string
		kind   provider.ErrorKind
		status int
		msg    string
		unsup  bool
	}{
		{name: "default", script: `{"steps": []}`, path: "/v1", key: "sim", want: "sim-gpt sim-gpt-codex sim-coder"},
		{name: "bare base", script: `{"steps": [{"say": "x"}], "models": [{"id": "qwen3-coder"}]}`, key: "sim", want: "qwen3-coder"},
		{name: "wrong key", script: `{"steps": []}`, path: "/v1", key: "wrong", kind: provider.ErrAuth, status: 401, msg: "chat: HTTP 401: GET /v1/models: Incorrect API key provided."},
		{name: "rate limited", script: `{"steps": [], "model_faults": [{"kind": "status", "status": 429}]}`, path: "/v1", key: "sim",
			kind: provider.ErrRateLimited, status: 429, msg: "GET /v1/models: Rate limit reached"},
		{name: "no model list", script: `{"steps": [], "model_faults": [{"kind": "status", "status": 404}]}`, key: "sim",
			kind: provider.ErrNotFound, status: 404, msg: "GET /models: Invalid URL (GET /models); the server has no model list", unsup: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, base := simtest.Serve(t, c.script, "sim")
			ctx := t.Context()
			ms, err := New(Config{BaseURL: base + c.path, APIKey: c.key}).Models(ctx)
			if c.kind != "" {
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Kind != c.kind || pe.Status != c.status || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("error %v, want %s %d with %q", err, c.kind, c.status, c.msg)
				}
				if errors.Is(err, provider.ErrNotSupported) != c.unsup {
					t.Errorf("errors.Is(ErrNotSupported) = %v", !c.unsup)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range ms {
				ids = append(ids, m.ID)
			}
			if strings.Join(ids, " ") != c.want {
				t.Errorf("models %v, want %s", ids, c.want)
			}
		})
	}
}

// TestModelsCompatibleServers: what vLLM and OpenRouter add is read, and
// a server that has no /models (a bare 404 page, a 405) is not supported.
func TestModelsCompatibleServers(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
		want   []provider.ModelInfo
		unsup  bool
	}{
		{name: "vllm", status: 200, body: `{"object":"list","data":[{"id":"Qwen/Qwen3-Coder-30B","object":"model","created":1760000000,"owned_by":"vllm","root":"Qwen/Qwen3-Coder-30B","parent":null,"max_model_len":65536,"permission":[]}]}`,
			want: []provider.ModelInfo{{ID: "Qwen/Qwen3-Coder-30B", ContextWindow: 65536}}},
		{name: "openrouter", status: 200, body: `{"data":[{"id":"x/y","name":"X: Y","created":0,"context_length":131072.0,"owned_by":"x"}]}`,
			want: []provider.ModelInfo{{ID: "x/y", DisplayName: "X: Y", ContextWindow: 131072}}},
		{name: "bare 404", status: 404, body: "404 page not found\n", unsup: true},
		{name: "405", status: 405, body: `{"detail":"Method Not Allowed"}`, unsup: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/models" {
					http.NotFound(w, r)
					return
				}
				if c.status == 200 {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(c.status)
				fmt.Fprint(w, c.body)
			}))
			defer hs.Close()
			ms, err := New(Config{BaseURL: hs.URL + "/v1"}).Models(context.Background())
			if c.unsup {
				var pe *provider.Error
				if !errors.Is(err, provider.ErrNotSupported) || !errors.As(err, &pe) || pe.Status != c.status {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != len(c.want) {
				t.Fatalf("got %+v", ms)
			}
			for i := range ms {
				if ms[i].ID != c.want[i].ID || ms[i].DisplayName != c.want[i].DisplayName || ms[i].ContextWindow != c.want[i].ContextWindow {
					t.Errorf("got %+v, want %+v", ms[i], c.want[i])
				}
			}
		})
	}
}

func FuzzModelExtras(f *testing.F) {
	f.Add([]byte(`{"id":"a","max_model_len":65536}`))
	f.Add([]byte(`{"name":"N","context_length":1e300}`))
	f.Add([]byte(`{"context_window":"8k","name":7}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, n := modelExtras(b)
		if n < 0 || n > 1<<40 {
			t.Fatalf("window %d", n)
		}
	})
}

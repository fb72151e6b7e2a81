package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// TestModels lists the simulated model's pulled models (GET /api/tags):
// the default set, a declared one, a rate limit, a server that is not
// Ollama and one that is Ollama's but refuses.
func TestModels(t *testing.T) {
	var _ provider.ModelLister = (*Client)(nil)
	for _, c := range []struct {
		name   string
		script string
		want   string
		kind   provider.ErrorKind
		msg    string
		unsup  bool
	}{
		{name: "default", script: `{"steps": []}`, want: "sim-coder:latest"},
		{name: "declared", script: `{"steps": [], "models": [{"id": "qwen3-coder:30b", "created": "2025-08-01T10:00:00Z"}, {"id": "llama3.1", "created": "2025-09-01T00:00:00Z"}]}`,
			want: "llama3.1:latest qwen3-coder:30b"},
		{name: "rate limited", script: `{"steps": [], "model_faults": [{"kind": "status", "status": 429, "message": "too many requests"}]}`,
			kind: provider.ErrRateLimited, msg: "ollama: HTTP 429: GET /api/tags: too many requests"},
		{name: "no list", script: `{"steps": [], "model_faults": [{"kind": "status", "status": 404, "message": "not found"}]}`,
			kind: provider.ErrNotFound, msg: "the server has no model list", unsup: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, base := simtest.Serve(t, c.script, "")
			ctx := t.Context()
			ms, err := (&Client{Host: base}).Models(ctx)
			if c.kind != "" {
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Kind != c.kind || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("error %v, want %s with %q", err, c.kind, c.msg)
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
			if c.name == "declared" && !ms[1].Created.Equal(time.Date(2025, 8, 1, 10, 0, 0, 0, time.UTC)) {
				t.Errorf("created %v", ms[1].Created)
			}
		})
	}
}

// TestModelsNotOllama: a server that answers /api/tags without Ollama's
// shape is another service's (ErrNotAPI).
func TestModelsNotOllama(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
	}{{404, "404 page not found"}, {200, "<html>hello</html>"}, {200, `{"data": []}`}} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
			fmt.Fprint(w, c.body)
		}))
		_, err := (&Client{Host: hs.URL}).Models(context.Background())
		hs.Close()
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Kind != provider.ErrNotAPI || !strings.Contains(err.Error(), "GET /api/tags answered") {
			t.Errorf("%d %q: %v", c.status, c.body, err)
		}
	}
}

func FuzzParseTags(f *testing.F) {
	f.Add([]byte(`{"models":[{"name":"a:latest","model":"a:latest","modified_at":"2025-05-10T08:06:48.639712648-07:00"}]}`))
	f.Add([]byte(`{"models":[{"name":"b"},{"model":""}]}`))
	f.Add([]byte(`{"models":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := parseTags(b)
		if err != nil {
			return
		}
		if len(ms) > provider.MaxModels {
			t.Fatalf("%d models", len(ms))
		}
		for _, m := range ms {
			if m.ID == "" || (!m.Created.IsZero() && m.Created.Unix() <= 0) {
				t.Fatalf("model %+v", m)
			}
		}
	})
}

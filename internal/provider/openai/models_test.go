package openai

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// TestModels lists the simulated model's models through the SDK: the
// default set, a declared one, and the errors of a wrong key, a rate
// limit and a server without a model list.
func TestModels(t *testing.T) {
	var _ provider.ModelLister = (*Client)(nil)
	for _, c := range []struct {
		name   string
		script string
		key    string
		want   string // IDs
		kind   provider.ErrorKind
		status int
		msg    string
		unsup  bool
	}{
		{name: "default", script: `{"steps": []}`, key: "sim", want: "sim-gpt sim-gpt-codex sim-coder"},
		{name: "declared", script: `{"steps": [], "models": [{"id": "gpt-5.2", "created": "2025-12-11T00:00:00Z"}, {"id": "old"}, {"id": "claude", "apis": ["anthropic"]}]}`,
			key: "sim", want: "gpt-5.2 old"},
		{name: "wrong key", script: `{"steps": []}`, key: "wrong", kind: provider.ErrAuth, status: 401, msg: "GET /v1/models: Incorrect API key provided."},
		{name: "rate limited", script: `{"steps": [], "model_faults": [{"kind": "status", "status": 429, "retry_after_ms": 1000}]}`, key: "sim",
			kind: provider.ErrRateLimited, status: 429, msg: "(the server asks to wait 1s)"},
		{name: "no model list", script: `{"steps": [], "model_faults": [{"kind": "status", "status": 404}]}`, key: "sim",
			kind: provider.ErrNotFound, status: 404, msg: "Invalid URL (GET /v1/models); the server has no model list", unsup: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, base := simtest.Serve(t, c.script, "sim")
			ctx := t.Context()
			ms, err := New(Config{BaseURL: base + "/v1", APIKey: c.key}).Models(ctx)
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
			if c.name == "declared" {
				if !ms[0].Created.Equal(time.Date(2025, 12, 11, 0, 0, 0, 0, time.UTC)) || !ms[1].Created.IsZero() || ms[0].DisplayName != "" || ms[0].ContextWindow != 0 {
					t.Errorf("models %+v", ms)
				}
			}
		})
	}
}

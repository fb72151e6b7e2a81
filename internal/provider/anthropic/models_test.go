package anthropic

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

// TestModels lists the simulated model's models through the SDK: the
// default set, a list of three pages, and the errors of a wrong key, a
// rate limit and a server without a model list.
func TestModels(t *testing.T) {
	var many []string
	for i := range 45 {
		many = append(many, fmt.Sprintf(`{"id": "claude-%02d", "display_name": "Claude %d", "created": "2025-01-01T00:00:00Z", "context_window": %d}`, i, i, 1000+i))
	}
	for _, c := range []struct {
		name   string
		script string
		key    string
		want   []string // IDs
		pages  int
		kind   provider.ErrorKind
		status int
		msg    string // in the error
		unsup  bool
	}{
		{name: "default", script: `{"steps": []}`, key: "sim", want: []string{"sim-claude"}, pages: 1},
		{name: "three pages", script: `{"steps": [], "models": [` + strings.Join(many, ",") + `]}`, key: "sim", pages: 3},
		{name: "wrong key", script: `{"steps": []}`, key: "wrong", kind: provider.ErrAuth, status: 401, msg: "GET /v1/models: authentication_error: invalid x-api-key"},
		{name: "rate limited", script: `{"steps": [], "model_faults": [{"kind": "status", "status": 429, "retry_after_ms": 3000}]}`, key: "sim",
			kind: provider.ErrRateLimited, status: 429, msg: "rate_limit_error: Rate limit reached. Please try again later. (the server asks to wait 3s)"},
		{name: "no model list", script: `{"steps": [], "model_faults": [{"kind": "status", "status": 404, "message": "Not found"}]}`, key: "sim",
			kind: provider.ErrNotFound, status: 404, msg: "the server has no model list", unsup: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, base := simtest.Serve(t, c.script, "sim")
			ctx := t.Context()
			var _ provider.ModelLister = (*Client)(nil)
			ms, err := New(Config{BaseURL: base, APIKey: c.key}).Models(ctx)
			if c.kind != "" {
				t.Log(err)
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Kind != c.kind || pe.Status != c.status || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("error %v (%#v), want %s %d with %q", err, pe, c.kind, c.status, c.msg)
				}
				if errors.Is(err, provider.ErrNotSupported) != c.unsup {
					t.Errorf("errors.Is(ErrNotSupported) = %v", !c.unsup)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := len(srv.ModelRequests()); got != c.pages {
				t.Errorf("%d requests, want %d pages", got, c.pages)
			}
			if c.want != nil {
				var ids []string
				for _, m := range ms {
					ids = append(ids, m.ID)
				}
				if strings.Join(ids, " ") != strings.Join(c.want, " ") {
					t.Errorf("models %v, want %v", ids, c.want)
				}
			}
			if c.name == "default" {
				want := provider.ModelInfo{ID: "sim-claude", DisplayName: "Sim Claude", Created: time.Date(2025, 9, 29, 0, 0, 0, 0, time.UTC), ContextWindow: 200000}
				if ms[0] != want {
					t.Errorf("got %+v, want %+v", ms[0], want)
				}
			}
			if c.name == "three pages" {
				if len(ms) != 45 || ms[0].ID != "claude-00" || ms[44].ID != "claude-44" || ms[7].DisplayName != "Claude 7" || ms[7].ContextWindow != 1007 {
					t.Errorf("listed %d: first %+v last %+v", len(ms), ms[0], ms[len(ms)-1])
				}
				if q := srv.ModelRequests()[2].Query; q != "after_id=claude-39" {
					t.Errorf("third page's query %q", q)
				}
			}
		})
	}
}

// TestModelsPaginationLoop: a server whose pages never end (the same
// page again) gives a protocol error, not an endless list.
func TestModelsPaginationLoop(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":[{"type":"model","id":"m","display_name":"M","created_at":"1970-01-01T00:00:00Z"}],"first_id":"m","last_id":"m","has_more":true}`)
	}))
	defer hs.Close()
	_, err := New(Config{BaseURL: hs.URL, APIKey: "k"}).Models(context.Background())
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Kind != provider.ErrProtocol || !strings.Contains(err.Error(), `repeats "m"`) {
		t.Fatalf("a looping list: %v", err)
	}
}

package anthropic

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// vertexClient is an adapter on the simulated Vertex AI at base.
func vertexClient(base, project, token string) *Client {
	return New(Config{BaseURL: base, Retry: provider.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond},
		Vertex: &Vertex{Region: "us-east5", Project: project, Token: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token})}})
}

// TestVertexTurn: a turn through Vertex AI's route reaches the simulated
// model (which refuses a body with "model" or without Vertex's
// anthropic_version) with the model in the URL and the access token as a
// Bearer token; the typed tools are declared as on Anthropic's API.
func TestVertexTurn(t *testing.T) {
	srv, base := simtest.Serve(t, `{"steps": [{"say": "Looking.", "actions": [{"kind": "run", "command": "ls"}]}]}`, "ya29.good")
	srv.VertexProject = "proj-1"
	c := vertexClient(base, "proj-1", "ya29.good")
	tools := []model.ToolSpec{{Name: "bash", Kind: model.ToolTyped, Type: "bash_20250124"}}
	resp, err := c.Turn(context.Background(), &model.Request{Model: "claude-sonnet-4-5@20250929", MaxTokens: 1000, Tools: tools,
		Items: []model.Item{{Kind: model.KindUser, Text: "list"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 2 || resp.Items[1].Call == nil || resp.Items[1].Call.Name != "bash" {
		t.Fatalf("items %+v", resp.Items)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Dialect != "vertex" || r.Path != "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict" {
		t.Errorf("dialect %s, path %s", r.Dialect, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer ya29.good" || r.Header.Get("X-Api-Key") != "" || r.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("headers %v", r.Header)
	}
	// The wire bytes recorded are the API's request and events.
	if resp.Wire == nil || !strings.Contains(string(resp.Wire.Response), "message_stop") {
		t.Errorf("wire %+v", resp.Wire)
	}
}

// TestVertexErrors: Vertex AI's refusals, in Google's shape or the
// Messages API's, are the adapter's typed errors with Google's status.
func TestVertexErrors(t *testing.T) {
	for _, tc := range []struct {
		name, project, token, model, script string
		kind                                provider.ErrorKind
		status                              int
		msg                                 string
	}{
		{name: "token", project: "p", token: "ya29.bad", model: "claude-sonnet-4-5@20250929", kind: provider.ErrAuth, status: 401, msg: "UNAUTHENTICATED: Request had invalid authentication credentials"},
		{name: "project", project: "other", token: "ya29.good", model: "claude-sonnet-4-5@20250929", kind: provider.ErrAuth, status: 403, msg: "PERMISSION_DENIED: Permission 'aiplatform.endpoints.predict' denied"},
		{name: "model", project: "p", token: "ya29.good", model: "claude-nope@1", kind: provider.ErrNotFound, status: 404, msg: "NOT_FOUND: Publisher Model `projects/p/locations/us-east5/publishers/anthropic/models/claude-nope@1` not found."},
		{name: "quota", project: "p", token: "ya29.good", model: "claude-sonnet-4-5@20250929", kind: provider.ErrRateLimited, status: 429, msg: "RESOURCE_EXHAUSTED: Quota exceeded",
			script: `{"steps": [{"say": "x", "faults": [{"kind": "status", "status": 429}, {"kind": "status", "status": 429}, {"kind": "status", "status": 429}, {"kind": "status", "status": 429}, {"kind": "status", "status": 429}]}]}`},
		{name: "overloaded", project: "p", token: "ya29.good", model: "claude-sonnet-4-5@20250929", kind: provider.ErrOverloaded, status: 529, msg: "overloaded_error: Overloaded",
			script: `{"steps": [{"say": "x", "faults": [{"kind": "status", "status": 529}, {"kind": "status", "status": 529}, {"kind": "status", "status": 529}, {"kind": "status", "status": 529}, {"kind": "status", "status": 529}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := tc.script
			if script == "" {
				script = `{"steps": [{"say": "x"}]}`
			}
			srv, base := simtest.Serve(t, script, "ya29.good")
			srv.VertexProject, srv.VertexModels = "p", []string{"claude-sonnet-4-5@20250929"}
			c := vertexClient(base, tc.project, tc.token)
			c.cfg.Retry.MaxAttempts = 1
			_, err := c.Turn(context.Background(), &model.Request{Model: tc.model, MaxTokens: 100, Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil)
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("%v", err)
			}
			if pe.Kind != tc.kind || pe.Status != tc.status || !strings.Contains(pe.Message, tc.msg) {
				t.Errorf("kind %s, status %d, message %q; want %s, %d, %q", pe.Kind, pe.Status, pe.Message, tc.kind, tc.status, tc.msg)
			}
		})
	}
}

// TestVertexTokenError: credentials that cannot give a token fail the
// turn as an authentication error before any request.
func TestVertexTokenError(t *testing.T) {
	srv, base := simtest.Serve(t, `{"steps": [{"say": "x"}]}`, "")
	c := New(Config{BaseURL: base, Vertex: &Vertex{Region: "us-east5", Project: "p", Token: failingSource{}}})
	_, err := c.Turn(context.Background(), &model.Request{Model: "claude-sonnet-4-5", MaxTokens: 100, Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Kind != provider.ErrAuth || !strings.Contains(pe.Message, "cannot get a Google access token") || !strings.Contains(pe.Message, "invalid_grant") {
		t.Fatalf("%v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

type failingSource struct{}

func (failingSource) Token() (*oauth2.Token, error) { return nil, errors.New("oauth2: invalid_grant") }

// TestVertexModels: Vertex's Messages routes list no models.
func TestVertexModels(t *testing.T) {
	c := vertexClient("http://127.0.0.1:1", "p", "t")
	if _, err := c.Models(context.Background()); !errors.Is(err, provider.ErrNotSupported) {
		t.Fatalf("%v", err)
	}
}

// TestVertexBaseURL: the regions' addresses, as the SDK's vertex package
// names them.
func TestVertexBaseURL(t *testing.T) {
	for region, want := range map[string]string{
		"us-east5": "https://us-east5-aiplatform.googleapis.com",
		"global":   "https://aiplatform.googleapis.com",
		"us":       "https://aiplatform.us.rep.googleapis.com",
		"eu":       "https://aiplatform.eu.rep.googleapis.com",
	} {
		if got := VertexBaseURL(region); got != want {
			t.Errorf("%s: %s, want %s", region, got, want)
		}
	}
}

// TestGoogleError: Google's error object alone or in an array; anything
// else is not one.
func TestGoogleError(t *testing.T) {
	for _, tc := range []struct{ raw, status, msg string }{
		{`{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}`, "RESOURCE_EXHAUSTED", "Quota exceeded"},
		{`[{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}]`, "RESOURCE_EXHAUSTED", "Quota exceeded"},
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "", "Overloaded"},
		{`[]`, "", ""},
		{`{"error":{}}`, "", ""},
		{`nope`, "", ""},
	} {
		status, msg, ok := googleError([]byte(tc.raw))
		if ok != (tc.msg != "") || status != tc.status || msg != tc.msg {
			t.Errorf("%s: %q %q %v", tc.raw, status, msg, ok)
		}
	}
}

// TestVertexRefusesLocally: what the route cannot carry fails before any
// request: no model, a region or project that is not a path segment.
func TestVertexRefusesLocally(t *testing.T) {
	srv, base := simtest.Serve(t, `{"steps": [{"say": "x"}]}`, "")
	for _, v := range []*Vertex{
		{Region: "us-east5", Project: "a/b", Token: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})},
		{Region: "..", Project: "p", Token: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})},
		{Region: "us-east5", Project: "", Token: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})},
	} {
		c := New(Config{BaseURL: base, Vertex: v})
		if _, err := c.Turn(context.Background(), &model.Request{Model: "claude-sonnet-4-5", MaxTokens: 100, Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil); err == nil {
			t.Errorf("%+v: no error", v)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

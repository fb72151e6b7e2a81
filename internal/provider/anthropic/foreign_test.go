package anthropic

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestForeignJSON: a router's JSON 404 is not the API on the Messages
// API's routes (Anthropic's, Bedrock's, Vertex AI's); the APIs' own 404s
// are still theirs, and an error body in another shape says its message.
func TestForeignJSON(t *testing.T) {
	token := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})
	anth := func(base string) Config { return Config{BaseURL: base, APIKey: "k"} }
	bedrock := func(base string) Config {
		return Config{BaseURL: base, Bedrock: &Bedrock{Region: "us-east-1", Token: "t"}}
	}
	vertex := func(base string) Config {
		return Config{BaseURL: base, Vertex: &Vertex{Region: "us-east5", Project: "p", Token: token}}
	}
	tests := []struct {
		name   string
		cfg    func(string) Config
		status int
		body   string
		kind   provider.ErrorKind
		want   []string
	}{
		{"anthropic, FastAPI's 404", anth, 404, providertest.Router404s["fastapi"], provider.ErrNotAPI,
			[]string{"anthropic: HTTP 404: the server at ", "does not look like the Anthropic API", "ANTHROPIC_BASE_URL"}},
		{"anthropic, a string 404", anth, 404, providertest.Router404s["string"], provider.ErrNotAPI, []string{"does not look like"}},
		{"anthropic, llama.cpp's 404", anth, 404, providertest.Router404s["llama.cpp"], provider.ErrNotAPI, []string{"does not look like"}},
		{"bedrock, FastAPI's 404", bedrock, 404, providertest.Router404s["fastapi"], provider.ErrNotAPI,
			[]string{"bedrock: HTTP 404: ", "does not look like Amazon Bedrock's runtime API", "ANTHROPIC_BEDROCK_BASE_URL"}},
		{"vertex, FastAPI's 404", vertex, 404, providertest.Router404s["fastapi"], provider.ErrNotAPI,
			[]string{"vertex: HTTP 404: ", "does not look like Vertex AI", "ANTHROPIC_VERTEX_BASE_URL"}},
		{"anthropic's model 404 is the API's", anth, 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}`, provider.ErrNotFound,
			[]string{"anthropic: HTTP 404: not_found_error: model: claude-x"}},
		{"bedrock's model 404 is the API's", bedrock, 404, `{"message":"Could not resolve the foundation model from the provided model identifier."}`, provider.ErrNotFound,
			[]string{"bedrock: HTTP 404: ", "Could not resolve the foundation model"}},
		{"vertex's model 404 is the API's", vertex, 404, `{"error":{"code":404,"message":"Publisher Model was not found","status":"NOT_FOUND"}}`, provider.ErrNotFound,
			[]string{"vertex: HTTP 404: NOT_FOUND: Publisher Model was not found"}},
		{"anthropic, FastAPI's 422", anth, 422, `{"detail":[{"msg":"field required"}]}`, provider.ErrBadRequest, []string{"anthropic: HTTP 422: field required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, hits := providertest.JSONServer(t, tt.status, tt.body)
			cfg := tt.cfg(base)
			cfg.Retry = providertest.Retrying
			model := "claude-sonnet-4-5"
			if cfg.Bedrock != nil {
				model = "anthropic.claude-sonnet-4-5-20250929-v1:0"
			}
			err := providertest.OneTurn(New(cfg), model)
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != tt.kind {
				t.Fatalf("error %v, want a %s", err, tt.kind)
			}
			if n := hits.Load(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not hold %q", err, w)
				}
			}
		})
	}
}

package anthropic

import (
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestForeignServer: a base URL that is a web server, not the API (its
// error page for 404, Python's http.server's 501 for POST), gives one
// error that names the provider, says the server is not the API and what
// to check, and is not retried: the model was never reached. So does a
// web page answered with 200 OK (a login page, a portal's front page).
func TestForeignServer(t *testing.T) {
	token := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})
	tests := []struct {
		name   string
		status int
		cfg    func(base string) Config
		want   []string
	}{
		{"anthropic, 404", 404, func(base string) Config { return Config{BaseURL: base, APIKey: "k"} },
			[]string{"anthropic: HTTP 404: the server at http://127.0.0.1:", "does not look like the Anthropic API: POST /v1/messages answered 404 Not Found: \"<!DOCTYPE html> …\"", "(is ANTHROPIC_BASE_URL the address of the Anthropic API?)"}},
		{"anthropic, 501", 501, func(base string) Config { return Config{BaseURL: base, APIKey: "k"} },
			[]string{"anthropic: HTTP 501: ", "does not look like the Anthropic API", "ANTHROPIC_BASE_URL"}},
		{"named", 404, func(base string) Config {
			return Config{BaseURL: base, APIKey: "k", Label: "corp", ReachHint: providertest.ReachHint}
		}, []string{"corp: HTTP 404: ", "does not look like the Anthropic API", "(" + providertest.ReachHint + ")"}},
		{"bedrock, 501", 501, func(base string) Config {
			return Config{BaseURL: base, Bedrock: &Bedrock{Region: "us-east-1", Token: "t"}}
		}, []string{"bedrock: HTTP 501: ", "does not look like Amazon Bedrock's runtime API", "ANTHROPIC_BEDROCK_BASE_URL"}},
		{"anthropic, 200 with a page", 200, func(base string) Config { return Config{BaseURL: base, APIKey: "k"} },
			[]string{"anthropic: HTTP 200: ", "does not look like the Anthropic API: POST /v1/messages answered 200 OK: \"<!DOCTYPE html> …\"", "ANTHROPIC_BASE_URL"}},
		{"named, 200 with a page", 200, func(base string) Config {
			return Config{BaseURL: base, APIKey: "k", Label: "corp", ReachHint: providertest.ReachHint}
		}, []string{"corp: HTTP 200: ", "does not look like the Anthropic API", "(" + providertest.ReachHint + ")"}},
		{"bedrock, 200 with a page", 200, func(base string) Config {
			return Config{BaseURL: base, Bedrock: &Bedrock{Region: "us-east-1", Token: "t"}}
		}, []string{"bedrock: HTTP 200: ", "does not look like Amazon Bedrock's runtime API", "ANTHROPIC_BEDROCK_BASE_URL"}},
		{"vertex, 200 with a page", 200, func(base string) Config {
			return Config{BaseURL: base, Vertex: &Vertex{Region: "us-east5", Project: "p", Token: token}}
		}, []string{"vertex: HTTP 200: ", "does not look like Vertex AI", "ANTHROPIC_VERTEX_BASE_URL"}},
		{"vertex, 404", 404, func(base string) Config {
			return Config{BaseURL: base, Vertex: &Vertex{Region: "us-east5", Project: "p", Token: token}}
		}, []string{"vertex: HTTP 404: ", "does not look like Vertex AI", "ANTHROPIC_VERTEX_BASE_URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, hits := providertest.ForeignServer(t, tt.status)
			cfg := tt.cfg(base)
			cfg.Retry = providertest.Retrying
			model := "claude-sonnet-4-5"
			if cfg.Bedrock != nil {
				model = "anthropic.claude-sonnet-4-5-20250929-v1:0"
			}
			err := providertest.OneTurn(New(cfg), model)
			providertest.CheckNotAPI(t, err, hits, tt.want)
			if strings.Count(err.Error(), "<html>") > 0 {
				t.Errorf("error %q holds the whole page", err)
			}
		})
	}
}

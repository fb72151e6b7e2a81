package anthropic

import (
	"net/http"
	"testing"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestPlainHTTPS: an https:// base URL of a plain-HTTP server that closes
// the handshake is one unretried "cannot reach" error saying to use
// http://, on the Claude API, Bedrock and Vertex AI alike.
func TestPlainHTTPS(t *testing.T) {
	token := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})
	for _, tc := range []struct {
		name  string
		cfg   Config
		model string
		want  string
	}{
		{"anthropic", Config{APIKey: "k"}, "claude-sonnet-4-5", "ANTHROPIC_BASE_URL"},
		{"bedrock", Config{Bedrock: &Bedrock{Region: "us-east-1", Token: "t"}}, "anthropic.claude-sonnet-4-5-20250929-v1:0", "ANTHROPIC_BEDROCK_BASE_URL"},
		{"vertex", Config{Vertex: &Vertex{Region: "us-east5", Project: "p", Token: token}}, "claude-sonnet-4-5@20250929", "ANTHROPIC_VERTEX_BASE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			providertest.CheckPlainHTTPS(t, func(base string, retry provider.RetryPolicy) error {
				cfg := tc.cfg
				cfg.BaseURL, cfg.Retry, cfg.HTTP = base, retry, provider.HeaderClient(http.Header{})
				return providertest.OneTurn(New(cfg), tc.model)
			}, tc.want)
		})
	}
}

// TestPlainToTLS: an http:// base URL of a TLS server (nginx's 400, Go's,
// a reset connection) is one unretried error saying to use https://, on
// the Claude API, Bedrock and Vertex AI alike.
func TestPlainToTLS(t *testing.T) {
	token := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})
	for _, tc := range []struct {
		name  string
		cfg   Config
		model string
		want  string
	}{
		{"anthropic", Config{APIKey: "k"}, "claude-sonnet-4-5", "ANTHROPIC_BASE_URL"},
		{"bedrock", Config{Bedrock: &Bedrock{Region: "us-east-1", Token: "t"}}, "anthropic.claude-sonnet-4-5-20250929-v1:0", "ANTHROPIC_BEDROCK_BASE_URL"},
		{"vertex", Config{Vertex: &Vertex{Region: "us-east5", Project: "p", Token: token}}, "claude-sonnet-4-5@20250929", "ANTHROPIC_VERTEX_BASE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			providertest.CheckPlainToTLS(t, func(base string, retry provider.RetryPolicy) error {
				cfg := tc.cfg
				cfg.BaseURL, cfg.Retry = base, retry
				return providertest.OneTurn(New(cfg), tc.model)
			}, tc.want)
		})
	}
}

package anthropic

import (
	"testing"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestNotStream: a 200 that is no event stream (a gateway's whole
// message, a health check, text, nothing) is one error, not a stream cut
// short and retried, on each of the Messages API's routes.
func TestNotStream(t *testing.T) {
	token := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})
	for _, tc := range []struct {
		name, model string
		cfg         func(string) Config
	}{
		{"anthropic", "claude-sonnet-4-5", func(base string) Config { return Config{BaseURL: base, APIKey: "k"} }},
		{"bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", func(base string) Config {
			return Config{BaseURL: base, Bedrock: &Bedrock{Region: "us-east-1", Token: "t"}}
		}},
		{"vertex", "claude-sonnet-4-5@20250929", func(base string) Config {
			return Config{BaseURL: base, Vertex: &Vertex{Region: "us-east5", Project: "p", Token: token}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			providertest.CheckNotStream(t, providertest.WholeMessages, func(base string) error {
				cfg := tc.cfg(base)
				cfg.Retry = providertest.Retrying
				return providertest.OneTurn(New(cfg), tc.model)
			})
		})
	}
}

package chatcompat

import (
	"testing"

	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestForeignServer: a base URL that is a web server, not an
// OpenAI-compatible API, gives one error that names the provider, says
// the server is not the API and what to check, and is not retried; so
// does a web page answered with 200 OK.
func TestForeignServer(t *testing.T) {
	tests := []struct {
		name   string
		status int
		cfg    Config
		want   []string
	}{
		{"chat, 404", 404, Config{}, []string{"chat: HTTP 404: the server at http://127.0.0.1:",
			"does not look like an OpenAI-compatible API: POST /v1/chat/completions answered 404 Not Found", "OPENAI_BASE_URL"}},
		{"chat, 501", 501, Config{}, []string{"chat: HTTP 501: ", "does not look like an OpenAI-compatible API"}},
		{"chat, 200 with a page", 200, Config{}, []string{"chat: HTTP 200: ",
			"does not look like an OpenAI-compatible API: POST /v1/chat/completions answered 200 OK: \"<!DOCTYPE html> …\"", "OPENAI_BASE_URL"}},
		{"named, 200 with a page", 200, Config{Label: "openrouter", ReachHint: providertest.ReachHint},
			[]string{"openrouter: HTTP 200: ", "does not look like", "(" + providertest.ReachHint + ")"}},
		{"named, 404", 404, Config{Label: "openrouter", ReachHint: providertest.ReachHint},
			[]string{"openrouter: HTTP 404: ", "does not look like", "(" + providertest.ReachHint + ")"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, hits := providertest.ForeignServer(t, tt.status)
			cfg := tt.cfg
			cfg.BaseURL, cfg.APIKey, cfg.Retry = base+"/v1", "k", providertest.Retrying
			err := providertest.OneTurn(New(cfg), "m")
			providertest.CheckNotAPI(t, err, hits, tt.want)
		})
	}
}

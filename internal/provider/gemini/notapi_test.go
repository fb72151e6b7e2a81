package gemini

import (
	"testing"

	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestForeignServer: a base URL that is a web server, not the Gemini API
// (its error page for 404, Python's http.server's 501 for POST, a page
// answered with 200 OK), gives one error that names the provider, says
// the server is not the API and what to check, and is not retried.
func TestForeignServer(t *testing.T) {
	tests := []struct {
		name   string
		status int
		cfg    Config
		want   []string
	}{
		{"gemini, 404", 404, Config{}, []string{"gemini: HTTP 404: the server at http://127.0.0.1:",
			"does not look like the Gemini API: POST /v1beta/models/gemini-2.5-pro:streamGenerateContent answered 404 Not Found"}},
		{"gemini, 501", 501, Config{}, []string{"gemini: HTTP 501: ", "does not look like the Gemini API"}},
		{"gemini, 200 with a page", 200, Config{}, []string{"gemini: HTTP 200: ",
			"does not look like the Gemini API: POST /v1beta/models/gemini-2.5-pro:streamGenerateContent answered 200 OK: \"<!DOCTYPE html> …\""}},
		{"named, 200 with a page", 200, Config{Label: "corp", ReachHint: providertest.ReachHint},
			[]string{"corp: HTTP 200: ", "does not look like the Gemini API", "(" + providertest.ReachHint + ")"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, hits := providertest.ForeignServer(t, tt.status)
			cfg := tt.cfg
			cfg.BaseURL, cfg.APIKey, cfg.Retry = base, "k", providertest.Retrying
			err := providertest.OneTurn(New(cfg), "gemini-2.5-pro")
			providertest.CheckNotAPI(t, err, hits, tt.want)
		})
	}
}

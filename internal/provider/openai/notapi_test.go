package openai

import (
	"testing"

	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestForeignServer: a base URL or Azure endpoint that is a web server,
// not the API (its error page for 404, Python's http.server's 501 for
// POST, a page answered with 200 OK), gives one error that names the
// provider, says the server is not the API and what to check, and is not
// retried.
func TestForeignServer(t *testing.T) {
	tests := []struct {
		name   string
		status int
		client func(t *testing.T, base string) *Client
		want   []string
	}{
		{"responses, 404", 404, func(t *testing.T, base string) *Client {
			return New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: providertest.Retrying})
		}, []string{"responses: HTTP 404: the server at http://127.0.0.1:", "does not look like OpenAI's Responses API: POST /v1/responses answered 404 Not Found", "OPENAI_BASE_URL"}},
		{"named, 404", 404, func(t *testing.T, base string) *Client {
			return New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: providertest.Retrying, Label: "corp", ReachHint: providertest.ReachHint})
		}, []string{"corp: HTTP 404: ", "does not look like", "(" + providertest.ReachHint + ")"}},
		{"responses, 200 with a page", 200, func(t *testing.T, base string) *Client {
			return New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: providertest.Retrying})
		}, []string{"responses: HTTP 200: ", "does not look like OpenAI's Responses API: POST /v1/responses answered 200 OK: \"<!DOCTYPE html> …\"", "OPENAI_BASE_URL"}},
		{"azure, 200 with a page", 200, func(t *testing.T, base string) *Client {
			c, err := NewAzure(AzureConfig{Endpoint: base, APIKey: "k", Config: Config{Retry: providertest.Retrying}})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, []string{"azure: HTTP 200: ", "does not look like Azure OpenAI's API", "AZURE_OPENAI_ENDPOINT"}},
		{"azure, 501", 501, func(t *testing.T, base string) *Client {
			c, err := NewAzure(AzureConfig{Endpoint: base, APIKey: "k", Config: Config{Retry: providertest.Retrying}})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, []string{"azure: HTTP 501: ", "does not look like Azure OpenAI's API", "AZURE_OPENAI_ENDPOINT"}},
		{"azure, 404", 404, func(t *testing.T, base string) *Client {
			c, err := NewAzure(AzureConfig{Endpoint: base, APIKey: "k", Config: Config{Retry: providertest.Retrying}})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, []string{"azure: HTTP 404: ", "does not look like Azure OpenAI's API: POST /openai/v1/responses answered", "AZURE_OPENAI_ENDPOINT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, hits := providertest.ForeignServer(t, tt.status)
			err := providertest.OneTurn(tt.client(t, base), "gpt-5.2")
			providertest.CheckNotAPI(t, err, hits, tt.want)
		})
	}
}

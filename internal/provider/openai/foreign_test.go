package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestForeignJSON: a router's JSON 404 is not the API on the Responses
// wire and Azure's; an error body in another shape says its message.
func TestForeignJSON(t *testing.T) {
	openai := func(t *testing.T, base string) *Client {
		return New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: providertest.Retrying})
	}
	azure := func(t *testing.T, base string) *Client {
		c, err := NewAzure(AzureConfig{Endpoint: base, APIKey: "k", Config: Config{Retry: providertest.Retrying}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name   string
		client func(*testing.T, string) *Client
		status int
		body   string
		kind   provider.ErrorKind
		want   []string
	}{
		{"responses, FastAPI's 404", openai, 404, providertest.Router404s["fastapi"], provider.ErrNotAPI,
			[]string{"responses: HTTP 404: the server at ", "does not look like OpenAI's Responses API", "OPENAI_BASE_URL"}},
		{"responses, llama.cpp's 404", openai, 404, providertest.Router404s["llama.cpp"], provider.ErrNotAPI, []string{"does not look like"}},
		{"azure, FastAPI's 404", azure, 404, providertest.Router404s["fastapi"], provider.ErrNotAPI,
			[]string{"azure: HTTP 404: ", "does not look like Azure OpenAI's API", "AZURE_OPENAI_ENDPOINT"}},
		{"azure, a string 404", azure, 404, providertest.Router404s["string"], provider.ErrNotAPI, []string{"does not look like"}},
		{"azure's deployment 404 is the API's", azure, 404, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`,
			provider.ErrNotFound, []string{"azure: HTTP 404: The API deployment"}},
		{"responses, vLLM's 400", openai, 400, `{"object":"error","message":"bad tool choice","type":"BadRequestError","code":400}`, provider.ErrBadRequest,
			[]string{"responses: HTTP 400: bad tool choice"}},
		{"responses, a string error", openai, 400, `{"error":"no such model"}`, provider.ErrBadRequest, []string{"responses: HTTP 400: no such model"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, hits := providertest.JSONServer(t, tt.status, tt.body)
			err := providertest.OneTurn(tt.client(t, base), "gpt-5.2")
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

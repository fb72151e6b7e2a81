package chatcompat

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestModelsRouter404: a model list asked of a base URL without /v1 (a
// router's JSON 404: vLLM's FastAPI, llama.cpp) names the variable to
// check first, the missing list as the other cause, and what was asked
// once; the API's own 404 says the server has none.
func TestModelsRouter404(t *testing.T) {
	for _, tc := range []struct {
		name, body  string
		want        []string
		unsupported bool
	}{
		{"fastapi", providertest.Router404s["fastapi"], []string{"chat: HTTP 404: the server at ", "does not look like an OpenAI-compatible API: GET /models answered 404 Not Found", "(is OPENAI_BASE_URL the server's /v1 address?), or the server has no model list"}, true},
		{"llama.cpp", providertest.Router404s["llama.cpp"], []string{"does not look like an OpenAI-compatible API", "(is OPENAI_BASE_URL the server's /v1 address?), or the server"}, true},
		{"the API's own 404", `{"error":{"message":"Unknown request URL.","type":"invalid_request_error"}}`, []string{"Unknown request URL", "the server has no model list"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := providertest.JSONServer(t, 404, tc.body)
			_, err := New(Config{BaseURL: base, APIKey: "k", HTTP: provider.HeaderClient(nil)}).Models(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, provider.ErrNotSupported); got != tc.unsupported {
				t.Errorf("error %v: not supported %v, want %v", err, got, tc.unsupported)
			}
			if strings.Count(err.Error(), "/models") != 1 {
				t.Errorf("error %v says what was asked more than once", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not hold %q", err, w)
				}
			}
		})
	}
}

package anthropic

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestRedirect: a base URL that redirects is one error saying where to,
// not followed and not retried.
func TestRedirect(t *testing.T) {
	srv := httptest.NewServer(http.RedirectHandler("https://api.example/v1/messages", http.StatusFound))
	defer srv.Close()
	err := providertest.OneTurn(New(Config{BaseURL: srv.URL, APIKey: "k", Retry: providertest.Retrying, HTTP: provider.HeaderClient(http.Header{"X-T": {"1"}})}), "claude-sonnet-4-5")
	if !provider.Unreached(err) || !strings.Contains(err.Error(), "anthropic: HTTP 302: the server at "+srv.URL+" redirects POST /v1/messages to https://api.example/v1/messages (302 Found)") ||
		!strings.Contains(err.Error(), "ANTHROPIC_BASE_URL") {
		t.Fatalf("error %v", err)
	}
}

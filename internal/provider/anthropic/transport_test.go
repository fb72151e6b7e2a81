package anthropic

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/oauth2"

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

// TestRegionHint: an unreachable platform's hint names the setting the
// region came from, else the platform's variable.
func TestRegionHint(t *testing.T) {
	token := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"bedrock, --region", Config{Bedrock: &Bedrock{Region: "us-east", Token: "t", RegionFrom: "--region"}}, "check the network, --region or ANTHROPIC_BEDROCK_BASE_URL"},
		{"bedrock, the variable", Config{Bedrock: &Bedrock{Region: "us-east-1", Token: "t"}}, "check the network, AWS_REGION or ANTHROPIC_BEDROCK_BASE_URL"},
		{"vertex, --region", Config{Vertex: &Vertex{Region: "us-east-5", Project: "p", Token: token, RegionFrom: "--region"}}, "check the network, --region or ANTHROPIC_VERTEX_BASE_URL"},
		{"vertex, GOOGLE_CLOUD_LOCATION", Config{Vertex: &Vertex{Region: "us-east5", Project: "p", Token: token, RegionFrom: "GOOGLE_CLOUD_LOCATION"}}, "check the network, GOOGLE_CLOUD_LOCATION or ANTHROPIC_VERTEX_BASE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.BaseURL, cfg.Retry = providertest.ClosedURL(t), provider.RetryPolicy{MaxAttempts: 1}
			err := providertest.OneTurn(New(cfg), "anthropic.claude-sonnet-4-5-20250929-v1:0")
			if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
				t.Errorf("error %v, want one ending %q", err, tc.want)
			}
		})
	}
}

package anthropic

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestVertexTokenErrors: when the credentials give no access token, the
// turn fails before any request to Vertex AI with one line that names the
// provider, says what the token endpoint answered (its OAuth error, or its
// status and first line, never oauth2's quote of its whole answer) and,
// when it refused the credentials, how to renew them, as vertex-gemini's.
func TestVertexTokenErrors(t *testing.T) {
	endpoint := func(status int, contentType, body string) string {
		return providertest.TokenEndpoint(t, status, contentType, body)
	}
	const renew = "gcloud auth application-default login"
	for _, tc := range []struct {
		name     string
		tokenURL string
		want     []string
		not      []string
	}{
		{name: "refused", tokenURL: endpoint(http.StatusBadRequest, "application/json",
			`{"error":"invalid_grant","error_description":"Token has been expired or revoked."}`),
			want: []string{"vertex: cannot get a Google access token from the application-default credentials: the token endpoint refused them: invalid_grant (Token has been expired or revoked.)", renew},
			not:  []string{`oauth2: "invalid_grant"`}},
		{name: "not an OAuth answer", tokenURL: endpoint(http.StatusNotImplemented, "text/html", "<!DOCTYPE HTML>\n<html><body>Error code: 501</body></html>\n"),
			want: []string{`the token endpoint answered 501 Not Implemented: "<!DOCTYPE HTML>"`},
			not:  []string{"<body>", renew}},
		{name: "unreachable", tokenURL: providertest.ClosedURL(t),
			want: []string{"connection refused"}, not: []string{renew}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, hits := providertest.ForeignServer(t, http.StatusNotFound)
			ts := (&oauth2.Config{ClientID: "id", ClientSecret: "secret", Endpoint: oauth2.Endpoint{TokenURL: tc.tokenURL}}).
				TokenSource(context.Background(), &oauth2.Token{RefreshToken: "1//rt"})
			err := providertest.OneTurn(New(Config{BaseURL: api, Retry: provider.RetryPolicy{MaxAttempts: 1},
				Vertex: &Vertex{Region: "us-east5", Project: "p", Token: ts}}), "claude-sonnet-4-5")
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != provider.ErrAuth {
				t.Fatalf("error %v, want an auth error", err)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("%d requests to the API, want none", n)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not hold %q", err, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q holds %q", err, w)
				}
			}
		})
	}
}

package gemini

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestTokenErrors: when the credentials give no access token, the turn
// fails before any request to the API with one line that names the
// provider, says what the token endpoint answered (its OAuth error, or its
// status and first line, never its whole page) and, when it refused the
// credentials (an OAuth error, a 400 or a 401), how to renew them.
func TestTokenErrors(t *testing.T) {
	endpoint := func(status int, contentType, body string) string {
		return providertest.TokenEndpoint(t, status, contentType, body)
	}
	page := "<!DOCTYPE HTML>\n<html>\n<head><title>Error response</title></head>\n<body>\n<h1>Error response</h1>\n<p>Error code: 501</p>\n</body>\n</html>\n"
	const renew = "gcloud auth application-default login"
	for _, tc := range []struct {
		name     string
		tokenURL string
		want     []string
		not      []string
	}{
		{name: "refused", tokenURL: endpoint(http.StatusBadRequest, "application/json",
			`{"error":"invalid_grant","error_description":"Token has been expired or revoked."}`),
			want: []string{"the token endpoint refused them: invalid_grant (Token has been expired or revoked.)", renew}},
		{name: "not an OAuth answer", tokenURL: endpoint(http.StatusNotImplemented, "text/html", page),
			want: []string{`the token endpoint answered 501 Not Implemented: "<!DOCTYPE HTML>"`},
			not:  []string{"<body>", "Error code", renew}},
		{name: "refused without OAuth's error", tokenURL: endpoint(http.StatusUnauthorized, "text/plain", "\nUnauthorized\n"),
			want: []string{`the token endpoint answered 401 Unauthorized: "Unauthorized"`, renew}},
		{name: "unreachable", tokenURL: providertest.ClosedURL(t),
			want: []string{"connection refused"}, not: []string{renew}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
			defer api.Close()
			ts := (&oauth2.Config{ClientID: "id", ClientSecret: "secret", Endpoint: oauth2.Endpoint{TokenURL: tc.tokenURL}}).
				TokenSource(context.Background(), &oauth2.Token{RefreshToken: "1//rt"})
			c := New(Config{BaseURL: api.URL, Path: "/" + VertexAPIVersion + "/projects/p/locations/l/publishers/google/models/%s",
				Token: ts, Label: "vertex-gemini", Retry: provider.RetryPolicy{MaxAttempts: 1}})
			_, err := c.Turn(context.Background(), &model.Request{Model: "gemini-2.5-flash", Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil)
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != provider.ErrAuth {
				t.Fatalf("err = %v, want an auth error", err)
			}
			msg := err.Error()
			want := append([]string{"vertex-gemini: cannot get a Google access token from the application-default credentials: "}, tc.want...)
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not say %q", msg, w)
				}
			}
			for _, n := range append([]string{"\n"}, tc.not...) {
				if strings.Contains(msg, n) {
					t.Errorf("%q holds %q", msg, n)
				}
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("the API got %d requests without a token", n)
			}
		})
	}
}

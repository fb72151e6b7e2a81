package chatcompat

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestTransportMistakes: an https:// address of a plain-HTTP server, and
// a base URL that redirects, are each one error that says what to change,
// not retried, and not taken for contact with the model.
func TestTransportMistakes(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		if strings.HasPrefix(r.URL.Path, "/old/") {
			http.Redirect(w, r, "https://new.example/v1/chat/completions", http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!DOCTYPE html><html>landed</html>")
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, base string
		want       []string
	}{
		{"https to plain HTTP", "https://" + strings.TrimPrefix(srv.URL, "http://") + "/v1",
			[]string{"chat: cannot reach the server", "the server speaks plain HTTP: use http:// in its address"}},
		{"a redirect", srv.URL + "/old/v1",
			[]string{"chat: HTTP 301: the server at " + srv.URL + " redirects POST /old/v1/chat/completions to https://new.example/v1/chat/completions (301 Moved Permanently): set the address to where it redirects", "OPENAI_BASE_URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			var retries int
			p := providertest.Retrying
			p.Contact = &provider.Contact{}
			p.OnRetry = func(int, time.Duration, error) { retries++ }
			// The harness's client: redirects are answered, not followed.
			err := providertest.OneTurn(New(Config{BaseURL: tc.base, APIKey: "k", Retry: p, HTTP: provider.HeaderClient(http.Header{"X-T": {"1"}})}), "m")
			var pe *provider.Error
			if !errors.As(err, &pe) || retries != 0 || !provider.Unreached(err) {
				t.Fatalf("error %v (%d retries), want one that reached no model", err, retries)
			}
			if hits.Load() > 1 {
				t.Errorf("%d requests reached the handler, want at most 1", hits.Load())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not hold %q", err, w)
				}
			}
		})
	}
}

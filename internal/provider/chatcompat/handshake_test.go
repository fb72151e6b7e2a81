package chatcompat

import (
	"net/http"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestPlainHTTPS: an https:// base URL of a plain-HTTP server that closes
// the handshake (Go reports a bare EOF) is one unretried "cannot reach"
// error saying to use http://.
// The harness's client and an adapter's default take the same path.
func TestPlainHTTPS(t *testing.T) {
	for name, hc := range map[string]*http.Client{"the harness's client": provider.HeaderClient(nil), "the default client": nil} {
		t.Run(name, func(t *testing.T) {
			providertest.CheckPlainHTTPS(t, func(base string, retry provider.RetryPolicy) error {
				return providertest.OneTurn(New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: retry, HTTP: hc}), "m")
			}, "chat: ", "OPENAI_BASE_URL")
		})
	}
}

// TestPlainToTLS: an http:// base URL of a TLS server (nginx's 400, Go's,
// a reset connection) is one unretried error saying to use https://.
func TestPlainToTLS(t *testing.T) {
	providertest.CheckPlainToTLS(t, func(base string, retry provider.RetryPolicy) error {
		return providertest.OneTurn(New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: retry}), "m")
	}, "chat: ", "(check OPENAI_BASE_URL)")
}

package openai

import (
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestPlainHTTPS: an https:// base URL of a plain-HTTP server that closes
// the handshake is one unretried "cannot reach" error saying to use
// http://.
func TestPlainHTTPS(t *testing.T) {
	providertest.CheckPlainHTTPS(t, func(base string, retry provider.RetryPolicy) error {
		return providertest.OneTurn(New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: retry, HTTP: provider.HeaderClient(nil)}), "gpt-5.2")
	}, "OPENAI_BASE_URL")
}

// TestPlainToTLS: an http:// base URL of a TLS server (nginx's 400, Go's,
// a reset connection) is one unretried error saying to use https://.
func TestPlainToTLS(t *testing.T) {
	providertest.CheckPlainToTLS(t, func(base string, retry provider.RetryPolicy) error {
		return providertest.OneTurn(New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: retry, HTTP: provider.HeaderClient(nil)}), "gpt-5.2")
	}, "OPENAI_BASE_URL")
}

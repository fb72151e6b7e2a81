package ollama

import (
	"net/http"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestPlainHTTPS: an OLLAMA_HOST of https:// for an Ollama speaking plain
// HTTP, which closes the handshake, is one unretried "cannot reach" error
// saying to use http://.
// The harness's client and an adapter's default take the same path.
func TestPlainHTTPS(t *testing.T) {
	for name, hc := range map[string]*http.Client{"the harness's client": provider.HeaderClient(nil), "the default client": nil} {
		t.Run(name, func(t *testing.T) {
			providertest.CheckPlainHTTPS(t, func(base string, retry provider.RetryPolicy) error {
				return providertest.OneTurn(&Client{Host: base, Retry: retry, HTTP: hc}, "qwen3:8b")
			}, "cannot reach Ollama at https://")
		})
	}
}

// TestPlainToTLS: an OLLAMA_HOST of http:// for a TLS server (nginx's
// 400, Go's, a reset connection) is one unretried error saying to use
// https://.
func TestPlainToTLS(t *testing.T) {
	providertest.CheckPlainToTLS(t, func(base string, retry provider.RetryPolicy) error {
		return providertest.OneTurn(&Client{Host: base, Retry: retry}, "qwen3:8b")
	}, "ollama: ", "OLLAMA_HOST")
}

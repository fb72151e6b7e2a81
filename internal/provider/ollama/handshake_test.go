package ollama

import (
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestPlainHTTPS: an OLLAMA_HOST of https:// for an Ollama speaking plain
// HTTP, which closes the handshake, is one unretried "cannot reach" error
// saying to use http://.
func TestPlainHTTPS(t *testing.T) {
	providertest.CheckPlainHTTPS(t, func(base string, retry provider.RetryPolicy) error {
		return providertest.OneTurn(&Client{Host: base, Retry: retry, HTTP: provider.HeaderClient(nil)}, "qwen3:8b")
	}, "cannot reach Ollama at https://")
}

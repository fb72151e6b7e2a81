package chatcompat

import (
	"testing"

	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestNotStream: a 200 that is no event stream (a gateway's whole
// answer, a health check, text, nothing) is one error, not a stream cut
// short and retried.
func TestNotStream(t *testing.T) {
	providertest.CheckNotStream(t, providertest.WholeChat, func(base string) error {
		return providertest.OneTurn(New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: providertest.Retrying}), "m")
	})
}

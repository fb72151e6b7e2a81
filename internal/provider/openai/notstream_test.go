package openai

import (
	"testing"

	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestNotStream: a 200 that is no event stream (a gateway's whole
// answer, a health check, text, nothing) is one error, not a stream cut
// short and retried, on OpenAI's route and on Azure's.
func TestNotStream(t *testing.T) {
	t.Run("openai", func(t *testing.T) {
		providertest.CheckNotStream(t, providertest.WholeResponses, func(base string) error {
			return providertest.OneTurn(New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: providertest.Retrying}), "gpt-5.2")
		})
	})
	t.Run("azure", func(t *testing.T) {
		providertest.CheckNotStream(t, providertest.WholeChat, func(base string) error {
			c, err := NewAzure(AzureConfig{Endpoint: base, APIKey: "k", Config: Config{Retry: providertest.Retrying}})
			if err != nil {
				return err
			}
			return providertest.OneTurn(c, "gpt-5.2")
		})
	})
}

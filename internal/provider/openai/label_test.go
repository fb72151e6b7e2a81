package openai

import (
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// TestErrorsNameTheProvider: a turn's error starts with the provider the
// user chose (the label), not the dialect's name, and says what to check:
// where the server's address is set when it cannot be reached, where the
// key is when the server refuses it. Without a label the adapter's own
// name and words are kept.
func TestErrorsNameTheProvider(t *testing.T) {
	once := provider.RetryPolicy{MaxAttempts: 1}
	_, base := simtest.Serve(t, `{"steps": [{"say": "x"}]}`, "sim")
	closed := providertest.ClosedURL(t)
	reach, key := providertest.ReachHint, providertest.KeyHint
	providertest.CheckErrorLabels(t, []providertest.LabelCase{
		{Name: "wrong key", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: base + "/v1", APIKey: "wrong", Retry: once, Label: "corp", ReachHint: reach, KeyHint: key}), "sim-gpt")
		}, Kind: provider.ErrAuth, Want: []string{"corp: ", "HTTP 401", "; " + key}},
		{Name: "wrong key, no label", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: base + "/v1", APIKey: "wrong", Retry: once}), "sim-gpt")
		}, Kind: provider.ErrAuth, Want: []string{"responses: ", "HTTP 401"}},
		{Name: "unreachable", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: closed + "/v1", APIKey: "k", Retry: once, Label: "corp", ReachHint: reach}), "sim-gpt")
		}, Kind: provider.ErrUnreachable, Want: []string{"corp: ", "; " + reach}},
		{Name: "unreachable, no label", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: closed + "/v1", APIKey: "k", Retry: once}), "sim-gpt")
		}, Kind: provider.ErrUnreachable, Want: []string{"responses: ", "check the network or OPENAI_BASE_URL"}},
		{Name: "azure, no label", Turn: func() error {
			c, err := NewAzure(AzureConfig{Endpoint: closed, APIKey: "k", Config: Config{Retry: once}})
			if err != nil {
				return err
			}
			return providertest.OneTurn(c, "sim-gpt")
		}, Kind: provider.ErrUnreachable, Want: []string{"azure: ", "the Azure endpoint"}},
		{Name: "azure", Turn: func() error {
			c, err := NewAzure(AzureConfig{Endpoint: closed, APIKey: "k", Config: Config{Retry: once, Label: "corp", ReachHint: reach}})
			if err != nil {
				return err
			}
			return providertest.OneTurn(c, "sim-gpt")
		}, Kind: provider.ErrUnreachable, Want: []string{"corp: ", "; " + reach}},
	})
}

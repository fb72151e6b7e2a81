package gemini

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
			return providertest.OneTurn(New(Config{BaseURL: base, APIKey: "wrong", Retry: once, Label: "corp", ReachHint: reach, KeyHint: key}), "sim-gemini")
		}, Kind: provider.ErrAuth, Want: []string{"corp: ", "API key not valid", "; " + key}},
		{Name: "wrong key, no label", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: base, APIKey: "wrong", Retry: once}), "sim-gemini")
		}, Kind: provider.ErrAuth, Want: []string{"gemini: "}},
		{Name: "unreachable", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: closed, APIKey: "k", Retry: once, Label: "corp", ReachHint: reach}), "sim-gemini")
		}, Kind: provider.ErrUnreachable, Want: []string{"corp: ", "; " + reach}},
		{Name: "unreachable, no label", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: closed, APIKey: "k", Retry: once}), "sim-gemini")
		}, Kind: provider.ErrUnreachable, Want: []string{"gemini: ", "check the base URL"}},
		{Name: "not the API", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: base + "/elsewhere", APIKey: "sim", Retry: once, Label: "corp", ReachHint: reach}), "sim-gemini")
		}, Kind: provider.ErrNotAPI, Want: []string{"corp: ", "does not look like the Gemini API", reach}},
	})
}

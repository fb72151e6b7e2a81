package anthropic

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
			return providertest.OneTurn(New(Config{BaseURL: base, APIKey: "wrong", Retry: once, Label: "corp", ReachHint: reach, KeyHint: key}), "sim-claude")
		}, Kind: provider.ErrAuth, Want: []string{"corp: ", "HTTP 401", "; " + key}},
		{Name: "wrong key, no label", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: base, APIKey: "wrong", Retry: once}), "sim-claude")
		}, Kind: provider.ErrAuth, Want: []string{"anthropic: ", "HTTP 401"}},
		{Name: "unreachable", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: closed, APIKey: "k", Retry: once, Label: "corp", ReachHint: reach, KeyHint: key}), "sim-claude")
		}, Kind: provider.ErrUnreachable, Want: []string{"corp: ", "cannot reach the server", "; " + reach}},
		{Name: "unreachable, no label", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: closed, APIKey: "k", Retry: once}), "sim-claude")
		}, Kind: provider.ErrUnreachable, Want: []string{"anthropic: ", "check the network or ANTHROPIC_BASE_URL"}},
		{Name: "bedrock, no label", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: closed, Retry: once, Bedrock: &Bedrock{Region: "us-east-1", Token: "t"}}), "anthropic.sim-claude-v1:0")
		}, Kind: provider.ErrUnreachable, Want: []string{"bedrock: ", "cannot reach Amazon Bedrock", "AWS_REGION"}},
		{Name: "bedrock, a named route", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: closed, Retry: once, Bedrock: &Bedrock{Region: "us-east-1", Token: "t"}, Label: "corp", ReachHint: reach}), "anthropic.sim-claude-v1:0")
		}, Kind: provider.ErrUnreachable, Want: []string{"corp: ", "; " + reach}},
		{Name: "bedrock's own refusal says its name once", Turn: func() error {
			return providertest.OneTurn(New(Config{BaseURL: closed, Retry: once, Bedrock: &Bedrock{Token: "t"}}), "anthropic.sim-claude-v1:0")
		}, Kind: provider.ErrProtocol, Want: []string{"bedrock: ", "a region is needed"}},
	})
}

package gemini

import (
	"context"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestModelsMasked: a key the server echoes in the model list's error is
// hidden, as in a turn's.
func TestModelsMasked(t *testing.T) {
	providertest.CheckListMasked(t, 400, `{"error":{"code":400,"message":"API key not valid: KEY","status":"INVALID_ARGUMENT"}}`,
		func(base string, retry provider.RetryPolicy) error {
			_, err := New(Config{BaseURL: base, APIKey: providertest.EchoKey, Retry: retry}).Models(context.Background())
			return err
		})
}

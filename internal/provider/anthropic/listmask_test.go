package anthropic

import (
	"context"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestModelsMasked: a key the server echoes in the model list's error is
// hidden, as in a turn's.
func TestModelsMasked(t *testing.T) {
	providertest.CheckListMasked(t, 401, `{"type":"error","error":{"type":"authentication_error","message":"the token KEY is not valid"}}`,
		func(base string, retry provider.RetryPolicy) error {
			_, err := New(Config{BaseURL: base, APIKey: providertest.EchoKey, Retry: retry}).Models(context.Background())
			return err
		})
}

package openai

import (
	"context"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestModelsMasked: a key the server echoes in the model list's error is
// hidden, as in a turn's.
func TestModelsMasked(t *testing.T) {
	providertest.CheckListMasked(t, 401, `{"error":{"message":"the token KEY is not valid","type":"invalid_request_error","code":"invalid_api_key"}}`,
		func(base string, retry provider.RetryPolicy) error {
			_, err := New(Config{BaseURL: base + "/v1", APIKey: providertest.EchoKey, Retry: retry}).Models(context.Background())
			return err
		})
}

package chatcompat

import (
	"context"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestModelsMasked: a key the server echoes in the model list's error is
// hidden, as in a turn's, in OpenAI's error shape and in a string error.
func TestModelsMasked(t *testing.T) {
	for name, body := range map[string]string{
		"openai":       `{"error":{"message":"the token KEY is not valid","type":"invalid_request_error"}}`,
		"string error": `{"error":"the token KEY is not valid"}`,
	} {
		t.Run(name, func(t *testing.T) {
			providertest.CheckListMasked(t, 401, body, func(base string, retry provider.RetryPolicy) error {
				_, err := New(Config{BaseURL: base + "/v1", APIKey: providertest.EchoKey, Retry: retry}).Models(context.Background())
				return err
			})
		})
	}
}

package ollama

import (
	"context"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestListsMasked: a key the server (Ollama behind a proxy that checks
// it) echoes is hidden in the model list's error and in the context
// probe's, as in a turn's.
func TestListsMasked(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(*Client) error
	}{
		{"models", func(c *Client) error { _, err := c.Models(context.Background()); return err }},
		{"context probe", func(c *Client) error { _, err := c.ContextLength(context.Background(), "qwen3:8b"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			providertest.CheckListMasked(t, 401, `{"error":"the token KEY is not valid"}`, func(base string, retry provider.RetryPolicy) error {
				return tc.call(&Client{Host: base, APIKey: providertest.EchoKey, Retry: retry})
			})
		})
	}
}

package ollama

import (
	"testing"

	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestNotStream: a 200 that is no NDJSON stream of Ollama's chunks (a
// health check, text, nothing, another API's whole answer) is one error,
// not a stream cut short and retried. Ollama's own whole answer (stream:
// false) is its final chunk, which is read as a stream of one.
func TestNotStream(t *testing.T) {
	whole := `{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"Hello."},"done":true,"done_reason":"stop"}`
	base, hits := providertest.JSONServer(t, 200, whole)
	if err := providertest.OneTurn(&Client{Host: base, Retry: providertest.Retrying}, "m"); err != nil || hits.Load() != 1 {
		t.Fatalf("Ollama's whole answer: %v after %d requests", err, hits.Load())
	}
	for _, tc := range []struct{ name, contentType, body, want string }{
		{"another API's whole answer", "application/json", providertest.WholeChat, `answered 200 OK: "{\"id\":\"chatcmpl-1\"`},
		{"a health check's JSON", "application/json", `{"status":"ok"}`, `answered 200 OK: "{\"status\":\"ok\"}"`},
		{"plain text", "text/plain", "OK\n", `answered 200 OK: "OK"`},
		{"an empty body", "", "", "answered 200 OK with an empty body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, hits := providertest.TypedServer(t, 200, tc.contentType, tc.body)
			err := providertest.OneTurn(&Client{Host: base, Retry: providertest.Retrying}, "m")
			providertest.CheckNotAPI(t, err, hits, []string{"does not look like Ollama", tc.want})
		})
	}
}

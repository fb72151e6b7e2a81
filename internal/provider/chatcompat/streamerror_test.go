package chatcompat

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestStreamErrorCode: an error event in the middle of a 200 stream (as
// OpenRouter sends one) shows its message alone, and a code that is an
// HTTP status is classified as that status: 402 and 401 are not
// retried, 502 and an event without a code are.
func TestStreamErrorCode(t *testing.T) {
	for _, tc := range []struct {
		name, event string
		kind        provider.ErrorKind
		hits        int32
		want        string
	}{
		{"no credit", `{"id":"gen-1","object":"chat.completion.chunk","error":{"code":402,"message":"Insufficient credits"},"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}`,
			provider.ErrBadRequest, 1, "chat: error in the middle of the stream: Insufficient credits (code 402)"},
		{"a refused key", `{"error":{"code":"401","message":"No auth credentials found"}}`, provider.ErrAuth, 1, "No auth credentials found (code 401)"},
		{"an upstream failure", `{"error":{"code":502,"message":"Provider returned error"}}`, provider.ErrServer, 4, "Provider returned error (code 502)"},
		{"no code", `{"error":{"message":"overloaded, try again"}}`, provider.ErrStream, 4, "chat: error in the middle of the stream: overloaded, try again"},
		{"a string", `{"error":"model crashed"}`, provider.ErrStream, 4, "chat: error in the middle of the stream: model crashed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits := new(atomic.Int32)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, `data: {"id":"gen-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`+"\n\n")
				io.WriteString(w, "data: "+tc.event+"\n\n")
			}))
			defer srv.Close()
			err := providertest.OneTurn(New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Retry: providertest.Retrying}), "m")
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != tc.kind {
				t.Fatalf("error %v, want a %s", err, tc.kind)
			}
			if n := hits.Load(); n != tc.hits {
				t.Errorf("%d requests, want %d", n, tc.hits)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "received error while streaming") {
				t.Errorf("error %q, want %q alone", err, tc.want)
			}
		})
	}
}

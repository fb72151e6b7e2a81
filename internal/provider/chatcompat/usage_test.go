package chatcompat

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestUsageSplitsTheCache: Chat Completions' prompt_tokens holds the
// cached ones; the turn's usage has them as cache reads beside the
// uncached rest (model.Usage's split), so Input is prompt_tokens again.
func TestUsageSplitsTheCache(t *testing.T) {
	for _, tc := range []struct {
		name, usage string
		want        model.Usage
	}{
		{"cached", `{"prompt_tokens":2332,"completion_tokens":33,"total_tokens":2365,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":5}}`,
			model.Usage{InputTokens: 1308, CacheReadTokens: 1024, OutputTokens: 33, ReasoningTokens: 5}},
		{"no details", `{"prompt_tokens":900,"completion_tokens":7,"total_tokens":907}`, model.Usage{InputTokens: 900, OutputTokens: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]}`+"\n\n")
				io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
				io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":`+tc.usage+"}\n\n")
				io.WriteString(w, "data: [DONE]\n\n")
			}))
			defer srv.Close()
			c := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Retry: providertest.Retrying})
			resp, err := c.Turn(context.Background(), &model.Request{Model: "m", Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage != tc.want {
				t.Errorf("usage %+v, want %+v", resp.Usage, tc.want)
			}
		})
	}
}

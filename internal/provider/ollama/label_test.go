package ollama

import (
	"net/http"
	"net/http/httptest"
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
		{Name: "refused key", Turn: func() error {
			// ollama.com's answer to a wrong key; a local server takes none.
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"error":"unauthorized"}`))
			}))
			defer hs.Close()
			return providertest.OneTurn(&Client{Host: hs.URL, APIKey: "wrong", Retry: once, Label: "corp", ReachHint: reach, KeyHint: key}, "sim-coder")
		}, Kind: provider.ErrAuth, Want: []string{"corp: ", "HTTP 401", "; " + key}},
		{Name: "unreachable", Turn: func() error {
			return providertest.OneTurn(&Client{Host: closed, Retry: once, Label: "corp", ReachHint: reach}, "sim-coder")
		}, Kind: provider.ErrUnreachable, Want: []string{"corp: ", "cannot reach Ollama at " + closed, "; " + reach}},
		{Name: "unreachable, no label", Turn: func() error {
			return providertest.OneTurn(&Client{Host: closed, Retry: once}, "sim-coder")
		}, Kind: provider.ErrUnreachable, Want: []string{"ollama: ", "set OLLAMA_HOST"}},
		{Name: "not the API", Turn: func() error {
			return providertest.OneTurn(&Client{Host: base + "/elsewhere", APIKey: "sim", Retry: once, Label: "corp", ReachHint: reach}, "sim-coder")
		}, Kind: provider.ErrNotAPI, Want: []string{"corp: ", "does not look like Ollama", reach}},
	})
}

package gemini

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// closedURL is the address of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestErrorsNameTheProvider: a turn's error starts with the provider the
// user chose (the label), not the dialect's name, and says what to check:
// where the server's address is set when it cannot be reached, where the
// key is when the server refuses it. Without a label the adapter's own
// name and words are kept.
func TestErrorsNameTheProvider(t *testing.T) {
	once := provider.RetryPolicy{MaxAttempts: 1}
	_, base := simtest.Serve(t, `{"steps": [{"say": "x"}]}`, "sim")
	closed := closedURL(t)
	const reach, key = "check base_url of [providers.corp] in /home/u/.config/truss/config.toml", "check CORP_KEY (env_key of [providers.corp] in /home/u/.config/truss/config.toml)"
	for _, tc := range []struct {
		name string
		turn func() error
		kind provider.ErrorKind
		want []string // the error's beginning, then what it holds
	}{
		{"wrong key", func() error {
			return oneTurn(New(Config{BaseURL: base, APIKey: "wrong", Retry: once, Label: "corp", ReachHint: reach, KeyHint: key}), "sim-gemini")
		}, provider.ErrAuth, []string{"corp: ", "API key not valid", "; " + key}},
		{"wrong key, no label", func() error {
			return oneTurn(New(Config{BaseURL: base, APIKey: "wrong", Retry: once}), "sim-gemini")
		}, provider.ErrAuth, []string{"gemini: "}},
		{"unreachable", func() error {
			return oneTurn(New(Config{BaseURL: closed, APIKey: "k", Retry: once, Label: "corp", ReachHint: reach}), "sim-gemini")
		}, provider.ErrUnreachable, []string{"corp: ", "; " + reach}},
		{"unreachable, no label", func() error {
			return oneTurn(New(Config{BaseURL: closed, APIKey: "k", Retry: once}), "sim-gemini")
		}, provider.ErrUnreachable, []string{"gemini: ", "check the base URL"}},
		{"not the API", func() error {
			return oneTurn(New(Config{BaseURL: base + "/elsewhere", APIKey: "sim", Retry: once, Label: "corp", ReachHint: reach}), "sim-gemini")
		}, provider.ErrNotAPI, []string{"corp: ", "does not look like the Gemini API", reach}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.turn()
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != tc.kind {
				t.Fatalf("error %v, want a %s *provider.Error", err, tc.kind)
			}
			if !strings.HasPrefix(err.Error(), tc.want[0]) || strings.HasPrefix(err.Error()[len(tc.want[0]):], tc.want[0]) {
				t.Errorf("error %q does not start with %q once", err, tc.want[0])
			}
			if pe.Provider != strings.TrimSuffix(tc.want[0], ": ") {
				t.Errorf("Provider %q, want %q", pe.Provider, strings.TrimSuffix(tc.want[0], ": "))
			}
			for _, w := range tc.want[1:] {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not hold %q", err, w)
				}
			}
		})
	}
}

// oneTurn runs one turn of p on a one-message conversation.
func oneTurn(p provider.Provider, modelName string) error {
	_, err := p.Turn(context.Background(), &model.Request{Model: modelName, MaxTokens: 100,
		Items: []model.Item{{Kind: model.KindUser, Text: "Hello."}}}, nil)
	return err
}

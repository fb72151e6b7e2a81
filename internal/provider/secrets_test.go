package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestMask(t *testing.T) {
	key := "sk-proj-REALSECRET123456"
	for _, tc := range []struct {
		name, in string
		secrets  []string
		want     string
	}{
		{"the key echoed", "Invalid API key: " + key, []string{key}, "Invalid API key: ***"},
		{"every time", key + " " + key, []string{key}, "*** ***"},
		{"a header value", `bad X-Org-Id orgSECRET9`, []string{"", "orgSECRET9"}, `bad X-Org-Id ***`},
		{"a short value is left", "use a key", []string{"key"}, "use a key"},
		{"an Authorization header", `got Authorization: Bearer tok-abcdef123 from you`, nil, `got Authorization: Bearer *** from you`},
		{"a JSON field", `{"x-api-key":"sk-ant-api03-xyz","model":"m"}`, nil, `{"x-api-key":"***","model":"m"}`},
		{"a JSON field quoted in an error", `"{\"authorization\": \"Bearer abcdefgh\"}"`, nil, `"{\"authorization\": \"Bearer ***\"}"`},
		{"a query key", `GET /v1beta/models?key=AIzaSECRET123 failed`, nil, `GET /v1beta/models?key=*** failed`},
		{"no credential", `HTTP 401: Incorrect API key provided; check OPENAI_API_KEY`, nil, `HTTP 401: Incorrect API key provided; check OPENAI_API_KEY`},
		{"a word ending in key", `monkey: bananas`, nil, `monkey: bananas`},
	} {
		if got := Mask(tc.in, tc.secrets); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRetryPolicyMasks: the key a server echoes in its error is masked
// in the error that is retried (OnRetry) and in the one returned, whose
// kind is kept.
func TestRetryPolicyMasks(t *testing.T) {
	key := "sk-proj-REALSECRET123456"
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"a provider error", &Error{Provider: "openai", Kind: ErrServer, Status: 500, Message: "Invalid API key: " + key,
			Err: fmt.Errorf("POST: 500 %s", key)}},
		{"another error", fmt.Errorf("decoding %q: %w", key, errors.ErrUnsupported)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var retried []string
			p := RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, MaxAttempts: 2, Secrets: []string{key},
				OnRetry: func(_ int, _ time.Duration, err error) { retried = append(retried, err.Error()) }}
			_, err := p.Do(context.Background(), func(int) error { return tc.err })
			for _, s := range append(retried, err.Error()) {
				if strings.Contains(s, key) || !strings.Contains(s, "***") {
					t.Errorf("error %q", s)
				}
			}
			if pe := (*Error)(nil); errors.As(err, &pe) {
				if pe.Kind != ErrServer || strings.Contains(pe.Err.Error(), key) {
					t.Errorf("kind %s, cause %v", pe.Kind, pe.Err)
				}
			} else if !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("the masked error lost its cause: %v", err)
			}
		})
	}
}

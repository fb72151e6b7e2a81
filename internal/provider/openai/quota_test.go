package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestInsufficientQuota: OpenAI's 429 for an account without credit is
// its billing, not a rate limit: one error that says so, no retry; a rate
// limit's 429 is still retried.
func TestInsufficientQuota(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		hits       int32
		want       string
	}{
		{"insufficient_quota", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			1, "You exceeded your current quota, please check your plan and billing details.; the account has no credit left: check its plan and billing"},
		{"rate limit", `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, 4, "Rate limit reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, hits := providertest.JSONServer(t, 429, tc.body)
			err := providertest.OneTurn(New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: providertest.Retrying}), "gpt-5.2")
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != provider.ErrRateLimited || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a rate_limited one with %q", err, tc.want)
			}
			if n := hits.Load(); n != tc.hits {
				t.Errorf("%d requests, want %d", n, tc.hits)
			}
		})
	}
}

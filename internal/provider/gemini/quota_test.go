package gemini

import (
	"errors"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestDailyQuota: a RESOURCE_EXHAUSTED whose quota is a day's is not
// retried (its RetryInfo's seconds would not bring it back) and says
// which quota is spent; a per-minute one is retried.
func TestDailyQuota(t *testing.T) {
	body := func(quotaID string) string {
		return `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[` +
			`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"` + quotaID + `","quotaDimensions":{"location":"global","model":"gemini-2.5-pro"},"quotaValue":"50"}]},` +
			`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.001s"}]}}`
	}
	for _, tc := range []struct {
		name, quota string
		hits        int32
		want        string
	}{
		{"per day", "GenerateRequestsPerDayPerProjectPerModel-FreeTier", 1,
			"the daily quota GenerateRequestsPerDayPerProjectPerModel-FreeTier (50 for gemini-2.5-pro) is spent"},
		{"per minute", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", 4, "You exceeded your current quota."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, hits := providertest.JSONServer(t, 429, body(tc.quota))
			err := providertest.OneTurn(New(Config{BaseURL: base, APIKey: "k", Retry: providertest.Retrying}), "gemini-2.5-pro")
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

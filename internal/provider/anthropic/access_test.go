package anthropic

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestBedrockModelAccess: Bedrock's AccessDeniedException for a model the
// account was not given says where to request it, in the region; another
// 403 says which credentials were sent.
func TestBedrockModelAccess(t *testing.T) {
	for _, tc := range []struct {
		name, exc, msg, want string
	}{
		{"no model access", "AccessDeniedException", "You don't have access to the model with the specified model ID.",
			"bedrock: HTTP 403: AccessDeniedException: You don't have access to the model with the specified model ID.; the account has no access to this model in the region: request it on the Bedrock console's Model access page (region eu-west-3)"},
		{"an inference profile needed", "ValidationException", "Invocation of model ID anthropic.claude-sonnet-4-5-20250929-v1:0 with on-demand throughput isn't supported. Retry your request with the ID or ARN of an inference profile that contains this model.",
			"bedrock: HTTP 400: ValidationException: Invocation of model ID anthropic.claude-sonnet-4-5-20250929-v1:0 with on-demand throughput isn't supported. Retry your request with the ID or ARN of an inference profile that contains this model.; PROFILEHINT"},
		{"a stale token", "UnrecognizedClientException", "The security token included in the request is invalid.",
			"bedrock: HTTP 403: UnrecognizedClientException: The security token included in the request is invalid.; the credential sent was the API key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Amzn-Errortype", tc.exc+":http://internal.amazon.com/coral/com.amazon.bedrock/")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(map[bool]int{true: http.StatusBadRequest, false: http.StatusForbidden}[tc.exc == "ValidationException"])
				w.Write([]byte(`{"message":"` + tc.msg + `"}`))
			}))
			defer srv.Close()
			err := providertest.OneTurn(New(Config{BaseURL: srv.URL, Retry: provider.RetryPolicy{MaxAttempts: 1}, KeyHint: "the credential sent was the API key",
				Bedrock: &Bedrock{Region: "eu-west-3", Token: "ABSKstale", ProfileHint: "PROFILEHINT"}}), "eu.anthropic.claude-sonnet-4-5-20250929-v1:0")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

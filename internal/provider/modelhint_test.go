package provider

import (
	"context"
	"testing"
)

// TestModelHint: a 404 about the model gets the policy's ModelHint once;
// another 404, Azure's deployment 404 and other errors do not.
func TestModelHint(t *testing.T) {
	const hint = "check --model or TRUSS_MODEL (truss models lists the models Truss knows)"
	for _, tc := range []struct {
		name string
		err  *Error
		want string
	}{
		{"anthropic", HTTPError("anthropic", 404, "not_found_error", "not_found_error: model: claude-sonet-4-5", nil, nil),
			"anthropic: HTTP 404: not_found_error: model: claude-sonet-4-5; " + hint},
		{"openai", HTTPError("openai", 404, "model_not_found", "The model `gpt-5.3` does not exist or you do not have access to it.", nil, nil),
			"openai: HTTP 404: The model `gpt-5.3` does not exist or you do not have access to it.; " + hint},
		{"said once", HTTPError("openai", 404, "", "The model x does not exist; "+hint, nil, nil),
			"openai: HTTP 404: The model x does not exist; " + hint},
		{"a route", HTTPError("chat", 404, "", "Not Found", nil, nil), "chat: HTTP 404: Not Found"},
		{"azure's deployment", HTTPError("azure", 404, "DeploymentNotFound", "The API deployment for this resource does not exist (model).", nil, nil),
			"azure: HTTP 404: The API deployment for this resource does not exist (model)."},
		{"a refused key", HTTPError("openai", 401, "", "Incorrect API key for model access", nil, nil), "openai: HTTP 401: Incorrect API key for model access"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RetryPolicy{ModelHint: hint}.Do(context.Background(), func(int) error { return tc.err })
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

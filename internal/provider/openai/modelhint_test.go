package openai

import (
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestModelNotFoundHint: the Responses API's 404 for an unknown model
// says where the model is set and where models are listed, unretried.
func TestModelNotFoundHint(t *testing.T) {
	base, hits := providertest.JSONServer(t, 404, `{"error":{"message":"The model `+"`gpt-5.3`"+` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`)
	p := providertest.Retrying
	p.ModelHint = "check --model or TRUSS_MODEL (truss models lists the models Truss knows)"
	err := providertest.OneTurn(New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: p}), "gpt-5.3")
	if err == nil || !strings.HasSuffix(err.Error(), "does not exist or you do not have access to it.; "+p.ModelHint) {
		t.Errorf("error %v", err)
	}
	if hits.Load() != 1 {
		t.Errorf("%d requests, want 1", hits.Load())
	}
}

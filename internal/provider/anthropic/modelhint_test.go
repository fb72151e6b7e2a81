package anthropic

import (
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestModelNotFoundHint: the Messages API's 404 for an unknown model says
// where the model is set and where models are listed, once, unretried.
func TestModelNotFoundHint(t *testing.T) {
	base, hits := providertest.JSONServer(t, 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-sonet-4-5"},"request_id":"req_1"}`)
	p := providertest.Retrying
	p.ModelHint = "check --model or TRUSS_MODEL (truss models lists the models Truss knows)"
	err := providertest.OneTurn(New(Config{BaseURL: base, APIKey: "k", Retry: p}), "claude-sonet-4-5")
	if err == nil || !strings.HasSuffix(err.Error(), "not_found_error: model: claude-sonet-4-5; "+p.ModelHint) || strings.Count(err.Error(), "truss models") != 1 {
		t.Errorf("error %v", err)
	}
	if hits.Load() != 1 {
		t.Errorf("%d requests, want 1", hits.Load())
	}
}

//go:build apispec

package harness

import (
	"strings"
	"testing"
)

// Built with -tags apispec (as the tests are), the built-in simulated
// model validates requests against the providers' OpenAPI descriptions.
func TestSimSpecWired(t *testing.T) {
	spec := simSpec()
	if spec == nil {
		t.Fatal("no schema check with -tags apispec")
	}
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"hi","bogus":1}]}]}`
	if err := spec.CheckRequest("anthropic", "/v1/messages", []byte(body)); err == nil || !strings.Contains(err.Error(), "messages.0.content.0") {
		t.Errorf("an unknown member of a text block: %v", err)
	}
	ok := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	if err := spec.CheckRequest("anthropic", "/v1/messages", []byte(ok)); err != nil {
		t.Errorf("a valid request: %v", err)
	}
}

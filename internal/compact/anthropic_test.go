package compact

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/apispec"
)

func TestContextManagement(t *testing.T) {
	tests := []struct {
		e    ContextEditing
		want string
	}{
		{ContextEditing{}, `{"edits":[{"type":"clear_tool_uses_20250919"}]}`},
		{DefaultContextEditing(200000, true), `{"edits":[{"clear_at_least":{"type":"input_tokens","value":10000},"exclude_tools":["memory"],"keep":{"type":"tool_uses","value":3},"trigger":{"type":"input_tokens","value":120000},"type":"clear_tool_uses_20250919"}]}`},
		{ContextEditing{TriggerTokens: 5, ClearInputs: true}, `{"edits":[{"clear_tool_inputs":true,"trigger":{"type":"input_tokens","value":5},"type":"clear_tool_uses_20250919"}]}`},
	}
	for _, tc := range tests {
		if got := string(tc.e.ContextManagement()); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.e, got, tc.want)
		}
	}
}

// TestContextManagementSpec: the vendored Messages description accepts
// the field on the beta operation (/v1/messages?beta=true, which the SDK's
// beta client calls) and refuses it on the plain one.
func TestContextManagementSpec(t *testing.T) {
	doc, err := apispec.Anthropic()
	if err != nil {
		t.Fatal(err)
	}
	req := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024,
		"messages":           []any{map[string]any{"role": "user", "content": "hi"}},
		"context_management": DefaultContextEditing(200000, true).ContextManagement()}
	body, _ := json.Marshal(req)
	if err := doc.RequestBody("/v1/messages?beta=true", "POST", body); err != nil {
		t.Errorf("the beta operation refuses context_management: %v", err)
	}
	bad := strings.Replace(string(body), ClearToolUses, "clear_everything", 1)
	if err := doc.RequestBody("/v1/messages?beta=true", "POST", []byte(bad)); err == nil {
		t.Error("the beta operation accepts an unknown edit: the check is vacuous")
	}
	if err := doc.RequestBody("/v1/messages", "POST", body); err == nil || !strings.Contains(err.Error(), "context_management") {
		t.Errorf("the plain operation: %v", err)
	}
}

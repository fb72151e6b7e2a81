package surface_test

import (
	"encoding/json"
	"testing"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/anthropic"
	"github.com/trussdev/truss/internal/surface/codex"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/tool"
)

// TestEscalationParams: the codex and generic shell tools declare Codex's
// sandbox_permissions and justification only in their escalating form,
// decode them in both, and refuse a value Codex does not know.
func TestEscalationParams(t *testing.T) {
	shells := map[string]surface.Binding{"shell_command": codex.ShellCommand{}, "bash": generic.Bash{}}
	for name, plain := range shells {
		esc := surface.OfferEscalation([]surface.Binding{plain})[0]
		if props(t, plain)[surface.ParamSandboxPermissions] || props(t, plain)[surface.ParamJustification] {
			t.Errorf("%s declares the escalation parameters without Escalation", name)
		}
		if p := props(t, esc); !p[surface.ParamSandboxPermissions] || !p[surface.ParamJustification] || !p["command"] {
			t.Errorf("%s (escalating) declares %v", name, p)
		}
		tests := []struct {
			input    string
			escalate bool
			why      string
			err      bool
		}{
			{`{"command":"ls"}`, false, "", false},
			{`{"command":"ls","sandbox_permissions":"use_default","justification":"ignored"}`, false, "", false},
			{`{"command":"curl -sI https://go.dev","sandbox_permissions":"require_escalated","justification":" Do you want to check that go.dev answers? "}`, true, "Do you want to check that go.dev answers?", false},
			{`{"command":"ls","sandbox_permissions":"require_escalated"}`, true, "", false},
			{`{"command":"ls","sandbox_permissions":"with_additional_permissions"}`, false, "", true},
			{`{"command":"ls","sandbox_permissions":true}`, false, "", true},
		}
		for _, b := range []surface.Binding{plain, esc} {
			for _, tc := range tests {
				calls, err := b.Decode(model.ToolCall{ID: "c", Name: name, Input: tc.input})
				if tc.err {
					if tool.KindOf(err) != tool.ErrInvalidInput {
						t.Errorf("%s %s: err %v, want invalid input", name, tc.input, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s %s: %v", name, tc.input, err)
				}
				a := calls[0].Args.(*tool.ExecArgs)
				if a.Escalate != tc.escalate || a.Justification != tc.why {
					t.Errorf("%s %s: escalate %v %q", name, tc.input, a.Escalate, a.Justification)
				}
			}
		}
	}
	// Bindings whose schema the provider fixes have no escalating form.
	if _, ok := any(anthropic.Bash{}).(surface.Escalator); ok {
		t.Error("anthropic bash offers escalation: its schema is Anthropic's")
	}
}

func props(t *testing.T, b surface.Binding) map[string]bool {
	t.Helper()
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(b.Spec().Parameters, &s); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for k := range s.Properties {
		out[k] = true
	}
	return out
}

package surface

import (
	"fmt"
	"strings"

	"github.com/trussdev/truss/internal/tool"
)

// The escalation parameters of a shell tool, named and worded as Codex CLI
// declares them on its shell and shell_command tools: with
// "sandbox_permissions": "require_escalated" the model asks to run one
// command with more than the sandbox allows, and "justification" says why,
// for the person who approves it.
const (
	ParamSandboxPermissions = "sandbox_permissions"
	ParamJustification      = "justification"
	// UseDefault runs the command in the session's sandbox (the default).
	UseDefault = "use_default"
	// RequireEscalated asks to run the command without the sandbox's limits.
	RequireEscalated = "require_escalated"
)

// EscalationProps returns the JSON-schema properties of the two optional
// escalation parameters, to add to a shell tool's properties.
func EscalationProps() map[string]any {
	return map[string]any{
		ParamSandboxPermissions: map[string]any{"type": "string",
			"description": `Sandbox permissions for the command. Set to "require_escalated" to request running without sandbox restrictions; defaults to "use_default".`},
		ParamJustification: map[string]any{"type": "string",
			"description": `Only set if sandbox_permissions is "require_escalated". 1-sentence explanation of why we want to run this command.`},
	}
}

// DecodeEscalation reads the escalation parameters of a call of toolName:
// absent or "use_default" runs in the sandbox, "require_escalated" asks for
// escalation with the justification (trimmed; ignored without escalation).
// Any other value is an ErrInvalidInput error naming the two accepted.
func DecodeEscalation(toolName, permissions, justification string) (escalate bool, why string, err error) {
	switch permissions {
	case "", UseDefault:
		return false, "", nil
	case RequireEscalated:
		return true, strings.TrimSpace(justification), nil
	}
	return false, "", tool.Errorf(tool.ErrInvalidInput, "%s: %s must be %q or %q, got %q", toolName, ParamSandboxPermissions, UseDefault, RequireEscalated, permissions)
}

// Escalator is implemented by shell bindings that can offer the escalation
// parameters. Escalating returns the binding with them declared; the plain
// binding does not declare them (a session that cannot ask anyone offers
// nothing it would refuse), though it decodes them when a model sends them.
type Escalator interface {
	Escalating() Binding
}

// OfferEscalation returns bs with every binding that implements Escalator
// replaced by its escalating form. Bindings whose schema a provider fixes
// (Anthropic's bash, the Responses API's typed shell) do not implement it.
func OfferEscalation(bs []Binding) []Binding {
	out := make([]Binding, len(bs))
	for i, b := range bs {
		if e, ok := b.(Escalator); ok {
			b = e.Escalating()
		}
		out[i] = b
	}
	return out
}

// WithEscalationProps adds the escalation parameters to props when on is
// set, and returns props.
func WithEscalationProps(props map[string]any, on bool) map[string]any {
	if !on {
		return props
	}
	for k, v := range EscalationProps() {
		if _, dup := props[k]; dup {
			panic(fmt.Sprintf("surface: a shell tool already has a %q parameter", k))
		}
		props[k] = v
	}
	return props
}

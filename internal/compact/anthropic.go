package compact

import "encoding/json"

// ContextManagementBeta is the beta the Messages API's context_management
// field needs, sent in the anthropic-beta header.
const ContextManagementBeta = "context-management-2025-06-27"

// ClearToolUses is the context-editing strategy that clears old tool
// results on the server.
const ClearToolUses = "clear_tool_uses_20250919"

// ContextEditing configures the Messages API's context editing: once a
// prompt passes TriggerTokens input tokens, the server replaces the oldest
// tool results (all but the KeepToolUses most recent) with a placeholder
// before the model reads the prompt. The transcript Truss keeps is
// unchanged; the edit is redone on every request. It works together with
// the memory tool, whose uses it should not clear (ExcludeTools), so that
// what the model saved survives the clearing. A compaction remains the
// fallback when clearing is not enough.
type ContextEditing struct {
	// TriggerTokens: clear once the prompt passes this many input tokens
	// (0: the API's default, 100,000).
	TriggerTokens int
	// KeepToolUses: the most recent tool uses kept whole (0: the API's
	// default, 3).
	KeepToolUses int
	// ClearAtLeast: clear only when at least this many tokens go, so that
	// the prompt cache a clearing invalidates is worth losing (0: omitted).
	ClearAtLeast int
	// ExcludeTools are tools whose uses are never cleared ("memory").
	ExcludeTools []string
	// ClearInputs also clears the calls' inputs, not only their results.
	ClearInputs bool
}

// DefaultContextEditing is the editing a session with a window of window
// tokens sends: clear from 60 % of the window (before a compaction at
// 85 %), keep the last 3 tool uses, clear at least 10,000 tokens at a
// time, never the memory tool's uses when memory is offered.
func DefaultContextEditing(window int, memory bool) ContextEditing {
	e := ContextEditing{TriggerTokens: window * 6 / 10, KeepToolUses: 3, ClearAtLeast: 10000}
	if memory {
		e.ExcludeTools = []string{"memory"}
	}
	return e
}

// ContextManagement returns the value of a Messages request's
// "context_management" field:
//
//	{"edits":[{"type":"clear_tool_uses_20250919",
//	  "trigger":{"type":"input_tokens","value":120000},
//	  "keep":{"type":"tool_uses","value":3},
//	  "clear_at_least":{"type":"input_tokens","value":10000},
//	  "exclude_tools":["memory"]}]}
//
// The field belongs to the beta Messages API: the request goes with the
// anthropic-beta header ContextManagementBeta, and in the vendored OpenAPI
// description only the beta operation ("/v1/messages?beta=true",
// BetaCreateMessageParams) accepts it; the plain one refuses it as an
// additional property.
func (e ContextEditing) ContextManagement() json.RawMessage {
	edit := map[string]any{"type": ClearToolUses}
	if e.TriggerTokens > 0 {
		edit["trigger"] = map[string]any{"type": "input_tokens", "value": e.TriggerTokens}
	}
	if e.KeepToolUses > 0 {
		edit["keep"] = map[string]any{"type": "tool_uses", "value": e.KeepToolUses}
	}
	if e.ClearAtLeast > 0 {
		edit["clear_at_least"] = map[string]any{"type": "input_tokens", "value": e.ClearAtLeast}
	}
	if len(e.ExcludeTools) > 0 {
		edit["exclude_tools"] = e.ExcludeTools
	}
	if e.ClearInputs {
		edit["clear_tool_inputs"] = true
	}
	b, err := json.Marshal(map[string]any{"edits": []any{edit}})
	if err != nil {
		panic(err) // maps of strings and numbers always encode
	}
	return b
}

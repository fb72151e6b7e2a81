// Package codex binds the tools OpenAI's codex-family models are trained on:
// apply_patch as a freeform custom tool, constrained by its Lark grammar,
// taking the whole "*** Begin Patch" … "*** End Patch" envelope.
package codex

import (
	_ "embed"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// Name is the surface name.
const Name = "codex"

// Grammar is the Lark grammar of apply_patch's input, as Codex declares it.
//
//go:embed apply_patch.lark
var Grammar string

// ApplyPatch binds the freeform apply_patch tool.
type ApplyPatch struct{}

// Spec implements surface.Binding.
func (ApplyPatch) Spec() model.ToolSpec {
	return model.ToolSpec{Kind: model.ToolCustom, Name: "apply_patch",
		Description: "Use the `apply_patch` tool to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON.",
		Options:     map[string]any{"format": map[string]any{"type": "grammar", "syntax": "lark", "definition": Grammar}}}
}

// Decode implements surface.Binding: the input is the envelope itself.
func (ApplyPatch) Decode(c model.ToolCall) ([]tool.Call, error) {
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpPatch, Raw: tool.Raw(c.Input), Args: &tool.PatchArgs{Text: c.Input}}}, nil
}

// Encode implements surface.Binding: the summary on success; Codex's
// messages on failure, a patch that does not parse prefixed as Codex's tool
// handler prefixes it.
func (ApplyPatch) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	if r.Err != nil {
		msg := r.Err.Message
		if r.Err.Kind == tool.ErrInvalidInput {
			msg = "apply_patch verification failed: " + msg
		}
		return model.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Text: msg}
	}
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: r.Output}
}

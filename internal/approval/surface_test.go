package approval

import (
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/codex"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/tool"
)

// TestThroughSurfaces: a model's escalation request, as the codex and
// generic shell tools decode it, reaches the approver with its
// justification, runs in the escalated shell when approved, and a refusal
// reads, in each surface's rendering, as a failed command that says why.
func TestThroughSurfaces(t *testing.T) {
	for _, b := range surface.OfferEscalation([]surface.Binding{codex.ShellCommand{}, generic.Bash{}}) {
		name := b.Spec().Name
		mc := model.ToolCall{ID: "c", Name: name, Kind: model.ToolFunction,
			Input: `{"command":"go mod download","sandbox_permissions":"require_escalated","justification":"Do you want to download the modules this project needs?"}`}
		calls, err := b.Decode(mc)
		if err != nil {
			t.Fatal(err)
		}
		for _, answer := range []Decision{Approve, Deny} {
			box, esc := &fakeShell{name: "sandbox"}, &fakeShell{name: "escalated"}
			a := &scripted{d: answer}
			r := Wrap(box, OnRequest, a, esc).Execute(t.Context(), calls[0])
			if len(a.seen) != 1 || a.seen[0].Justification != "Do you want to download the modules this project needs?" || a.seen[0].Tool != name {
				t.Fatalf("%s: asked %+v", name, a.seen)
			}
			text := b.Encode(mc, []tool.Result{r})
			switch answer {
			case Approve:
				if text.IsError || !strings.Contains(text.Text, "escalated") {
					t.Errorf("%s approved: %+v", name, text)
				}
			case Deny:
				if !text.IsError || !strings.Contains(text.Text, "The user declined running this command outside the sandbox") {
					t.Errorf("%s denied: %+v", name, text)
				}
			}
		}
	}
}

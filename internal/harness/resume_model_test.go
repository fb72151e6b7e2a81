package harness

import (
	"context"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/session"
)

// TestResumedModel: a session resumed on another provider without
// --model goes on with its model only when the new provider runs it, else
// with the provider's default, and says so; where the provider has no
// default, the note says where the model came from.
func TestResumedModel(t *testing.T) {
	for _, tc := range []struct {
		provider, prevProvider, prevModel string
		want, note                        string
	}{
		{"anthropic", "anthropic", "m", "m", ""},
		{"chat", "openai-compatible", "m", "m", ""},
		{"anthropic", "openai", "claude-sonnet-4-5", "claude-sonnet-4-5", ""},
		{"anthropic", "lmstudio", "m", "claude-sonnet-4-5", `session S1 ran "m" on lmstudio, which is not a model of anthropic: using anthropic's default model, "claude-sonnet-4-5" (pass --model to choose another)`},
		{"bedrock", "anthropic", "claude-sonnet-4-5", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", `session S1 ran "claude-sonnet-4-5" on anthropic, which is not a model of bedrock: using bedrock's default model, "us.anthropic.claude-sonnet-4-5-20250929-v1:0" (pass --model to choose another)`},
		{"ollama", "anthropic", "claude-sonnet-4-5", "claude-sonnet-4-5", `the model "claude-sonnet-4-5" came from session S1, which ran it on anthropic (pass --model to choose another for ollama)`},
	} {
		def, ok := lookupProvider(tc.provider)
		if !ok {
			t.Fatalf("no provider %s", tc.provider)
		}
		got, note := resumedModel(def, session.Meta{ID: "S1", Provider: tc.prevProvider, Model: tc.prevModel})
		if got != tc.want || note != tc.note {
			t.Errorf("%s after %s/%s: %q, %q; want %q, %q", tc.provider, tc.prevProvider, tc.prevModel, got, note, tc.want, tc.note)
		}
	}
	named := ProviderDef{Name: "mine", Dialect: "chat", Named: true, AnyMaker: true, DefaultModel: "qwen3"}
	if got, note := resumedModel(named, session.Meta{ID: "S1", Provider: "anthropic", Model: "claude-sonnet-4-5"}); got != "qwen3" || !strings.Contains(note, `using the model of [providers.mine], "qwen3"`) {
		t.Errorf("a named provider's model: %q, %q", got, note)
	}
}

// TestResumeOnAnotherProvider: Open takes the new provider's default model
// for a resumed session whose model is not the provider's, and warns.
func TestResumeOnAnotherProvider(t *testing.T) {
	o := fixture(t, twoRuns)
	st := session.Store{Dir: o.SessionDir}
	sess, err := st.Begin(session.Meta{Workspace: o.Root, Provider: "lmstudio", Model: "m", Surface: "generic"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.SaveMeta(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ANTHROPIC_API_KEY", "k")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	var warnings []string
	o.OnWarning = func(msg string) { warnings = append(warnings, msg) }
	o.Resume, o.Provider, o.Script, o.SimDialect, o.Surface = sess.Meta.ID, "anthropic", "", "", ""
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if m := s.Info().Model; m != "claude-sonnet-4-5" {
		t.Errorf("the model: %q", m)
	}
	if len(warnings) == 0 || !strings.Contains(warnings[0], `ran "m" on lmstudio, which is not a model of anthropic`) {
		t.Errorf("the warnings: %q", warnings)
	}
}

package harness

import (
	"strings"
	"testing"
)

// TestChatAtOpenAI: a chat wire at OpenAI's own API sends the output limit
// as max_completion_tokens and notes once that --provider openai speaks
// the Responses API; at any other server neither.
func TestChatAtOpenAI(t *testing.T) {
	named := ProviderDef{Name: "mine", Dialect: "chat", Named: true, AnyMaker: true}
	anth, _ := lookupProvider("anthropic")
	chat, _ := lookupProvider("chat")
	for _, tc := range []struct {
		def  ProviderDef
		base string
		own  bool
	}{
		{chat, "https://api.openai.com/v1", true},
		{chat, "https://API.openai.com/v1/", true},
		{named, "https://api.openai.com/v1", true},
		{chat, "http://127.0.0.1:8000/v1", false},
		{chat, "https://openrouter.ai/api/v1", false},
		{anth, "https://api.openai.com/v1", false},
	} {
		note := tc.def.chatAtOpenAINote(tc.base)
		if (note != "") != tc.own || tc.own && !strings.Contains(note, "--provider openai speaks its Responses API") {
			t.Errorf("%s at %s: note %q", tc.def.Name, tc.base, note)
		}
		if tc.def.Dialect == "chat" {
			if got := chatConfig(Endpoint{BaseURL: tc.base}).MaxCompletionTokens; got != tc.own {
				t.Errorf("%s at %s: MaxCompletionTokens %v", tc.def.Name, tc.base, got)
			}
		}
	}
}

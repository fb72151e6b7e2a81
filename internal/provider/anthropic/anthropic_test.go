package anthropic

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/model"
)

func TestReplayKeepsProviderBlocks(t *testing.T) {
	think := `{"type":"thinking","thinking":"plan","signature":"sig_abc"}`
	use := `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go 1.26"}}`
	res := `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://go.dev","title":"Go","encrypted_content":"EqgfCioIARgB","page_age":null}]}`
	items := []model.Item{
		{Kind: model.KindUser, Text: "What is new?"},
		{Kind: model.KindReasoning, Provider: "anthropic", Response: "msg_1", Raw: json.RawMessage(think)},
		{Kind: model.KindServerTool, Provider: "anthropic", Response: "msg_1", Raw: json.RawMessage(use), Text: "server_tool_use"},
		{Kind: model.KindServerTool, Provider: "anthropic", Response: "msg_1", Raw: json.RawMessage(res), Text: "web_search_tool_result"},
		{Kind: model.KindAssistant, Provider: "anthropic", Response: "msg_1", Raw: json.RawMessage(`{"type":"text","text":"Searching more."}`), Text: "Searching more."},
		// The continuation after pause_turn is its own message.
		{Kind: model.KindToolCall, Provider: "anthropic", Response: "msg_2", Raw: json.RawMessage(`{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"go version"}}`),
			Call: &model.ToolCall{ID: "toolu_1", Name: "bash", Input: `{"command":"go version"}`}},
		{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: "toolu_1", Name: "bash", Text: "go1.26"}},
		{Kind: model.KindUser, Text: "Thanks"},
	}
	c := New(Config{})
	b, parts, err := c.body(&model.Request{Model: "claude-sonnet-4-5", System: "s", MaxTokens: 100, Items: items})
	if err != nil {
		t.Fatal(err)
	}
	// The body is the concatenation of its parts, each with its digest.
	var joined []byte
	for i, part := range parts.Parts {
		joined = append(joined, part...)
		if d := sha256.Sum256(part); hex.EncodeToString(d[:]) != parts.Digests[i] {
			t.Fatalf("part %d has a wrong digest", i)
		}
	}
	if !bytes.Equal(joined, b) {
		t.Fatal("the parts do not make the body")
	}
	body := string(b)
	for _, want := range []string{`"signature":"sig_abc"`, `"encrypted_content":"EqgfCioIARgB"`, `"type":"server_tool_use"`, `"query":"go 1.26"`} {
		if !strings.Contains(body, want) {
			t.Errorf("replay lost %s:\n%s", want, body)
		}
	}
	var req struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(b, &req)
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "user assistant assistant user" {
		t.Fatalf("roles %s", got)
	}
	// The tool result comes before the user's text in the same message.
	if last := req.Messages[3].Content; len(last) != 2 || !strings.Contains(string(last[0]), "tool_result") {
		t.Fatalf("last message %s", last)
	}
	doc, err := apispec.Anthropic()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.RequestBody("/v1/messages", "POST", b); err != nil {
		t.Errorf("the replayed request does not match the API description: %v", err)
	}
}

func TestForeignTranscript(t *testing.T) {
	// Items from another dialect (a resumed session) have no raw blocks.
	items := []model.Item{
		{Kind: model.KindUser, Text: "hi"},
		{Kind: model.KindAssistant, Provider: "ollama", Text: "Looking."},
		{Kind: model.KindToolCall, Provider: "ollama", Call: &model.ToolCall{ID: "c1", Name: "read_file", Input: `{"path":`}},
		{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: "c1", Name: "read_file", Text: "Error: bad", IsError: true}},
	}
	b, _, err := New(Config{NoCache: true}).body(&model.Request{Model: "m", Items: items})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"INVALID_JSON":"{\"path\":"`) || !strings.Contains(string(b), `"is_error":true`) {
		t.Fatalf("%s", b)
	}
}

package anthropic

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
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

// TestReplaySkipsRefusedText: no empty or whitespace-only text block is
// sent, not even inside a tool_result, and the request still validates.
func TestReplaySkipsRefusedText(t *testing.T) {
	items := []model.Item{
		{Kind: model.KindUser, Text: "Make a directory."},
		// A response whose text was only whitespace, with a call.
		{Kind: model.KindAssistant, Provider: "anthropic", Response: "msg_1", Raw: json.RawMessage(`{"type":"text","text":"\n\n"}`), Text: "\n\n"},
		{Kind: model.KindToolCall, Provider: "anthropic", Response: "msg_1", Raw: json.RawMessage(`{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"mkdir x"}}`),
			Call: &model.ToolCall{ID: "toolu_1", Name: "bash", Input: `{"command":"mkdir x"}`}},
		{Kind: model.KindToolCall, Provider: "anthropic", Response: "msg_1", Raw: json.RawMessage(`{"type":"tool_use","id":"toolu_2","name":"bash","input":{"command":"true"}}`),
			Call: &model.ToolCall{ID: "toolu_2", Name: "bash", Input: `{"command":"true"}`}},
		// Results recorded with no text (an older session) and with whitespace.
		{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: "toolu_1", Name: "bash", Text: ""}},
		{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: "toolu_2", Name: "bash", Text: " \n", IsError: true}},
		// A whole response of whitespace, then the user goes on.
		{Kind: model.KindAssistant, Provider: "anthropic", Response: "msg_2", Raw: json.RawMessage(`{"type":"text","text":" "}`), Text: " "},
		{Kind: model.KindUser, Text: "Go on."},
	}
	b, _, err := New(Config{}).body(&model.Request{Model: "claude-sonnet-4-5", MaxTokens: 100, Items: items})
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type    string            `json:"type"`
				Text    *string           `json:"text"`
				Content []json.RawMessage `json:"content"`
				IsError bool              `json:"is_error"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	var shape []string
	for _, m := range req.Messages {
		var types []string
		for _, c := range m.Content {
			if c.Text != nil && strings.TrimSpace(*c.Text) == "" {
				t.Errorf("a blank text block was sent: %q", *c.Text)
			}
			if c.Type == "tool_result" && len(c.Content) != 0 {
				t.Errorf("a blank tool result has content: %s", c.Content)
			}
			types = append(types, c.Type)
		}
		shape = append(shape, m.Role+":"+strings.Join(types, ","))
	}
	if got := strings.Join(shape, " "); got != "user:text assistant:tool_use,tool_use user:tool_result,tool_result,text" {
		t.Fatalf("messages %s", got)
	}
	if !req.Messages[2].Content[1].IsError {
		t.Error("is_error lost")
	}
	doc, err := apispec.Anthropic()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.RequestBody("/v1/messages", "POST", b); err != nil {
		t.Errorf("the request does not match the API description: %v", err)
	}
}

// TestMalformedInputKept: input that is not JSON reaches the loop byte for
// byte (the SDK's accumulation alone would make it {}), and the block
// replays with the bytes wrapped as {"INVALID_JSON": ...}.
func TestMalformedInputKept(t *testing.T) {
	raw := `{"command": "go test ./...", "restart": tru`
	script, err := sim.ParseScript([]byte(`{"steps": [{"say": "Testing.", "actions": [{"kind": "run", "command": "x", "raw_input": ` + strconv.Quote(raw) + `}, {"kind": "run", "command": "echo ok"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, err := simtest.New(script).Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{BaseURL: base, APIKey: "k"})
	req := &model.Request{Model: "claude-sonnet-4-5", MaxTokens: 100, Items: []model.Item{{Kind: model.KindUser, Text: "Test."}},
		Tools: []model.ToolSpec{{Kind: model.ToolTyped, Name: "bash", Type: "bash_20250124"}}}
	resp, err := c.Turn(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Calls()
	if len(calls) != 2 || calls[0].Input != raw || calls[1].Input != `{"command":"echo ok"}` {
		t.Fatalf("calls %+v", calls)
	}
	req.Items = append(req.Items, resp.Items...)
	for _, call := range calls {
		req.Items = append(req.Items, model.Item{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: call.ID, Name: "bash", Text: "x"}})
	}
	b, _, err := c.body(req)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(map[string]string{"INVALID_JSON": raw})
	if !strings.Contains(string(b), `"input":`+string(want)) {
		t.Fatalf("the invalid input is not replayed wrapped:\n%s", b)
	}
}

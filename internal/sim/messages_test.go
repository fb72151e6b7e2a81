package sim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/apispec"
)

// TestMessagesStrict: the rules the real Messages API enforces, each with
// the error message the API answers with.
func TestMessagesStrict(t *testing.T) {
	const use = `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"true"}}]}`
	body := func(msgs ...string) string {
		return `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[` + strings.Join(msgs, ",") + `]}`
	}
	tests := []struct {
		name, body, want string
	}{
		{"valid", body(`{"role":"user","content":"hi"}`, use, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok"}]},{"type":"text","text":"go on"}]}`), ""},
		{"a result without content", body(`{"role":"user","content":"hi"}`, use, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1"}]}`), ""},
		{"empty user text", body(`{"role":"user","content":[{"type":"text","text":""}]}`), "messages: text content blocks must be non-empty"},
		{"empty string content", body(`{"role":"user","content":""}`), "messages: text content blocks must be non-empty"},
		{"empty text in a tool result", body(`{"role":"user","content":"hi"}`, use, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":""}]}]}`),
			"messages: text content blocks must be non-empty"},
		{"whitespace in a tool result", body(`{"role":"user","content":"hi"}`, use, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":" \n"}]}`),
			"messages: text content blocks must contain non-whitespace text"},
		{"whitespace assistant text", body(`{"role":"user","content":"hi"}`, `{"role":"assistant","content":[{"type":"text","text":"\n\n"}]}`, `{"role":"user","content":"go on"}`),
			"messages: text content blocks must contain non-whitespace text"},
		{"whitespace text beside a call", body(`{"role":"user","content":"hi"}`, `{"role":"assistant","content":[{"type":"text","text":" "},{"type":"tool_use","id":"toolu_1","name":"bash","input":{}}]}`, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}`),
			"messages: text content blocks must contain non-whitespace text"},
		{"whitespace beside other text", body(`{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":" "}]}`), ""},
		{"empty system text", `{"model":"m","max_tokens":1,"system":[{"type":"text","text":""}],"messages":[{"role":"user","content":"hi"}]}`, "system: text content blocks must be non-empty"},
		{"unanswered call", body(`{"role":"user","content":"hi"}`, use, `{"role":"user","content":"what now?"}`),
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"result after text", body(`{"role":"user","content":"hi"}`, use, `{"role":"user","content":[{"type":"text","text":"here"},{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}`),
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"a call last", body(`{"role":"user","content":"hi"}`, use),
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"unknown id", body(`{"role":"user","content":"hi"}`, use, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"},{"type":"tool_result","tool_use_id":"toolu_9","content":"ok"}]}`),
			"messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"a result answering an older message", body(`{"role":"user","content":"hi"}`, use, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}`,
			`{"role":"assistant","content":"done"}`, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}`),
			"messages.4.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"unknown field", `{"model":"m","max_tokens":1,"temperature_x":1,"messages":[{"role":"user","content":"hi"}]}`, "additional properties 'temperature_x' not allowed"},
		{"missing max_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "missing property 'max_tokens'"},
		{"unknown block field", body(`{"role":"user","content":[{"type":"text","text":"hi","colour":"red"}]}`), "messages.0.content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&Server{Spec: apispec.Checker{}}).checkMessages([]byte(tt.body))
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) || got == "" && tt.want != "" {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if strings.Contains(got, "Schema:") || len(got) > 400 {
				t.Fatalf("the message is not short: %q", got)
			}
		})
	}
}

// TestMessagesStrictError: a refused request gets the real error shape:
// HTTP 400, the error object and a request-id header; Lenient lets it by.
func TestMessagesStrictError(t *testing.T) {
	s, _ := ParseScript([]byte(`{"steps": [{"say": "hi"}]}`))
	for _, lenient := range []bool{false, true} {
		srv := strict(s)
		srv.Lenient = lenient
		ctx, cancel := context.WithCancel(context.Background())
		base, err := srv.Listen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`))
		req.Header.Set("Anthropic-Version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if lenient {
			if resp.StatusCode != 200 {
				t.Fatalf("lenient: %d %s", resp.StatusCode, b)
			}
			continue
		}
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" ||
			e.Error.Message != "messages: text content blocks must be non-empty" || resp.Header.Get("Request-Id") == "" || e.RequestID == "" {
			t.Fatalf("%d %s %v", resp.StatusCode, b, resp.Header)
		}
		if r := srv.Requests(); len(r) != 1 || r[0].Status != 400 {
			t.Fatalf("recorded %+v", r)
		}
	}
}

func FuzzMessagesRules(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"a"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":" "}]}]}]}`))
	f.Add([]byte(`{"system":"","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":""}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"text","text":"\n"},{"type":"tool_use","id":"b"}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		msg := messagesRules(b)
		if msg != "" && !strings.HasPrefix(msg, "messages") && !strings.HasPrefix(msg, "system") {
			t.Fatalf("message %q", msg)
		}
	})
}

// TestMessagesBeta: the beta Messages operation (?beta=true) is checked
// against its own schema, which accepts context_management; the plain one
// refuses the field.
func TestMessagesBeta(t *testing.T) {
	s, _ := ParseScript([]byte(`{"steps": [{"say": "hi"}]}`))
	srv := strict(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, err := srv.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}],` +
		`"context_management":{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":1000}}]}}`
	for path, want := range map[string]int{"/v1/messages?beta=true": 200, "/v1/messages": 400} {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Anthropic-Version", "2023-06-01")
		req.Header.Set("Anthropic-Beta", "context-management-2025-06-27")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || want == 400 && !strings.Contains(string(b), "context_management") {
			t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
}

// strict is New with the OpenAPI validation the truss binary leaves out.
func strict(s *Script) *Server {
	srv := New(s)
	srv.Spec = apispec.Checker{}
	return srv
}

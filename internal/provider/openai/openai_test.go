package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func validate(t *testing.T, b []byte) {
	t.Helper()
	doc, err := apispec.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.RequestBody("/responses", "POST", b); err != nil {
		t.Fatalf("the request does not match the API description: %v\n%s", err, b)
	}
}

// typedTranscript is a Responses transcript with every typed item: reasoning,
// an assistant message with its phase, a shell call, an apply_patch call, a
// custom call and a function call, each answered.
func typedTranscript() []model.Item {
	resp := "resp_1"
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	call := func(id, name, typ string, kind model.ToolKind, input, rawItem string) model.Item {
		return model.Item{Kind: model.KindToolCall, Provider: Dialect, Response: resp, Raw: raw(rawItem),
			Call: &model.ToolCall{ID: id, Name: name, Kind: kind, Type: typ, Input: input}}
	}
	result := func(id, name, text string, isErr bool, native string) model.Item {
		r := &model.ToolResult{CallID: id, Name: name, Text: text, IsError: isErr}
		if native != "" {
			r.Native = raw(native)
		}
		return model.Item{Kind: model.KindToolResult, Result: r}
	}
	return []model.Item{
		{Kind: model.KindUser, Text: "Fix the bug."},
		{Kind: model.KindReasoning, Provider: Dialect, Response: resp, Text: "plan",
			Raw: raw(`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"plan"}],"encrypted_content":"gAAAA-opaque"}`)},
		{Kind: model.KindAssistant, Provider: Dialect, Response: resp, Text: "Looking.",
			Raw: raw(`{"id":"msg_1","type":"message","role":"assistant","status":"completed","phase":"commentary","content":[{"type":"output_text","text":"Looking.","annotations":[],"logprobs":[]}]}`)},
		call("call_sh", "shell", "shell_call", model.ToolTyped, `{"commands":["ls","false"],"timeout_ms":null,"max_output_length":100}`,
			`{"type":"shell_call","id":"sh_1","call_id":"call_sh","status":"completed","action":{"commands":["ls","false"],"timeout_ms":null,"max_output_length":100},"environment":{"type":"local"},"caller":{"type":"direct"}}`),
		call("call_ap", "apply_patch", "apply_patch_call", model.ToolTyped, `{"type":"update_file","path":"a.go","diff":"@@\n-a\n+b"}`,
			`{"type":"apply_patch_call","id":"apc_1","call_id":"call_ap","status":"completed","operation":{"type":"update_file","path":"a.go","diff":"@@\n-a\n+b"}}`),
		call("call_ct", "apply_patch", "custom_tool_call", model.ToolCustom, "*** Begin Patch\n*** End Patch",
			`{"type":"custom_tool_call","id":"ctc_1","call_id":"call_ct","name":"apply_patch","input":"*** Begin Patch\n*** End Patch"}`),
		call("call_fn", "read_file", "function_call", model.ToolFunction, `{"path":"a.go"}`,
			`{"type":"function_call","id":"fc_1","call_id":"call_fn","name":"read_file","arguments":"{\"path\":\"a.go\"}","status":"completed"}`),
		result("call_sh", "shell", "a.go\n[exit code: 0]", true,
			`[{"stdout":"a.go\n","stderr":"","outcome":{"type":"exit","exit_code":0}},{"stdout":"","stderr":"","outcome":{"type":"exit","exit_code":1}}]`),
		result("call_ap", "apply_patch", "Failed to find expected lines in a.go:\na", true, ""),
		result("call_ct", "apply_patch", "apply_patch verification failed: No files were modified.", true, ""),
		result("call_fn", "read_file", "     1\tpackage a", false, ""),
	}
}

func TestBodyGolden(t *testing.T) {
	c := New(Config{CacheKey: "session-1", ReasoningEffort: "medium", ReasoningSummary: "auto"})
	req := &model.Request{Model: "gpt-5.2", System: "You are a test.", MaxTokens: 1024, Items: typedTranscript(),
		Tools: []model.ToolSpec{
			{Kind: model.ToolTyped, Name: "shell", Type: "shell"},
			{Kind: model.ToolTyped, Name: "apply_patch", Type: "apply_patch"},
			{Kind: model.ToolCustom, Name: "apply_patch_free", Description: "Freeform.", Options: map[string]any{"format": map[string]any{"type": "grammar", "syntax": "lark", "definition": "start: x"}}},
			{Kind: model.ToolFunction, Name: "read_file", Description: "Read a file.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer"}},"required":["path"]}`)},
		}}
	b, parts, err := c.body(req, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, b)
	var joined []byte
	for _, p := range parts.Parts {
		joined = append(joined, p...)
	}
	if !bytes.Equal(joined, b) {
		t.Fatal("the parts do not make the body")
	}
	body := string(b)
	for _, want := range []string{`"store":false`, `"include":["reasoning.encrypted_content"]`, `"encrypted_content":"gAAAA-opaque"`,
		`"phase":"commentary"`, `"strict":false`, `"prompt_cache_key":"session-1"`, `"max_output_length":100`, `"reasoning":{"effort":"medium","summary":"auto"}`,
		`"status":"failed"`, `"type":"custom_tool_call_output"`, `"caller":{"type":"direct"}`, `"outcome":{"exit_code":1,"type":"exit"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("the request lacks %s", want)
		}
	}
	var buf bytes.Buffer
	json.Indent(&buf, b, "", "  ")
	buf.WriteByte('\n')
	if *update {
		os.WriteFile("testdata/request.golden.json", buf.Bytes(), 0o644)
	}
	want, _ := os.ReadFile("testdata/request.golden.json")
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("request differs (run with -update to accept):\n%s", buf.Bytes())
	}
	// Strict mode rewrites function schemas and says so.
	sc := New(Config{Strict: true})
	b, _, err = sc.body(req, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, b)
	if !strings.Contains(string(b), `"strict":true`) || !strings.Contains(string(b), `"offset":{"type":["integer","null"]}`) {
		t.Errorf("strict declaration: %s", b)
	}
}

// TestResumeFromAnotherProvider: a transcript made by another dialect
// becomes plain messages, function calls and their outputs.
func TestResumeFromAnotherProvider(t *testing.T) {
	req := model.SampleRequest()
	req.Items = append(req.Items,
		model.Item{Kind: model.KindToolCall, Provider: "anthropic", Raw: json.RawMessage(`{"type":"tool_use"}`),
			Call: &model.ToolCall{ID: "toolu_1", Name: "bash", Kind: model.ToolTyped, Type: "tool_use", Input: `{"command":"ls"}`}},
		model.Item{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: "toolu_1", Name: "bash", Text: "a.go"}},
		model.Item{Kind: model.KindServerTool, Provider: "anthropic", Raw: json.RawMessage(`{"type":"server_tool_use"}`)})
	b, _, err := New(Config{}).body(req, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, b)
	for _, want := range []string{`{"output":"a.go","call_id":"toolu_1","type":"function_call_output"}`, `"arguments":"{\"command\":\"ls\"}","call_id":"toolu_1","name":"bash","type":"function_call"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the request lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "server_tool_use") {
		t.Error("another provider's server tool was replayed")
	}
}

// serve runs the simulated model on a script.
func serve(t *testing.T, script string) (*sim.Server, string) {
	t.Helper()
	s, err := sim.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	srv := simtest.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	base, err := srv.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return srv, base + "/v1"
}

var fast = provider.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}

// TestChainFallsBackToReplay: a chained request naming a response the
// server no longer has is sent again with the whole conversation.
func TestChainFallsBackToReplay(t *testing.T) {
	srv, base := serve(t, `{"steps": [{"say": "one"}, {"say": "two"}]}`)
	c := New(Config{BaseURL: base, Retry: fast, Stateful: true})
	items := []model.Item{
		{Kind: model.KindUser, Text: "hi"},
		{Kind: model.KindAssistant, Provider: Dialect, Response: "resp_forgotten", Text: "one",
			Raw: json.RawMessage(`{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"one","annotations":[],"logprobs":[]}]}`)},
		{Kind: model.KindUser, Text: "again"},
	}
	resp, err := c.Turn(context.Background(), &model.Request{Model: "gpt-5.2", Items: items}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "two" {
		t.Errorf("text %q", resp.Text())
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests reached a step", len(reqs))
	}
	if strings.Contains(string(reqs[0].Body), "previous_response_id") || !strings.Contains(string(reqs[0].Body), `"text":"one"`) {
		t.Errorf("the fallback is not a full replay: %s", reqs[0].Body)
	}
}

// TestRetryHeaders: x-should-retry overrides the status, as in the SDK.
func TestRetryHeaders(t *testing.T) {
	var n atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(r.URL.Path, "final"):
			w.Header().Set("X-Should-Retry", "false")
			w.WriteHeader(503)
		default:
			if k == 1 {
				w.Header().Set("X-Should-Retry", "true")
				w.WriteHeader(400)
			} else {
				w.WriteHeader(404)
			}
		}
		fmt.Fprint(w, `{"error":{"message":"nope","type":"invalid_request_error","param":null,"code":"some_code"}}`)
	}))
	defer hs.Close()
	req := &model.Request{Model: "gpt-5.2", Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}
	_, err := New(Config{BaseURL: hs.URL + "/retry", Retry: fast}).Turn(context.Background(), req, nil)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 404 || n.Load() != 2 {
		t.Fatalf("err %v after %d requests", err, n.Load())
	}
	n.Store(0)
	_, err = New(Config{BaseURL: hs.URL + "/final", Retry: fast}).Turn(context.Background(), req, nil)
	if !errors.As(err, &pe) || pe.Status != 503 || pe.Code != "some_code" || n.Load() != 1 {
		t.Fatalf("err %v after %d requests", err, n.Load())
	}
}

func TestFailedClassification(t *testing.T) {
	tests := []struct {
		code, msg string
		kind      provider.ErrorKind
		retry     bool
		wait      time.Duration
	}{
		{"rate_limit_exceeded", "Rate limit reached. Please try again in 1.5s.", provider.ErrRateLimited, true, 1500 * time.Millisecond},
		{"rate_limit_exceeded", "Please try again in 250ms", provider.ErrRateLimited, true, 250 * time.Millisecond},
		{"server_error", "oops", provider.ErrServer, true, 0},
		{"server_is_overloaded", "busy", provider.ErrOverloaded, true, 0},
		{"", "stream error", provider.ErrStream, true, 0},
		{"invalid_prompt", "bad", provider.ErrBadRequest, false, 0},
		{"context_length_exceeded", "too long", provider.ErrBadRequest, false, 0},
		{"insufficient_quota", "pay", provider.ErrBadRequest, false, 0},
	}
	for _, tc := range tests {
		var pe *provider.Error
		if !errors.As(failed(tc.code, tc.msg, "response.failed"), &pe) {
			t.Fatal("not a provider error")
		}
		if pe.Kind != tc.kind || pe.Retryable() != tc.retry || pe.RetryAfter != tc.wait || pe.Code != tc.code {
			t.Errorf("%s %q: %+v", tc.code, tc.msg, pe)
		}
	}
}

// FuzzResponse feeds arbitrary final responses and output items to the
// stream's assembly: it never panics, and every call it yields has an id.
func FuzzResponse(f *testing.F) {
	f.Add(`{"id":"r","status":"completed","output":[{"type":"shell_call","call_id":"c","action":{"commands":["ls"]}}],"usage":{"input_tokens":3}}`, `{"type":"function_call","call_id":"d","name":"f","arguments":{"a":1}}`)
	f.Add(`{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}`, `{"type":"message","content":[{"type":"refusal","refusal":"no"}]}`)
	f.Add(`{"output":[1,2]}`, `[]`)
	f.Add(`null`, `{"type":"reasoning","summary":[{"text":"x"}]}`)
	f.Fuzz(func(t *testing.T, final, item string) {
		if !json.Valid([]byte(final)) || !json.Valid([]byte(item)) {
			return
		}
		st := streamState{done: map[int64]json.RawMessage{3: json.RawMessage(item)}, final: json.RawMessage(final), terminal: "response.completed"}
		resp, err := st.response()
		if err != nil {
			return
		}
		for _, c := range resp.Calls() {
			if c.Name == "" && c.Type != "function_call" && c.Type != "custom_tool_call" {
				t.Fatalf("a typed call without a tool name: %+v", c)
			}
		}
	})
}

// BenchmarkBody measures encoding a turn's request on a steady transcript:
// with every message and the head cached, and with the head built anew.
func BenchmarkBody(b *testing.B) {
	req := &model.Request{Model: "gpt-5.2", System: strings.Repeat("You are a coding agent. ", 200), MaxTokens: 1024, Items: typedTranscript(),
		Tools: []model.ToolSpec{
			{Kind: model.ToolTyped, Name: "shell", Type: "shell"},
			{Kind: model.ToolTyped, Name: "apply_patch", Type: "apply_patch"},
			{Kind: model.ToolFunction, Name: "read_file", Description: "Read a file.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer"}},"required":["path"]}`)},
		}}
	for _, fresh := range []bool{false, true} {
		name := "cached-head"
		if fresh {
			name = "head-built"
		}
		b.Run(name, func(b *testing.B) {
			c := New(Config{})
			for b.Loop() {
				if fresh {
					c.heads = provider.HeadCache{}
				}
				if _, _, err := c.body(req, "", 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestIncompleteCallsAreCutOff: a response ended by response.incomplete
// (max_output_tokens) stops at max_tokens whatever calls it holds, so that
// the loop answers each call as cut off instead of running it.
func TestIncompleteCallsAreCutOff(t *testing.T) {
	tests := []struct {
		name  string
		tools []model.ToolSpec
		calls []string
	}{
		{"shell_call", []model.ToolSpec{{Kind: model.ToolTyped, Name: "shell", Type: "shell"}}, []string{"shell_call"}},
		{"apply_patch_call", []model.ToolSpec{{Kind: model.ToolTyped, Name: "apply_patch", Type: "apply_patch"}}, []string{"apply_patch_call"}},
		{"function_call", []model.ToolSpec{{Kind: model.ToolFunction, Name: "bash", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}, []string{"function_call"}},
		{"custom_tool_call", []model.ToolSpec{{Kind: model.ToolCustom, Name: "apply_patch"}}, []string{"custom_tool_call"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			action := `{"kind": "run", "command": "rm -rf build"}`
			switch tc.calls[0] {
			case "apply_patch_call":
				action = `{"kind": "create", "path": "a.txt", "content": "x\n"}`
			case "custom_tool_call":
				action = `{"kind": "patch", "content": "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch"}`
			}
			_, base := serve(t, `{"steps": [{"say": "Cleaning.", "stop": "max_tokens", "actions": [`+action+`]}]}`)
			resp, err := New(Config{BaseURL: base, Retry: fast}).Turn(context.Background(),
				&model.Request{Model: "gpt-5.2", Items: []model.Item{{Kind: model.KindUser, Text: "clean"}}, Tools: tc.tools}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StopReason != model.StopMaxTokens {
				t.Errorf("stop reason %s, want %s", resp.StopReason, model.StopMaxTokens)
			}
			calls := resp.Calls()
			if len(calls) != 1 || calls[0].Type != tc.calls[0] {
				t.Errorf("calls %+v", calls)
			}
		})
	}
	// A call item marked incomplete cuts the response off even without the
	// terminal event's reason.
	st := streamState{terminal: "response.completed", final: json.RawMessage(`{"id":"r","status":"completed","output":[
		{"type":"shell_call","call_id":"c","status":"incomplete","action":{"commands":["ls"]}}]}`)}
	resp, err := st.response()
	if err != nil || resp.StopReason != model.StopMaxTokens {
		t.Errorf("stop %v, %v", resp, err)
	}
}

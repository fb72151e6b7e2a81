package sim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// responsesTools declares every kind of tool the simulator renders on the
// Responses API: typed shell and apply_patch, the codex family's freeform
// apply_patch (named apply_patch_free here, so that both are declared) and
// a function tool.
const responsesReq = `{"model":"gpt-5.2","stream":%s,"store":false,"include":["reasoning.encrypted_content"],
 "instructions":"sys","parallel_tool_calls":true,"tool_choice":"auto",
 "input":[{"type":"message","role":"user","content":"fix it"}],
 "tools":[{"type":"shell","environment":{"type":"local"}},{"type":"apply_patch"},
  {"type":"function","name":"read_file","description":"d","strict":false,"parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]}`

const codexReq = `{"model":"gpt-5.2-codex","stream":true,"store":false,
 "input":[{"type":"message","role":"user","content":"fix it"}],
 "tools":[{"type":"custom","name":"apply_patch","description":"d","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},
  {"type":"function","name":"shell_command","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}]}`

// sseEvents splits an SSE body into its events' names and data.
func sseEvents(t *testing.T, b []byte) (types, datas []string) {
	t.Helper()
	for _, block := range strings.Split(string(b), "\n\n") {
		var ev, data string
		for _, l := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(l, "event: "); ok {
				ev = v
			}
			if v, ok := strings.CutPrefix(l, "data: "); ok {
				data = v
			}
		}
		if ev == "" {
			continue
		}
		var typ struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(data), &typ); err != nil || typ.Type != ev {
			t.Fatalf("event %q carries data of type %q (%v)", ev, typ.Type, err)
		}
		types, datas = append(types, ev), append(datas, data)
	}
	return types, datas
}

// TestResponsesDialectMatchesSpec checks every event, body and error the
// simulator authors in the Responses dialect against the official schemas:
// a turn with reasoning, text, a shell call, an apply_patch call and a
// function call; a codex-family turn with a custom tool call; the faults.
func TestResponsesDialectMatchesSpec(t *testing.T) {
	doc, err := apispec.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	script := `{"steps": [
	  {"think": "Plan the fix.", "say": "Looking — ünïcode too.", "actions": [{"kind": "run", "command": "go test ./..."},
	    {"kind": "replace", "path": "a.go", "old": "x := 1\n", "new": "x := 2\n"},
	    {"kind": "run", "command": "ls", "tool": "read_file", "raw_input": "{\"path\":\"a.go\"}"}],
	   "faults": [{"kind": "status", "status": 429, "retry_after_ms": 1500}, {"kind": "mid_stream_error"},
	     {"kind": "response_failed", "code": "rate_limit_exceeded", "message": "Rate limit reached. Please try again in 20ms."}]},
	  {"say": "Patching.", "actions": [{"kind": "create", "path": "b.go", "content": "package b\n"}]}]}`
	s, err := sim.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	srv := simtest.New(s)
	srv.APIKey = "sk-test"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, err := srv.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	url := base + "/v1/responses"
	for _, body := range []string{sprintf(responsesReq, "true"), sprintf(responsesReq, "false"), codexReq} {
		if err := doc.RequestBody("/responses", "POST", []byte(body)); err != nil {
			t.Fatalf("the test's own request is invalid: %v", err)
		}
	}
	body := sprintf(responsesReq, "true")
	// Attempt 1: a 429 with Retry-After.
	resp, b := post(t, url, body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After-Ms") != "1500" {
		t.Fatalf("429: %d %v", resp.StatusCode, resp.Header)
	}
	if err := doc.Schema("ErrorResponse", b); err != nil {
		t.Errorf("429 body: %v", err)
	}
	checkEvents := func(b []byte) []string {
		types, datas := sseEvents(t, b)
		for i, d := range datas {
			if err := doc.Event([]byte(d)); err != nil {
				t.Errorf("event %d (%s): %v\n%s", i, types[i], err, d)
			}
			var seq struct {
				N int `json:"sequence_number"`
			}
			json.Unmarshal([]byte(d), &seq)
			if seq.N != i {
				t.Errorf("event %d has sequence_number %d", i, seq.N)
			}
		}
		return types
	}
	// Attempt 2: an error event after the response began.
	_, b = post(t, url, body)
	if got := strings.Join(checkEvents(b), " "); got != "response.created response.in_progress error" {
		t.Fatalf("mid-stream events: %s", got)
	}
	// Attempt 3: response.failed.
	_, b = post(t, url, body)
	if got := strings.Join(checkEvents(b), " "); got != "response.created response.in_progress response.failed" {
		t.Fatalf("failed events: %s", got)
	}
	if !strings.Contains(string(b), `"code":"rate_limit_exceeded"`) {
		t.Errorf("response.failed lacks its code: %s", b)
	}
	// Attempt 4: the full stream, in the documented order.
	resp, b = post(t, url, body)
	if resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	got := strings.Join(checkEvents(b), " ")
	for _, want := range []string{
		"response.created response.in_progress response.output_item.added response.reasoning_summary_part.added response.reasoning_summary_text.delta",
		"response.reasoning_summary_part.done response.output_item.done response.output_item.added response.content_part.added response.output_text.delta",
		"response.output_text.done response.content_part.done response.output_item.done",
		"response.output_item.added response.shell_call_command.added response.shell_call_command.delta response.shell_call_command.done response.output_item.done",
		"response.output_item.added response.output_item.done response.output_item.added response.function_call_arguments.delta",
		"response.function_call_arguments.done response.output_item.done response.completed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("event order lacks %q:\n%s", want, got)
		}
	}
	for _, want := range []string{`"type":"shell_call"`, `"commands":["go test ./..."]`, `"type":"apply_patch_call"`, `"type":"update_file"`,
		`"encrypted_content":"enc_`, `"phase":"commentary"`, `"input_tokens_details":{"cache_write_tokens":0,"cached_tokens":0}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("stream lacks %s", want)
		}
	}
	// A non-streaming request gets a Response body.
	resp, b = post(t, url, sprintf(responsesReq, "false"))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if err := doc.Schema("Response", b); err != nil {
		t.Errorf("response body: %v\n%s", err, b)
	}
	// A replay that leaves a call unanswered is refused, as the API does.
	unanswered := strings.Replace(body, `"input":[`, `"input":[{"type":"shell_call","id":"sh_1","call_id":"call_x","status":"completed","action":{"commands":["ls"],"timeout_ms":null,"max_output_length":null}},`, 1)
	resp, b = post(t, url, unanswered)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "No tool output found for shell call call_x") {
		t.Errorf("unanswered call: %d %s", resp.StatusCode, b)
	}
	if err := doc.Schema("ErrorResponse", b); err != nil {
		t.Errorf("400 body: %v", err)
	}
	// A chained request naming an unknown response is refused.
	resp, b = post(t, url, strings.Replace(body, `"store":false`, `"store":true,"previous_response_id":"resp_gone"`, 1))
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"code":"previous_response_not_found"`) {
		t.Errorf("unknown previous response: %d %s", resp.StatusCode, b)
	}
}

// TestResponsesCodexRendering checks that the codex family's tools get a
// freeform patch envelope and shell_command calls.
func TestResponsesCodexRendering(t *testing.T) {
	doc, err := apispec.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sim.ParseScript([]byte(`{"steps": [{"actions": [{"kind": "view", "path": "a.go", "start": 2, "end": 4},
	  {"kind": "create", "path": "b.go", "content": "package b\n"}]}]}`))
	srv := simtest.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, _ := srv.Listen(ctx)
	req, _ := http.NewRequest("POST", base+"/v1/responses", strings.NewReader(codexReq))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	b := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(b)
		buf.Write(b[:n])
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	types, datas := sseEvents(t, []byte(buf.String()))
	for i, d := range datas {
		if err := doc.Event([]byte(d)); err != nil {
			t.Errorf("event %d (%s): %v", i, types[i], err)
		}
	}
	out := buf.String()
	for _, want := range []string{`"name":"shell_command"`, `sed -n '2,4p' a.go`, `"type":"custom_tool_call"`,
		`*** Begin Patch\n*** Add File: b.go\n+package b\n*** End Patch`, "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done"} {
		if !strings.Contains(out, want) {
			t.Errorf("codex stream lacks %s", want)
		}
	}
}

// TestResponsesIncomplete: a step stopped at the output limit ends with
// response.incomplete (reason max_output_tokens), its last call item
// incomplete, every event valid.
func TestResponsesIncomplete(t *testing.T) {
	doc, err := apispec.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sim.ParseScript([]byte(`{"steps": [{"say": "Reading.", "stop": "max_tokens",
	  "actions": [{"kind": "run", "command": "ls"}, {"kind": "run", "command": "x", "tool": "read_file", "raw_input": "{\"path\":\"a.go\"}"}]}]}`))
	srv := simtest.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, _ := srv.Listen(ctx)
	_, b := post(t, base+"/v1/responses", sprintf(responsesReq, "true"))
	types, datas := sseEvents(t, b)
	for i, d := range datas {
		if err := doc.Event([]byte(d)); err != nil {
			t.Errorf("event %d (%s): %v", i, types[i], err)
		}
	}
	if types[len(types)-1] != "response.incomplete" {
		t.Fatalf("the stream ends with %s", types[len(types)-1])
	}
	last := datas[len(datas)-1]
	for _, want := range []string{`"incomplete_details":{"reason":"max_output_tokens"}`, `"status":"incomplete"`, `"arguments":"{\"path\""`} {
		if !strings.Contains(last, want) {
			t.Errorf("response.incomplete lacks %s: %s", want, last)
		}
	}
}

// TestResponsesStrict: what the real API refuses is refused with its error
// object (HTTP 400, message, type, param, code): an output answering a call
// never issued (or issued as another type), in a replay and in a chained
// request, and a request the API description does not allow.
func TestResponsesStrict(t *testing.T) {
	doc, err := apispec.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sim.ParseScript([]byte(`{"steps": [{"actions": [{"kind": "run", "command": "ls"}]}, {"say": "ok"}, {"say": "ok"}]}`))
	srv := simtest.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, _ := srv.Listen(ctx)
	url := base + "/v1/responses"
	call := `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read_file","arguments":"{}","status":"completed"}`
	out := func(typ, id string) string {
		if typ == "shell_call_output" {
			return `{"type":"shell_call_output","call_id":"` + id + `","output":[{"stdout":"","stderr":"","outcome":{"type":"exit","exit_code":0}}]}`
		}
		return `{"type":"` + typ + `","call_id":"` + id + `","output":"x"}`
	}
	with := func(items ...string) string {
		return strings.Replace(sprintf(responsesReq, "false"), `"input":[`, `"input":[`+strings.Join(items, ",")+`,`, 1)
	}
	tests := []struct {
		name, body, msg, param string
		status                 int
	}{
		{"answered", with(call, out("function_call_output", "call_1")), "", "", 200},
		{"orphan output", with(out("function_call_output", "call_9")),
			"No tool call found for function call output with call_id call_9.", "input", 400},
		{"output before its call", with(out("function_call_output", "call_1"), call),
			"No tool call found for function call output with call_id call_1.", "input", 400},
		{"output of another type", with(call, out("custom_tool_call_output", "call_1")),
			"No tool call found for custom tool call output with call_id call_1.", "input", 400},
		{"unanswered call", with(call), "No tool output found for function call call_1.", "input", 400},
		{"invalid body", strings.Replace(sprintf(responsesReq, "false"), `"store":false`, `"store":false,"max_output_tokens":"many"`, 1),
			"Invalid request: ", "max_output_tokens", 400},
		{"invalid item", with(`{"type":"function_call_output","call_id":"call_1","output":7}`, call),
			"Invalid request: ", "input", 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, url, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if tc.status == 200 {
				return
			}
			if err := doc.Schema("ErrorResponse", b); err != nil {
				t.Errorf("error body: %v", err)
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    any     `json:"code"`
				} `json:"error"`
			}
			json.Unmarshal(b, &e)
			if !strings.HasPrefix(e.Error.Message, tc.msg) || e.Error.Type != "invalid_request_error" || e.Error.Param == nil || !strings.HasPrefix(*e.Error.Param, tc.param) {
				t.Errorf("error %s", b)
			}
		})
	}
	// Chained: the outputs answer the calls of the response chained to.
	resp, b := post(t, url, strings.Replace(sprintf(responsesReq, "false"), `"store":false`, `"store":true`, 1))
	var first struct {
		ID     string `json:"id"`
		Output []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		} `json:"output"`
	}
	json.Unmarshal(b, &first)
	if resp.StatusCode != 200 || len(first.Output) == 0 {
		t.Fatalf("first response %d: %s", resp.StatusCode, b)
	}
	chained := func(id string) string {
		return `{"model":"gpt-5.2","store":true,"previous_response_id":"` + first.ID + `","input":[` + out("shell_call_output", id) + `]}`
	}
	if resp, b = post(t, url, chained("call_77")); resp.StatusCode != 400 || !strings.Contains(string(b), "No tool call found for shell call output with call_id call_77.") {
		t.Errorf("orphan output in a chained request: %d %s", resp.StatusCode, b)
	}
	if resp, b = post(t, url, chained(first.Output[0].CallID)); resp.StatusCode != 200 {
		t.Errorf("chained answer: %d %s", resp.StatusCode, b)
	}
}

package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
)

const chatReq = `{"model":"gpt-test","stream":%s,"stream_options":%s,"messages":[
 {"role":"system","content":"sys"},
 {"role":"user","content":"fix it"}],
 "tools":[
  {"type":"function","function":{"name":"read_file","description":"d","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},
  {"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}`

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp, buf.Bytes()
}

// TestChatDialectMatchesSpec checks every body, chunk and error the
// simulator authors in the Chat Completions dialect against the official
// schemas.
func TestChatDialectMatchesSpec(t *testing.T) {
	doc, err := apispec.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	script := `{"steps": [
	  {"say": "Looking at it — ünïcode too.", "actions": [{"kind": "view", "path": "a.go"}, {"kind": "run", "command": "go test ./..."}]},
	  {"say": "Done."}]}`
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
	url := base + "/v1/chat/completions"
	for _, body := range []string{
		sprintf(chatReq, "true", `{"include_usage":true}`),
		sprintf(chatReq, "false", `null`),
	} {
		if err := doc.RequestBody("/chat/completions", "POST", []byte(strings.Replace(body, `"stream_options":null,`, "", 1))); err != nil {
			t.Fatalf("the test's own request is invalid: %v", err)
		}
	}
	// Streaming: every data line is a chunk, then [DONE].
	resp, b := post(t, url, sprintf(chatReq, "true", `{"include_usage":true}`))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	n, done, usage := 0, false, false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		if err := doc.Schema("CreateChatCompletionStreamResponse", []byte(data)); err != nil {
			t.Errorf("chunk %d: %v\n%s", n, err, data)
		}
		usage = usage || strings.Contains(data, `"usage":{`)
		n++
	}
	if !done || !usage || n < 5 {
		t.Fatalf("done %v usage %v chunks %d", done, usage, n)
	}
	// Non-streaming body.
	body := strings.Replace(sprintf(chatReq, "false", `null`), `"stream_options":null,`, "", 1)
	resp, b = post(t, url, body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if err := doc.Schema("CreateChatCompletionResponse", b); err != nil {
		t.Errorf("body: %v\n%s", err, b)
	}
	// Errors: a 401 and a scripted 429.
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	r401, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var eb bytes.Buffer
	eb.ReadFrom(r401.Body)
	r401.Body.Close()
	if r401.StatusCode != 401 {
		t.Fatalf("no key: status %d", r401.StatusCode)
	}
	if err := doc.Schema("ErrorResponse", eb.Bytes()); err != nil {
		t.Errorf("401 body: %v", err)
	}
}

func TestChatFaultBodiesMatchSpec(t *testing.T) {
	doc, err := apispec.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sim.ParseScript([]byte(`{"steps": [{"say": "x", "faults": [{"kind": "status", "status": 429, "retry_after_ms": 1500}, {"kind": "mid_stream_error"}]}]}`))
	srv := simtest.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, _ := srv.Listen(ctx)
	body := sprintf(chatReq, "true", `{"include_usage":true}`)
	resp, b := post(t, base+"/v1/chat/completions", body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After-Ms") != "1500" || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("429: %d %v", resp.StatusCode, resp.Header)
	}
	if err := doc.Schema("ErrorResponse", b); err != nil {
		t.Errorf("429 body: %v", err)
	}
	_, b = post(t, base+"/v1/chat/completions", body)
	var last string
	for _, l := range strings.Split(string(b), "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			last = d
		}
	}
	if !strings.HasPrefix(last, `{"error":`) {
		t.Fatalf("no error event: %q", b)
	}
	if err := doc.Schema("ErrorResponse", []byte(last)); err != nil {
		t.Errorf("error event: %v", err)
	}
}

// TestMessagesDialectMatchesSpec checks the events, bodies and errors the
// simulator authors in the Messages dialect against the official schemas,
// for a turn with a thinking block, text and typed tool calls.
func TestMessagesDialectMatchesSpec(t *testing.T) {
	doc, err := apispec.Anthropic()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sim.ParseScript([]byte(`{"steps": [
	  {"think": "Plan.", "say": "Looking.", "actions": [{"kind": "view", "path": "a.go", "start": 1, "end": 5}, {"kind": "run", "command": "go test ./..."}],
	   "faults": [{"kind": "status", "status": 529}, {"kind": "mid_stream_error"}]}]}`))
	srv := simtest.New(s)
	srv.Root = "/repo"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, _ := srv.Listen(ctx)
	body := `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"fix"}]}],
	  "tools":[{"type":"text_editor_20250728","name":"str_replace_based_edit_tool"},{"type":"bash_20250124","name":"bash"}]}`
	if err := doc.RequestBody("/v1/messages", "POST", []byte(body)); err != nil {
		t.Fatalf("the test's own request is invalid: %v", err)
	}
	do := func(b string) (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(b))
		req.Header.Set("Anthropic-Version", "2023-06-01")
		req.Header.Set("X-Api-Key", "k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		return resp, buf.Bytes()
	}
	events := func(b []byte) (types []string, datas []string) {
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
			if ev != "" {
				types, datas = append(types, ev), append(datas, data)
			}
		}
		return
	}
	// Attempt 1: a 529 overloaded error.
	resp, b := do(body)
	if resp.StatusCode != 529 || resp.Header.Get("Request-Id") == "" {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := doc.Schema("ErrorResponse", b); err != nil || !strings.Contains(string(b), "overloaded_error") {
		t.Errorf("529 body: %v %s", err, b)
	}
	// Attempt 2: an error event after message_start.
	_, b = do(body)
	types, datas := events(b)
	if strings.Join(types, " ") != "message_start ping error" {
		t.Fatalf("mid-stream events %v", types)
	}
	if err := doc.Schema("ErrorResponse", []byte(datas[2])); err != nil {
		t.Errorf("error event: %v", err)
	}
	// Attempt 3: the full stream, in the documented order.
	resp, b = do(body)
	if resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	types, datas = events(b)
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop content_block_start content_block_delta content_block_stop"
	if got := strings.Join(types, " "); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "content_block_stop message_delta message_stop") {
		t.Fatalf("event order: %s", got)
	}
	for i, d := range datas {
		if types[i] == "ping" {
			continue // the vendored description adds its own Ping event; checked by shape below
		}
		if err := doc.Schema("MessageStreamEvent", []byte(d)); err != nil {
			t.Errorf("event %d (%s): %v\n%s", i, types[i], err, d)
		}
	}
	if !strings.Contains(string(b), `"path\":\"/repo/a.go\"`) && !strings.Contains(string(b), `/repo/a.go`) {
		t.Errorf("the editor call does not name the absolute path: %s", b)
	}
	// A non-streaming request gets a Message body.
	_, b = do(strings.Replace(body, `"stream":true`, `"stream":false`, 1))
	if err := doc.Schema("Message", b); err != nil {
		t.Errorf("message body: %v\n%s", err, b)
	}
}

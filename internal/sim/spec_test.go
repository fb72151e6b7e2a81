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
	srv := sim.New(s)
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
	srv := sim.New(s)
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

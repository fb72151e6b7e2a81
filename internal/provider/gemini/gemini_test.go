package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	if *update {
		if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs (run with -update to accept):\n%s", name, buf.Bytes())
	}
}

func TestEncodeGolden(t *testing.T) {
	b, err := New(Config{ThinkingTokens: 2048}).encode(model.SampleRequest())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/request.golden.json", b)
}

func TestEncodeRejectsTypedTools(t *testing.T) {
	req := &model.Request{Model: "m", Tools: []model.ToolSpec{{Kind: model.ToolTyped, Name: "bash", Type: "bash_20250124"}}}
	if _, err := New(Config{}).encode(req); err == nil {
		t.Fatal("a typed tool was accepted")
	}
}

func TestThinking(t *testing.T) {
	for _, tc := range []struct {
		model, effort string
		tokens        int
		want          string
	}{
		{"gemini-2.5-flash", "", 0, `null`},
		{"gemini-2.5-pro", "", 4096, `{"includeThoughts":true,"thinkingBudget":4096}`},
		{"gemini-2.5-flash", "none", 0, `{"thinkingBudget":0}`},
		{"gemini-3-pro-preview", "", 0, `null`},
		{"gemini-3-pro-preview", "", 2048, `{"includeThoughts":true,"thinkingLevel":"LOW"}`},
		{"gemini-3-pro-preview", "", 32000, `{"includeThoughts":true,"thinkingLevel":"HIGH"}`},
		{"models/gemini-3-flash", "medium", 32000, `{"includeThoughts":true,"thinkingLevel":"MEDIUM"}`},
		{"gemini-3-pro-preview", "none", 0, `{"thinkingLevel":"MINIMAL"}`},
		{"gemini-3-pro-preview", "xhigh", 0, `{"includeThoughts":true,"thinkingLevel":"HIGH"}`},
		{"gemini-2.5-pro", "low", 0, `{"includeThoughts":true,"thinkingBudget":1024}`},
		{"gemini-2.5-flash", "medium", 0, `{"includeThoughts":true,"thinkingBudget":8192}`},
		{"gemini-2.5-pro", "high", 0, `{"includeThoughts":true,"thinkingBudget":24576}`},
		{"gemini-2.5-pro", "xhigh", 0, `{"includeThoughts":true,"thinkingBudget":24576}`},
		{"gemini-2.5-flash", "minimal", 0, `{"includeThoughts":true,"thinkingBudget":1024}`},
		{"gemini-2.5-pro", "low", 4096, `{"includeThoughts":true,"thinkingBudget":4096}`},
	} {
		got, _ := json.Marshal(New(Config{ThinkingTokens: tc.tokens, Effort: tc.effort}).thinking(tc.model))
		if string(got) != tc.want {
			t.Errorf("%s effort %q tokens %d: %s, want %s", tc.model, tc.effort, tc.tokens, got, tc.want)
		}
	}
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct{ base, path, want string }{
		{"", "", DefaultBaseURL + "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{"http://h:1/", "", "http://h:1/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{"http://h:1/v1alpha", "", "http://h:1/v1alpha/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{"http://h:1", "/v1/projects/p/locations/global/publishers/google/models/%s", "http://h:1/v1/projects/p/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
	} {
		if got := New(Config{BaseURL: tc.base, Path: tc.path}).Endpoint("gemini-2.5-pro"); got != tc.want {
			t.Errorf("Endpoint(%q, %q) = %q, want %q", tc.base, tc.path, got, tc.want)
		}
	}
}

// sse frames chunks as the service does.
func sse(chunks ...string) string {
	var sb strings.Builder
	for _, c := range chunks {
		fmt.Fprintf(&sb, "data: %s\r\n\r\n", c)
	}
	return sb.String()
}

// server answers every request with status and body, and records the
// requests.
func server(t *testing.T, status int, header http.Header, body string) (*httptest.Server, *[]*http.Request, *[][]byte) {
	var reqs []*http.Request
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		reqs, bodies = append(reqs, r), append(bodies, b)
		for k, v := range header {
			w.Header()[k] = v
		}
		if status == http.StatusOK {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &reqs, &bodies
}

func TestTurnStreams(t *testing.T) {
	body := sse(
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me ","thought":true}]},"index":0}],"modelVersion":"gemini-3-pro-preview","responseId":"r1"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"look.","thought":true}]},"index":0}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Reading "}]},"index":0}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"it.","thoughtSignature":"c2lnLXRleHQ="}]},"index":0}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"fc_1","name":"read_file","args":{"path":"a.go"}},"thoughtSignature":"c2lnLWNhbGw="},{"functionCall":{"name":"read_file","args":{"path":"b.go"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":20,"thoughtsTokenCount":30,"cachedContentTokenCount":40,"totalTokenCount":150}}`,
	)
	srv, reqs, bodies := server(t, 200, nil, body)
	c := New(Config{BaseURL: srv.URL, APIKey: "k"})
	var deltas []string
	req := &model.Request{Model: "gemini-3-pro-preview", Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}
	resp, err := c.Turn(context.Background(), req, func(d model.Delta) {
		deltas = append(deltas, string(d.Kind)+":"+d.Text)
	})
	if err != nil {
		t.Fatal(err)
	}
	r := (*reqs)[0]
	if r.URL.Path != "/v1beta/models/gemini-3-pro-preview:streamGenerateContent" || r.URL.Query().Get("alt") != "sse" || r.Header.Get("x-goog-api-key") != "k" {
		t.Fatalf("request %s %s key %q", r.Method, r.URL, r.Header.Get("x-goog-api-key"))
	}
	if got := strings.Join(deltas, ","); got != "reasoning:Let me ,reasoning:look.,assistant:Reading ,assistant:it.,tool_call:,tool_call:" {
		t.Errorf("deltas %s", got)
	}
	if resp.StopReason != model.StopToolUse || resp.ID != "r1" || resp.Model != "gemini-3-pro-preview" {
		t.Errorf("stop %s id %s model %s", resp.StopReason, resp.ID, resp.Model)
	}
	if want := (model.Usage{InputTokens: 60, CacheReadTokens: 40, OutputTokens: 50, ReasoningTokens: 30}); resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
	if len(resp.Items) != 4 {
		t.Fatalf("items %+v", resp.Items)
	}
	if it := resp.Items[0]; it.Kind != model.KindReasoning || it.Text != "Let me look." {
		t.Errorf("reasoning %+v", it)
	}
	if it := resp.Items[1]; it.Kind != model.KindAssistant || it.Text != "Reading it." || !strings.Contains(string(it.Raw), `"thoughtSignature":"c2lnLXRleHQ="`) {
		t.Errorf("text %+v %s", it, it.Raw)
	}
	calls := resp.Calls()
	if len(calls) != 2 || calls[0].ID != "fc_1" || calls[0].Input != `{"path":"a.go"}` || !strings.HasPrefix(calls[1].ID, madeIDPrefix) {
		t.Fatalf("calls %+v", calls)
	}
	if len(resp.Wire.Request) == 0 || string(resp.Wire.Response) != body || (*bodies)[0] == nil {
		t.Error("the wire was not recorded")
	}

	// The next request replays the parts with their signatures, on the
	// parts they came with, and answers both calls in one user content.
	next := append(req.Items, resp.Items...)
	next = append(next,
		model.Item{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: calls[0].ID, Name: "read_file", Text: "package a"}},
		model.Item{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: calls[1].ID, Name: "read_file", Text: "no such file", IsError: true}})
	b, err := c.encode(&model.Request{Model: req.Model, Items: next})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/replay.golden.json", b)
}

func TestTurnOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		body   string
		stop   model.StopReason
		kind   provider.ErrorKind
		code   string
		after  time.Duration
	}{
		{name: "max tokens cuts a turn", status: 200, body: sse(`{"candidates":[{"content":{"role":"model","parts":[{"text":"abc"}]},"finishReason":"MAX_TOKENS","index":0}]}`), stop: model.StopMaxTokens},
		{name: "max tokens after a call", status: 200, body: sse(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},"finishReason":"MAX_TOKENS","index":0}]}`), stop: model.StopMaxTokens},
		{name: "safety", status: 200, body: sse(`{"candidates":[{"finishReason":"SAFETY","index":0}]}`), stop: model.StopRefusal},
		{name: "blocked prompt", status: 200, body: sse(`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":5}}`), stop: model.StopRefusal},
		{name: "malformed call", status: 200, body: sse(`{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"Malformed function call: print(","index":0}]}`), kind: provider.ErrStream, code: "MALFORMED_FUNCTION_CALL"},
		{name: "cut stream", status: 200, body: sse(`{"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0}]}`) + `data: {"candi`, kind: provider.ErrStream},
		{name: "no finish", status: 200, body: sse(`{"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0}]}`), kind: provider.ErrStream},
		{name: "error event", status: 200, body: sse(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`), kind: provider.ErrOverloaded, code: "UNAVAILABLE"},
		{name: "429 retry info", status: 429, body: `{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}`, kind: provider.ErrRateLimited, code: "RESOURCE_EXHAUSTED", after: 7 * time.Second},
		{name: "429 retry-after", status: 429, header: http.Header{"Retry-After": {"3"}}, body: `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`, kind: provider.ErrRateLimited, code: "RESOURCE_EXHAUSTED", after: 3 * time.Second},
		{name: "bad key", status: 400, body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`, kind: provider.ErrAuth, code: "INVALID_ARGUMENT"},
		{name: "400", status: 400, body: `{"error":{"code":400,"message":"Please ensure that function response turn comes immediately after a function call turn.","status":"INVALID_ARGUMENT"}}`, kind: provider.ErrBadRequest, code: "INVALID_ARGUMENT"},
		{name: "403", status: 403, body: `{"error":{"code":403,"message":"Method doesn't allow unregistered callers","status":"PERMISSION_DENIED"}}`, kind: provider.ErrAuth, code: "PERMISSION_DENIED"},
		{name: "404 model", status: 404, body: `{"error":{"code":404,"message":"models/x is not found for API version v1beta","status":"NOT_FOUND"}}`, kind: provider.ErrNotFound, code: "NOT_FOUND"},
		{name: "500", status: 500, body: `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`, kind: provider.ErrServer, code: "INTERNAL"},
		{name: "503", status: 503, body: `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`, kind: provider.ErrOverloaded, code: "UNAVAILABLE"},
		{name: "another server", status: 404, body: "<html>not found</html>", kind: provider.ErrNotAPI},
		{name: "not a stream", status: 200, body: "<html>hello</html>\n", kind: provider.ErrNotAPI},
		{name: "proxy 502", status: 502, body: "Bad Gateway", kind: provider.ErrServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, reqs, _ := server(t, tc.status, tc.header, tc.body)
			c := New(Config{BaseURL: srv.URL, APIKey: "k", Retry: provider.RetryPolicy{MaxAttempts: 1}})
			resp, err := c.Turn(context.Background(), &model.Request{Model: "gemini-2.5-flash", Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil)
			if len(*reqs) != 1 {
				t.Fatalf("%d requests", len(*reqs))
			}
			if tc.kind == "" {
				if err != nil {
					t.Fatal(err)
				}
				if resp.StopReason != tc.stop {
					t.Fatalf("stop %s, want %s", resp.StopReason, tc.stop)
				}
				return
			}
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err %v (%T), want a *provider.Error", err, err)
			}
			if pe.Kind != tc.kind || pe.Code != tc.code || pe.RetryAfter != tc.after {
				t.Fatalf("kind %s code %q after %s (%v), want %s %q %s", pe.Kind, pe.Code, pe.RetryAfter, pe, tc.kind, tc.code, tc.after)
			}
		})
	}
}

// TestRetries: a 429 asking for a short wait, then a 503, then a
// complete turn.
func TestRetries(t *testing.T) {
	answers := []struct {
		status int
		body   string
	}{
		{429, `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.01s"}]}}`},
		{503, `{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`},
		{200, sse(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}]}`)},
	}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[min(n, len(answers)-1)]
		n++
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	defer srv.Close()
	var waits []time.Duration
	c := New(Config{BaseURL: srv.URL, Retry: provider.RetryPolicy{BaseDelay: time.Millisecond, OnRetry: func(_ int, w time.Duration, _ error) { waits = append(waits, w) }}})
	resp, err := c.Turn(context.Background(), &model.Request{Model: "gemini-2.5-flash", Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 3 || resp.Text() != "ok" || len(waits) != 2 || waits[0] != 10*time.Millisecond {
		t.Fatalf("attempts %d text %q waits %v", resp.Attempts, resp.Text(), waits)
	}
}

func TestDeclareTools(t *testing.T) {
	got, err := New(Config{}).DeclareTools(model.SampleRequest().Tools)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"functionDeclarations":[{"name":"read_file","description":"Read a file.","parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}}]}]`
	if string(got) != want {
		t.Fatalf("got %s", got)
	}
}

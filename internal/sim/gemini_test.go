package sim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/trussdev/truss/internal/sim/simtest"
)

// TestGeminiSDK drives Google's own SDK against the simulated Gemini API:
// a streamed turn with a thought, a signed function call with an id (a
// Gemini 3 model), the SDK's history sent back with the call's response,
// and the closing turn.
func TestGeminiSDK(t *testing.T) {
	_, base := simtest.Serve(t, `{"steps": [
	  {"think": "Look at the file.", "say": "Reading.", "actions": [{"kind": "call", "tool": "read_file", "content": "{\"path\": \"a.go\"}"}]},
	  {"say": "All done."}]}`, "gk-test")
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "gk-test", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: base, APIVersion: "v1beta"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "read_file",
		ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}}}},
		ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true, ThinkingLevel: genai.ThinkingLevelLow}}
	history := []*genai.Content{genai.NewContentFromText("Fix the failing test.", genai.RoleUser)}
	turn := func() (*genai.Content, string, *genai.GenerateContentResponseUsageMetadata) {
		var parts []*genai.Part
		var finish string
		var usage *genai.GenerateContentResponseUsageMetadata
		for resp, err := range client.Models.GenerateContentStream(ctx, "gemini-3-pro-preview", history, cfg) {
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range resp.Candidates {
				if c.Content != nil {
					parts = append(parts, c.Content.Parts...)
				}
				if c.FinishReason != "" {
					finish = string(c.FinishReason)
				}
			}
			usage = resp.UsageMetadata
		}
		return &genai.Content{Role: genai.RoleModel, Parts: parts}, finish, usage
	}
	got, finish, usage := turn()
	var thought, text string
	var call *genai.FunctionCall
	var callSig []byte
	for _, p := range got.Parts {
		switch {
		case p.FunctionCall != nil:
			call, callSig = p.FunctionCall, p.ThoughtSignature
		case p.Thought:
			thought += p.Text
		default:
			text += p.Text
		}
	}
	if finish != "STOP" || thought != "Look at the file." || text != "Reading." || call == nil || call.Name != "read_file" || call.Args["path"] != "a.go" || call.ID == "" || len(callSig) == 0 {
		t.Fatalf("turn: finish %q thought %q text %q call %+v signature %q", finish, thought, text, call, callSig)
	}
	if usage == nil || usage.PromptTokenCount == 0 || usage.ThoughtsTokenCount == 0 {
		t.Fatalf("usage %+v", usage)
	}
	history = append(history, got, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{ID: call.ID, Name: call.Name, Response: map[string]any{"output": "package a"}}}}})
	got, finish, _ = turn()
	if finish != "STOP" || len(got.Parts) == 0 || !strings.Contains(got.Parts[0].Text, "All done.") {
		t.Fatalf("closing turn: %q %+v", finish, got.Parts)
	}
}

// TestGeminiStrict: what the service refuses, the simulated one refuses
// with Google's error, and a 429 fault carries its RetryInfo.
func TestGeminiStrict(t *testing.T) {
	srv, base := simtest.Serve(t, `{"steps": [{"faults": [{"kind": "status", "status": 429, "retry_after_ms": 1500}], "say": "ok"}]}`, "gk-test")
	user := `{"role":"user","parts":[{"text":"hi"}]}`
	call := func(sig string) string {
		s := ""
		if sig != "" {
			s = `,"thoughtSignature":"` + sig + `"`
		}
		return `{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f","args":{}}` + s + `}]}`
	}
	resp := `{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"f","response":{"output":"x"}}}]}`
	for _, tc := range []struct {
		name, model, key, body string
		status                 int
		want                   string
	}{
		{"no key", "gemini-2.5-flash", "", `{"contents":[` + user + `]}`, 403, "PERMISSION_DENIED"},
		{"wrong key", "gemini-2.5-flash", "nope", `{"contents":[` + user + `]}`, 400, "API_KEY_INVALID"},
		{"no contents", "gemini-2.5-flash", "gk-test", `{"contents":[]}`, 400, "contents is not specified"},
		{"a bad role", "gemini-2.5-flash", "gk-test", `{"contents":[{"role":"assistant","parts":[{"text":"x"}]}]}`, 400, "valid role"},
		{"two user turns", "gemini-2.5-flash", "gk-test", `{"contents":[` + user + `,` + user + `]}`, 400, "must alternate"},
		{"a call unanswered", "gemini-2.5-flash", "gk-test", `{"contents":[` + user + `,` + call("") + `,` + user + `]}`, 400, "number of function response parts"},
		{"a response without a call", "gemini-2.5-flash", "gk-test", `{"contents":[` + user + `,{"role":"model","parts":[{"text":"x"}]},` + resp + `]}`, 400, "function response turn comes immediately after a function call turn"},
		{"a Gemini 3 call without its signature", "gemini-3-pro-preview", "gk-test", `{"contents":[` + user + `,` + call("") + `,` + resp + `]}`, 400, "thought_signature"},
		{"both schemas", "gemini-2.5-flash", "gk-test", `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT"},"parametersJsonSchema":{"type":"object"}}]}]}`, 400, "mutually exclusive"},
		{"budget and level", "gemini-2.5-flash", "gk-test", `{"contents":[` + user + `],"generationConfig":{"thinkingConfig":{"thinkingBudget":10,"thinkingLevel":"LOW"}}}`, 400, "thinking budget and thinking level"},
		{"429 with RetryInfo", "gemini-2.5-flash", "gk-test", `{"contents":[` + user + `]}`, 429, `"retryDelay":"1.500s"`},
		{"after the fault", "gemini-3-pro-preview", "gk-test", `{"contents":[` + user + `,` + call("c2ln") + `,` + resp + `]}`, 200, "data: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", base+"/v1beta/models/"+tc.model+":streamGenerateContent?alt=sse", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			if tc.key != "" {
				req.Header.Set("x-goog-api-key", tc.key)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%d %s, want %d with %q", res.StatusCode, b, tc.status, tc.want)
			}
			if tc.status != 200 {
				var e struct {
					Error struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
						Status  string `json:"status"`
					} `json:"error"`
				}
				if json.Unmarshal(b, &e) != nil || e.Error.Code != tc.status || e.Error.Status == "" || e.Error.Message == "" {
					t.Fatalf("not Google's error: %s", b)
				}
				return
			}
			if res.Header.Get("Content-Type") != "text/event-stream" || !strings.HasSuffix(string(b), "\r\n\r\n") {
				t.Fatalf("not Google's framing: %q %q", res.Header.Get("Content-Type"), b)
			}
		})
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d requests recorded, want the two that reached the model", n)
	}
}

package gemini

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"google.golang.org/genai"

	"github.com/trussdev/truss/internal/model"
)

// sdkBody returns the body google.golang.org/genai sends for contents and
// config, and checks that it goes where this client's goes.
func sdkBody(t *testing.T, modelName string, contents []*genai.Content, cfg *genai.GenerateContentConfig) []byte {
	t.Helper()
	var got []byte
	var path, key string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		path, key = r.URL.Path+"?"+r.URL.RawQuery, r.Header.Get("x-goog-api-key")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sse(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}]}`))
	}))
	defer srv.Close()
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL, APIVersion: APIVersion}})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range client.Models.GenerateContentStream(context.Background(), modelName, contents, cfg) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := "/" + APIVersion + "/models/" + modelName + ":streamGenerateContent?alt=sse"; path != want || key != "k" {
		t.Fatalf("the SDK sent to %s with key %q; this client sends to %s", path, key, want)
	}
	return got
}

func ptr[T any](v T) *T { return &v }

// TestRequestsMatchSDK: for each conversation, the request this client
// sends equals, as JSON values, what Google's SDK sends for the same
// contents, tools and configuration.
func TestRequestsMatchSDK(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)
	var schemaAny any
	json.Unmarshal(schema, &schemaAny)
	sig := []byte("opaque signature bytes \x00\xff")
	sigB64, _ := json.Marshal(sig) // []byte marshals as standard base64
	var sigText string
	json.Unmarshal(sigB64, &sigText)
	callPart, _ := json.Marshal(Part{FunctionCall: &FunctionCall{ID: "fc_1", Name: "read_file", Args: json.RawMessage(`{"path":"a.go"}`)}, ThoughtSignature: sigText})
	thoughtPart, _ := json.Marshal(Part{Text: "Thinking.", Thought: true})
	textPart, _ := json.Marshal(Part{Text: "Reading.", ThoughtSignature: sigText})
	tool := model.ToolSpec{Kind: model.ToolFunction, Name: "read_file", Description: "Read a file.", Parameters: schema}
	sdkTools := []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "read_file", Description: "Read a file.", ParametersJsonSchema: schemaAny}}}}

	for _, tc := range []struct {
		name     string
		cfg      Config
		req      *model.Request
		contents []*genai.Content
		sdkCfg   *genai.GenerateContentConfig
	}{
		{name: "one user turn",
			req:      &model.Request{Model: "gemini-2.5-flash", Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}},
			contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}},
		{name: "system, tools, output limit, budget", cfg: Config{ThinkingTokens: 4096},
			req: &model.Request{Model: "gemini-2.5-pro", System: "Be brief.", MaxTokens: 2048, Tools: []model.ToolSpec{tool},
				Items: []model.Item{{Kind: model.KindUser, Text: "fix it"}}},
			contents: []*genai.Content{genai.NewContentFromText("fix it", genai.RoleUser)},
			sdkCfg: &genai.GenerateContentConfig{SystemInstruction: &genai.Content{Parts: []*genai.Part{{Text: "Be brief."}}}, MaxOutputTokens: 2048, Tools: sdkTools,
				ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: ptr(int32(4096))}}},
		{name: "thinking off", cfg: Config{Effort: "none"},
			req:      &model.Request{Model: "gemini-2.5-flash", Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}},
			contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)},
			sdkCfg:   &genai.GenerateContentConfig{ThinkingConfig: &genai.ThinkingConfig{ThinkingBudget: ptr(int32(0))}}},
		{name: "gemini 3 level", cfg: Config{ThinkingTokens: 32000},
			req:      &model.Request{Model: "gemini-3-pro-preview", Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}},
			contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)},
			sdkCfg:   &genai.GenerateContentConfig{ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true, ThinkingLevel: genai.ThinkingLevelHigh}}},
		{name: "a call, its signature and its result", cfg: Config{},
			req: &model.Request{Model: "gemini-3-pro-preview", Tools: []model.ToolSpec{tool}, Items: []model.Item{
				{Kind: model.KindUser, Text: "read a.go"},
				{Kind: model.KindReasoning, Text: "Thinking.", Provider: Dialect, Raw: thoughtPart},
				{Kind: model.KindAssistant, Text: "Reading.", Provider: Dialect, Raw: textPart},
				{Kind: model.KindToolCall, Provider: Dialect, Raw: callPart, Call: &model.ToolCall{ID: "fc_1", Name: "read_file", Kind: model.ToolFunction, Input: `{"path":"a.go"}`}},
				{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: "fc_1", Name: "read_file", Text: "package a"}},
				{Kind: model.KindUser, Text: "and now?"},
			}},
			contents: []*genai.Content{
				genai.NewContentFromText("read a.go", genai.RoleUser),
				{Role: genai.RoleModel, Parts: []*genai.Part{
					{Text: "Thinking.", Thought: true},
					{Text: "Reading.", ThoughtSignature: sig},
					{FunctionCall: &genai.FunctionCall{ID: "fc_1", Name: "read_file", Args: map[string]any{"path": "a.go"}}, ThoughtSignature: sig}}},
				{Role: genai.RoleUser, Parts: []*genai.Part{
					{FunctionResponse: &genai.FunctionResponse{ID: "fc_1", Name: "read_file", Response: map[string]any{"output": "package a"}}},
					{Text: "and now?"}}},
			},
			sdkCfg: &genai.GenerateContentConfig{Tools: sdkTools}},
		{name: "a failed call of a 2.5 model (no id)", cfg: Config{},
			req: &model.Request{Model: "gemini-2.5-flash", Items: []model.Item{
				{Kind: model.KindUser, Text: "run it"},
				{Kind: model.KindToolCall, Provider: Dialect, Raw: json.RawMessage(`{"functionCall":{"name":"bash","args":{"command":"go test"}}}`),
					Call: &model.ToolCall{ID: madeIDPrefix + "x_0", Name: "bash", Kind: model.ToolFunction, Input: `{"command":"go test"}`}},
				{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: madeIDPrefix + "x_0", Name: "bash", Text: "exit 1", IsError: true}},
			}},
			contents: []*genai.Content{
				genai.NewContentFromText("run it", genai.RoleUser),
				{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Name: "bash", Args: map[string]any{"command": "go test"}}}}},
				{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{Name: "bash", Response: map[string]any{"error": "exit 1"}}}}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, err := New(tc.cfg).encode(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			theirs := sdkBody(t, tc.req.Model, tc.contents, tc.sdkCfg)
			var a, b any
			if err := json.Unmarshal(ours, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(theirs, &b); err != nil {
				t.Fatal(err)
			}
			// The SDK sends an empty generationConfig where this client
			// sends none: the same request.
			if m, ok := b.(map[string]any); ok && reflect.DeepEqual(m["generationConfig"], map[string]any{}) {
				delete(m, "generationConfig")
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("requests differ:\nours: %s\nSDK:  %s", ours, theirs)
			}
		})
	}
}

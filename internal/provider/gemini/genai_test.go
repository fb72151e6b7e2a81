package gemini

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"sync"
	"testing"

	"cloud.google.com/go/auth"
	"golang.org/x/oauth2"
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

// sdkCase is a conversation as this client takes it (cfg, req) and as
// Google's SDK takes it (contents, sdkCfg).
type sdkCase struct {
	name     string
	cfg      Config
	req      *model.Request
	contents []*genai.Content
	sdkCfg   *genai.GenerateContentConfig
}

// sdkCases are the conversations both backends' comparisons send: tools,
// a thinking budget and level, thinking off, thought parts and
// signatures replayed, results with and without call ids.
func sdkCases() []sdkCase {
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

	return []sdkCase{
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
	}
}

// TestRequestsMatchSDK: for each conversation, the request this client
// sends equals, as JSON values, what Google's SDK sends for the same
// contents, tools and configuration.
func TestRequestsMatchSDK(t *testing.T) {
	for _, tc := range sdkCases() {
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

// received is a request as the server saw it.
type received struct {
	method, target string // target: the path and the query
	header         http.Header
	body           []byte
}

// recorder is a server that answers every request with one finished text
// chunk and keeps what it received.
func recorder(t *testing.T) (*httptest.Server, func() []received) {
	t.Helper()
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Method, r.URL.Path + "?" + r.URL.RawQuery, r.Header.Clone(), b})
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sse(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}]}`))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// staticToken is a cloud.google.com/go/auth token provider of one token
// that does not expire, so that the SDK needs no credentials file and no
// network.
type staticToken string

func (s staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: string(s), Type: "Bearer"}, nil
}

// TestVertexRequestsMatchSDK: for each conversation of
// TestRequestsMatchSDK, the request this client sends to Vertex AI, set
// up as vertex-gemini sets it up (the publishers route of
// VertexAPIVersion, a bearer token), goes to the same path with the same
// query and the same Authorization as what Google's SDK sends with its
// Vertex AI backend for the same project, location and credentials, with
// no API key, and its body is equal as a JSON value.
//
// The SDK's own headers are left out: its user-agent and
// x-goog-api-client name the SDK's version, and OpenCensus's trace
// context is telemetry. X-Goog-User-Project, the credentials' quota
// project, is checked apart (TestVertexQuotaProjectHeader).
func TestVertexRequestsMatchSDK(t *testing.T) {
	for _, v := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_CLOUD_REGION",
		"GOOGLE_VERTEX_BASE_URL", "GOOGLE_GENAI_API_VERSION", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_QUOTA_PROJECT"} {
		t.Setenv(v, "")
	}
	const project, location, token = "my-project-123", "us-central1", "ya29.a0-access-token"
	for _, tc := range sdkCases() {
		t.Run(tc.name, func(t *testing.T) {
			srv, got := recorder(t)
			// As internal/harness's vertexGeminiConfig makes it.
			cfg := tc.cfg
			cfg.BaseURL = srv.URL
			cfg.Path = "/" + VertexAPIVersion + "/projects/" + url.PathEscape(project) + "/locations/" + url.PathEscape(location) + "/publishers/google/models/%s"
			cfg.Token = oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token, TokenType: "Bearer"})
			if _, err := New(cfg).Turn(context.Background(), tc.req, nil); err != nil {
				t.Fatal(err)
			}

			client, err := genai.NewClient(context.Background(), &genai.ClientConfig{Backend: genai.BackendVertexAI,
				Project: project, Location: location, Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken(token)}),
				HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range client.Models.GenerateContentStream(context.Background(), tc.req.Model, tc.contents, tc.sdkCfg) {
				if err != nil {
					t.Fatal(err)
				}
			}

			reqs := got()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want this client's and the SDK's", len(reqs))
			}
			ours, theirs := reqs[0], reqs[1]
			if want := "/v1beta1/projects/" + project + "/locations/" + location + "/publishers/google/models/" + tc.req.Model + ":streamGenerateContent?alt=sse"; theirs.target != want {
				t.Errorf("the SDK sent to %s, not %s", theirs.target, want)
			}
			if ours.method != theirs.method || ours.target != theirs.target {
				t.Errorf("this client sends %s %s; the SDK %s %s", ours.method, ours.target, theirs.method, theirs.target)
			}
			// Get: the SDK sends an empty X-Goog-User-Project when the
			// credentials name no quota project, the same as none.
			for _, h := range []string{"Authorization", "X-Goog-Api-Key", "Content-Type", "X-Goog-User-Project"} {
				if a, b := ours.header.Get(h), theirs.header.Get(h); a != b {
					t.Errorf("%s: this client sends %q; the SDK %q", h, a, b)
				}
			}
			if a := ours.header.Get("Authorization"); a != "Bearer "+token {
				t.Errorf("Authorization: %q", a)
			}
			var a, b any
			if err := json.Unmarshal(ours.body, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(theirs.body, &b); err != nil {
				t.Fatal(err)
			}
			if m, ok := b.(map[string]any); ok && reflect.DeepEqual(m["generationConfig"], map[string]any{}) {
				delete(m, "generationConfig")
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("requests differ:\nours: %s\nSDK:  %s", ours.body, theirs.body)
			}
		})
	}
}

// TestVertexQuotaProjectHeader: when the credentials name a quota project
// (an authorized_user file's quota_project_id, GOOGLE_CLOUD_QUOTA_PROJECT),
// Google's SDK sends it as X-Goog-User-Project on every Vertex AI request;
// given it in Config.Header, this client sends the same header.
func TestVertexQuotaProjectHeader(t *testing.T) {
	t.Setenv("GOOGLE_CLOUD_QUOTA_PROJECT", "")
	const project, location, token, quota = "my-project-123", "europe-west4", "ya29.tok", "billing-project"
	srv, got := recorder(t)
	req := &model.Request{Model: "gemini-2.5-flash", Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}
	c := New(Config{BaseURL: srv.URL, Header: http.Header{"X-Goog-User-Project": {quota}},
		Path:  "/" + VertexAPIVersion + "/projects/" + project + "/locations/" + location + "/publishers/google/models/%s",
		Token: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token})})
	if _, err := c.Turn(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	creds := auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken(token),
		QuotaProjectIDProvider: auth.CredentialsPropertyFunc(func(context.Context) (string, error) { return quota, nil })})
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{Backend: genai.BackendVertexAI,
		Project: project, Location: location, Credentials: creds, HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range client.Models.GenerateContentStream(context.Background(), req.Model, genai.Text("hi"), nil) {
		if err != nil {
			t.Fatal(err)
		}
	}
	reqs := got()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want this client's and the SDK's", len(reqs))
	}
	for i, who := range []string{"this client", "the SDK"} {
		if h := reqs[i].header.Values("X-Goog-User-Project"); !slices.Equal(h, []string{quota}) {
			t.Errorf("%s sends X-Goog-User-Project %q, want %q", who, h, quota)
		}
		if a := reqs[i].header.Get("Authorization"); a != "Bearer "+token {
			t.Errorf("%s sends Authorization %q", who, a)
		}
	}
}

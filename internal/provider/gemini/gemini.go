// Package gemini speaks the Gemini API's streamGenerateContent (v1beta,
// ?alt=sse) with the standard library: server-sent events of
// GenerateContentResponse chunks, function tools declared with
// parametersJsonSchema, whole functionCall parts (no argument deltas),
// thought parts and thoughtSignatures replayed on the part they came
// with, usage from usageMetadata, and Google's error JSON.
//
// Google's Go SDK (google.golang.org/genai) is not linked: it imports
// gRPC, protobuf and OpenCensus through cloud.google.com/go/auth, whose
// package initialization every start of the binary would pay for. The
// tests hold this client's requests against the SDK's for the same
// conversations, and drive the SDK against the simulated server.
//
// Function parameters are sent as parametersJsonSchema, which takes JSON
// Schema as tools declare it ("additionalProperties", "$ref", type
// arrays), rather than parameters, the OpenAPI 3.0 subset that rejects
// what it does not know; the two are mutually exclusive.
package gemini

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/googleauth"
)

// Dialect is the adapter's name, and the items' Provider.
const Dialect = "gemini"

// DefaultBaseURL is the Gemini API's address.
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// APIVersion is the version path the requests use.
const APIVersion = "v1beta"

// VertexAPIVersion is the version of Vertex AI's API that Google's SDK
// sends Gemini requests to.
const VertexAPIVersion = "v1beta1"

// madeIDPrefix starts the ids Truss makes for calls the server sent
// without one (Gemini 2.5); they are never sent back.
const madeIDPrefix = "truss_gemini_"

// Config configures a Client.
type Config struct {
	// BaseURL is the API's address (DefaultBaseURL when empty); a path
	// ending in a version ("/v1beta") is used as it is.
	BaseURL string
	// APIKey is sent as x-goog-api-key.
	APIKey string
	// Header holds more headers of every request; nil for none.
	Header http.Header
	// Path, when set, replaces "/v1beta/models/{model}" (Vertex AI's
	// publishers route); %s stands for the model.
	Path string
	// Token, when set, authorizes every request with a bearer token of
	// its own (Vertex AI's access tokens, which expire within the hour)
	// instead of a key.
	Token oauth2.TokenSource
	HTTP  *http.Client
	// Retry governs the retries of failed turns.
	Retry provider.RetryPolicy
	// ThinkingTokens is --thinking: a Gemini 2.5 model's thinkingBudget, a
	// Gemini 3 model's thinkingLevel (up to 8,192 LOW, more HIGH); 0 sends
	// none (the model's default, dynamic thinking).
	ThinkingTokens int
	// Effort, when set, is a Gemini 3 model's thinkingLevel ("minimal",
	// "low", "medium", "high"; "xhigh" is HIGH), before ThinkingTokens; a
	// 2.5 model's budget after ThinkingTokens (effortBudget; "none" is 0).
	Effort string
	// Label names the provider in every error the client returns: the
	// provider the user chose ("vertex-gemini", a named provider's NAME);
	// "" is "gemini".
	Label string
	// ReachHint says what to check when the server cannot be reached or
	// is not the Gemini API ("" for the base URL); KeyHint what to check
	// when the server refuses the credentials (401, 403, an invalid
	// key), added to its message ("" adds nothing).
	ReachHint, KeyHint string
	// NotAPIHint says what to check when a server answers that is not
	// the API ("" for ReachHint, else the base URL); Service names the
	// API it is compared with ("" for the Gemini API: "Vertex AI's
	// Gemini API").
	NotAPIHint, Service string
	// DeniedHint is added to a PERMISSION_DENIED refusal, instead of
	// KeyHint: what a Vertex AI project's account lacks
	// (provider.VertexDeniedHint); "" adds KeyHint.
	DeniedHint string
}

// Client is a Gemini adapter.
type Client struct{ cfg Config }

// New returns a client.
func New(cfg Config) *Client { return &Client{cfg: cfg} }

// Name implements provider.Provider.
func (c *Client) Name() string { return Dialect }

// Endpoint returns the URL of a model's streamGenerateContent.
func (c *Client) Endpoint(modelName string) string {
	base := strings.TrimSuffix(c.cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	p := c.cfg.Path
	if p == "" {
		p = "/" + APIVersion + "/models/%s"
		if u, err := url.Parse(base); err == nil && isVersion(u.Path) {
			p = "/models/%s"
		}
	}
	return base + fmt.Sprintf(p, url.PathEscape(modelName)) + ":streamGenerateContent?alt=sse"
}

// modelsURL returns the URL of the Gemini API's model list.
func (c *Client) modelsURL() string {
	base := strings.TrimSuffix(c.cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	if u, err := url.Parse(base); err == nil && isVersion(u.Path) {
		return base + "/models"
	}
	return base + "/" + APIVersion + "/models"
}

// Models implements provider.ModelLister for the Gemini API: GET
// models, a page of up to 1,000 at a time (pageSize, pageToken), one
// attempt per page. Only the models that generate content are listed
// (not the embedding models), by the name a request gives ("models/"
// cut); inputTokenLimit is the context window. Vertex AI's route (a
// Config.Path) lists no models: its error matches
// provider.ErrNotSupported.
func (c *Client) Models(ctx context.Context) (_ []provider.ModelInfo, err error) {
	// A key the server echoed is hidden here, as in a turn's error.
	defer func() { err = provider.MaskError(err, c.cfg.Retry.AllSecrets()) }()
	if c.cfg.Path != "" {
		return nil, provider.Unsupported(c.label()+": the models of Vertex AI's publishers are not listed (truss models lists those Truss knows)", nil)
	}
	var out []provider.ModelInfo
	token := ""
	for {
		q := url.Values{"pageSize": {"1000"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		page, next, err := c.modelsPage(ctx, c.modelsURL()+"?"+q.Encode())
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			if len(out) == provider.MaxModels {
				return out, nil
			}
			out = append(out, m)
		}
		if next == "" || next == token {
			return out, nil
		}
		token = next
	}
}

// modelsPage is one page of the model list and the next page's token.
func (c *Client) modelsPage(ctx context.Context, u string) ([]provider.ModelInfo, string, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", fmt.Errorf("%s: list models: %w", c.label(), err)
	}
	for k, v := range c.cfg.Header {
		hreq.Header[k] = v
	}
	hreq.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("x-goog-api-key", c.cfg.APIKey)
	}
	hc := cmp.Or(c.cfg.HTTP, provider.DefaultClient())
	hresp, err := hc.Do(hreq)
	if err != nil {
		return nil, "", c.own(provider.TransportError(ctx, Dialect, cmp.Or(c.cfg.ReachHint, "check the base URL and the network"), err))
	}
	defer hresp.Body.Close()
	if hresp.StatusCode != http.StatusOK {
		pe := httpError(hreq, hresp, c.service(), c.notAPIHint())
		_ = c.own(pe)
		if pe.Kind == provider.ErrNotAPI {
			return nil, "", pe
		}
		return nil, "", provider.ModelsError(http.MethodGet, hreq.URL.Path, pe)
	}
	b, err := io.ReadAll(io.LimitReader(hresp.Body, 64<<20))
	if err != nil {
		return nil, "", c.own(provider.TransportError(ctx, Dialect, cmp.Or(c.cfg.ReachHint, "check the base URL and the network"), err))
	}
	var list struct {
		Models *[]struct {
			Name                       string   `json:"name"`
			DisplayName                string   `json:"displayName"`
			InputTokenLimit            int64    `json:"inputTokenLimit"`
			SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
		} `json:"models"`
		NextPageToken string `json:"nextPageToken"`
	}
	if json.Unmarshal(b, &list) != nil || list.Models == nil && list.NextPageToken == "" && !bytes.Equal(bytes.TrimSpace(b), []byte("{}")) {
		return nil, "", c.own(provider.NotAPI(Dialect, c.service(), hreq, hresp.StatusCode, b, c.notAPIHint()))
	}
	var out []provider.ModelInfo
	if list.Models != nil {
		for _, m := range *list.Models {
			id := strings.TrimPrefix(m.Name, "models/")
			if id == "" || !slices.Contains(m.SupportedGenerationMethods, "generateContent") {
				continue
			}
			out = append(out, provider.ModelInfo{ID: id, DisplayName: m.DisplayName, ContextWindow: m.InputTokenLimit})
		}
	}
	return out, list.NextPageToken, nil
}

// isVersion reports whether a path ends in an API version ("/v1beta").
func isVersion(p string) bool {
	i := strings.LastIndexByte(p, '/')
	v := p[i+1:]
	return len(v) > 1 && v[0] == 'v' && v[1] >= '0' && v[1] <= '9'
}

// Turn implements provider.Provider.
func (c *Client) Turn(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	body, err := c.encode(req)
	if err != nil {
		return nil, err
	}
	return c.cfg.Retry.Turn(ctx, func() (*model.Response, error) {
		resp, err := c.once(ctx, req.Model, body, onDelta)
		return resp, c.own(err)
	})
}

// IsGemini3 reports whether a model takes a thinkingLevel rather than a
// thinkingBudget.
func IsGemini3(modelName string) bool {
	m := strings.ToLower(modelName)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return strings.HasPrefix(m, "gemini-3")
}

// thinking returns the request's thinkingConfig, nil for none.
func (c *Client) thinking(modelName string) *ThinkingConfig {
	effort := strings.ToLower(c.cfg.Effort)
	if IsGemini3(modelName) {
		level := ""
		switch {
		case effort == "minimal" || effort == "low" || effort == "medium" || effort == "high":
			level = strings.ToUpper(effort)
		case effort == "xhigh":
			level = "HIGH"
		case effort == "none":
			level = "MINIMAL"
		case c.cfg.ThinkingTokens > 8192:
			level = "HIGH"
		case c.cfg.ThinkingTokens > 0:
			level = "LOW"
		}
		if level == "" {
			return nil
		}
		return &ThinkingConfig{ThinkingLevel: level, IncludeThoughts: level != "MINIMAL"}
	}
	switch {
	case c.cfg.ThinkingTokens > 0:
		n := c.cfg.ThinkingTokens
		return &ThinkingConfig{ThinkingBudget: &n, IncludeThoughts: true}
	case effort == "none":
		n := 0
		return &ThinkingConfig{ThinkingBudget: &n}
	case effortBudget[effort] > 0:
		n := effortBudget[effort]
		return &ThinkingConfig{ThinkingBudget: &n, IncludeThoughts: true}
	}
	return nil
}

// effortBudget is the thinkingBudget of a Gemini 2.5 model for a
// reasoning effort: Google's own mapping of OpenAI's efforts in the Gemini
// API's OpenAI compatibility (low 1K, medium 8K, high 24K tokens), with
// minimal as low and xhigh as high.
var effortBudget = map[string]int{"minimal": 1024, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 24576}

// encode builds the request body. Consecutive items of one role make one
// content, so that user and model contents alternate as the API requires:
// a turn's results and the user's next words are one user content.
func (c *Client) encode(req *model.Request) ([]byte, error) {
	r := Request{Contents: []Content{}}
	if req.System != "" {
		r.SystemInstruction = &Content{Role: "user", Parts: []Part{{Text: req.System}}} // as the SDK sends it
	}
	add := func(role string, p Part) {
		if n := len(r.Contents); n > 0 && r.Contents[n-1].Role == role {
			r.Contents[n-1].Parts = append(r.Contents[n-1].Parts, p)
			return
		}
		r.Contents = append(r.Contents, Content{Role: role, Parts: []Part{p}})
	}
	for _, it := range req.Items {
		if it.Provider == Dialect && len(it.Raw) > 0 && (it.Kind == model.KindAssistant || it.Kind == model.KindReasoning || it.Kind == model.KindToolCall) {
			var p Part
			if err := json.Unmarshal(it.Raw, &p); err != nil {
				return nil, fmt.Errorf("%s: a recorded part does not decode: %w", c.label(), err)
			}
			add("model", p)
			continue
		}
		switch it.Kind {
		case model.KindUser:
			add("user", Part{Text: it.Text})
		case model.KindAssistant:
			if it.Text != "" {
				add("model", Part{Text: it.Text})
			}
		case model.KindReasoning:
			// Another provider's reasoning has no meaning to Gemini.
		case model.KindToolCall:
			if it.Call == nil {
				continue
			}
			add("model", Part{FunctionCall: &FunctionCall{ID: sentID(it.Call.ID), Name: it.Call.Name, Args: argsObject(it.Call.Input)}})
		case model.KindToolResult:
			if it.Result == nil {
				continue
			}
			resp := map[string]any{"output": it.Result.Text}
			if it.Result.IsError {
				resp = map[string]any{"error": it.Result.Text}
			}
			add("user", Part{FunctionResponse: &FunctionResponse{ID: sentID(it.Result.CallID), Name: it.Result.Name, Response: resp}})
		}
	}
	decls, err := declarations(req.Tools)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.label(), err)
	}
	if len(decls) > 0 {
		r.Tools = []Tool{{FunctionDeclarations: decls}}
	}
	gc := GenerationConfig{MaxOutputTokens: req.MaxTokens, ThinkingConfig: c.thinking(req.Model)}
	if gc != (GenerationConfig{}) {
		r.GenerationConfig = &gc
	}
	return json.Marshal(r)
}

// sentID is the id sent back for a call: none for one Truss made.
func sentID(id string) string {
	if strings.HasPrefix(id, madeIDPrefix) {
		return ""
	}
	return id
}

// declarations translates function tools; Gemini has no other kind a
// client executes.
func declarations(specs []model.ToolSpec) ([]FunctionDeclaration, error) {
	var out []FunctionDeclaration
	for _, t := range specs {
		if t.Kind != model.ToolFunction {
			return nil, fmt.Errorf("tool %s is a %s tool; Gemini takes function tools only (use the generic surface)", t.Name, t.Kind)
		}
		out = append(out, FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJSONSchema: t.Parameters})
	}
	return out, nil
}

// argsObject returns a call's input as a JSON object; input that is not
// one (a malformed call replayed) is wrapped so that the request stays
// valid.
func argsObject(input string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(input), &m) == nil && m != nil {
		return json.RawMessage(input)
	}
	b, _ := json.Marshal(map[string]string{"INVALID_JSON": input})
	return b
}

// DeclareTools returns the "tools" array a request would carry.
func (c *Client) DeclareTools(specs []model.ToolSpec) (json.RawMessage, error) {
	decls, err := declarations(specs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.label(), err)
	}
	if len(decls) == 0 {
		return json.RawMessage("[]"), nil
	}
	return json.Marshal([]Tool{{FunctionDeclarations: decls}})
}

const notGeminiHint = "is the base URL the Gemini API's?"

// label is the provider's name in errors (Config.Label).
func (c *Client) label() string { return cmp.Or(c.cfg.Label, Dialect) }

// notAPIHint says what to check when the server is not the Gemini API.
func (c *Client) notAPIHint() string { return cmp.Or(c.cfg.NotAPIHint, c.cfg.ReachHint, notGeminiHint) }

// service names the API the server's answers are compared with.
func (c *Client) service() string { return cmp.Or(c.cfg.Service, "the Gemini API") }

// own names the client's provider in err, a *provider.Error of the
// adapter's, and adds to a refusal of the credentials what to check.
func (c *Client) own(err error) error {
	var pe *provider.Error
	if errors.As(err, &pe) {
		pe.Provider = c.label()
		if provider.DeniedHint(pe, c.cfg.DeniedHint) {
			return err
		}
		if pe.Kind == provider.ErrAuth && c.cfg.KeyHint != "" && !strings.HasSuffix(pe.Message, c.cfg.KeyHint) {
			pe.Message += "; " + c.cfg.KeyHint
		}
	}
	return err
}

func (c *Client) once(ctx context.Context, modelName string, body []byte, onDelta func(model.Delta)) (*model.Response, error) {
	start := time.Now()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Endpoint(modelName), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	for k, v := range c.cfg.Header {
		hreq.Header[k] = v
	}
	hreq.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("x-goog-api-key", c.cfg.APIKey)
	}
	if c.cfg.Token != nil {
		tok, err := c.cfg.Token.Token()
		if err != nil {
			return nil, tokenError(err)
		}
		hreq.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	}
	hc := c.cfg.HTTP
	if hc == nil {
		hc = provider.DefaultClient()
	}
	hresp, err := hc.Do(hreq)
	if err != nil {
		return nil, provider.TransportError(ctx, Dialect, cmp.Or(c.cfg.ReachHint, "check the base URL and the network"), err)
	}
	defer hresp.Body.Close()
	if hresp.StatusCode != http.StatusOK {
		return nil, httpError(hreq, hresp, c.service(), c.notAPIHint())
	}
	var raw bytes.Buffer
	st := &stream{onDelta: onDelta}
	err = ReadSSE(io.TeeReader(hresp.Body, &raw), st.event)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var pe *provider.Error
		if errors.As(err, &pe) {
			return nil, pe
		}
		if st.events == 0 && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, provider.NotAPI(Dialect, c.service(), hreq, hresp.StatusCode, raw.Bytes(), c.notAPIHint())
		}
		return nil, &provider.Error{Provider: Dialect, Kind: provider.ErrStream, Err: err, Message: "the stream broke off: " + err.Error()}
	}
	if st.events == 0 {
		return nil, provider.NotAPI(Dialect, c.service(), hreq, hresp.StatusCode, raw.Bytes(), c.notAPIHint())
	}
	resp, err := st.response()
	if err != nil {
		return nil, err
	}
	resp.Wire = &model.Wire{Request: body, Response: raw.Bytes(), Duration: time.Since(start)}
	return resp, nil
}

// tokenError is the error of a failure to get an access token: the
// credentials', not the API's (googleauth.TokenFailure says it).
func tokenError(err error) *provider.Error {
	return &provider.Error{Provider: Dialect, Kind: provider.ErrAuth, Err: err, Message: googleauth.TokenFailure(err)}
}

// stream assembles a turn from its chunks.
type stream struct {
	onDelta func(model.Delta)
	events  int
	parts   []Part
	finish  string
	message string
	blocked string
	usage   *UsageMetadata
	model   string
	id      string
}

// event takes one chunk.
func (s *stream) event(data []byte) error {
	s.events++
	var ch Chunk
	if err := json.Unmarshal(data, &ch); err != nil {
		if s.events == 1 {
			return fmt.Errorf("not a GenerateContentResponse: %w", err)
		}
		return &provider.Error{Provider: Dialect, Kind: provider.ErrProtocol, Err: err, Message: fmt.Sprintf("bad stream event %q: %v", truncate(data, 200), err)}
	}
	if ch.Error != nil {
		e := errorFrom(ch.Error, ch.Error.Code, nil)
		if e.Kind == provider.ErrBadRequest || e.Kind == provider.ErrNotFound || e.Status == 0 {
			e.Kind = provider.ErrStream
		}
		e.Message = "error in the middle of the stream: " + e.Message
		return e
	}
	if ch.UsageMetadata != nil {
		s.usage = ch.UsageMetadata
	}
	if ch.ModelVersion != "" {
		s.model = ch.ModelVersion
	}
	if ch.ResponseID != "" {
		s.id = ch.ResponseID
	}
	if ch.PromptFeedback != nil && ch.PromptFeedback.BlockReason != "" {
		s.blocked = ch.PromptFeedback.BlockReason
	}
	for _, cand := range ch.Candidates {
		if cand.Index != 0 {
			continue
		}
		if cand.FinishReason != "" {
			s.finish, s.message = cand.FinishReason, cand.FinishMessage
		}
		if cand.Content == nil {
			continue
		}
		for _, p := range cand.Content.Parts {
			s.add(p)
		}
	}
	return nil
}

// add appends a streamed part: text continues the text (or thought) part
// before it until that part has a signature, which closes it; a part
// holding only a signature (an empty text part) gives it to the part
// before it when that has none.
func (s *stream) add(p Part) {
	if p.FunctionCall != nil {
		if s.onDelta != nil {
			s.onDelta(model.Delta{Kind: model.KindToolCall, Call: &model.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Kind: model.ToolFunction}})
		}
		s.parts = append(s.parts, p)
		return
	}
	if p.FunctionResponse != nil {
		return
	}
	if p.Text != "" && s.onDelta != nil {
		k := model.KindAssistant
		if p.Thought {
			k = model.KindReasoning
		}
		s.onDelta(model.Delta{Kind: k, Text: p.Text})
	}
	if n := len(s.parts); n > 0 {
		last := &s.parts[n-1]
		if last.FunctionCall == nil && last.ThoughtSignature == "" && (last.Thought == p.Thought || p.Text == "") {
			last.Text += p.Text
			last.ThoughtSignature = p.ThoughtSignature
			return
		}
	}
	if p.Text == "" && p.ThoughtSignature == "" {
		return
	}
	s.parts = append(s.parts, p)
}

// response is the turn the chunks made.
func (s *stream) response() (*model.Response, error) {
	switch s.finish {
	case "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "MISSING_THOUGHT_SIGNATURE":
		msg := "the model's function call was " + strings.ToLower(strings.ReplaceAll(s.finish, "_", " "))
		if s.message != "" {
			msg += ": " + s.message
		}
		return nil, &provider.Error{Provider: Dialect, Kind: provider.ErrStream, Code: s.finish, Message: msg}
	case "":
		if s.blocked == "" {
			return nil, &provider.Error{Provider: Dialect, Kind: provider.ErrStream, Message: "the stream ended before a finishReason"}
		}
	}
	resp := &model.Response{ID: s.id, Model: s.model}
	calls := 0
	for i, p := range s.parts {
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("gemini: %w", err)
		}
		it := model.Item{Provider: Dialect, Raw: raw, Response: s.id}
		switch {
		case p.FunctionCall != nil:
			calls++
			id := p.FunctionCall.ID
			if id == "" {
				id = madeID(i)
			}
			input := "{}"
			if a := bytes.TrimSpace(p.FunctionCall.Args); len(a) > 0 && string(a) != "null" {
				input = string(a)
			}
			it.Kind, it.Call = model.KindToolCall, &model.ToolCall{ID: id, Name: p.FunctionCall.Name, Kind: model.ToolFunction, Input: input}
		case p.Thought:
			it.Kind, it.Text = model.KindReasoning, p.Text
		default:
			it.Kind, it.Text = model.KindAssistant, p.Text
		}
		resp.Items = append(resp.Items, it)
	}
	switch {
	case s.blocked != "":
		resp.StopReason = model.StopRefusal
	case s.finish == "MAX_TOKENS":
		resp.StopReason = model.StopMaxTokens
	case calls > 0:
		resp.StopReason = model.StopToolUse
	case s.finish == "STOP":
		resp.StopReason = model.StopEndTurn
	case s.finish == "SAFETY" || s.finish == "RECITATION" || s.finish == "BLOCKLIST" || s.finish == "PROHIBITED_CONTENT" ||
		s.finish == "SPII" || s.finish == "IMAGE_SAFETY" || s.finish == "LANGUAGE":
		resp.StopReason = model.StopRefusal
	default:
		resp.StopReason = model.StopOther
	}
	if u := s.usage; u != nil {
		resp.Usage = model.Usage{InputTokens: u.PromptTokenCount - u.CachedContentTokenCount, CacheReadTokens: u.CachedContentTokenCount,
			OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount, ReasoningTokens: u.ThoughtsTokenCount}
	}
	return resp, nil
}

// madeID is an id for the i-th part's call, unique across turns.
func madeID(i int) string {
	var b [6]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s%s_%d", madeIDPrefix, hex.EncodeToString(b[:]), i)
}

// httpError is the error of an answer with a status other than 200:
// Google's error JSON gives the message, its status ("RESOURCE_EXHAUSTED")
// the code and its RetryInfo the wait; an API key the server refuses
// (400 with reason API_KEY_INVALID) is an auth error. An answer without
// that JSON and with a status that asks for no retry comes from another
// server (provider.ErrNotAPI).
func httpError(hreq *http.Request, hresp *http.Response, service, hint string) *provider.Error {
	b, _ := io.ReadAll(io.LimitReader(hresp.Body, 1<<20))
	status := hresp.StatusCode
	var env struct {
		Error *ErrorBody `json:"error"`
	}
	if json.Unmarshal(b, &env) == nil && env.Error != nil && env.Error.Message != "" {
		return errorFrom(env.Error, status, hresp.Header)
	}
	// Google's front end sometimes answers with an array of one error.
	var arr []struct {
		Error *ErrorBody `json:"error"`
	}
	if json.Unmarshal(b, &arr) == nil && len(arr) == 1 && arr[0].Error != nil && arr[0].Error.Message != "" {
		return errorFrom(arr[0].Error, status, hresp.Header)
	}
	kind := provider.KindForStatus(status)
	if kind == provider.ErrNotFound || kind == provider.ErrBadRequest || status == http.StatusNotImplemented {
		return provider.NotAPI(Dialect, service, hreq, status, b, hint)
	}
	return provider.HTTPError(Dialect, status, "", provider.Answered(hreq, status, b), hresp.Header, nil)
}

// errorFrom is the *provider.Error of Google's error body.
func errorFrom(e *ErrorBody, status int, h http.Header) *provider.Error {
	pe := provider.HTTPError(Dialect, status, e.Status, e.Message, h, nil)
	if status == 0 {
		pe.Kind = provider.ErrStream
	}
	daily := false
	for _, d := range e.Details {
		var det struct {
			Type       string `json:"@type"`
			RetryDelay string `json:"retryDelay"`
			Reason     string `json:"reason"`
			Violations []struct {
				QuotaID         string            `json:"quotaId"`
				QuotaValue      string            `json:"quotaValue"`
				QuotaDimensions map[string]string `json:"quotaDimensions"`
			} `json:"violations"`
		}
		if json.Unmarshal(d, &det) != nil {
			continue
		}
		if strings.HasSuffix(det.Type, "google.rpc.RetryInfo") {
			if d, err := time.ParseDuration(det.RetryDelay); err == nil && d > 0 {
				pe.RetryAfter = d
			}
		}
		if det.Reason == "API_KEY_INVALID" {
			pe.Kind = provider.ErrAuth
		}
		for _, v := range det.Violations {
			if !daily && strings.Contains(v.QuotaID, "PerDay") {
				// A day's quota does not come back in the RetryInfo's
				// seconds: retrying only fails again, minutes later.
				daily, pe.Final = true, true
				q := v.QuotaID
				if v.QuotaValue != "" {
					q += " (" + v.QuotaValue
					if m := v.QuotaDimensions["model"]; m != "" {
						q += " for " + m
					}
					q += ")"
				}
				pe.Message += "; the daily quota " + q + " is spent: it renews at midnight Pacific time, or use a key of a project with billing"
			}
		}
	}
	if e.Status == "UNAVAILABLE" && pe.Kind == provider.ErrServer {
		pe.Kind = provider.ErrOverloaded
	}
	return pe
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

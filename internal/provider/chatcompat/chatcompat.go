// Package chatcompat speaks the OpenAI Chat Completions dialect, as served by
// OpenAI and by OpenAI-compatible servers (vLLM, LM Studio, llama.cpp's
// server, Ollama's /v1), through the official openai-go client.
//
// Requests stream with stream_options.include_usage so that the final chunk
// carries usage. HTTP failures are retried by the SDK (connection errors,
// 408, 409, 429 and 5xx, honouring Retry-After); a turn whose stream fails in
// the middle — an error event, or a stream cut before any finish_reason — is
// retried whole. The adapter owns every retry (the SDK's own are off) so that
// each is reported through the RetryPolicy, as with every other adapter;
// retrying a whole turn is safe because no tool runs before a turn is
// complete.
package chatcompat

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/tool"
)

// Config configures a Client.
type Config struct {
	BaseURL string // e.g. http://127.0.0.1:8000/v1
	APIKey  string // may be empty for local servers
	HTTP    *http.Client
	// Retry governs the retries of failed turns.
	Retry provider.RetryPolicy
	// Strict sets "strict" on function tools; nil leaves it out, which is
	// what most compatible servers expect.
	Strict *bool
	// ReasoningEffort is sent as reasoning_effort when set, for a reasoning
	// model behind the server.
	ReasoningEffort string
	// MaxCompletionTokens sends the output limit as max_completion_tokens
	// instead of max_tokens: OpenAI's own API, where max_tokens is
	// deprecated and refused for its reasoning models. Compatible servers
	// keep max_tokens, the field they all read.
	MaxCompletionTokens bool
	// Label names the provider in every error the client returns: the
	// provider the user chose (a named provider's NAME); "" is "chat".
	Label string
	// ReachHint says what to check when the server cannot be reached
	// ("" for "check OPENAI_BASE_URL and that the server is running");
	// KeyHint what to check when the server refuses the credentials
	// (401, 403), added to its message ("" adds nothing).
	ReachHint, KeyHint string
}

// Client is a Chat Completions adapter.
type Client struct {
	cfg    Config
	client openai.Client
	cache  provider.MessageCache
	heads  provider.HeadCache
}

// New returns a client.
func New(cfg Config) *Client {
	c := &Client{cfg: cfg}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
		option.WithMiddleware(provider.CaptureMiddleware),
		option.WithMiddleware(provider.AnswerMiddleware(provider.OpenAIShape)),
	}
	opts = append(opts, option.WithHTTPClient(cmp.Or(cfg.HTTP, provider.DefaultClient())))
	c.client = openai.NewClient(opts...)
	return c
}

// Name implements provider.Provider.
func (c *Client) Name() string { return "chat" }

// Turn implements provider.Provider.
func (c *Client) Turn(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	body, parts, err := c.body(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.cfg.Retry.Turn(ctx, func() (*model.Response, error) {
		resp, err := c.once(ctx, req.Model, body, onDelta)
		return resp, c.own(err)
	})
	if err != nil {
		return nil, err
	}
	resp.Wire.UseParts(parts)
	return resp, nil
}

// params returns the request as SDK params, without its messages.
func (c *Client) params(req *model.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         req.Model,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	switch {
	case req.MaxTokens > 0 && c.cfg.MaxCompletionTokens:
		p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	case req.MaxTokens > 0:
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	if c.cfg.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(c.cfg.ReasoningEffort)
	}
	for _, t := range req.Tools {
		if t.Kind != model.ToolFunction {
			return p, fmt.Errorf("%s: tool %s is a %s tool; Chat Completions takes function tools only (use the generic surface)", cmp.Or(c.cfg.Label, "chat"), t.Name, t.Kind)
		}
		var params shared.FunctionParameters
		if err := json.Unmarshal(t.Parameters, &params); err != nil {
			return p, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		if c.cfg.Strict != nil {
			def.Strict = openai.Bool(*c.cfg.Strict)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	return p, nil
}

// body encodes the request. Every part is encoded by the SDK's own param
// types; each message is encoded once and reused on later turns
// (provider.MessageCache).
func (c *Client) body(req *model.Request) ([]byte, *model.Wire, error) {
	head, err := c.heads.Get(req, "", func() ([]byte, error) {
		p, err := c.params(req)
		if err != nil {
			return nil, err
		}
		// Messages are left out of the SDK-encoded head (it omits an
		// empty list) and written after it.
		p.Messages = nil
		head, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		if bytes.Contains(head, []byte(`"messages":`)) {
			return nil, fmt.Errorf("encode request: messages in the head")
		}
		return head, nil
	})
	if err != nil {
		return nil, nil, err
	}
	groups := groupItems(req.Items)
	spans := make([]provider.Span, len(groups))
	for i, g := range groups {
		spans[i] = provider.Span{Start: g.start, End: g.end}
	}
	msgs, err := c.cache.Encode(req.Items, spans, func(i int) (json.RawMessage, error) { return json.Marshal(groups[i].msg) }, func(int) bool { return false })
	if err != nil {
		return nil, nil, err
	}
	if req.System != "" {
		sys, err := json.Marshal(openai.SystemMessage(req.System))
		if err != nil {
			return nil, nil, fmt.Errorf("encode system message: %w", err)
		}
		msgs = append([]provider.Encoded{{Raw: sys, Digest: tool.Digest(sys)}}, msgs...)
	}
	return provider.JoinBody(head, `"stream":true,`, "messages", msgs)
}

// group is the message built from items[start:end].
type group struct {
	start, end int
	msg        openai.ChatCompletionMessageParamUnion
}

// groupItems turns transcript items into messages: a user item is a user
// message, consecutive assistant text and tool calls one assistant message,
// each tool result a tool message.
func groupItems(items []model.Item) []group {
	var gs []group
	var cur *openai.ChatCompletionAssistantMessageParam
	var text strings.Builder
	start := 0
	flush := func(end int) {
		if cur == nil {
			return
		}
		if text.Len() > 0 {
			cur.Content.OfString = openai.String(text.String())
		}
		gs = append(gs, group{start: start, end: end, msg: openai.ChatCompletionMessageParamUnion{OfAssistant: cur}})
		cur = nil
		text.Reset()
	}
	for i, it := range items {
		switch it.Kind {
		case model.KindUser:
			flush(i)
			gs = append(gs, group{start: i, end: i + 1, msg: openai.UserMessage(it.Text)})
		case model.KindAssistant, model.KindToolCall:
			if cur == nil {
				cur, start = &openai.ChatCompletionAssistantMessageParam{}, i
			}
			if it.Kind == model.KindAssistant {
				text.WriteString(it.Text)
				continue
			}
			cur.ToolCalls = append(cur.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       it.Call.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: it.Call.Name, Arguments: it.Call.Input},
				}})
		case model.KindToolResult:
			flush(i)
			gs = append(gs, group{start: i, end: i + 1, msg: openai.ToolMessage(it.Result.Text, it.Result.CallID)})
		default:
			// Reasoning and provider-executed items have no Chat Completions form.
			if cur == nil {
				continue
			}
		}
	}
	flush(len(items))
	return gs
}

func (c *Client) once(ctx context.Context, modelName string, body []byte, onDelta func(model.Delta)) (*model.Response, error) {
	// This attempt's own bytes: the request is recorded as its parts.
	capture := &provider.Capture{SkipRequest: true}
	ctx = provider.Streamed(capture.Context(ctx))
	stream := c.client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: modelName},
		option.WithRequestBody("application/json", body))
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	finish := ""
	started := map[int64]bool{}
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		for _, ch := range chunk.Choices {
			if ch.Delta.Content != "" && onDelta != nil {
				onDelta(model.Delta{Kind: model.KindAssistant, Text: ch.Delta.Content})
			}
			for _, tc := range ch.Delta.ToolCalls {
				if !started[tc.Index] && tc.Function.Name != "" && onDelta != nil {
					started[tc.Index] = true
					onDelta(model.Delta{Kind: model.KindToolCall, Call: &model.ToolCall{ID: tc.ID, Name: tc.Function.Name}})
				}
			}
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, classify(ctx, err, c.cfg.ReachHint)
	}
	if finish == "" {
		return nil, &provider.Error{Provider: "chat", Kind: provider.ErrStream, Message: "the stream ended before a finish_reason"}
	}
	resp := &model.Response{ID: acc.ID, Model: acc.Model}
	if len(acc.Choices) > 0 {
		msg := acc.Choices[0].Message
		if msg.Content != "" {
			resp.Items = append(resp.Items, model.Item{Kind: model.KindAssistant, Text: msg.Content, Provider: "chat"})
		}
		if msg.Refusal != "" {
			resp.Items = append(resp.Items, model.Item{Kind: model.KindAssistant, Text: msg.Refusal, Provider: "chat"})
		}
		for _, tc := range msg.ToolCalls {
			raw := json.RawMessage(tc.RawJSON())
			if !json.Valid(raw) {
				raw = nil
			}
			resp.Items = append(resp.Items, model.Item{Kind: model.KindToolCall, Provider: "chat", Raw: raw,
				Call: &model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Kind: model.ToolFunction, Input: tc.Function.Arguments}})
		}
	}
	resp.StopReason = stopReason(finish, len(resp.Calls()) > 0)
	u := acc.Usage
	resp.Usage = model.Usage{InputTokens: u.PromptTokens - u.PromptTokensDetails.CachedTokens, OutputTokens: u.CompletionTokens,
		CacheReadTokens: u.PromptTokensDetails.CachedTokens, ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens}
	resp.Wire = capture.Wire()
	return resp, nil
}

func stopReason(f string, calls bool) model.StopReason {
	switch {
	case calls || f == "tool_calls" || f == "function_call":
		return model.StopToolUse
	case f == "length":
		return model.StopMaxTokens
	case f == "content_filter":
		return model.StopRefusal
	case f == "stop":
		return model.StopEndTurn
	}
	return model.StopOther
}

// own names the client's provider in err, a *provider.Error of the
// adapter's, and adds to a refusal of the credentials what to check.
func (c *Client) own(err error) error {
	var pe *provider.Error
	if errors.As(err, &pe) {
		pe.Provider = cmp.Or(c.cfg.Label, "chat")
		if pe.Kind == provider.ErrAuth && c.cfg.KeyHint != "" && !strings.HasSuffix(pe.Message, c.cfg.KeyHint) {
			pe.Message += "; " + c.cfg.KeyHint
		}
	}
	return err
}

// classify maps an SDK error to a *provider.Error; hint says what to
// check when the server cannot be reached ("" for OPENAI_BASE_URL).
func classify(ctx context.Context, err error, hint string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	notAPIHint := cmp.Or(hint, "is OPENAI_BASE_URL the server's /v1 address?")
	if pe, ok := provider.NotAPIPage(err, "chat", "an OpenAI-compatible API", notAPIHint); ok {
		return pe
	}
	if pe, ok := provider.ForeignAnswer(err, "chat", "an OpenAI-compatible API", notAPIHint); ok {
		return pe
	}
	var apierr *openai.Error
	if errors.As(err, &apierr) {
		body := provider.ResponseBody(apierr.Response)
		if apierr.Request != nil && provider.NotAPIAnswer(apierr.StatusCode, body) {
			return provider.NotAPI("chat", "an OpenAI-compatible API", provider.SentRequest(apierr.Request, apierr.Response), apierr.StatusCode, body, notAPIHint)
		}
		msg := apierr.Message
		if msg == "" {
			msg = strings.TrimSpace(string(apierr.RawJSON()))
		}
		if msg == "" && len(bytes.TrimSpace(body)) > 0 {
			// vLLM's own shape, {"object":"error","message":…}.
			msg = provider.ErrorMessage(body)
		}
		var h http.Header
		if apierr.Response != nil {
			h = apierr.Response.Header
		}
		return provider.HTTPError("chat", apierr.StatusCode, apierr.Code, msg, h, err)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return streamError(se, err)
	}
	return provider.TransportError(ctx, "chat", cmp.Or(hint, "check OPENAI_BASE_URL and that the server is running"), err)
}

// streamError is the error of an error event in the middle of a stream,
// {"error": {"code", "message"}} as OpenRouter sends one with
// finish_reason "error", or {"error": "text"}: its message alone, and a
// code that is an HTTP status classified as that status would be (402,
// 401, 400 are not retried; 429 and 5xx are), though the answer's own
// status was 200. Without one it is a broken stream, retried.
func streamError(se *ssestream.StreamError, err error) *provider.Error {
	pe := &provider.Error{Provider: "chat", Kind: provider.ErrStream, Message: se.Message, Err: err}
	var ev struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(se.Event.Data, &ev) != nil || len(ev.Error) == 0 {
		return pe
	}
	var text string
	var obj struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	switch {
	case json.Unmarshal(ev.Error, &text) == nil && text != "":
		pe.Message = "error in the middle of the stream: " + text
	case json.Unmarshal(ev.Error, &obj) == nil && obj.Message != "":
		pe.Message = "error in the middle of the stream: " + obj.Message
		code := strings.Trim(string(obj.Code), `"`)
		if n, cerr := strconv.Atoi(code); cerr == nil && n >= 400 && n <= 599 {
			pe.Kind, pe.Code = provider.KindForStatus(n), code
			pe.Message += " (code " + code + ")"
		}
	}
	return pe
}

// DeclareTools returns the "tools" array a request would carry.
func (c *Client) DeclareTools(specs []model.ToolSpec) (json.RawMessage, error) {
	p, err := c.params(&model.Request{Tools: specs})
	if err != nil {
		return nil, err
	}
	return json.Marshal(p.Tools)
}

// Models implements provider.ModelLister: GET {base}/models through the
// SDK, the Chat Completions servers' model list in OpenAI's shape, in the
// server's order, at most provider.MaxModels. What OpenAI's shape lacks is
// read from the members compatible servers add (modelExtras). A server
// without the endpoint (404, 405, 501) gives an error that matches
// provider.ErrNotSupported.
func (c *Client) Models(ctx context.Context) (_ []provider.ModelInfo, err error) {
	// A key the server echoed is hidden here, as in a turn's error.
	defer func() { err = provider.MaskError(err, c.cfg.Retry.AllSecrets()) }()
	page, err := c.client.Models.List(ctx)
	if err != nil {
		return nil, provider.ModelsError("GET", provider.EndpointPath(c.cfg.BaseURL, "models"), c.own(classify(ctx, err, c.cfg.ReachHint)))
	}
	var out []provider.ModelInfo
	for _, m := range page.Data[:min(len(page.Data), provider.MaxModels)] {
		name, window := modelExtras([]byte(m.RawJSON()))
		out = append(out, provider.ModelInfo{ID: m.ID, DisplayName: name,
			Created: provider.ModelTime(time.Unix(m.Created, 0)), ContextWindow: window})
	}
	return out, nil
}

// modelExtras reads what compatible servers add to a model object: a
// display name ("name": OpenRouter) and the context window the server
// takes ("max_model_len": vLLM; "context_length": OpenRouter, Together;
// "context_window": Groq), the first positive one. llama.cpp's
// meta.n_ctx_train is the window the model was trained on, not the one
// the server was started with, and is not read. Members of another type
// are ignored; a window is 0 when none is given.
func modelExtras(raw []byte) (name string, window int64) {
	var m struct {
		Name          json.RawMessage `json:"name"`
		MaxModelLen   json.RawMessage `json:"max_model_len"`
		ContextLength json.RawMessage `json:"context_length"`
		ContextWindow json.RawMessage `json:"context_window"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return "", 0
	}
	json.Unmarshal(m.Name, &name)
	for _, v := range []json.RawMessage{m.MaxModelLen, m.ContextLength, m.ContextWindow} {
		var n float64 // some servers send 131072.0
		if json.Unmarshal(v, &n) == nil && n >= 1 && n <= 1<<40 {
			return name, int64(n)
		}
	}
	return name, 0
}

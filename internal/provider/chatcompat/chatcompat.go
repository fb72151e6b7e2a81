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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
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
}

// Client is a Chat Completions adapter.
type Client struct {
	cfg    Config
	client openai.Client
	mu     sync.Mutex
	wire   model.Wire
}

// New returns a client.
func New(cfg Config) *Client {
	c := &Client{cfg: cfg}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
		option.WithMiddleware(c.capture),
	}
	if cfg.HTTP != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTP))
	}
	c.client = openai.NewClient(opts...)
	return c
}

// Name implements provider.Provider.
func (c *Client) Name() string { return "chat" }

// capture records the exact request and response bodies of the last attempt.
func (c *Client) capture(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	var reqBody []byte
	if req.GetBody != nil {
		if rc, err := req.GetBody(); err == nil {
			reqBody, _ = io.ReadAll(rc)
			rc.Close()
		}
	}
	resp, err := next(req)
	c.mu.Lock()
	c.wire = model.Wire{Request: reqBody}
	c.mu.Unlock()
	if err == nil && resp.Body != nil {
		resp.Body = &teeBody{ReadCloser: resp.Body, c: c}
	}
	return resp, err
}

type teeBody struct {
	io.ReadCloser
	c *Client
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 {
		t.c.mu.Lock()
		t.c.wire.Response = append(t.c.wire.Response, p[:n]...)
		t.c.mu.Unlock()
	}
	return n, err
}

// Turn implements provider.Provider.
func (c *Client) Turn(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	params, err := c.params(req)
	if err != nil {
		return nil, err
	}
	var resp *model.Response
	attempts, err := c.cfg.Retry.Do(ctx, func(int) error {
		var err error
		resp, err = c.once(ctx, params, onDelta)
		return err
	})
	if err != nil {
		return nil, err
	}
	resp.Attempts = attempts
	return resp, nil
}

func (c *Client) params(req *model.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         req.Model,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req.MaxTokens > 0 {
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	var cur *openai.ChatCompletionAssistantMessageParam
	var text strings.Builder
	flush := func() {
		if cur == nil {
			return
		}
		if text.Len() > 0 {
			cur.Content.OfString = openai.String(text.String())
		}
		p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: cur})
		cur = nil
		text.Reset()
	}
	for _, it := range req.Items {
		switch it.Kind {
		case model.KindUser:
			flush()
			p.Messages = append(p.Messages, openai.UserMessage(it.Text))
		case model.KindAssistant, model.KindToolCall:
			if cur == nil {
				cur = &openai.ChatCompletionAssistantMessageParam{}
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
			flush()
			p.Messages = append(p.Messages, openai.ToolMessage(it.Result.Text, it.Result.CallID))
		}
	}
	flush()
	for _, t := range req.Tools {
		if t.Kind != model.ToolFunction {
			return p, fmt.Errorf("chat completions: tool %s is a %s tool; this dialect takes function tools only (use the generic surface)", t.Name, t.Kind)
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

func (c *Client) once(ctx context.Context, params openai.ChatCompletionNewParams, onDelta func(model.Delta)) (*model.Response, error) {
	start := time.Now()
	stream := c.client.Chat.Completions.NewStreaming(ctx, params)
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
		return nil, classify(ctx, err)
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
	c.mu.Lock()
	w := c.wire
	w.Response = bytes.Clone(w.Response)
	c.mu.Unlock()
	w.Duration = time.Since(start)
	resp.Wire = &w
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

// classify maps an SDK error to a *provider.Error.
func classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var apierr *openai.Error
	if errors.As(err, &apierr) {
		msg := apierr.Message
		if msg == "" {
			msg = strings.TrimSpace(string(apierr.RawJSON()))
		}
		if msg == "" {
			msg = http.StatusText(apierr.StatusCode)
		}
		pe := &provider.Error{Provider: "chat", Kind: provider.KindForStatus(apierr.StatusCode), Status: apierr.StatusCode, Message: msg, Err: err}
		if apierr.Response != nil {
			pe.RetryAfter = provider.ParseRetryAfter(apierr.Response.Header, time.Now())
		}
		return pe
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return &provider.Error{Provider: "chat", Kind: provider.ErrStream, Message: se.Message, Err: err}
	}
	var ue *url.Error
	var ne *net.OpError
	if errors.As(err, &ne) || (errors.As(err, &ue) && !errors.Is(err, context.Canceled)) {
		return &provider.Error{Provider: "chat", Kind: provider.ErrUnreachable, Err: err,
			Message: fmt.Sprintf("cannot reach the server (%v); check OPENAI_BASE_URL and that the server is running", err)}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &provider.Error{Provider: "chat", Kind: provider.ErrStream, Err: err, Message: "the stream broke off: " + err.Error()}
	}
	return &provider.Error{Provider: "chat", Kind: provider.ErrProtocol, Err: err, Message: err.Error()}
}

// DeclareTools returns the "tools" array a request would carry.
func (c *Client) DeclareTools(specs []model.ToolSpec) (json.RawMessage, error) {
	p, err := c.params(&model.Request{Tools: specs})
	if err != nil {
		return nil, err
	}
	return json.Marshal(p.Tools)
}

// Package anthropic speaks Anthropic's Messages API through the official
// anthropic-sdk-go client, streaming.
//
// Every content block of a response is kept in its raw wire form and
// replayed through the SDK's own ContentBlockUnion.ToParam, so thinking and
// redacted_thinking blocks go back with their signatures and server-tool
// blocks unchanged. Prompt caching marks three breakpoints: the last tool,
// the system prompt and the last block of the latest message. The adapter
// owns retries (the SDK's are off, so each one is reported): connection
// errors, 408, 409, 429, 5xx and 529 with Retry-After honoured, and a whole
// turn again after an error event in the middle of the stream (an
// overloaded_error) or a stream cut before message_stop. No tool runs before
// a turn is complete, so a retried turn never loses or repeats a call.
package anthropic

import (
	"cmp"
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

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
)

// InterleavedThinking is the beta that lets thinking come between tool
// calls, sent with extended thinking.
const InterleavedThinking = "interleaved-thinking-2025-05-14"

// DefaultBaseURL is the API's address.
const DefaultBaseURL = "https://api.anthropic.com"

// Config configures a Client.
type Config struct {
	BaseURL string
	APIKey  string
	HTTP    *http.Client
	Retry   provider.RetryPolicy
	// ThinkingBudget enables extended thinking with this many tokens (0 =
	// off; the API needs at least 1,024), interleaved between tool calls
	// (the interleaved-thinking beta, as Claude Code sends it). max_tokens
	// is raised past the budget when it does not exceed it.
	ThinkingBudget int64
	// ServerTools enables provider-executed tools: "web_search",
	// "web_fetch", "code_execution" (newest versions; ServerTools()). Their use is recorded as
	// unverified and never counts as validation.
	ServerTools []string
	// NoCache turns prompt caching off.
	NoCache bool
	// ContextManagement, when set, is sent as the request's
	// "context_management" field (context editing: the server clears old
	// tool results before the model reads the prompt; docs/compaction.md,
	// compact.ContextEditing builds it). The field belongs to the beta
	// Messages API: such requests go through the SDK's beta client
	// (POST /v1/messages?beta=true) with the ContextManagementBeta beta.
	ContextManagement json.RawMessage
	// Vertex, when set, reaches the Messages API through Google Vertex AI
	// (see Vertex): BaseURL, when set, replaces the region's address;
	// APIKey is not sent.
	Vertex *Vertex
	// Bedrock, when set, reaches the Messages API through Amazon
	// Bedrock's runtime (see Bedrock): BaseURL, when set, replaces the
	// region's address; APIKey is not sent.
	Bedrock *Bedrock
	// Label names the provider in every error the client returns: the
	// provider the user chose ("bedrock", a named provider's NAME). ""
	// is "vertex" or "bedrock" on those routes, else "anthropic".
	Label string
	// ReachHint says what to check when the server cannot be reached
	// ("" for the route's own variables: "check the network or
	// ANTHROPIC_BASE_URL"); KeyHint what to check when the server
	// refuses the credentials (401, 403), added to its message ("" adds
	// nothing).
	ReachHint, KeyHint string
}

// ContextManagementBeta is the beta the context_management field needs.
const ContextManagementBeta = "context-management-2025-06-27"

// Client is a Messages adapter.
type Client struct {
	cfg    Config
	base   string // the base URL in use
	client sdk.Client
	cache  provider.MessageCache
	heads  provider.HeadCache
	// label names the provider in errors (Config.Label), service the
	// server a transport error could not reach ("the Anthropic API").
	label, service string
	// hint is what a transport error tells the user to check; api names
	// the API an answer that is not its own is compared with, and
	// notAPIHint says what to check then.
	hint, api, notAPIHint string
}

// New returns a client.
func New(cfg Config) *Client {
	c := &Client{cfg: cfg, label: "anthropic", service: "the Anthropic API", hint: "check the network or ANTHROPIC_BASE_URL",
		api: "the Anthropic API", notAPIHint: "is ANTHROPIC_BASE_URL the address of the Anthropic API?"}
	if cfg.BaseURL != "" {
		c.service = "the server"
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
		if cfg.Vertex != nil {
			base = VertexBaseURL(cfg.Vertex.Region)
		}
		if cfg.Bedrock != nil {
			base = BedrockBaseURL(cfg.Bedrock.Region)
		}
	}
	c.base = base
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
		option.WithMiddleware(provider.CaptureMiddleware),
	}
	if cfg.Vertex != nil {
		// After the capture, so that a turn's wire bytes are the API's
		// request, as on every platform.
		opts = append(opts, option.WithMiddleware(cfg.Vertex.middleware()))
		c.label, c.service, c.hint = "vertex", "Vertex AI", "check the network, "+cmp.Or(cfg.Vertex.RegionFrom, "CLOUD_ML_REGION")+" or ANTHROPIC_VERTEX_BASE_URL"
		c.api, c.notAPIHint = "Vertex AI", "is ANTHROPIC_VERTEX_BASE_URL the address of Vertex AI?"
	} else if cfg.Bedrock != nil {
		opts = append(opts, option.WithMiddleware(cfg.Bedrock.middleware()))
		c.label, c.service, c.hint = "bedrock", "Amazon Bedrock", "check the network, "+cmp.Or(cfg.Bedrock.RegionFrom, "AWS_REGION")+" or ANTHROPIC_BEDROCK_BASE_URL"
		c.api, c.notAPIHint = "Amazon Bedrock's runtime API", "is ANTHROPIC_BEDROCK_BASE_URL the address of Bedrock's runtime?"
	} else {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// Last, so that it sees the answer as it came from the network.
	opts = append(opts, option.WithMiddleware(provider.AnswerMiddleware(provider.AnthropicShape)))
	opts = append(opts, option.WithHTTPClient(cmp.Or(cfg.HTTP, defaultClient())))
	if cfg.ThinkingBudget > 0 {
		opts = append(opts, option.WithHeaderAdd("anthropic-beta", InterleavedThinking))
	}
	c.label, c.hint, c.notAPIHint = cmp.Or(cfg.Label, c.label), cmp.Or(cfg.ReachHint, c.hint), cmp.Or(cfg.ReachHint, c.notAPIHint)
	c.client = sdk.NewClient(opts...)
	return c
}

// Name implements provider.Provider.
func (c *Client) Name() string { return "anthropic" }

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

// DeclareTools returns the "tools" array a request would carry.
func (c *Client) DeclareTools(specs []model.ToolSpec) (json.RawMessage, error) {
	tools, err := c.tools(specs)
	if err != nil {
		return nil, err
	}
	return json.Marshal(tools)
}

// params returns the request's SDK params without its messages.
func (c *Client) params(req *model.Request) (sdk.MessageNewParams, error) {
	maxTokens := int64(req.MaxTokens)
	if maxTokens == 0 {
		maxTokens = 8192
	}
	p := sdk.MessageNewParams{Model: sdk.Model(req.Model), MaxTokens: maxTokens}
	if req.System != "" {
		sys := sdk.TextBlockParam{Text: req.System}
		if !c.cfg.NoCache {
			sys.CacheControl = sdk.NewCacheControlEphemeralParam()
		}
		p.System = []sdk.TextBlockParam{sys}
	}
	if c.cfg.ThinkingBudget > 0 {
		p.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: c.cfg.ThinkingBudget}}
		if p.MaxTokens <= c.cfg.ThinkingBudget {
			// The API refuses a budget that is not below max_tokens: the
			// answer keeps its own allowance on top of the thinking.
			p.MaxTokens += c.cfg.ThinkingBudget
		}
	}
	tools, err := c.tools(req.Tools)
	if err != nil {
		return p, err
	}
	p.Tools = tools
	return p, nil
}

// body encodes the request: the SDK encodes every part; each message is
// encoded once and reused on later turns (provider.MessageCache), except the
// last, which carries the moving cache breakpoint.
func (c *Client) body(req *model.Request) ([]byte, *model.Wire, error) {
	head, err := c.heads.Get(req, "", func() ([]byte, error) {
		p, err := c.params(req)
		if err != nil {
			return nil, err
		}
		head, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		return head, nil
	})
	if err != nil {
		return nil, nil, err
	}
	turns := turnsOf(req.Items)
	spans := make([]provider.Span, len(turns))
	for i, t := range turns {
		spans[i] = provider.Span{Start: t.start, End: t.end}
	}
	last := len(turns) - 1
	msgs, err := c.cache.Encode(req.Items, spans, func(i int) (json.RawMessage, error) {
		t := turns[i]
		bs, err := blocks(req.Items[t.start:t.end])
		if err != nil {
			return nil, err
		}
		if i == last && !c.cfg.NoCache {
			// The latest message carries the moving cache breakpoint; it
			// is never cached itself.
			if cc := bs[len(bs)-1].GetCacheControl(); cc != nil {
				*cc = sdk.NewCacheControlEphemeralParam()
			}
		}
		if t.user {
			return json.Marshal(sdk.NewUserMessage(bs...))
		}
		return json.Marshal(sdk.NewAssistantMessage(bs...))
	}, func(i int) bool { return i == last })
	if err != nil {
		return nil, nil, err
	}
	extra := `"stream":true,`
	if cm := c.cfg.ContextManagement; len(cm) > 0 {
		if !json.Valid(cm) {
			return nil, nil, fmt.Errorf("%s: the context_management value is not JSON: %.80q", c.label, cm)
		}
		extra = `"context_management":` + string(cm) + "," + extra
	}
	return provider.JoinBody(head, extra, "messages", msgs)
}

// events is a stream of Messages events: the SDK's stream, or betaEvents.
type events interface {
	Next() bool
	Current() sdk.MessageStreamEventUnion
	Err() error
	Close() error
}

// betaEvents reads the beta Messages stream as Messages events: the wire
// form is the same (a beta message_delta adds the context edits applied,
// which the turn does not need), so each event is decoded again from its
// raw JSON.
type betaEvents struct {
	s   *ssestream.Stream[sdk.BetaRawMessageStreamEventUnion]
	cur sdk.MessageStreamEventUnion
	err error
}

func (b *betaEvents) Next() bool {
	if b.err != nil || !b.s.Next() {
		return false
	}
	b.cur = sdk.MessageStreamEventUnion{}
	if err := b.cur.UnmarshalJSON([]byte(b.s.Current().RawJSON())); err != nil {
		b.err = fmt.Errorf("a beta stream event could not be read: %w", err)
		return false
	}
	return true
}

func (b *betaEvents) Current() sdk.MessageStreamEventUnion { return b.cur }
func (b *betaEvents) Close() error                         { return b.s.Close() }
func (b *betaEvents) Err() error {
	if b.err != nil {
		return b.err
	}
	return b.s.Err()
}

// stream sends one attempt: through the beta client when the request
// carries context_management, else the plain one.
func (c *Client) stream(ctx context.Context, modelName string, body []byte) events {
	ctx = provider.Streamed(ctx)
	opt := option.WithRequestBody("application/json", body)
	if len(c.cfg.ContextManagement) > 0 {
		// The Go SDK's beta client names the beta operation only in the
		// request's context; the query is the one the Python and
		// TypeScript SDKs send, which the API accepts.
		return &betaEvents{s: c.client.Beta.Messages.NewStreaming(ctx, sdk.BetaMessageNewParams{Model: sdk.Model(modelName),
			Betas: []sdk.AnthropicBeta{ContextManagementBeta}}, opt, option.WithQuery("beta", "true"))}
	}
	return c.client.Messages.NewStreaming(ctx, sdk.MessageNewParams{Model: sdk.Model(modelName)}, opt)
}

// tools declares the typed, function and server tools.
func (c *Client) tools(specs []model.ToolSpec) ([]sdk.ToolUnionParam, error) {
	var out []sdk.ToolUnionParam
	for _, t := range specs {
		var u sdk.ToolUnionParam
		switch {
		case t.Kind == model.ToolTyped && t.Type == "text_editor_20250728":
			e := &sdk.ToolTextEditor20250728Param{}
			if n, ok := t.Options["max_characters"].(int); ok && n > 0 {
				e.MaxCharacters = sdk.Int(int64(n))
			}
			u.OfTextEditor20250728 = e
		case t.Kind == model.ToolTyped && t.Type == "text_editor_20250124":
			u.OfTextEditor20250124 = &sdk.ToolTextEditor20250124Param{}
		case t.Kind == model.ToolTyped && t.Type == "bash_20250124":
			u.OfBashTool20250124 = &sdk.ToolBash20250124Param{}
		case t.Kind == model.ToolTyped && t.Type == "memory_20250818":
			u.OfMemoryTool20250818 = &sdk.MemoryTool20250818Param{}
		case t.Kind == model.ToolFunction:
			var schema struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			}
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
			}
			tp := &sdk.ToolParam{Name: t.Name, InputSchema: sdk.ToolInputSchemaParam{Properties: schema.Properties, Required: schema.Required}}
			if t.Description != "" {
				tp.Description = sdk.String(t.Description)
			}
			u.OfTool = tp
		default:
			return nil, fmt.Errorf("%s: tool %s of type %q is not supported by the Messages API", c.label, t.Name, t.Type)
		}
		out = append(out, u)
	}
	for _, name := range c.cfg.ServerTools {
		var u sdk.ToolUnionParam
		switch name {
		case "web_search":
			u.OfWebSearchTool20260318 = &sdk.WebSearchTool20260318Param{}
		case "web_fetch":
			u.OfWebFetchTool20260318 = &sdk.WebFetchTool20260318Param{}
		case "code_execution":
			u.OfCodeExecutionTool20260521 = &sdk.CodeExecutionTool20260521Param{}
		default:
			return nil, fmt.Errorf("unknown server tool %q: choose web_search, web_fetch or code_execution", name)
		}
		out = append(out, u)
	}
	if !c.cfg.NoCache && len(out) > 0 {
		if cc := out[len(out)-1].GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
		}
	}
	return out, nil
}

// turn is one message: its role and the items [start, end) it is made of.
type turn struct {
	user       bool
	start, end int
}

// replayable reports whether an item becomes a block of the request. Text
// the API refuses is not replayed: an empty or whitespace-only text block
// (user text, or assistant text a model produced) is answered with HTTP 400
// ("text content blocks must be non-empty" / "must contain non-whitespace
// text"), and replaying it would end every later turn of the session. The
// item stays in the transcript, and its response in the ledger, as it was.
func replayable(it model.Item) bool {
	switch it.Kind {
	case model.KindToolResult, model.KindToolCall:
		return true
	case model.KindUser, model.KindAssistant:
		return strings.TrimSpace(it.Text) != ""
	}
	return it.Provider == "anthropic" && len(it.Raw) > 0
}

// turnsOf divides the transcript into Messages without building them: a
// user message for user text and each run of tool results (results first,
// as the API requires), an assistant message for each response (after a
// pause_turn two follow each other; the API joins them).
func turnsOf(items []model.Item) []turn {
	var out []turn
	resp := ""
	for i, it := range items {
		if !replayable(it) {
			continue
		}
		user := it.Kind == model.KindUser || it.Kind == model.KindToolResult
		n := len(out)
		if n > 0 && out[n-1].user == user && (user || it.Response == resp) {
			out[n-1].end = i + 1
		} else {
			out = append(out, turn{user: user, start: i, end: i + 1})
		}
		if !user {
			resp = it.Response
		}
	}
	return out
}

// blocks builds a message's blocks: replayed from their raw form when they
// came from this dialect, else made from the neutral item (a resumed
// session that began with another provider).
func blocks(items []model.Item) ([]sdk.ContentBlockParamUnion, error) {
	var out []sdk.ContentBlockParamUnion
	for _, it := range items {
		if !replayable(it) {
			continue
		}
		switch {
		case it.Kind == model.KindUser:
			out = append(out, sdk.NewTextBlock(it.Text))
		case it.Kind == model.KindToolResult:
			out = append(out, toolResult(it.Result))
		case it.Provider == "anthropic" && len(it.Raw) > 0:
			var blk sdk.ContentBlockUnion
			if err := json.Unmarshal(it.Raw, &blk); err != nil {
				return nil, fmt.Errorf("replay a %s block: %w", it.Kind, err)
			}
			out = append(out, blk.ToParam())
		case it.Kind == model.KindAssistant:
			out = append(out, sdk.NewTextBlock(it.Text))
		case it.Kind == model.KindToolCall:
			var input any = json.RawMessage(it.Call.Input)
			if !json.Valid([]byte(it.Call.Input)) {
				input = map[string]string{"INVALID_JSON": it.Call.Input}
			}
			out = append(out, sdk.NewToolUseBlock(it.Call.ID, input, it.Call.Name))
		}
	}
	return out, nil
}

// toolResult builds a tool_result block. A result without visible text
// (a session recorded before every binding said so, or a tool that
// answered with whitespace) goes without content: the API refuses an empty
// or whitespace-only text block also inside a tool_result.
func toolResult(r *model.ToolResult) sdk.ContentBlockParamUnion {
	if strings.TrimSpace(r.Text) != "" {
		return sdk.NewToolResultBlock(r.CallID, r.Text, r.IsError)
	}
	b := &sdk.ToolResultBlockParam{ToolUseID: r.CallID}
	if r.IsError {
		b.IsError = sdk.Bool(true)
	}
	return sdk.ContentBlockParamUnion{OfToolResult: b}
}

func (c *Client) once(ctx context.Context, modelName string, body []byte, onDelta func(model.Delta)) (*model.Response, error) {
	// This attempt's own bytes: the request is recorded as its parts.
	capture := &provider.Capture{SkipRequest: true}
	ctx = capture.Context(ctx)
	stream := c.stream(ctx, modelName, body)
	defer stream.Close()
	var msg sdk.Message
	// The streamed input of each tool_use block, byte for byte: the SDK's
	// accumulation replaces input that does not parse with {}, which would
	// tell the model its call had no arguments and lose what it sent.
	inputs := map[int64]*strings.Builder{}
	stopped := false
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, &provider.Error{Provider: "anthropic", Kind: provider.ErrStream, Err: err, Message: "the stream was out of order: " + err.Error()}
		}
		switch e := ev.AsAny().(type) {
		case sdk.ContentBlockDeltaEvent:
			if d, ok := e.Delta.AsAny().(sdk.InputJSONDelta); ok {
				sb := inputs[e.Index]
				if sb == nil {
					sb = &strings.Builder{}
					inputs[e.Index] = sb
				}
				sb.WriteString(d.PartialJSON)
			}
			if onDelta == nil {
				continue
			}
			switch d := e.Delta.AsAny().(type) {
			case sdk.TextDelta:
				onDelta(model.Delta{Kind: model.KindAssistant, Text: d.Text})
			case sdk.ThinkingDelta:
				onDelta(model.Delta{Kind: model.KindReasoning, Text: d.Thinking})
			}
		case sdk.ContentBlockStartEvent:
			if onDelta != nil && e.ContentBlock.Type == "tool_use" {
				onDelta(model.Delta{Kind: model.KindToolCall, Call: &model.ToolCall{ID: e.ContentBlock.ID, Name: e.ContentBlock.Name}})
			}
		case sdk.MessageStopEvent:
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, c.classify(ctx, err)
	}
	if !stopped {
		return nil, &provider.Error{Provider: "anthropic", Kind: provider.ErrStream, Message: "the stream ended before message_stop"}
	}
	resp := &model.Response{ID: msg.ID, Model: string(msg.Model), StopReason: stopReason(msg.StopReason)}
	for i, b := range msg.Content {
		raw := json.RawMessage(b.RawJSON())
		it := model.Item{Provider: "anthropic", Raw: raw, Response: msg.ID}
		switch b.Type {
		case "text":
			it.Kind, it.Text = model.KindAssistant, b.Text
		case "thinking":
			it.Kind, it.Text = model.KindReasoning, b.Thinking
		case "redacted_thinking":
			it.Kind = model.KindReasoning
		case "tool_use":
			input := string(b.Input)
			if sb := inputs[int64(i)]; sb != nil && sb.Len() > 0 {
				input = sb.String()
			}
			if input == "" {
				input = "{}"
			}
			if !json.Valid([]byte(input)) {
				// The call keeps the exact bytes (the binding answers that
				// they are not JSON, and where); the block replays with
				// them wrapped as Anthropic documents for invalid input.
				raw = invalidInputBlock(raw, input)
			}
			it.Raw = raw
			it.Kind, it.Call = model.KindToolCall, &model.ToolCall{ID: b.ID, Name: b.Name, Kind: model.ToolTyped, Type: "tool_use", Input: input}
		default: // server_tool_use and the *_tool_result blocks
			it.Kind, it.Text = model.KindServerTool, b.Type
		}
		resp.Items = append(resp.Items, it)
	}
	u := msg.Usage
	resp.Usage = model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens,
		ReasoningTokens: u.OutputTokensDetails.ThinkingTokens}
	resp.Wire = capture.Wire()
	return resp, nil
}

// invalidInputBlock returns a tool_use block's raw form with its input
// replaced by {"INVALID_JSON": input}, the form Anthropic documents for
// echoing input that is not JSON back to the API.
func invalidInputBlock(raw json.RawMessage, input string) json.RawMessage {
	var blk map[string]json.RawMessage
	if json.Unmarshal(raw, &blk) != nil {
		return raw
	}
	wrapped, err := json.Marshal(map[string]string{"INVALID_JSON": input})
	if err != nil {
		return raw
	}
	blk["input"] = wrapped
	out, err := json.Marshal(blk)
	if err != nil {
		return raw
	}
	return out
}

func stopReason(r sdk.StopReason) model.StopReason {
	switch r {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		return model.StopEndTurn
	case sdk.StopReasonToolUse:
		return model.StopToolUse
	case sdk.StopReasonMaxTokens:
		return model.StopMaxTokens
	case sdk.StopReasonPauseTurn:
		return model.StopPause
	case sdk.StopReasonRefusal:
		return model.StopRefusal
	case sdk.StopReasonModelContextWindowExceeded:
		return model.StopContext
	}
	return model.StopOther
}

// defaultClient is the client of an adapter given none: the provider
// package's transport (provider.NewTransport), with the response-header
// timeout of the SDK's own default client (10 minutes), made on first use.
func defaultClient() *http.Client {
	sdkDefault.once.Do(func() { sdkDefault.c = (*provider.Predial)(nil).Client(nil, 10*time.Minute, nil) })
	return sdkDefault.c
}

var sdkDefault struct {
	once sync.Once
	c    *http.Client
}

// modelAccessHint is what Bedrock's AccessDeniedException for a model
// tells the user to do.
const modelAccessHint = "the account has no access to this model in the region: request it on the Bedrock console's Model access page"

// noCredentialsSent is what a failure to get the AWS credentials adds:
// no request was sent.
const noCredentialsSent = "nothing was sent to Bedrock: run the command by hand to see why it fails"

// own names the client's provider in err, a *provider.Error of the
// adapter's, and adds to a refusal of the credentials what to check.
func (c *Client) own(err error) error {
	var pe *provider.Error
	if errors.As(err, &pe) {
		pe.Provider = c.label
		// A route's own error (the middleware's "bedrock: …") says the
		// name once.
		pe.Message = strings.TrimPrefix(pe.Message, c.label+": ")
		if b := c.cfg.Bedrock; b != nil && pe.Kind == provider.ErrAuth && pe.Code == "AccessDeniedException" &&
			strings.Contains(strings.ToLower(pe.Message), "access to the model") && !strings.Contains(pe.Message, modelAccessHint) {
			// The credentials were taken; the account has not been
			// given the model.
			pe.Message += fmt.Sprintf("; %s (region %s)", modelAccessHint, b.Region)
			return err
		}
		if b := c.cfg.Bedrock; b != nil && b.ProfileHint != "" && pe.Code == "ValidationException" &&
			strings.Contains(strings.ToLower(pe.Message), "inference profile") && !strings.Contains(pe.Message, b.ProfileHint) {
			pe.Message += "; " + b.ProfileHint
			return err
		}
		if v := c.cfg.Vertex; v != nil && provider.DeniedHint(pe, provider.VertexDeniedHint(v.Project, v.Region)) {
			return err
		}
		var ce *credentialsError
		if errors.As(err, &ce) {
			// No request left: which credentials a request carried
			// (KeyHint) is beside the point.
			if !strings.Contains(pe.Message, noCredentialsSent) {
				pe.Message += "; " + noCredentialsSent
			}
			return err
		}
		if pe.Kind == provider.ErrAuth && c.cfg.KeyHint != "" && !strings.HasSuffix(pe.Message, c.cfg.KeyHint) {
			pe.Message += "; " + c.cfg.KeyHint
		}
	}
	return err
}

// classify maps an SDK error to a *provider.Error.
func (c *Client) classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if pe, ok := provider.NotAPIPage(err, "anthropic", c.api, c.notAPIHint); ok {
		return pe
	}
	if pe, ok := provider.ForeignAnswer(err, "anthropic", c.api, c.notAPIHint); ok {
		return pe
	}
	var te *tokenError
	if errors.As(err, &te) {
		return &provider.Error{Provider: "anthropic", Kind: provider.ErrAuth, Err: err, Message: te.Error()}
	}
	var ce *credentialsError
	if errors.As(err, &ce) {
		return &provider.Error{Provider: "anthropic", Kind: provider.ErrAuth, Err: err, Message: ce.Error()}
	}
	var apierr *sdk.Error
	if errors.As(err, &apierr) {
		if apierr.Request != nil && provider.NotAPIAnswer(apierr.StatusCode, []byte(apierr.RawJSON())) {
			return provider.NotAPI("anthropic", c.api, provider.SentRequest(apierr.Request, apierr.Response), apierr.StatusCode, []byte(apierr.RawJSON()), c.notAPIHint)
		}
		typ := string(apierr.Type())
		msg := apierr.Message
		if status, gmsg, ok := googleError([]byte(apierr.RawJSON())); ok && typ == "" {
			// Google Cloud's own error (Vertex AI's credentials, quota,
			// project or model), not the Messages API's.
			typ, msg = status, gmsg
		}
		if msg == "" {
			msg = strings.TrimSpace(string(apierr.RawJSON()))
		}
		pe := &provider.Error{Provider: "anthropic", Status: apierr.StatusCode, Message: msg, Err: err}
		if typ != "" {
			pe.Message = typ + ": " + msg
		}
		if apierr.StatusCode == http.StatusOK || apierr.StatusCode == 0 {
			// An error event in the middle of the stream.
			pe.Status, pe.Kind = 0, provider.ErrStream
			if typ == "overloaded_error" {
				pe.Kind = provider.ErrOverloaded
			}
			pe.Message = "error in the middle of the stream: " + pe.Message
			return pe
		}
		var h http.Header
		if apierr.Response != nil {
			h = apierr.Response.Header
		}
		return provider.HTTPError("anthropic", apierr.StatusCode, typ, pe.Message, h, err)
	}
	var ne *net.OpError
	var ue *url.Error
	if provider.SpeaksTLS(err) {
		return provider.TransportError(ctx, "anthropic", c.hint, err)
	}
	if errors.As(err, &ne) || errors.As(err, &ue) {
		return &provider.Error{Provider: "anthropic", Kind: provider.ErrUnreachable, Err: err,
			Message: fmt.Sprintf("cannot reach %s (%v); %s", c.service, err, c.hint)}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &provider.Error{Provider: "anthropic", Kind: provider.ErrStream, Err: err, Message: "the stream broke off: " + err.Error()}
	}
	return &provider.Error{Provider: "anthropic", Kind: provider.ErrProtocol, Err: err, Message: err.Error()}
}

// Models implements provider.ModelLister: GET /v1/models through the SDK's
// auto-pager (pages of the API's default size, followed by after_id while
// has_more), newest first as the API lists them, at most
// provider.MaxModels. A page that repeats a model already listed ends the
// list with a protocol error rather than paging forever.
func (c *Client) Models(ctx context.Context) (_ []provider.ModelInfo, err error) {
	// A key the server echoed is hidden here, as in a turn's error.
	defer func() { err = provider.MaskError(err, c.cfg.Retry.AllSecrets()) }()
	if c.cfg.Vertex != nil {
		// Vertex AI lists its publisher models in the Model Garden's API,
		// another API than the Messages API's routes.
		return nil, provider.Unsupported(c.label+": Vertex AI's Messages routes have no model list (truss models --provider vertex lists the ids Truss knows)", nil)
	}
	if c.cfg.Bedrock != nil {
		// Bedrock's runtime lists no models; its control plane's
		// ListFoundationModels is another API.
		return nil, provider.Unsupported(c.label+": Amazon Bedrock's runtime has no model list (truss models --provider bedrock lists the ids Truss knows; aws bedrock list-inference-profiles, the account's)", nil)
	}
	pager := c.client.Models.ListAutoPaging(ctx, sdk.ModelListParams{})
	var out []provider.ModelInfo
	seen := map[string]bool{}
	for len(out) < provider.MaxModels && pager.Next() {
		m := pager.Current()
		if seen[m.ID] {
			return nil, &provider.Error{Provider: c.label, Kind: provider.ErrProtocol,
				Message: fmt.Sprintf("GET %s: the list repeats %q (the server's pagination loops)", provider.EndpointPath(c.base, "v1/models"), m.ID)}
		}
		seen[m.ID] = true
		out = append(out, provider.ModelInfo{ID: m.ID, DisplayName: m.DisplayName,
			Created: provider.ModelTime(m.CreatedAt), ContextWindow: max(m.MaxInputTokens, 0)})
	}
	if err := pager.Err(); err != nil {
		return nil, provider.ModelsError("GET", provider.EndpointPath(c.base, "v1/models"), c.own(c.classify(ctx, err)))
	}
	return out, nil
}

// ServerTools are the names of the provider-executed tools Config's
// ServerTools may enable.
func ServerTools() []string { return []string{"web_search", "web_fetch", "code_execution"} }

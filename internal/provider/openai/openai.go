// Package openai speaks OpenAI's Responses API through the official openai-go
// client, streaming.
//
// By default the adapter is stateless: every request carries "store": false
// and "include": ["reasoning.encrypted_content"], and replays the whole
// conversation — each output item (reasoning with its encrypted content,
// assistant messages with their phase, every call) exactly as the server
// sent it, followed by the result items Truss made. With Config.Stateful it
// sends "store": true and "previous_response_id" with only the items added
// since that response, falling back to a full replay when the server no
// longer has the response; the first request after a compaction is sent
// whole, unchained, since the server holds the earlier responses with the
// history the compaction replaced (compact.Since).
//
// Client-executed tools are declared in the provider's own shape: typed
// "shell" and "apply_patch", freeform "custom" tools (with a Lark grammar),
// and "function" tools, always with an explicit "strict". Their calls come
// back as shell_call, apply_patch_call, custom_tool_call and function_call
// items and are answered with the matching *_output item.
//
// The adapter owns retries (the SDK's are off, so each one is reported):
// connection errors, 408, 409, 429 and 5xx, honouring Retry-After-Ms,
// Retry-After and x-should-retry as the SDK does; a response.failed event
// whose error is transient (server_error, rate_limit_exceeded, overloaded),
// an error event, and a stream cut before response.completed fail the turn,
// which is then retried whole. No tool runs before a turn is complete, so a
// retried turn never loses or repeats a call.
package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/lazyre"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
)

// Dialect is the provider name of this adapter and of the items it makes.
const Dialect = "responses"

// DefaultBaseURL is the API's address.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Client.
type Config struct {
	BaseURL string // default DefaultBaseURL
	APIKey  string
	HTTP    *http.Client
	Retry   provider.RetryPolicy
	// Stateful chains turns with previous_response_id (and "store": true)
	// instead of replaying the whole conversation.
	Stateful bool
	// Strict declares function tools with "strict": true, their schemas
	// rewritten to strict mode's rules (provider.StrictSchema); otherwise
	// "strict": false is sent, as Codex does for its function tools.
	Strict bool
	// ReasoningEffort is sent as reasoning.effort when set ("none", "low",
	// "medium", "high", ...): without it a model reasons at its own default,
	// which for gpt-5.1 is none.
	ReasoningEffort string
	// ReasoningSummary is sent as reasoning.summary when set ("auto").
	ReasoningSummary string
	// CacheKey is sent as prompt_cache_key (a session id keeps one session's
	// requests on one prompt cache).
	CacheKey string
	// Label names the provider in every error the client returns: the
	// provider the user chose ("azure", a named provider's NAME). "" is
	// "azure" for an Azure resource's client, else "responses".
	Label string
	// ReachHint says what to check when the server cannot be reached
	// ("" for the route's own: "check the network or OPENAI_BASE_URL");
	// KeyHint what to check when the server refuses the credentials
	// (401, 403), added to its message ("" adds nothing).
	ReachHint, KeyHint string
	// NotAPIHint says what to check when a server answers that is not
	// the API ("" for ReachHint, else the adapter's own words).
	NotAPIHint string
}

// Client is a Responses adapter.
type Client struct {
	cfg    Config
	base   string // the base URL in use
	client sdk.Client
	cache  provider.MessageCache
	heads  provider.HeadCache
	// label names the provider in errors (Config.Label); hint is what a
	// transport error tells the user to check; api names the API an
	// answer that is not its own is compared with, and notAPIHint says
	// what to check then.
	label, hint, api, notAPIHint string
	// notFoundHint is added to a 404 naming no deployment
	// (DeploymentNotFound: Azure's --model).
	notFoundHint string
}

// New returns a client.
func New(cfg Config) *Client {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	return newClient(cfg, base, option.WithBaseURL(base), option.WithAPIKey(cfg.APIKey))
}

// newClient returns a client on base whose SDK client has the options
// route (where requests go and how they authenticate), the adapter's own
// after them: no SDK retries, each attempt's bytes captured as sent.
func newClient(cfg Config, base string, route ...option.RequestOption) *Client {
	c := &Client{cfg: cfg, base: base, label: cmp.Or(cfg.Label, Dialect), hint: cmp.Or(cfg.ReachHint, "check the network or OPENAI_BASE_URL"),
		api: "OpenAI's Responses API", notAPIHint: cmp.Or(cfg.NotAPIHint, cfg.ReachHint, "is OPENAI_BASE_URL the address of OpenAI's API?")}
	opts := append(route, option.WithMaxRetries(0), option.WithMiddleware(provider.CaptureMiddleware),
		option.WithMiddleware(provider.AnswerMiddleware(provider.OpenAIShape)))
	opts = append(opts, option.WithHTTPClient(cmp.Or(cfg.HTTP, provider.DefaultClient())))
	c.client = sdk.NewClient(opts...)
	return c
}

// Name implements provider.Provider.
func (c *Client) Name() string { return Dialect }

// Turn implements provider.Provider.
func (c *Client) Turn(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	prev, from := "", 0
	if c.cfg.Stateful {
		prev, from = chainPoint(req.Items)
		if from > 0 && from-1 < compact.Since(req.Items) {
			// The response is from before a compaction: the server holds
			// it with the history the summary replaced. Send the
			// compacted conversation whole; later turns chain to its
			// response.
			prev, from = "", 0
		}
	}
	resp, parts, err := c.turn(ctx, req, prev, from, onDelta)
	var pe *provider.Error
	if prev != "" && errors.As(err, &pe) && pe.Code == "previous_response_not_found" {
		// The server no longer holds the response: send everything.
		resp, parts, err = c.turn(ctx, req, "", 0, onDelta)
	}
	if err != nil {
		return nil, err
	}
	resp.Wire.UseParts(parts)
	return resp, nil
}

func (c *Client) turn(ctx context.Context, req *model.Request, prev string, from int, onDelta func(model.Delta)) (*model.Response, *model.Wire, error) {
	body, parts, err := c.body(req, prev, from)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.cfg.Retry.Turn(ctx, func() (*model.Response, error) {
		resp, err := c.once(ctx, req.Model, body, onDelta)
		return resp, c.own(err)
	})
	return resp, parts, err
}

// chainPoint finds the latest response of this dialect in the transcript:
// its id, and the index of the first item after it (what a chained request
// sends). It returns "" when there is none.
func chainPoint(items []model.Item) (string, int) {
	for i := len(items) - 1; i >= 0; i-- {
		if it := items[i]; it.Provider == Dialect && it.Response != "" {
			return it.Response, i + 1
		}
	}
	return "", 0
}

// DeclareTools returns the "tools" array a request would carry.
func (c *Client) DeclareTools(specs []model.ToolSpec) (json.RawMessage, error) {
	tools, err := c.tools(specs)
	if err != nil {
		return nil, err
	}
	return json.Marshal(tools)
}

// params returns the request's SDK params without its input.
func (c *Client) params(req *model.Request, prev string) (responses.ResponseNewParams, error) {
	p := responses.ResponseNewParams{
		Model:             shared.ResponsesModel(req.Model),
		ParallelToolCalls: param.NewOpt(true),
	}
	if req.System != "" {
		p.Instructions = param.NewOpt(req.System)
	}
	if req.MaxTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(req.MaxTokens))
	}
	if c.cfg.Stateful {
		p.Store = param.NewOpt(true)
		if prev != "" {
			p.PreviousResponseID = param.NewOpt(prev)
		}
	} else {
		p.Store = param.NewOpt(false)
		p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	if c.cfg.CacheKey != "" {
		p.PromptCacheKey = param.NewOpt(c.cfg.CacheKey)
	}
	if c.cfg.ReasoningEffort != "" || c.cfg.ReasoningSummary != "" {
		p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(c.cfg.ReasoningEffort),
			Summary: shared.ReasoningSummary(c.cfg.ReasoningSummary)}
	}
	tools, err := c.tools(req.Tools)
	if err != nil {
		return p, err
	}
	if len(tools) > 0 {
		p.Tools = tools
		p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: param.NewOpt(responses.ToolChoiceOptionsAuto)}
	}
	return p, nil
}

// tools declares the typed, custom and function tools.
func (c *Client) tools(specs []model.ToolSpec) ([]responses.ToolUnionParam, error) {
	var out []responses.ToolUnionParam
	for _, t := range specs {
		var u responses.ToolUnionParam
		switch {
		case t.Kind == model.ToolTyped && t.Type == "shell":
			u.OfShell = &responses.FunctionShellToolParam{
				Environment: responses.FunctionShellToolEnvironmentUnionParam{OfLocal: &responses.LocalEnvironmentParam{}}}
		case t.Kind == model.ToolTyped && t.Type == "apply_patch":
			u.OfApplyPatch = &responses.ApplyPatchToolParam{}
		case t.Kind == model.ToolCustom:
			ct := &responses.CustomToolParam{Name: t.Name}
			if t.Description != "" {
				ct.Description = param.NewOpt(t.Description)
			}
			if f, ok := t.Options["format"].(map[string]any); ok && f["type"] == "grammar" {
				syntax, _ := f["syntax"].(string)
				def, _ := f["definition"].(string)
				ct.Format = shared.CustomToolInputFormatUnionParam{OfGrammar: &shared.CustomToolInputFormatGrammarParam{
					Syntax: syntax, Definition: def}}
			} else {
				ct.Format = shared.CustomToolInputFormatUnionParam{OfText: &shared.CustomToolInputFormatTextParam{}}
			}
			u.OfCustom = ct
		case t.Kind == model.ToolFunction:
			schema := t.Parameters
			if c.cfg.Strict {
				var err error
				if schema, err = provider.StrictSchema(schema); err != nil {
					return nil, fmt.Errorf("tool %s: %w", t.Name, err)
				}
			}
			var params map[string]any
			if err := json.Unmarshal(schema, &params); err != nil {
				return nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
			}
			ft := &responses.FunctionToolParam{Name: t.Name, Parameters: params, Strict: param.NewOpt(c.cfg.Strict)}
			if t.Description != "" {
				ft.Description = param.NewOpt(t.Description)
			}
			u.OfFunction = ft
		default:
			return nil, fmt.Errorf("%s: tool %s of type %q is not supported by the Responses API", c.label, t.Name, t.Type)
		}
		out = append(out, u)
	}
	return out, nil
}

// body encodes the request: the SDK encodes the head and every input item;
// each item is encoded once and reused on later turns
// (provider.MessageCache). A chained request (prev set) sends only the
// items from index from on.
func (c *Client) body(req *model.Request, prev string, from int) ([]byte, *model.Wire, error) {
	head, err := c.heads.Get(req, prev, func() ([]byte, error) {
		p, err := c.params(req, prev)
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
	calls := callsOf(req.Items)
	var spans []provider.Span
	for i := from; i < len(req.Items); i++ {
		if replayable(req.Items[i]) {
			spans = append(spans, provider.Span{Start: i, End: i + 1})
		}
	}
	in, err := c.cache.Encode(req.Items, spans, func(i int) (json.RawMessage, error) {
		return inputItem(req.Items[spans[i].Start], calls)
	}, func(int) bool { return false })
	if err != nil {
		return nil, nil, err
	}
	return provider.JoinBody(head, `"stream":true,`, "input", in)
}

// replayable reports whether an item becomes an input item.
func replayable(it model.Item) bool {
	switch it.Kind {
	case model.KindUser, model.KindToolCall, model.KindToolResult:
		return true
	case model.KindAssistant:
		return it.Text != "" || (it.Provider == Dialect && len(it.Raw) > 0)
	}
	// Reasoning and provider-executed items replay only to this dialect.
	return it.Provider == Dialect && len(it.Raw) > 0
}

// callInfo is what answering a call needs to know of it.
type callInfo struct {
	typ    string          // the call item's type
	caller json.RawMessage // the call's "caller", echoed on its output
	maxOut int64           // a shell call's max_output_length
}

// callsOf indexes the transcript's calls by id.
func callsOf(items []model.Item) map[string]callInfo {
	m := map[string]callInfo{}
	for _, it := range items {
		if it.Kind != model.KindToolCall || it.Call == nil {
			continue
		}
		ci := callInfo{typ: "function_call"}
		switch {
		case it.Provider == Dialect && it.Call.Type != "":
			ci.typ = it.Call.Type
			var x struct {
				Caller json.RawMessage `json:"caller"`
			}
			if json.Unmarshal(it.Raw, &x) == nil && len(x.Caller) > 0 && string(x.Caller) != "null" {
				ci.caller = x.Caller
			}
			if ci.typ == "shell_call" {
				var a struct {
					Max *int64 `json:"max_output_length"`
				}
				if json.Unmarshal([]byte(it.Call.Input), &a) == nil && a.Max != nil {
					ci.maxOut = *a.Max
				}
			}
		case it.Call.Kind == model.ToolCustom:
			ci.typ = "custom_tool_call"
		}
		m[it.Call.ID] = ci
	}
	return m
}

// inputItem encodes one transcript item as an input item: replayed verbatim
// when it came from this dialect, else made from the neutral item (a session
// resumed from another provider).
func inputItem(it model.Item, calls map[string]callInfo) (json.RawMessage, error) {
	var u responses.ResponseInputItemUnionParam
	switch {
	case it.Kind == model.KindUser:
		u = responses.ResponseInputItemParamOfMessage(it.Text, responses.EasyInputMessageRoleUser)
	case it.Kind == model.KindToolResult:
		return resultItem(it.Result, calls[it.Result.CallID])
	case it.Provider == Dialect && len(it.Raw) > 0:
		return it.Raw, nil
	case it.Kind == model.KindAssistant:
		u = responses.ResponseInputItemParamOfMessage(it.Text, responses.EasyInputMessageRoleAssistant)
	case it.Kind == model.KindToolCall && it.Call.Kind == model.ToolCustom:
		u = responses.ResponseInputItemParamOfCustomToolCall(it.Call.ID, it.Call.Input, it.Call.Name)
	case it.Kind == model.KindToolCall:
		u = responses.ResponseInputItemParamOfFunctionCall(it.Call.Input, it.Call.ID, it.Call.Name)
	default:
		return nil, fmt.Errorf("a %s item has no Responses form", it.Kind)
	}
	if u.OfMessage != nil {
		// "type" is optional on the wire, but the API description
		// discriminates input items by it.
		u.OfMessage.Type = responses.EasyInputMessageTypeMessage
	}
	return json.Marshal(u)
}

// shellEntry is one command's entry of a shell call's result, as the shell
// binding encodes it in ToolResult.Native.
type shellEntry struct {
	Stdout  string `json:"stdout"`
	Stderr  string `json:"stderr"`
	Outcome struct {
		Type     string `json:"type"`
		ExitCode *int64 `json:"exit_code"`
	} `json:"outcome"`
}

// resultItem encodes a tool result as the output item its call needs.
func resultItem(r *model.ToolResult, ci callInfo) (json.RawMessage, error) {
	var u responses.ResponseInputItemUnionParam
	switch ci.typ {
	case "shell_call":
		var entries []shellEntry
		if len(r.Native) > 0 {
			if err := json.Unmarshal(r.Native, &entries); err != nil {
				return nil, fmt.Errorf("shell result of %s: %w", r.CallID, err)
			}
		}
		if len(entries) == 0 {
			// The call could not be run at all (it did not decode).
			e := shellEntry{Stderr: r.Text}
			e.Outcome.Type = "exit"
			one := int64(1)
			e.Outcome.ExitCode = &one
			entries = []shellEntry{e}
		}
		out := make([]responses.ResponseFunctionShellCallOutputContentParam, len(entries))
		for i, e := range entries {
			o := responses.ResponseFunctionShellCallOutputContentParam{Stdout: e.Stdout, Stderr: e.Stderr}
			if e.Outcome.Type == "timeout" {
				o.Outcome.OfTimeout = &responses.ResponseFunctionShellCallOutputContentOutcomeTimeoutParam{}
			} else {
				code := int64(-1)
				if e.Outcome.ExitCode != nil {
					code = *e.Outcome.ExitCode
				}
				o.Outcome.OfExit = &responses.ResponseFunctionShellCallOutputContentOutcomeExitParam{ExitCode: code}
			}
			out[i] = o
		}
		u = responses.ResponseInputItemParamOfShellCallOutput(r.CallID, out)
		if ci.maxOut > 0 {
			u.OfShellCallOutput.MaxOutputLength = param.NewOpt(ci.maxOut)
		}
		if ci.caller != nil {
			u.OfShellCallOutput.Caller = param.Override[responses.ResponseInputItemShellCallOutputCallerUnionParam](ci.caller)
		}
	case "apply_patch_call":
		status := "completed"
		if r.IsError {
			status = "failed"
		}
		u = responses.ResponseInputItemParamOfApplyPatchCallOutput(r.CallID, status)
		if r.Text != "" {
			u.OfApplyPatchCallOutput.Output = param.NewOpt(r.Text)
		}
		if ci.caller != nil {
			u.OfApplyPatchCallOutput.Caller = param.Override[responses.ResponseInputItemApplyPatchCallOutputCallerUnionParam](ci.caller)
		}
	case "custom_tool_call":
		u = responses.ResponseInputItemParamOfCustomToolCallOutput(r.CallID, r.Text)
		if ci.caller != nil {
			u.OfCustomToolCallOutput.Caller = param.Override[responses.ResponseCustomToolCallOutputCallerUnionParam](ci.caller)
		}
	default: // function_call, and any call type Truss does not declare
		u = responses.ResponseInputItemParamOfFunctionCallOutput(r.Text)
		u.OfFunctionCallOutput.CallID = param.NewOpt(r.CallID)
		if ci.caller != nil {
			u.OfFunctionCallOutput.Caller = param.Override[responses.ResponseInputItemFunctionCallOutputCallerUnionParam](ci.caller)
		}
	}
	return json.Marshal(u)
}

// outItem is an output item, as far as the adapter reads it.
type outItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     string          `json:"input"`
	Action    json.RawMessage `json:"action"`
	Operation json.RawMessage `json:"operation"`
	Status    string          `json:"status"`
	Content   []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// callTool maps a call item's type to the name of the typed tool it calls
// ("" for items that carry their tool's name); ok is false for an item
// that is not a call.
func callTool(itemType string) (name string, ok bool) {
	switch itemType {
	case "function_call", "custom_tool_call":
		return "", true
	case "shell_call":
		return "shell", true
	case "apply_patch_call":
		return "apply_patch", true
	case "local_shell_call":
		return "local_shell", true
	}
	return "", false
}

// callToolName is callTool's name alone.
func callToolName(itemType string) string {
	name, _ := callTool(itemType)
	return name
}

// streamState is what one attempt's stream has delivered.
type streamState struct {
	done     map[int64]json.RawMessage // output_item.done items by output index
	final    json.RawMessage           // the response of response.completed or .incomplete
	terminal string
}

func (c *Client) once(ctx context.Context, modelName string, body []byte, onDelta func(model.Delta)) (*model.Response, error) {
	// This attempt's own bytes: the request is recorded as its parts.
	capture := &provider.Capture{SkipRequest: true}
	ctx = provider.Streamed(capture.Context(ctx))
	stream := c.client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: shared.ResponsesModel(modelName)},
		option.WithRequestBody("application/json", body))
	defer stream.Close()
	st := streamState{done: map[int64]json.RawMessage{}}
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta", "response.refusal.delta":
			if onDelta != nil {
				onDelta(model.Delta{Kind: model.KindAssistant, Text: ev.Delta})
			}
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			if onDelta != nil {
				onDelta(model.Delta{Kind: model.KindReasoning, Text: ev.Delta})
			}
		case "response.output_item.added":
			if name, ok := callTool(ev.Item.Type); ok && onDelta != nil {
				if name == "" {
					name = ev.Item.Name
				}
				onDelta(model.Delta{Kind: model.KindToolCall, Call: &model.ToolCall{ID: ev.Item.CallID, Name: name}})
			}
		case "response.output_item.done":
			st.done[ev.OutputIndex] = json.RawMessage(ev.Item.RawJSON())
		case "response.completed", "response.incomplete":
			st.final, st.terminal = json.RawMessage(ev.Response.RawJSON()), ev.Type
		case "response.failed":
			return nil, failed(string(ev.Response.Error.Code), ev.Response.Error.Message, "response.failed")
		case "error":
			return nil, failed(ev.Code, ev.Message, "error event")
		}
	}
	if err := stream.Err(); err != nil {
		return nil, c.classify(ctx, err)
	}
	if st.final == nil {
		return nil, &provider.Error{Provider: Dialect, Kind: provider.ErrStream, Message: "the stream ended before response.completed"}
	}
	resp, err := st.response()
	if err != nil {
		return nil, err
	}
	resp.Wire = capture.Wire()
	return resp, nil
}

// response builds the turn's response from the stream: the items of
// response.output_item.done (whose encrypted reasoning is complete), in
// output order, and any the final response holds that no done event
// brought.
func (st *streamState) response() (*model.Response, error) {
	var final struct {
		ID                string            `json:"id"`
		Model             string            `json:"model"`
		Status            string            `json:"status"`
		Output            []json.RawMessage `json:"output"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Usage *struct {
			InputTokens        int64 `json:"input_tokens"`
			InputTokensDetails struct {
				CachedTokens     int64 `json:"cached_tokens"`
				CacheWriteTokens int64 `json:"cache_write_tokens"`
			} `json:"input_tokens_details"`
			OutputTokens        int64 `json:"output_tokens"`
			OutputTokensDetails struct {
				ReasoningTokens int64 `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(st.final, &final); err != nil {
		return nil, &provider.Error{Provider: Dialect, Kind: provider.ErrProtocol, Err: err, Message: "the final response could not be read: " + err.Error()}
	}
	raws := make(map[int64]json.RawMessage, len(final.Output)+len(st.done))
	for i, r := range final.Output {
		raws[int64(i)] = r
	}
	for i, r := range st.done {
		raws[i] = r
	}
	idx := make([]int64, 0, len(raws))
	for i := range raws {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })

	resp := &model.Response{ID: final.ID, Model: final.Model}
	refusal := false
	// A response cut by the output limit ends with response.incomplete, and
	// the item being written then has status "incomplete": its calls are
	// not run (the loop answers each as cut off).
	cut := st.terminal == "response.incomplete" && final.IncompleteDetails != nil && final.IncompleteDetails.Reason == "max_output_tokens"
	for _, i := range idx {
		raw := raws[i]
		var o outItem
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, &provider.Error{Provider: Dialect, Kind: provider.ErrProtocol, Err: err, Message: fmt.Sprintf("output item %d could not be read: %v", i, err)}
		}
		it := model.Item{Provider: Dialect, Raw: raw, Response: final.ID}
		switch o.Type {
		case "message":
			it.Kind = model.KindAssistant
			var sb strings.Builder
			for _, p := range o.Content {
				switch p.Type {
				case "output_text":
					sb.WriteString(p.Text)
				case "refusal":
					sb.WriteString(p.Refusal)
					refusal = true
				}
			}
			it.Text = sb.String()
		case "reasoning":
			it.Kind = model.KindReasoning
			parts := make([]string, len(o.Summary))
			for j, s := range o.Summary {
				parts[j] = s.Text
			}
			it.Text = strings.Join(parts, "\n\n")
		case "function_call":
			args := string(o.Arguments)
			var s string
			if json.Unmarshal(o.Arguments, &s) == nil {
				args = s
			}
			it.Kind, it.Call = model.KindToolCall, &model.ToolCall{ID: o.CallID, Name: o.Name, Kind: model.ToolFunction, Type: o.Type, Input: args}
		case "custom_tool_call":
			it.Kind, it.Call = model.KindToolCall, &model.ToolCall{ID: o.CallID, Name: o.Name, Kind: model.ToolCustom, Type: o.Type, Input: o.Input}
		case "shell_call", "local_shell_call":
			it.Kind, it.Call = model.KindToolCall, &model.ToolCall{ID: o.CallID, Name: callToolName(o.Type), Kind: model.ToolTyped, Type: o.Type, Input: string(o.Action)}
		case "apply_patch_call":
			it.Kind, it.Call = model.KindToolCall, &model.ToolCall{ID: o.CallID, Name: "apply_patch", Kind: model.ToolTyped, Type: o.Type, Input: string(o.Operation)}
		default: // web_search_call and the other provider-executed items
			it.Kind, it.Text = model.KindServerTool, o.Type
		}
		if it.Kind == model.KindToolCall && o.Status == "incomplete" {
			cut = true
		}
		resp.Items = append(resp.Items, it)
	}
	switch {
	case cut:
		resp.StopReason = model.StopMaxTokens
	case len(resp.Calls()) > 0:
		resp.StopReason = model.StopToolUse
	case st.terminal == "response.incomplete" && final.IncompleteDetails != nil && final.IncompleteDetails.Reason == "content_filter", refusal:
		resp.StopReason = model.StopRefusal
	case st.terminal == "response.incomplete":
		resp.StopReason = model.StopOther
	default:
		resp.StopReason = model.StopEndTurn
	}
	if u := final.Usage; u != nil {
		cached, written := u.InputTokensDetails.CachedTokens, u.InputTokensDetails.CacheWriteTokens
		resp.Usage = model.Usage{InputTokens: max(u.InputTokens-cached-written, 0), OutputTokens: u.OutputTokens,
			CacheReadTokens: cached, CacheWriteTokens: written, ReasoningTokens: u.OutputTokensDetails.ReasoningTokens}
	}
	return resp, nil
}

// tryAgain finds the wait a rate-limit message asks for, as Codex reads it.
var tryAgain = lazyre.Regexp{Expr: `(?i)try again in\s*(\d+(?:\.\d+)?)\s*(s|ms|seconds?)`}

// failed classifies the error of a response.failed or error event.
func failed(code, message, what string) error {
	pe := &provider.Error{Provider: Dialect, Code: code, Message: fmt.Sprintf("%s: %s", what, message)}
	if code != "" {
		pe.Message = fmt.Sprintf("%s: %s: %s", what, code, message)
	}
	switch code {
	case "rate_limit_exceeded":
		pe.Kind = provider.ErrRateLimited
		if m := tryAgain.Get().FindStringSubmatch(message); m != nil {
			if f, err := strconv.ParseFloat(m[1], 64); err == nil {
				unit := time.Second
				if strings.EqualFold(m[2], "ms") {
					unit = time.Millisecond
				}
				pe.RetryAfter = time.Duration(f * float64(unit))
			}
		}
	case "server_is_overloaded", "slow_down":
		pe.Kind = provider.ErrOverloaded
	case "server_error", "vector_store_timeout", "":
		pe.Kind = provider.ErrServer
		if code == "" {
			pe.Kind = provider.ErrStream
		}
	default:
		// invalid_prompt, context_length_exceeded, insufficient_quota and
		// the policy codes: trying again changes nothing.
		pe.Kind = provider.ErrBadRequest
	}
	return pe
}

// own names the client's provider in err, a *provider.Error of the
// adapter's, and adds to a refusal of the credentials what to check.
func (c *Client) own(err error) error {
	var pe *provider.Error
	if errors.As(err, &pe) {
		pe.Provider = c.label
		if pe.Kind == provider.ErrAuth && c.cfg.KeyHint != "" && !strings.HasSuffix(pe.Message, c.cfg.KeyHint) {
			pe.Message += "; " + c.cfg.KeyHint
		}
		if pe.Kind == provider.ErrNotFound && pe.Code == "DeploymentNotFound" && c.notFoundHint != "" && !strings.HasSuffix(pe.Message, c.notFoundHint) {
			pe.Message += "; " + c.notFoundHint
		}
	}
	return err
}

// classify maps an SDK error to a *provider.Error.
func (c *Client) classify(ctx context.Context, err error) error {
	return classify(ctx, err, c.hint, c.api, c.notAPIHint)
}

// classify maps an SDK error to a *provider.Error; hint says what to
// check when the server cannot be reached, notAPIHint when it answers
// but is not api ("OpenAI's Responses API").
func classify(ctx context.Context, err error, hint, api, notAPIHint string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if pe, ok := provider.NotAPIPage(err, Dialect, api, notAPIHint); ok {
		return pe
	}
	if pe, ok := provider.ForeignAnswer(err, Dialect, api, notAPIHint); ok {
		return pe
	}
	var apierr *sdk.Error
	if errors.As(err, &apierr) {
		body := provider.ResponseBody(apierr.Response)
		if apierr.Request != nil && provider.NotAPIAnswer(apierr.StatusCode, body) {
			return provider.NotAPI(Dialect, api, provider.SentRequest(apierr.Request, apierr.Response), apierr.StatusCode, body, notAPIHint)
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
		return provider.HTTPError(Dialect, apierr.StatusCode, apierr.Code, msg, h, err)
	}
	return provider.TransportError(ctx, Dialect, hint, err)
}

// Models implements provider.ModelLister: GET /v1/models through the SDK
// (one page: the API does not paginate it), in the server's order, at most
// provider.MaxModels. The API gives no display name or context window.
func (c *Client) Models(ctx context.Context) (_ []provider.ModelInfo, err error) {
	// A key the server echoed is hidden here, as in a turn's error.
	defer func() { err = provider.MaskError(err, c.cfg.Retry.AllSecrets()) }()
	page, err := c.client.Models.List(ctx)
	if err != nil {
		return nil, provider.ModelsError("GET", provider.EndpointPath(c.base, "models"), c.own(c.classify(ctx, err)))
	}
	var out []provider.ModelInfo
	for _, m := range page.Data[:min(len(page.Data), provider.MaxModels)] {
		out = append(out, provider.ModelInfo{ID: m.ID, Created: provider.ModelTime(time.Unix(m.Created, 0))})
	}
	return out, nil
}

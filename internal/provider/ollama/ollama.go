// Package ollama speaks Ollama's native chat API (POST /api/chat): NDJSON
// streaming, function tools whose arguments arrive as JSON objects in whole
// tool calls (no argument deltas), usage as prompt_eval_count / eval_count,
// and errors as {"error": "..."} — with an HTTP status before the stream, as
// an NDJSON line in the middle of it.
package ollama

import (
	"bufio"
	"bytes"
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
	"time"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
)

// DefaultNumCtx is the context Ollama gives a request that sets no
// num_ctx on a machine with less than 24 GiB of VRAM.
const DefaultNumCtx = 4096

// DefaultHost is used when OLLAMA_HOST is unset.
const DefaultHost = "http://127.0.0.1:" + DefaultPort

// DefaultPort is Ollama's port when OLLAMA_HOST names none (and no scheme).
const DefaultPort = "11434"

// Client is an Ollama adapter.
type Client struct {
	Host string // base URL, "http://host:port"
	HTTP *http.Client
	// APIKey, when set, is sent as "Authorization: Bearer KEY" with every
	// request, as Ollama's own client sends OLLAMA_API_KEY to ollama.com;
	// a local server needs none.
	APIKey string
	Retry  provider.RetryPolicy
	// Options are passed as the request's "options" (temperature...).
	Options map[string]any
	// NumCtx is sent as options.num_ctx, the context window Ollama gives the
	// request; without it Ollama uses its own default (4,096 tokens on most
	// machines) and cuts a longer prompt without a word. 0 sends none.
	NumCtx int
	// Label names the provider in every error the client returns: the
	// provider the user chose (a named provider's NAME); "" is "ollama".
	Label string
	// ReachHint says what to check when the server cannot be reached or
	// is not Ollama ("" for OLLAMA_HOST); KeyHint what to check when the
	// server refuses the key (401, 403), added to its message ("" adds
	// nothing).
	ReachHint, KeyHint string
}

// notOllamaHint is what to check when the server is not Ollama.
const notOllamaHint = "is OLLAMA_HOST the address of an Ollama server?"

// notAPIHint says what to check when the server is not Ollama.
func (c *Client) notAPIHint() string { return cmp.Or(c.ReachHint, notOllamaHint) }

// own names the client's provider in err, a *provider.Error of the
// adapter's, and adds to a refusal of the key what to check.
func (c *Client) own(err error) error {
	var pe *provider.Error
	if errors.As(err, &pe) {
		pe.Provider = cmp.Or(c.Label, "ollama")
		if pe.Kind == provider.ErrAuth && c.KeyHint != "" && !strings.HasSuffix(pe.Message, c.KeyHint) {
			pe.Message += "; " + c.KeyHint
		}
	}
	return err
}

// Name implements provider.Provider.
func (c *Client) Name() string { return "ollama" }

// HostURL normalizes an OLLAMA_HOST value as Ollama's own client reads
// it (its envconfig.Host): without a scheme, http, and without a port,
// 11434 ("0.0.0.0", which many set so that the server listens on every
// interface, is http://0.0.0.0:11434); with a scheme, the URL as given
// (its scheme's port when it names none). A trailing slash is dropped.
func HostURL(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultHost
	}
	if !strings.Contains(v, "://") {
		hostport, path, _ := strings.Cut(v, "/")
		if _, _, err := net.SplitHostPort(hostport); err != nil {
			host := strings.Trim(hostport, "[]")
			if host == "" {
				host = "127.0.0.1"
			}
			hostport = net.JoinHostPort(host, DefaultPort)
		}
		v = "http://" + hostport
		if path != "" {
			v += "/" + path
		}
	}
	return strings.TrimSuffix(v, "/")
}

// shownHost is HostURL(v) for messages: a password in it is masked.
func shownHost(v string) string {
	h := HostURL(v)
	if u, err := url.Parse(h); err == nil && u.User != nil {
		return u.Redacted()
	}
	return h
}

// Wire types of /api/chat.
type (
	chatRequest struct {
		Model    string         `json:"model"`
		Messages []message      `json:"messages"`
		Tools    []toolDecl     `json:"tools,omitempty"`
		Stream   bool           `json:"stream"`
		Options  map[string]any `json:"options,omitempty"`
	}
	message struct {
		Role       string     `json:"role"`
		Content    string     `json:"content"`
		Thinking   string     `json:"thinking,omitempty"`
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolName   string     `json:"tool_name,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
	toolCall struct {
		ID       string `json:"id,omitempty"`
		Function struct {
			Index     int             `json:"index"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	toolDecl struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	chatChunk struct {
		Model           string  `json:"model"`
		Message         message `json:"message"`
		Done            bool    `json:"done"`
		DoneReason      string  `json:"done_reason"`
		PromptEvalCount int64   `json:"prompt_eval_count"`
		EvalCount       int64   `json:"eval_count"`
		Error           string  `json:"error"`
	}
)

// Turn implements provider.Provider.
func (c *Client) Turn(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	body, err := c.encode(req)
	if err != nil {
		return nil, err
	}
	return c.Retry.Turn(ctx, func() (*model.Response, error) {
		resp, err := c.once(ctx, body, onDelta)
		return resp, c.own(err)
	})
}

func (c *Client) encode(req *model.Request) ([]byte, error) {
	cr := chatRequest{Model: req.Model, Stream: true, Options: c.Options}
	if c.NumCtx > 0 {
		cr.Options = make(map[string]any, len(c.Options)+1)
		for k, v := range c.Options {
			cr.Options[k] = v
		}
		cr.Options["num_ctx"] = c.NumCtx
	}
	if req.System != "" {
		cr.Messages = append(cr.Messages, message{Role: "system", Content: req.System})
	}
	var cur *message // the assistant message being assembled
	flush := func() {
		if cur != nil {
			cr.Messages = append(cr.Messages, *cur)
			cur = nil
		}
	}
	for _, it := range req.Items {
		switch it.Kind {
		case model.KindUser:
			flush()
			cr.Messages = append(cr.Messages, message{Role: "user", Content: it.Text})
		case model.KindAssistant, model.KindReasoning, model.KindToolCall:
			if cur == nil {
				cur = &message{Role: "assistant"}
			}
			switch it.Kind {
			case model.KindAssistant:
				cur.Content += it.Text
			case model.KindReasoning:
				cur.Thinking += it.Text
			case model.KindToolCall:
				var tc toolCall
				tc.ID = it.Call.ID
				tc.Function.Index = len(cur.ToolCalls)
				tc.Function.Name = it.Call.Name
				tc.Function.Arguments = argsObject(it.Call.Input)
				cur.ToolCalls = append(cur.ToolCalls, tc)
			}
		case model.KindToolResult:
			flush()
			cr.Messages = append(cr.Messages, message{Role: "tool", Content: it.Result.Text, ToolName: it.Result.Name, ToolCallID: it.Result.CallID})
		}
	}
	flush()
	for _, t := range req.Tools {
		if t.Kind != model.ToolFunction {
			return nil, fmt.Errorf("%s: tool %s is a %s tool; Ollama takes function tools only (use the generic surface)", cmp.Or(c.Label, "ollama"), t.Name, t.Kind)
		}
		var d toolDecl
		d.Type = "function"
		d.Function.Name, d.Function.Description, d.Function.Parameters = t.Name, t.Description, t.Parameters
		cr.Tools = append(cr.Tools, d)
	}
	return json.Marshal(cr)
}

// argsObject returns the input as a JSON object; input the model sent that
// is not an object (a malformed call being replayed) is wrapped so that the
// request stays valid.
func argsObject(input string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(input), &m) == nil {
		return json.RawMessage(input)
	}
	b, _ := json.Marshal(map[string]string{"INVALID_JSON": input})
	return b
}

// send sends hreq with the client's HTTP client; a server it cannot
// reach is a provider.ErrUnreachable saying how to start one, a cancelled
// ctx its error.
func (c *Client) send(ctx context.Context, hreq *http.Request) (*http.Response, error) {
	hc := c.HTTP
	if hc == nil {
		hc = provider.DefaultClient()
	}
	hresp, err := hc.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if provider.SpeaksTLS(err) {
			return nil, provider.TransportError(ctx, "ollama", cmp.Or(c.ReachHint, "check OLLAMA_HOST"), err)
		}
		return nil, &provider.Error{Provider: "ollama", Kind: provider.ErrUnreachable, Err: err,
			Message: fmt.Sprintf("cannot reach Ollama at %s (%v); %s", shownHost(c.Host), rootCause(err), cmp.Or(c.ReachHint, "start it with `ollama serve` or set OLLAMA_HOST"))}
	}
	return hresp, nil
}

func (c *Client) once(ctx context.Context, body []byte, onDelta func(model.Delta)) (*model.Response, error) {
	start := time.Now()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, HostURL(c.Host)+"/api/chat", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/x-ndjson")
	c.authorize(hreq)
	hresp, err := c.send(ctx, hreq)
	if err != nil {
		return nil, err
	}
	defer hresp.Body.Close()
	if hresp.StatusCode != http.StatusOK {
		return nil, httpError(hreq, hresp, c.notAPIHint())
	}
	var raw bytes.Buffer
	resp := &model.Response{}
	var text, thinking strings.Builder
	var calls []toolCall
	done, lines := false, 0
	sc := bufio.NewScanner(io.TeeReader(hresp.Body, &raw))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		lines++
		var ch chatChunk
		if err := json.Unmarshal(line, &ch); err != nil {
			if lines == 1 {
				// Not one line of Ollama's stream: another server.
				return nil, provider.NotAPI("ollama", "Ollama", hreq, hresp.StatusCode, line, c.notAPIHint())
			}
			return nil, &provider.Error{Provider: "ollama", Kind: provider.ErrProtocol, Err: err, Message: fmt.Sprintf("bad stream line %q: %v", truncate(line, 200), err)}
		}
		if ch.Error != "" {
			return nil, &provider.Error{Provider: "ollama", Kind: provider.ErrStream, Message: "error in the middle of the stream: " + ch.Error}
		}
		if lines == 1 && !chunkShape(line) {
			// JSON, but not a chunk of Ollama's stream (each says done):
			// a health check's answer, another API's.
			return nil, provider.NotAPI("ollama", "Ollama", hreq, hresp.StatusCode, line, c.notAPIHint())
		}
		if ch.Message.Content != "" {
			text.WriteString(ch.Message.Content)
			if onDelta != nil {
				onDelta(model.Delta{Kind: model.KindAssistant, Text: ch.Message.Content})
			}
		}
		if ch.Message.Thinking != "" {
			thinking.WriteString(ch.Message.Thinking)
			if onDelta != nil {
				onDelta(model.Delta{Kind: model.KindReasoning, Text: ch.Message.Thinking})
			}
		}
		calls = append(calls, ch.Message.ToolCalls...)
		if ch.Done {
			done = true
			resp.Model = ch.Model
			resp.Usage = model.Usage{InputTokens: ch.PromptEvalCount, OutputTokens: ch.EvalCount}
			resp.StopReason = stopReason(ch.DoneReason, len(calls) > 0)
			break
		}
	}
	if err := sc.Err(); err != nil && !done {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &provider.Error{Provider: "ollama", Kind: provider.ErrStream, Err: err, Message: "the stream broke off: " + err.Error()}
	}
	if lines == 0 {
		// Nothing at all: no Ollama answers a chat so.
		return nil, provider.NotAPI("ollama", "Ollama", hreq, hresp.StatusCode, nil, c.notAPIHint())
	}
	if !done {
		return nil, &provider.Error{Provider: "ollama", Kind: provider.ErrStream, Message: "the stream ended before its final chunk (done: true)"}
	}
	if thinking.Len() > 0 {
		resp.Items = append(resp.Items, model.Item{Kind: model.KindReasoning, Text: thinking.String(), Provider: "ollama"})
	}
	if text.Len() > 0 {
		resp.Items = append(resp.Items, model.Item{Kind: model.KindAssistant, Text: text.String(), Provider: "ollama"})
	}
	for i, tc := range calls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		raw, _ := json.Marshal(tc)
		resp.Items = append(resp.Items, model.Item{Kind: model.KindToolCall, Provider: "ollama", Raw: raw,
			Call: &model.ToolCall{ID: id, Name: tc.Function.Name, Kind: model.ToolFunction, Input: string(argsText(tc.Function.Arguments))}})
	}
	resp.Wire = &model.Wire{Request: body, Response: raw.Bytes(), Duration: time.Since(start)}
	return resp, nil
}

// httpError is the error of an answer with a status other than 200.
// Ollama says what went wrong in {"error": "..."}; an answer without it
// whose status does not ask for a retry (no 5xx, 429, 401 or 403: 404 for
// a path the server does not have, 405, 501) comes from a server that is
// not Ollama (provider.ErrNotAPI). Any other answer without it (a proxy's
// 502) keeps its status's kind, and its message says what was asked and
// the body's first line.
func httpError(hreq *http.Request, hresp *http.Response, hint string) *provider.Error {
	b, _ := io.ReadAll(io.LimitReader(hresp.Body, 1<<20))
	status := hresp.StatusCode
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		pe := &provider.Error{Provider: "ollama", Kind: provider.KindForStatus(status), Status: status,
			Message: e.Error, RetryAfter: provider.ParseRetryAfter(hresp.Header, time.Now())}
		if strings.Contains(e.Error, "more system memory") {
			// The machine's memory does not grow between attempts.
			pe.Final = true
			pe.Message += "; use a smaller model or quantization, or a smaller --context"
		}
		return pe
	}
	kind := provider.KindForStatus(status)
	if kind == provider.ErrNotFound || kind == provider.ErrBadRequest || status == http.StatusNotImplemented {
		return provider.NotAPI("ollama", "Ollama", hreq, status, b, hint)
	}
	return &provider.Error{Provider: "ollama", Kind: kind, Status: status,
		Message: provider.Answered(hreq, status, b), RetryAfter: provider.ParseRetryAfter(hresp.Header, time.Now())}
}

// argsText returns the arguments as the model sent them. Ollama sends an
// object; a string holding JSON (as some servers do) is unwrapped.
func argsText(a json.RawMessage) []byte {
	var s string
	if json.Unmarshal(a, &s) == nil {
		return []byte(s)
	}
	if len(a) == 0 {
		return []byte("{}")
	}
	return a
}

func stopReason(r string, calls bool) model.StopReason {
	switch {
	case calls:
		return model.StopToolUse
	case r == "length":
		return model.StopMaxTokens
	case r == "stop" || r == "":
		return model.StopEndTurn
	}
	return model.StopOther
}

func rootCause(err error) error {
	var hs *provider.HandshakeError
	var ne *net.OpError
	if errors.As(err, &hs) {
		return hs
	}
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// DeclareTools returns the "tools" array a request would carry.
func (c *Client) DeclareTools(specs []model.ToolSpec) (json.RawMessage, error) {
	b, err := c.encode(&model.Request{Tools: specs})
	if err != nil {
		return nil, err
	}
	var r struct {
		Tools json.RawMessage `json:"tools"`
	}
	json.Unmarshal(b, &r)
	return r.Tools, nil
}

// ContextLength asks Ollama (POST /api/show) for the longest context a
// model supports: the "<architecture>.context_length" of its model_info.
func (c *Client) ContextLength(ctx context.Context, modelName string) (_ int, err error) {
	// A key the server echoed is hidden here, as in a turn's error.
	defer func() { err = provider.MaskError(err, c.Retry.AllSecrets()) }()
	body, _ := json.Marshal(map[string]string{"model": modelName})
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, HostURL(c.Host)+"/api/show", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	c.authorize(hreq)
	hc := c.HTTP
	if hc == nil {
		hc = provider.DefaultClient()
	}
	hresp, err := hc.Do(hreq)
	if err != nil {
		return 0, fmt.Errorf("ollama: show %s: %w", modelName, err)
	}
	defer hresp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(hresp.Body, 64<<20))
	if err != nil {
		return 0, fmt.Errorf("ollama: show %s: %w", modelName, err)
	}
	var show struct {
		Error     string                     `json:"error"`
		ModelInfo map[string]json.RawMessage `json:"model_info"`
	}
	if err := json.Unmarshal(b, &show); err != nil {
		return 0, fmt.Errorf("ollama: show %s: %w", modelName, err)
	}
	if hresp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("ollama: show %s: HTTP %d: %s", modelName, hresp.StatusCode, show.Error)
	}
	for k, v := range show.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			var n int
			if err := json.Unmarshal(v, &n); err == nil && n > 0 {
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("ollama: show %s: model_info has no context_length", modelName)
}

// Models implements provider.ModelLister: GET /api/tags, the models pulled
// on the server, in its order, at most provider.MaxModels. Created is a
// model's modified_at (when it was pulled or last changed there); Ollama
// says no context window here (ContextLength asks for one model's). An
// answer that is not Ollama's (a 404 without its error body) is
// provider.ErrNotAPI: every Ollama has /api/tags.
func (c *Client) Models(ctx context.Context) (_ []provider.ModelInfo, err error) {
	// A key the server echoed is hidden here, as in a turn's error.
	defer func() { err = provider.MaskError(err, c.Retry.AllSecrets()) }()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, HostURL(c.Host)+"/api/tags", nil)
	if err != nil {
		return nil, fmt.Errorf("ollama: list models: %w", err)
	}
	hreq.Header.Set("Accept", "application/json")
	c.authorize(hreq)
	hresp, err := c.send(ctx, hreq)
	if err != nil {
		return nil, c.own(err)
	}
	defer hresp.Body.Close()
	if hresp.StatusCode != http.StatusOK {
		pe := httpError(hreq, hresp, c.notAPIHint())
		_ = c.own(pe)
		if pe.Kind == provider.ErrNotAPI {
			return nil, pe
		}
		return nil, provider.ModelsError(http.MethodGet, "/api/tags", pe)
	}
	b, err := io.ReadAll(io.LimitReader(hresp.Body, 64<<20))
	if err != nil {
		return nil, c.own(provider.TransportError(ctx, "ollama", cmp.Or(c.ReachHint, "check OLLAMA_HOST"), err))
	}
	models, err := parseTags(b)
	if err != nil {
		return nil, c.own(provider.NotAPI("ollama", "Ollama", hreq, hresp.StatusCode, b, c.notAPIHint()))
	}
	return models, nil
}

// parseTags reads the body of GET /api/tags: {"models": [{"name",
// "model", "modified_at", ...}]}, at most provider.MaxModels. A model is
// named by "model", else "name" (older servers send only "name"); one
// with neither is left out. It fails when the body is not that object.
func parseTags(b []byte) ([]provider.ModelInfo, error) {
	var tags struct {
		Models *[]struct {
			Name       string `json:"name"`
			Model      string `json:"model"`
			ModifiedAt string `json:"modified_at"`
		} `json:"models"`
	}
	if err := json.Unmarshal(b, &tags); err != nil {
		return nil, fmt.Errorf("ollama: the model list: %w", err)
	}
	if tags.Models == nil {
		return nil, errors.New(`ollama: the model list has no "models"`)
	}
	var out []provider.ModelInfo
	for _, m := range *tags.Models {
		if len(out) == provider.MaxModels {
			break
		}
		id := cmp.Or(m.Model, m.Name)
		if id == "" {
			continue
		}
		info := provider.ModelInfo{ID: id}
		if t, err := time.Parse(time.RFC3339Nano, m.ModifiedAt); err == nil {
			info.Created = provider.ModelTime(t)
		}
		out = append(out, info)
	}
	return out, nil
}

// authorize sets the request's Authorization header from APIKey, if set.
func (c *Client) authorize(hreq *http.Request) {
	if c.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
}

// chunkShape reports whether line, a JSON object, is in the shape of a
// chunk of Ollama's stream: every chunk says whether it is the last.
func chunkShape(line []byte) bool {
	var ch struct {
		Done *bool `json:"done"`
	}
	return json.Unmarshal(line, &ch) == nil && ch.Done != nil
}

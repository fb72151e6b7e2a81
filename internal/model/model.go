// Package model defines the provider-neutral conversation: the items of a
// transcript, the tool declarations of a request, a model response and its
// usage. Provider adapters translate these to and from their wire dialect;
// every item keeps the provider's raw form so that history replays exactly.
package model

import (
	"encoding/json"
	"time"
)

// ItemKind names a transcript item.
type ItemKind string

// The item kinds.
const (
	KindUser       ItemKind = "user"        // user text
	KindAssistant  ItemKind = "assistant"   // assistant text
	KindReasoning  ItemKind = "reasoning"   // reasoning or thinking, possibly opaque
	KindToolCall   ItemKind = "tool_call"   // a call of a client-executed tool
	KindToolResult ItemKind = "tool_result" // the result of a tool call
	KindServerTool ItemKind = "server_tool" // provider-executed tool use and its result (unverified)
)

// Item is one element of a transcript.
type Item struct {
	Kind   ItemKind    `json:"kind"`
	Text   string      `json:"text,omitempty"`
	Call   *ToolCall   `json:"call,omitempty"`
	Result *ToolResult `json:"result,omitempty"`
	// Provider names the dialect that produced Raw ("ollama", "chat", ...).
	Provider string `json:"provider,omitempty"`
	// Response is the id of the model response the item came from, so that
	// each response replays as the message it was.
	Response string `json:"response,omitempty"`
	// Raw is the provider's own form of the item, replayed verbatim to the
	// same dialect. Its meaning is private to the adapter.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// ToolKind says how a tool is declared to a model.
type ToolKind string

// The tool kinds.
const (
	ToolFunction ToolKind = "function" // a JSON-schema function tool
	ToolCustom   ToolKind = "custom"   // a freeform tool taking raw text (optionally grammar-constrained)
	ToolTyped    ToolKind = "typed"    // a provider-defined tool type (text_editor_20250728, shell, ...)
)

// ToolCall is a model's call of a tool, as the model sent it.
type ToolCall struct {
	ID   string   `json:"id"`
	Name string   `json:"name"`
	Kind ToolKind `json:"kind"`
	// Type is the provider item type for typed calls ("shell_call").
	Type string `json:"type,omitempty"`
	// Input is the raw input: JSON arguments, or freeform text.
	Input string `json:"input"`
}

// ToolResult answers one ToolCall.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Text    string `json:"text"`
	IsError bool   `json:"is_error,omitempty"`
	// Native holds a structured result a typed tool's wire form needs
	// (a shell_call_output's entries), encoded by the binding for the adapter.
	Native json.RawMessage `json:"native,omitempty"`
}

// ToolSpec declares one tool in a request.
type ToolSpec struct {
	Kind        ToolKind        `json:"kind"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // JSON schema of a function tool
	// Type is the provider tool type of a typed tool ("bash_20250124").
	Type string `json:"type,omitempty"`
	// Options are extra fields of a typed or custom tool ("max_characters",
	// a custom tool's "format").
	Options map[string]any `json:"options,omitempty"`
}

// Request is one model turn's request.
type Request struct {
	Model     string     `json:"model"`
	System    string     `json:"system,omitempty"`
	Items     []Item     `json:"items"`
	Tools     []ToolSpec `json:"tools,omitempty"`
	MaxTokens int        `json:"max_tokens,omitempty"`
}

// StopReason says why a model turn ended, normalized across providers.
type StopReason string

// The stop reasons.
const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopRefusal   StopReason = "refusal"
	StopContext   StopReason = "context_window_exceeded"
	StopPause     StopReason = "pause_turn"
	StopOther     StopReason = "other"
)

// Usage counts tokens of one turn (or, summed, of a session), the same way
// for every provider: the prompt's tokens are split into three parts that do
// not overlap, InputTokens (neither read from nor written to the cache),
// CacheReadTokens and CacheWriteTokens. This is the Anthropic Messages API's
// split (its input_tokens excludes cache reads and writes); an adapter whose
// API counts cached tokens inside its input (OpenAI's prompt_tokens and
// input_tokens, Gemini's promptTokenCount) subtracts them. What Truss calls a
// turn's input tokens, in every summary and budget, is Input: all three
// parts. OutputTokens includes ReasoningTokens.
type Usage struct {
	// InputTokens is the uncached part of the prompt only: see Input.
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int64   `json:"reasoning_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
	// CostUnknown is set when the model's prices are not known (a model
	// the catalog does not list): CostUSD is then 0, not what was spent.
	// A sum is unknown when any of its parts is.
	CostUnknown bool `json:"cost_unknown,omitempty"`
}

// Add adds u2 to u.
func (u *Usage) Add(u2 Usage) {
	u.CostUnknown = u.CostUnknown || u2.CostUnknown
	u.InputTokens += u2.InputTokens
	u.OutputTokens += u2.OutputTokens
	u.CacheReadTokens += u2.CacheReadTokens
	u.CacheWriteTokens += u2.CacheWriteTokens
	u.ReasoningTokens += u2.ReasoningTokens
	u.CostUSD += u2.CostUSD
}

// Sub returns u less u2 (the usage since u2 was read off a running sum).
func (u Usage) Sub(u2 Usage) Usage {
	return Usage{InputTokens: u.InputTokens - u2.InputTokens, OutputTokens: u.OutputTokens - u2.OutputTokens,
		CacheReadTokens: u.CacheReadTokens - u2.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens - u2.CacheWriteTokens,
		ReasoningTokens: u.ReasoningTokens - u2.ReasoningTokens, CostUSD: u.CostUSD - u2.CostUSD, CostUnknown: u.CostUnknown}
}

// Input returns every input token the provider counted: the uncached ones,
// those read from the cache and those written to it.
func (u Usage) Input() int64 { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

// Total returns every token the provider counted: Input plus output. It is
// what a token budget (agent.Budget.MaxTokens) counts: cache reads too,
// each as one token, although they are billed at a fraction of an input
// token's price (the cost budget weighs them by their price).
func (u Usage) Total() int64 { return u.Input() + u.OutputTokens }

// Response is a completed model turn.
type Response struct {
	ID         string     `json:"id,omitempty"`
	Model      string     `json:"model,omitempty"`
	Items      []Item     `json:"items"`
	StopReason StopReason `json:"stop_reason"`
	Usage      Usage      `json:"usage"`
	// Attempts is how many HTTP attempts the turn took (1 without retries).
	Attempts int `json:"attempts,omitempty"`
	// Wire holds the exact bodies, for whoever records the session.
	Wire *Wire `json:"-"`
}

// Wire is the exact bytes of a turn's last attempt. An adapter that builds
// its request from cached parts gives Parts instead of Request: the request
// body is their concatenation, and Digests holds each part's hex SHA-256, so
// that a recorder stores each part once instead of the whole, growing body
// every turn.
type Wire struct {
	Request  []byte
	Parts    [][]byte
	Digests  []string
	Response []byte
	Duration time.Duration
}

// UseParts records the request as the parts of p instead of whole bytes.
func (w *Wire) UseParts(p *Wire) {
	if w != nil && p != nil {
		w.Request, w.Parts, w.Digests = nil, p.Parts, p.Digests
	}
}

// Calls returns the tool calls of the response, in order.
func (r *Response) Calls() []ToolCall {
	var calls []ToolCall
	for _, it := range r.Items {
		if it.Kind == KindToolCall && it.Call != nil {
			calls = append(calls, *it.Call)
		}
	}
	return calls
}

// Text returns the assistant text of the response.
func (r *Response) Text() string {
	var s string
	for _, it := range r.Items {
		if it.Kind == KindAssistant {
			s += it.Text
		}
	}
	return s
}

// Delta is a streaming fragment, reported while a turn streams.
type Delta struct {
	Kind ItemKind // KindAssistant or KindReasoning text, or KindToolCall when a call starts
	Text string
	Call *ToolCall
}

// Package compact keeps a conversation within its model's context window:
// when the next request would pass a share of the window (85 % by
// default), or when asked, the older part of the transcript is replaced by
// a summary the model writes of it.
//
// A compaction keeps, verbatim and in order, the pinned items (the first
// user message, which states the task, and the latest user message, the
// live request; the system prompt and AGENTS.md are in the request's
// system text and never in the transcript) and the most recent turns, up to
// a token budget. It cuts only where the transcript may be cut: never
// between a tool call and its result, never inside one model response, so
// the new transcript is one the APIs (and the strict simulator) accept. It
// returns the new transcript and a Record of what was replaced (the
// range, its digest and bytes, the response and call ids it held, the
// summary), which the session's ledger records as one entry.
//
// The summary request is the replaced part of the transcript followed by a
// user message with Prompt, sent through the session's provider.Provider
// with the session's system text and tools (a request holding tool calls
// must declare its tools; the prefix is one the provider has cached). A
// request that fails leaves the transcript as it was.
package compact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
)

// Prompt asks the model for the summary. It is modelled on Codex CLI's
// compaction prompt and, like it, starts with "CONTEXT CHECKPOINT
// COMPACTION" (which is also how the simulated model recognizes it).
const Prompt = `You are performing a CONTEXT CHECKPOINT COMPACTION. The conversation above is about to be replaced by your summary: whoever continues the task will have only the summary, the first user message, the latest one, and the most recent turns.

Write a handoff summary that covers:
- the user's goal, and every constraint or preference they stated;
- what has been done: files read and changed (with their paths), commands run and what they showed, decisions made and why;
- what failed or was ruled out;
- what remains to be done, as concrete next steps;
- the exact data needed to go on (names, paths, error messages, test names, values).

Be concise and factual: state only what the conversation shows. Reply with the summary as plain text, and do not call a tool.`

// SummaryPrefix introduces the summary in the new transcript.
const SummaryPrefix = "The earlier part of this conversation was replaced by the summary below, written when the context grew full. Build on the work it describes instead of repeating it; the turns after it are the most recent ones, kept as they were.\n\n"

// The reasons of a compaction.
const (
	ReasonAuto   = "auto"   // the next request would pass the threshold
	ReasonManual = "manual" // the user asked (/compact)
)

// DefaultThreshold is the share of the context window a request may fill
// before the conversation is compacted.
const DefaultThreshold = 0.85

// ErrNothingToCompact is returned when the transcript holds nothing that
// could be replaced (only pinned items and an earlier summary, or a single
// turn longer than the budget of what is kept).
var ErrNothingToCompact = errors.New("compact: nothing to compact: the transcript holds only pinned items and its most recent turn")

// SummaryError is a summary request that failed; the transcript is
// unchanged.
type SummaryError struct {
	Err error
}

func (e *SummaryError) Error() string {
	return "compact: the summary request failed, the conversation is unchanged: " + e.Err.Error()
}

func (e *SummaryError) Unwrap() error { return e.Err }

// IsSummary reports whether an item is a compaction's summary.
func IsSummary(it model.Item) bool {
	return it.Kind == model.KindUser && strings.HasPrefix(it.Text, SummaryPrefix)
}

// summaryMark is the Provider of a summary item, whose Raw is
// {"kept":N}: N items after the summary were kept from before the
// compaction. No adapter replays it (a user item is sent as its text).
const summaryMark = "compact"

// summaryItem is the summary as the new transcript holds it.
func summaryItem(summary string, kept int) model.Item {
	return model.Item{Kind: model.KindUser, Text: SummaryPrefix + summary, Provider: summaryMark,
		Raw: json.RawMessage(fmt.Sprintf(`{"kept":%d}`, kept))}
}

// Since returns the index of the first item of items added after its
// latest compaction: the end of the part a summary kept (its recent turns,
// verbatim). It returns 0 when items holds no summary. A provider that
// chains requests to a response the server stored (the Responses API's
// previous_response_id) must not chain to a response before Since: the
// server holds that response with the history the summary replaced.
func Since(items []model.Item) int {
	since := 0
	for i, it := range items {
		if !IsSummary(it) {
			continue
		}
		var m struct {
			Kept int `json:"kept"`
		}
		if it.Provider == summaryMark {
			json.Unmarshal(it.Raw, &m)
		}
		since = max(since, min(i+1+max(m.Kept, 0), len(items)))
	}
	return since
}

// Tokens estimates the tokens of items at four bytes a token, counting
// each item's text, call input and result (or its raw provider form when
// that is longer: encrypted reasoning, signed thinking).
func Tokens(items []model.Item) int64 {
	var n int64
	for _, it := range items {
		size := len(it.Text)
		if it.Call != nil {
			size += len(it.Call.Name) + len(it.Call.Input)
		}
		if it.Result != nil {
			size += len(it.Result.Text) + len(it.Result.Native)
		}
		n += int64(max(size, len(it.Raw))+3) / 4
	}
	return n
}

// Estimate is the size of the next request: the prompt of the last turn
// (its input tokens, cached or not) plus the items appended to the
// transcript since that turn's request (its response and the tool
// results), estimated by Tokens. With no last turn (zero usage: the first
// request, or the first after a compaction or a resume) added is the
// whole transcript.
func Estimate(last model.Usage, added []model.Item) int64 {
	return last.Input() + Tokens(added)
}

// Needed reports whether the next request, estimated by Estimate, would
// pass threshold of window (threshold 0 means DefaultThreshold; window 0
// means unknown, never needed).
func Needed(last model.Usage, added []model.Item, window int, threshold float64) bool {
	if window <= 0 {
		return false
	}
	if threshold <= 0 {
		threshold = DefaultThreshold
	}
	return float64(Estimate(last, added)) > threshold*float64(window)
}

// Compactor compacts one session's conversation.
type Compactor struct {
	// Provider answers the summary request: the session's own.
	Provider provider.Provider
	// Model, System and Tools are the session's: the summary request is
	// the conversation's prefix as the session sends it (Tools may be nil,
	// for a session without tools).
	Model  string
	System string
	Tools  func() []model.ToolSpec
	// MaxTokens bounds the summary (0 means 8,192).
	MaxTokens int
	// Window is the model's context window in tokens; Threshold the share
	// of it that triggers a compaction (0 means DefaultThreshold).
	Window    int
	Threshold float64
	// KeepTokens bounds the recent turns kept verbatim by an automatic
	// compaction (0 means a fifth of Window, or 20,000 tokens when Window
	// is unknown). A manual one (ReasonManual) keeps no recent turns: all
	// but the pinned items is summarized, as Codex's /compact does.
	KeepTokens int64
	// Pin, when set, pins more items (besides the first and the latest
	// user message): they are kept, in order, before the summary.
	Pin func(it model.Item) bool
}

// Needed reports whether the next request should be compacted first; see
// the package function Needed.
func (c *Compactor) Needed(last model.Usage, added []model.Item) bool {
	return Needed(last, added, c.Window, c.Threshold)
}

// Record is what a compaction replaced, for the session's ledger.
type Record struct {
	Reason string `json:"reason"`
	// Cut is the index, in the transcript before the compaction, of the
	// first item kept after the summary; the items before it were
	// replaced, except Pinned (their indexes), kept before the summary.
	Cut    int   `json:"cut"`
	Pinned []int `json:"pinned,omitempty"`
	// Replaced counts the replaced items; Digest is the hex SHA-256 of
	// Items, their JSON encoding (model.Item) one per line, which a
	// recorder stores so that the full history stays provable.
	Replaced int    `json:"replaced"`
	Digest   string `json:"digest"`
	Items    []byte `json:"-"`
	// Responses and Calls are the ids of the model responses and the tool
	// calls (with their results) that were replaced: the ledger's entries
	// for them are what the summary stands for.
	Responses []string `json:"responses,omitempty"`
	Calls     []string `json:"calls,omitempty"`
	// Summary is the model's summary, as it wrote it.
	Summary string `json:"summary"`
	// TokensBefore and TokensAfter estimate the transcript's size
	// (Tokens) before and after.
	TokensBefore int64 `json:"tokens_before"`
	TokensAfter  int64 `json:"tokens_after"`
	// Usage is the summary request's: the session adds it to its own.
	Usage model.Usage `json:"usage"`
	// Response is the summary turn, with its wire bytes (Response.Wire).
	Response *model.Response `json:"-"`
}

// Compact replaces the older part of items with a summary the model
// writes. It returns the new transcript (items itself is not changed) and
// the record of the replacement. A failed summary request returns a
// *SummaryError and leaves items as they were; a transcript with nothing
// to replace returns ErrNothingToCompact.
func (c *Compactor) Compact(ctx context.Context, items []model.Item, reason string) ([]model.Item, *Record, error) {
	budget := c.keepTokens()
	if reason == ReasonManual {
		budget = 0
	}
	cut, err := cut(items, budget)
	if err != nil {
		return nil, nil, err
	}
	pinned := c.pinned(items, cut)
	if replacesNothing(items[:cut], pinned) {
		return nil, nil, ErrNothingToCompact
	}
	req := &model.Request{Model: c.Model, System: c.System, MaxTokens: c.MaxTokens,
		Items: append(append(make([]model.Item, 0, cut+1), items[:cut]...), model.Item{Kind: model.KindUser, Text: Prompt})}
	if req.MaxTokens == 0 {
		req.MaxTokens = 8192
	}
	if c.Tools != nil {
		req.Tools = c.Tools()
	}
	resp, err := c.Provider.Turn(ctx, req, nil)
	if err != nil {
		return nil, nil, &SummaryError{Err: err}
	}
	summary := strings.TrimSpace(resp.Text())
	if summary == "" {
		return nil, nil, &SummaryError{Err: fmt.Errorf("the model answered the summary request without text (stop reason %s)", resp.StopReason)}
	}
	rec := &Record{Reason: reason, Cut: cut, Summary: summary, Usage: resp.Usage, Response: resp, TokensBefore: Tokens(items)}
	out := make([]model.Item, 0, len(pinned)+1+len(items)-cut)
	isPinned := map[int]bool{}
	for _, i := range pinned {
		isPinned[i] = true
		out = append(out, items[i])
	}
	rec.Pinned = pinned
	out = append(out, summaryItem(summary, len(items)-cut))
	out = append(out, items[cut:]...)
	rec.TokensAfter = Tokens(out)
	var sb strings.Builder
	seen := map[string]bool{}
	for i, it := range items[:cut] {
		if isPinned[i] {
			continue
		}
		rec.Replaced++
		b, err := json.Marshal(it)
		if err != nil {
			return nil, nil, fmt.Errorf("compact: encode item %d: %w", i, err)
		}
		sb.Write(b)
		sb.WriteByte('\n')
		if it.Response != "" && !seen[it.Response] && modelItem(it) {
			seen[it.Response] = true
			rec.Responses = append(rec.Responses, it.Response)
		}
		if it.Kind == model.KindToolCall && it.Call != nil {
			rec.Calls = append(rec.Calls, it.Call.ID)
		}
	}
	rec.Items = []byte(sb.String())
	sum := sha256.Sum256(rec.Items)
	rec.Digest = hex.EncodeToString(sum[:])
	return out, rec, nil
}

// replacesNothing reports whether the replaced part, the items before
// the cut but the pinned ones, is empty or only an earlier summary.
func replacesNothing(before []model.Item, pinned []int) bool {
	k := 0
	for i, it := range before {
		if k < len(pinned) && pinned[k] == i {
			k++
			continue
		}
		if !IsSummary(it) {
			return false
		}
	}
	return true
}

// keepTokens is the budget of the recent turns kept.
func (c *Compactor) keepTokens() int64 {
	switch {
	case c.KeepTokens > 0:
		return c.KeepTokens
	case c.Window > 0:
		return int64(c.Window) / 5
	}
	return 20000
}

// cut returns where the kept part begins: the earliest boundary whose
// tail fits the budget, or the end of the transcript when no tail does.
func cut(items []model.Item, budget int64) (int, error) {
	bounds := Boundaries(items)
	if len(bounds) == 0 {
		return 0, ErrNothingToCompact
	}
	// Tokens of the tail from each boundary, computed from the end.
	suffix := make([]int64, len(items)+1)
	for i := len(items) - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + Tokens(items[i:i+1])
	}
	for _, b := range bounds {
		if suffix[b] <= budget {
			return b, nil
		}
	}
	return bounds[len(bounds)-1], nil
}

// Boundaries returns the indexes where a transcript may be cut, in
// increasing order, from 1 to len(items): a cut at i keeps items[i:]. A
// cut never separates a tool call from its result (every call before i has
// its result before i), never starts the kept part with a tool result, and
// never splits the items of one model response.
func Boundaries(items []model.Item) []int {
	var out []int
	open := map[string]bool{}
	for i := 1; i <= len(items); i++ {
		prev := items[i-1]
		if prev.Kind == model.KindToolCall && prev.Call != nil {
			open[prev.Call.ID] = true
		}
		if prev.Kind == model.KindToolResult && prev.Result != nil {
			delete(open, prev.Result.CallID)
		}
		if len(open) > 0 {
			continue
		}
		if i < len(items) {
			next := items[i]
			if next.Kind == model.KindToolResult {
				continue
			}
			if modelItem(prev) && modelItem(next) && prev.Response != "" && prev.Response == next.Response {
				continue
			}
		}
		out = append(out, i)
	}
	return out
}

// modelItem reports whether an item is part of a model response.
func modelItem(it model.Item) bool {
	switch it.Kind {
	case model.KindAssistant, model.KindReasoning, model.KindToolCall, model.KindServerTool:
		return true
	}
	return false
}

// pinned returns the indexes of the items before cut kept before the
// summary: the first user message (the task), the latest user message of
// the whole transcript (the live request) when it is among them, neither
// a summary of an earlier compaction (the new summary supersedes it), and
// those Pin selects.
func (c *Compactor) pinned(items []model.Item, cut int) []int {
	first, latest := -1, -1
	for i, it := range items {
		if it.Kind != model.KindUser || IsSummary(it) {
			continue
		}
		if first < 0 {
			first = i
		}
		latest = i
	}
	var out []int
	for i, it := range items[:cut] {
		if i == first || i == latest || c.Pin != nil && c.Pin(it) {
			out = append(out, i)
		}
	}
	return out
}

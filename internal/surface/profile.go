package surface

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
)

// Prices are USD per million tokens.
type Prices struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read,omitempty"`
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// Cost returns the cost of u at these prices. Cache reads and writes are
// counted apart from plain input tokens.
func (p Prices) Cost(u model.Usage) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite) / 1e6
}

// Profile describes what a model is trained on and what it costs.
type Profile struct {
	// Pattern matches model names (path.Match syntax, case-insensitive).
	Pattern string `json:"pattern"`
	// Provider restricts the profile to one provider ("" = any).
	Provider string `json:"provider,omitempty"`
	// Surface is the typed surface the model is trained on ("generic" when none).
	Surface string `json:"surface"`
	// Editor is the text editor tool type of the anthropic surface
	// ("text_editor_20250728", or "text_editor_20250124" for Claude 3.7).
	Editor string `json:"editor,omitempty"`
	// Memory says the model is trained on the memory tool.
	Memory        bool   `json:"memory,omitempty"`
	ContextWindow int    `json:"context_window"`
	MaxOutput     int    `json:"max_output"`
	Prices        Prices `json:"prices"`
	// Reasoning is the reasoning effort a session sends by default ("" for
	// a model that does not reason, which must not be sent one), and
	// ReasoningSummary the reasoning summary it asks for: OpenAI's
	// reasoning models reason by default, at medium, as Codex runs them.
	Reasoning        string `json:"reasoning,omitempty"`
	ReasoningSummary string `json:"reasoning_summary,omitempty"`
	// Thinking is the extended-thinking budget a session sends by default
	// (0 = off).
	Thinking int `json:"thinking,omitempty"`
	// NumCtx is the context a session gives a local server that allocates
	// it per request (Ollama's num_ctx); 0 asks the server what the model
	// supports.
	NumCtx int `json:"num_ctx,omitempty"`
	// Guess is set on a fallback profile that matched no known model.
	Guess bool `json:"guess,omitempty"`
}

// MaxNumCtx caps the context asked of a local server by default: Ollama
// allocates the whole window for every request, and recommends 64k tokens
// for coding agents. --context asks for more.
const MaxNumCtx = 65536

// Settings returns a session's model settings: the profile's, each
// overridden by a value given on the command line (effort "", thinking
// below 0 and context 0 mean not given). Effort "none" asks for no summary.
// cacheKey is the session's prompt cache key.
func (p Profile) Settings(effort string, thinking, context int, cacheKey string) provider.Settings {
	s := provider.Settings{ReasoningEffort: p.Reasoning, ReasoningSummary: p.ReasoningSummary, ThinkingTokens: p.Thinking,
		ContextTokens: p.NumCtx, CacheKey: cacheKey}
	if effort != "" {
		s.ReasoningEffort = effort
		if s.ReasoningSummary == "" && !p.Guess {
			s.ReasoningSummary = "auto"
		}
	}
	if s.ReasoningEffort == "none" || s.ReasoningEffort == "" {
		s.ReasoningSummary = ""
	}
	if thinking >= 0 {
		s.ThinkingTokens = thinking
	}
	if context > 0 {
		s.ContextTokens = context
	}
	return s
}

// Profiles is a table of model profiles, searched in order.
type Profiles []Profile

// DefaultProfiles is Truss's built-in table. Typed surfaces appear here as
// their bindings land; a name nothing matches gets the generic surface.
func DefaultProfiles() Profiles {
	claude := func(pattern string, in, out float64, maxOut int) Profile {
		return Profile{Pattern: pattern, Provider: "anthropic", Surface: "anthropic", Editor: "text_editor_20250728", Memory: true,
			ContextWindow: 200000, MaxOutput: maxOut, Prices: Prices{Input: in, Output: out, CacheRead: in / 10, CacheWrite: in * 1.25}}
	}
	// OpenAI: general GPT-5.1 and later are trained on the Responses API's
	// typed shell and apply_patch; the codex family on the freeform
	// apply_patch and shell_command. Cache writes cost plain input.
	// The models Codex runs (GPT-5.1 and later, the codex family) get
	// reasoning at medium with automatic summaries, as Codex sends them;
	// the older reasoning models medium alone; gpt-4.1 none.
	gpt := func(pattern, surf string, in, out float64, window int) Profile {
		p := Profile{Pattern: pattern, Surface: surf, ContextWindow: window, MaxOutput: 128000,
			Prices: Prices{Input: in, Output: out, CacheRead: in / 10, CacheWrite: in}, Reasoning: "medium"}
		switch {
		case surf != "generic":
			p.ReasoningSummary = "auto"
		case strings.HasPrefix(pattern, "gpt-4"):
			p.Reasoning = ""
		}
		return p
	}
	gemini := func(pattern string, in, out, cached float64) Profile {
		return Profile{Pattern: pattern, Surface: "generic", ContextWindow: 1048576, MaxOutput: 65536,
			Prices: Prices{Input: in, Output: out, CacheRead: cached}}
	}
	return Profiles{
		{Pattern: "sim-claude*", Surface: "anthropic", Editor: "text_editor_20250728", Memory: true, ContextWindow: 200000, MaxOutput: 8192},
		{Pattern: "sim-gpt*codex*", Surface: "codex", ContextWindow: 400000, MaxOutput: 8192, Reasoning: "medium", ReasoningSummary: "auto"},
		{Pattern: "sim-gpt*", Surface: "openai", ContextWindow: 400000, MaxOutput: 8192, Reasoning: "medium", ReasoningSummary: "auto"},
		{Pattern: "sim-*", Surface: "generic", ContextWindow: 200000, MaxOutput: 8192},
		claude("claude-opus-4-5*", 5, 25, 64000),
		claude("claude-opus-4-6*", 5, 25, 64000),
		claude("claude-opus-4*", 15, 75, 32000),
		claude("claude-sonnet-4*", 3, 15, 64000),
		claude("claude-haiku-4*", 1, 5, 64000),
		claude("claude-opus-5*", 5, 25, 64000),
		claude("claude-sonnet-5*", 3, 15, 64000),
		claude("claude-haiku-5*", 1, 5, 64000),
		{Pattern: "claude-3-7-sonnet*", Provider: "anthropic", Surface: "anthropic", Editor: "text_editor_20250124",
			ContextWindow: 200000, MaxOutput: 64000, Prices: Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}},
		gpt("gpt-5.1-codex-mini*", "codex", 0.25, 2, 400000),
		gpt("gpt-5-codex*", "codex", 1.25, 10, 400000),
		gpt("gpt-5.1-codex*", "codex", 1.25, 10, 400000),
		gpt("gpt-5.2-codex*", "codex", 1.75, 14, 400000),
		gpt("gpt-5.3-codex*", "codex", 1.75, 14, 400000),
		gpt("gpt-5.*-codex*", "codex", 1.75, 14, 400000),
		gpt("gpt-5.1*", "openai", 1.25, 10, 400000),
		gpt("gpt-5.2*", "openai", 1.75, 14, 400000),
		gpt("gpt-5.4-mini*", "openai", 0.75, 4.5, 400000),
		gpt("gpt-5.4-nano*", "openai", 0.2, 1.25, 400000),
		gpt("gpt-5.4*", "openai", 2.5, 15, 1050000),
		gpt("gpt-5.5*", "openai", 5, 30, 1050000),
		gpt("gpt-5.*", "openai", 5, 30, 1050000),
		// The chat snapshot of GPT-5 does not take a reasoning effort.
		{Pattern: "gpt-5-chat*", Surface: "generic", ContextWindow: 128000, MaxOutput: 16384,
			Prices: Prices{Input: 1.25, Output: 10, CacheRead: 0.125, CacheWrite: 1.25}},
		gpt("gpt-5*", "generic", 1.25, 10, 400000),
		gpt("gpt-4.1*", "generic", 2, 8, 1047576),
		gpt("o3*", "generic", 2, 8, 200000),
		gpt("o4-mini*", "generic", 1.1, 4.4, 200000),
		{Pattern: "qwen*", Provider: "ollama", Surface: "generic", ContextWindow: 32768, MaxOutput: 8192, NumCtx: 32768},
		{Pattern: "llama*", Provider: "ollama", Surface: "generic", ContextWindow: 131072, MaxOutput: 8192, NumCtx: MaxNumCtx},
		{Pattern: "gpt-oss*", Surface: "generic", ContextWindow: 131072, MaxOutput: 32768},
		// Gemini (any route: the Gemini API, a named gemini wire): no
		// client-executed typed tools, so the generic surface. Prices are
		// the standard tier's for prompts up to 200k tokens, USD per
		// million, thinking billed as output; context and output limits
		// from the models page (ai.google.dev/gemini-api/docs/pricing and
		// /models, as of 2025-12).
		gemini("gemini-2.5-pro*", 1.25, 10, 0.125),
		gemini("gemini-2.5-flash-lite*", 0.10, 0.40, 0.01),
		gemini("gemini-2.5-flash*", 0.30, 2.50, 0.03),
		gemini("gemini-3-pro*", 2, 12, 0.20),
	}
}

// Lookup returns the first profile matching provider and name, or a generic
// guess.
func (ps Profiles) Lookup(provider, name string) Profile {
	n := strings.ToLower(name)
	for _, p := range ps {
		if p.Provider != "" && p.Provider != provider {
			continue
		}
		if ok, _ := path.Match(strings.ToLower(p.Pattern), n); ok {
			return p
		}
	}
	if provider == "anthropic" || strings.HasPrefix(n, "claude") {
		// An unknown Claude: the newest tools, Sonnet's limits and prices.
		p := ps.Lookup("anthropic", "claude-sonnet-4-5")
		p.Pattern, p.Guess = name, true
		return p
	}
	return Profile{Pattern: name, Surface: "generic", ContextWindow: 32768, MaxOutput: 4096, Guess: true}
}

// Factory builds a surface's bindings for a model profile.
type Factory func(Profile) []Binding

// Registry maps surface names to factories.
type Registry map[string]Factory

// Choose resolves a --surface value: "auto" (or "") picks the profile's
// surface when it is registered, else generic; any other value must be a
// registered surface.
func (r Registry) Choose(flag string, p Profile) (string, error) {
	switch flag {
	case "", "auto":
		if _, ok := r[p.Surface]; ok {
			return p.Surface, nil
		}
		return "generic", nil
	}
	if _, ok := r[flag]; !ok {
		return "", fmt.Errorf("unknown surface %q; choose auto or one of: %s", flag, strings.Join(r.names(), ", "))
	}
	return flag, nil
}

// Build returns the Set of a registered surface for a model profile.
func (r Registry) Build(name string, p Profile) (*Set, error) {
	f, ok := r[name]
	if !ok {
		return nil, fmt.Errorf("unknown surface %q; choose auto or one of: %s", name, strings.Join(r.names(), ", "))
	}
	return NewSet(name, f(p)...)
}

func (r Registry) names() []string {
	var ns []string
	for n := range r {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

package surface

import (
	"fmt"
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
	// Long is the long-prompt tier of a model priced by prompt length;
	// its zero value is none.
	Long LongPrices `json:"long,omitzero"`
	// Unknown marks the prices of a model the catalog does not know: its
	// cost is unknown, not zero, and Cost returns 0 for it.
	Unknown bool `json:"unknown,omitempty"`
}

// LongPrices is the tier a request whose prompt (its input tokens, cache
// reads and cache writes) is longer than Above tokens pays, on all its
// tokens, output included.
type LongPrices struct {
	Above      int64   `json:"above"`
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read,omitempty"`
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// Known reports whether the prices are a model's: false for a model the
// catalog does not know, whose cost is unknown.
func (p Prices) Known() bool { return !p.Unknown }

// Cost returns the cost of u, one request's usage, at these prices. Cache
// reads and writes are counted apart from plain input tokens. A request
// whose prompt passes the long-prompt tier's threshold is charged that
// tier's prices. Unknown prices cost 0: the caller tells that apart with
// Known.
func (p Prices) Cost(u model.Usage) float64 {
	if p.Unknown {
		return 0
	}
	in, out, read, write := p.Input, p.Output, p.CacheRead, p.CacheWrite
	if l := p.Long; l.Above > 0 && u.Input() > l.Above {
		in, out, read, write = l.Input, l.Output, l.CacheRead, l.CacheWrite
	}
	return (float64(u.InputTokens)*in + float64(u.OutputTokens)*out +
		float64(u.CacheReadTokens)*read + float64(u.CacheWriteTokens)*write) / 1e6
}

// Profile describes what a model is trained on and what it costs.
type Profile struct {
	// Pattern matches model names, case-insensitively: a pattern with a
	// wildcard in path.Match syntax; one without, the model id itself and
	// its snapshots (the id followed by -YYYYMMDD, -YYYY-MM-DD, @VERSION or
	// -latest), not a later model whose id it begins.
	Pattern string `json:"pattern"`
	// Provider restricts the profile to one API dialect ("" = any), as
	// Lookup is given it.
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

// DefaultProfiles is Truss's built-in table: the profiles of the model
// catalog's rows, in its order (Catalog). A name nothing matches gets a
// guess (Lookup).
func DefaultProfiles() Profiles {
	c := Catalog()
	ps := make(Profiles, len(c))
	for i, e := range c {
		ps[i] = e.Profile
	}
	return ps
}

// Lookup returns the first profile matching provider (an API dialect) and
// name, or a guess marked Guess whose prices are unknown: an unknown Claude
// gets the newest tools and Claude Sonnet 4.5's limits, any other model the
// generic surface and small limits.
func (ps Profiles) Lookup(provider, name string) Profile {
	if p, ok := ps.find(provider, name); ok {
		return p
	}
	if provider == "anthropic" || strings.HasPrefix(strings.ToLower(name), "claude") {
		if p, ok := ps.find("anthropic", "claude-sonnet-4-5"); ok {
			p.Pattern, p.Guess, p.Prices = name, true, Prices{Unknown: true}
			return p
		}
	}
	return Profile{Pattern: name, Surface: "generic", ContextWindow: 32768, MaxOutput: 4096, Guess: true, Prices: Prices{Unknown: true}}
}

// find returns the first profile matching provider and name.
func (ps Profiles) find(provider, name string) (Profile, bool) {
	n := strings.ToLower(name)
	for _, p := range ps {
		if p.Provider != "" && p.Provider != provider {
			continue
		}
		if matchID(p.Pattern, n) {
			return p, true
		}
	}
	return Profile{}, false
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

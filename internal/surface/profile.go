package surface

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/trussdev/truss/internal/model"
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
	// Guess is set on a fallback profile that matched no known model.
	Guess bool `json:"guess,omitempty"`
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
	gpt := func(pattern, surf string, in, out float64, window int) Profile {
		return Profile{Pattern: pattern, Surface: surf, ContextWindow: window, MaxOutput: 128000,
			Prices: Prices{Input: in, Output: out, CacheRead: in / 10, CacheWrite: in}}
	}
	return Profiles{
		{Pattern: "sim-claude*", Surface: "anthropic", Editor: "text_editor_20250728", Memory: true, ContextWindow: 200000, MaxOutput: 8192},
		{Pattern: "sim-gpt*codex*", Surface: "codex", ContextWindow: 400000, MaxOutput: 8192},
		{Pattern: "sim-gpt*", Surface: "openai", ContextWindow: 400000, MaxOutput: 8192},
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
		gpt("gpt-5*", "generic", 1.25, 10, 400000),
		gpt("gpt-4.1*", "generic", 2, 8, 1047576),
		gpt("o3*", "generic", 2, 8, 200000),
		gpt("o4-mini*", "generic", 1.1, 4.4, 200000),
		{Pattern: "qwen*", Provider: "ollama", Surface: "generic", ContextWindow: 32768, MaxOutput: 8192},
		{Pattern: "llama*", Provider: "ollama", Surface: "generic", ContextWindow: 131072, MaxOutput: 8192},
		{Pattern: "gpt-oss*", Surface: "generic", ContextWindow: 131072, MaxOutput: 32768},
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

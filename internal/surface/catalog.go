package surface

import (
	"math"
	"path"
	"strings"
)

// Entry is one row of the model catalog: a model (or a family of them),
// where its prices hold, what it is trained on, its limits and prices, and
// where those facts were read.
type Entry struct {
	Profile
	// Name is the model's name on its maker's pages.
	Name string `json:"name"`
	// Wire is the API wire whose providers the row's prices are those of:
	// "anthropic" (the Claude API, and Bedrock's and Vertex AI's Claude at
	// the Claude API's list prices), "responses" (OpenAI, and Azure OpenAI
	// at OpenAI's), "gemini", "ollama", "sim"; "" any provider.
	Wire string `json:"wire,omitempty"`
	// Source is the official page the row's facts were read on.
	Source string `json:"source"`
	// Checked is the date (YYYY-MM-DD) Source was read for the row; for
	// facts carried over unconfirmed (see Unverified), the date they
	// entered the table.
	Checked string `json:"checked"`
	// Unverified says which of the row's facts Source did not confirm, and
	// why; "" when it confirmed them all.
	Unverified string `json:"unverified,omitempty"`
	// Confirmed says how much of the row Source confirmed on Checked:
	// ConfirmedAll (Unverified is ""), ConfirmedPart or ConfirmedNone.
	Confirmed string `json:"confirmed"`
	// Note says what the row charges where the maker's price depends on
	// more than the token counts (prompt length, the platform).
	Note string `json:"note,omitempty"`
}

// How much of a row its source confirmed (Entry.Confirmed).
const (
	// ConfirmedAll: the official page gave every fact, on Checked.
	ConfirmedAll = "all"
	// ConfirmedPart: the page gave some facts on Checked; Unverified
	// says which not and why.
	ConfirmedPart = "part"
	// ConfirmedNone: no page confirmed the row (facts carried over since
	// Checked, a family's guess, the simulated model); Unverified says
	// why.
	ConfirmedNone = "none"
)

// Tools lists the typed tools the row's surface declares, by their wire
// type (Anthropic's) or name (OpenAI's); nil for the generic surface.
func (e Entry) Tools() []string {
	switch e.Surface {
	case "anthropic":
		t := []string{e.Editor, "bash_20250124"}
		if e.Memory {
			t = append(t, "memory_20250818")
		}
		return t
	case "openai":
		return []string{"shell", "apply_patch"}
	case "codex":
		return []string{"shell_command", "apply_patch (freeform)"}
	}
	return nil
}

// The official pages the catalog's facts come from.
const (
	claudePricing   = "https://platform.claude.com/docs/en/about-claude/pricing"
	claudeModels    = "https://platform.claude.com/docs/en/models/"
	claudeOldPrices = "https://docs.anthropic.com/en/docs/about-claude/pricing"
	openaiPricing   = "https://platform.openai.com/docs/pricing"
	geminiPricing   = "https://ai.google.dev/gemini-api/docs/pricing"
	ollamaLibrary   = "https://ollama.com/library/"
	openaiModels    = "https://platform.openai.com/docs/models/"
	openaiDocs      = "https://developers.openai.com/api/docs/models/"

	// today is the date the rows checked today were read.
	today = "2026-12-06"
	// notRead is why facts carried over from the table were not confirmed.
	notRead = "carried over from the table: no stored copy of the official page held them on " + today
	// platformNote says what Claude rows charge on Bedrock and Vertex AI.
	platformNote = "Bedrock and Vertex AI are charged the Claude API's list price; their own price lists were not checked"
	azureNote    = "Azure OpenAI is charged OpenAI's list price; Azure's own price list was not checked"
	// vertexGeminiNote says what Gemini rows charge on Vertex AI: no
	// stored copy of Vertex AI's price list was there to read.
	vertexGeminiNote = "vertex-gemini is charged the Gemini API's list price (the source); Vertex AI's own price list was not checked"
)

// Catalog returns Truss's model catalog, searched in order by Lookup (the
// first row whose pattern and wire match wins). It is built on each call:
// nothing is computed at start-up.
func Catalog() []Entry {
	// claude is a row of Anthropic's models: they are trained on the typed
	// editor (text_editor_20250728), bash and memory tools. The cache write
	// price is the five-minute one, which is what Truss's cache breakpoints
	// write.
	claude := func(name, pattern string, window, maxOut int, in, write, read, out float64, src string) Entry {
		return Entry{Profile: Profile{Pattern: pattern, Provider: "anthropic", Surface: "anthropic", Editor: "text_editor_20250728", Memory: true,
			ContextWindow: window, MaxOutput: maxOut, Prices: Prices{Input: in, Output: out, CacheRead: read, CacheWrite: write}},
			Name: name, Wire: "anthropic", Source: src, Checked: today, Confirmed: ConfirmedAll, Note: platformNote}
	}
	// unverified marks a row no page confirmed, partly one whose page
	// confirmed only some of its facts; why says which and why.
	unverified := func(e Entry, why string) Entry { e.Unverified, e.Confirmed = why, ConfirmedNone; return e }
	partly := func(e Entry, why string) Entry { e.Unverified, e.Confirmed = why, ConfirmedPart; return e }
	// family makes a row of a family's models the catalog does not know
	// one by one: they get the family's surface and limits, and, as any
	// unknown model, a warning and an unknown cost.
	family := func(e Entry) Entry {
		e.Guess, e.Prices, e.Confirmed = true, Prices{Unknown: true}, ConfirmedNone
		e.Unverified = "a family's models the catalog does not know: their surface and limits are the family's, their prices unknown"
		e.Note = ""
		return e
	}
	checked := func(e Entry, date string) Entry { e.Checked = date; return e }
	// read marks a row confirmed today on the page src.
	read := func(e Entry, src string) Entry {
		e.Source, e.Checked, e.Unverified, e.Confirmed = src, today, "", ConfirmedAll
		return e
	}
	const m, k = 1000000, 1000

	// OpenAI: general GPT-5.1 and later are trained on the Responses API's
	// typed shell and apply_patch; the codex family on the freeform
	// apply_patch and shell_command. Cache writes cost plain input.
	// The models Codex runs (GPT-5.1 and later, the codex family) get
	// reasoning at medium with automatic summaries, as Codex sends them;
	// the older reasoning models medium alone; gpt-4.1 none.
	outputs := func(e Entry, maxOutput int, cacheRead float64) Entry {
		e.MaxOutput, e.Prices.CacheRead = maxOutput, cacheRead
		return e
	}
	gpt := func(name, pattern, surf string, in, out float64, window int) Entry {
		p := Profile{Pattern: pattern, Surface: surf, ContextWindow: window, MaxOutput: 128000,
			Prices: Prices{Input: in, Output: out, CacheRead: math.Round(in/10*1e4) / 1e4, CacheWrite: in}, Reasoning: "medium"}
		switch {
		case surf != "generic":
			p.ReasoningSummary = "auto"
		case strings.HasPrefix(pattern, "gpt-4"):
			p.Reasoning = ""
		}
		return Entry{Profile: p, Name: name, Wire: "responses", Source: openaiPricing, Checked: "2026-12-02",
			Unverified: notRead, Confirmed: ConfirmedNone, Note: azureNote}
	}
	// Gemini (any route: the Gemini API, Vertex AI at the Gemini API's
	// list price, a named gemini wire): no
	// client-executed typed tools, so the generic surface; thinking is
	// billed as output.
	gemini := func(name, pattern string, in, out, cached float64) Entry {
		return Entry{Profile: Profile{Pattern: pattern, Surface: "generic", ContextWindow: 1048576, MaxOutput: 65536,
			Prices: Prices{Input: in, Output: out, CacheRead: cached}},
			Name: name, Wire: "gemini", Source: geminiPricing, Checked: "2026-12-06",
			Unverified: notRead + " (the table's values are those of the page as of 2025-12)", Confirmed: ConfirmedNone,
			Note: "prompts over 200K tokens are charged the prices of shorter ones (the page's long-prompt tier is not applied); " + vertexGeminiNote}
	}
	sim := func(pattern, surf string, window int) Entry {
		p := Profile{Pattern: pattern, Surface: surf, ContextWindow: window, MaxOutput: 8192}
		switch surf {
		case "anthropic":
			p.Editor, p.Memory = "text_editor_20250728", true
		case "openai", "codex":
			p.Reasoning, p.ReasoningSummary = "medium", "auto"
		}
		return Entry{Profile: p, Name: "the simulated model", Wire: "sim", Checked: today, Confirmed: ConfirmedNone,
			Unverified: "Truss's own simulated model: no page describes it", Note: "it costs nothing"}
	}

	return []Entry{
		sim("sim-claude*", "anthropic", 200000),
		sim("sim-gpt*codex*", "codex", 400000),
		sim("sim-gpt*", "openai", 400000),
		sim("sim-*", "generic", 200000),

		// Anthropic's models, newest first. A pattern without wildcards
		// matches the model's id and its snapshots (…-20251101, …@20251101,
		// …-latest), not a later model's id.
		partly(claude("Claude Fable 5.2", "claude-fable-5-2", m, 128*k, 8, 10, 0.20, 40, claudeModels+"fable-5-2/overview"),
			"input and output prices and limits from the comparison table of https://platform.claude.com/docs/id/models/opus-5/overview.md; the cache prices (1.25× input to write, $0.20 to read) are not on a stored official page"),
		unverified(claude("Claude Mythos 5.2", "claude-mythos-5-2", m, 128*k, 8, 10, 0.20, 40, claudeModels+"mythos-5-2/overview"),
			"no stored official page prices Mythos 5.2; Fable 5.2's, as Mythos 5 and 5.1 share Fable's specifications and prices"),
		claude("Claude Fable 5.1", "claude-fable-5-1", m, 128*k, 10, 12.50, 0.25, 50, claudePricing),
		claude("Claude Mythos 5.1", "claude-mythos-5-1", m, 128*k, 10, 12.50, 0.25, 50, claudePricing),
		claude("Claude Fable 5", "claude-fable-5", m, 128*k, 10, 12.50, 1, 50, claudePricing),
		claude("Claude Mythos 5", "claude-mythos-5", m, 128*k, 10, 12.50, 1, 50, claudePricing),
		partly(claude("Claude Opus 5.5", "claude-opus-5-5", m, 128*k, 4, 5, 0.20, 20, claudeModels+"opus-5-5/overview"),
			"input and output prices and limits from the comparison tables of the official model pages; the cache prices (1.25× input to write, $0.20 to read) are not on a stored official page"),
		claude("Claude Opus 5", "claude-opus-5", m, 128*k, 5, 6.25, 0.50, 25, claudeModels+"opus-5/overview"),
		claude("Claude Opus 4.8", "claude-opus-4-8", m, 128*k, 5, 6.25, 0.50, 25, claudeModels+"opus-4-8/overview"),
		partly(claude("Claude Opus 4.7", "claude-opus-4-7", 200*k, 64*k, 5, 6.25, 0.50, 25, claudePricing),
			"prices from the pricing page; its limits are not on a stored official page, so the smaller ones of Opus 4.5 (200K, 64K) are used"),
		claude("Claude Opus 4.6", "claude-opus-4-6", m, 128*k, 5, 6.25, 0.50, 25, claudeModels+"opus-4-6/overview"),
		claude("Claude Opus 4.5", "claude-opus-4-5", 200*k, 64*k, 5, 6.25, 0.50, 25, claudeModels+"opus-4-5/overview"),
		partly(claude("Claude Opus 4.1", "claude-opus-4-1", 200*k, 32*k, 15, 18.75, 1.50, 75, claudePricing),
			"prices from the pricing page; the limits "+notRead),
		partly(claude("Claude Opus 4", "claude-opus-4-0", 200*k, 32*k, 15, 18.75, 1.50, 75, claudePricing),
			"prices from the pricing page; the limits "+notRead),
		partly(claude("Claude Opus 4", "claude-opus-4", 200*k, 32*k, 15, 18.75, 1.50, 75, claudePricing),
			"prices from the pricing page; the limits "+notRead),
		partly(claude("Claude Sonnet 5.5", "claude-sonnet-5-5", m, 128*k, 2, 2.50, 0.20, 10, claudeModels+"sonnet-5-5/overview"),
			"the stored official page (cache read $0.20) predates 2026-10-07; a cut of the cache read to $0.10 then is reported only by third parties"),
		claude("Claude Sonnet 5", "claude-sonnet-5", m, 128*k, 2, 2.50, 0.20, 10, claudeModels+"sonnet-5/overview"),
		claude("Claude Sonnet 4.6", "claude-sonnet-4-6", m, 128*k, 3, 3.75, 0.30, 15, claudeModels+"sonnet-4-6/overview"),
		func() Entry {
			e := unverified(claude("Claude Sonnet 4.5", "claude-sonnet-4-5", 200*k, 64*k, 3, 3.75, 0.30, 15, claudePricing), notRead)
			e.Note = "the 200K-token window: Truss does not ask for the 1M-token beta, whose prompts over 200K tokens cost $6/$22.50; " + platformNote
			return checked(e, "2026-12-02")
		}(),
		partly(claude("Claude Sonnet 4", "claude-sonnet-4-0", 200*k, 64*k, 3, 3.75, 0.30, 15, claudeOldPrices), "prices from the pricing page; the limits "+notRead),
		partly(claude("Claude Sonnet 4", "claude-sonnet-4", 200*k, 64*k, 3, 3.75, 0.30, 15, claudeOldPrices), "prices from the pricing page; the limits "+notRead),
		func() Entry {
			e := partly(claude("Claude Haiku 5.5", "claude-haiku-5-5", m, 128*k, 0.10, 0.125, 0.01, 0.50, claudeModels+"haiku-5-5/overview"),
				"the page gives the limits and 'from $0.10 / $0.50'; the prices of prompts over 100K tokens and the cache prices are not on a stored official page")
			e.Prices.Long = LongPrices{Above: 100000, Input: 0.50, Output: 2.50, CacheRead: 0.05, CacheWrite: 0.625}
			e.Note = "a request whose prompt (input, cache reads and writes) passes 100K tokens is charged the long-prompt prices on all its tokens; " + platformNote
			return e
		}(),
		claude("Claude Haiku 4.5", "claude-haiku-4-5", 200*k, 64*k, 1, 1.25, 0.10, 5, claudeModels+"haiku-4-5/overview"),
		func() Entry {
			e := claude("Claude Sonnet 3.7", "claude-3-7-sonnet", 200*k, 64*k, 3, 3.75, 0.30, 15, claudeOldPrices)
			e.Editor, e.Memory = "text_editor_20250124", false
			return partly(e, "prices from the pricing page; the limits "+notRead)
		}(),

		gpt("GPT-5.1-Codex-Mini", "gpt-5.1-codex-mini*", "codex", 0.25, 2, 400000),
		read(gpt("GPT-5-Codex", "gpt-5-codex*", "codex", 1.25, 10, 400000), openaiDocs+"gpt-5-codex"),
		gpt("GPT-5.1-Codex", "gpt-5.1-codex*", "codex", 1.25, 10, 400000),
		gpt("GPT-5.2-Codex", "gpt-5.2-codex*", "codex", 1.75, 14, 400000),
		gpt("GPT-5.3-Codex", "gpt-5.3-codex*", "codex", 1.75, 14, 400000),
		family(gpt("a later GPT-5 codex model", "gpt-5.*-codex*", "codex", 0, 0, 400000)),
		gpt("GPT-5.1", "gpt-5.1*", "openai", 1.25, 10, 400000),
		gpt("GPT-5.2", "gpt-5.2*", "openai", 1.75, 14, 400000),
		gpt("GPT-5.4 mini", "gpt-5.4-mini*", "openai", 0.75, 4.5, 400000),
		read(gpt("GPT-5.4 nano", "gpt-5.4-nano*", "openai", 0.2, 1.25, 400000), openaiDocs+"gpt-5.4-nano"),
		gpt("GPT-5.4", "gpt-5.4*", "openai", 2.5, 15, 1050000),
		gpt("GPT-5.5", "gpt-5.5*", "openai", 5, 30, 1050000),
		family(gpt("a later GPT-5 model", "gpt-5.*", "openai", 0, 0, 1050000)),
		// The chat snapshot of GPT-5 does not take a reasoning effort.
		{Profile: Profile{Pattern: "gpt-5-chat*", Surface: "generic", ContextWindow: 128000, MaxOutput: 16384,
			Prices: Prices{Input: 1.25, Output: 10, CacheRead: 0.125, CacheWrite: 1.25}},
			Name: "GPT-5 chat", Wire: "responses", Source: openaiModels + "gpt-5-chat-latest", Checked: "2026-12-03", Unverified: notRead, Confirmed: ConfirmedNone, Note: azureNote},
		gpt("GPT-5", "gpt-5", "generic", 1.25, 10, 400000),
		family(gpt("another GPT-5 model (mini, nano, pro…)", "gpt-5*", "generic", 0, 0, 400000)),
		// GPT-4.1 and the o-series before GPT-5: cached input at a quarter
		// of the input price, not a tenth; GPT-4.1 writes at most 32,768
		// tokens, o3 and o4-mini 100,000 (as their model pages gave them;
		// unconfirmed here, like the rest of these rows).
		outputs(gpt("GPT-4.1", "gpt-4.1", "generic", 2, 8, 1047576), 32768, 0.5),
		outputs(gpt("o3", "o3", "generic", 2, 8, 200000), 100000, 0.5),
		outputs(gpt("o4-mini", "o4-mini*", "generic", 1.1, 4.4, 200000), 100000, 0.275),

		{Profile: Profile{Pattern: "qwen*", Provider: "ollama", Surface: "generic", ContextWindow: 32768, MaxOutput: 8192, NumCtx: 32768},
			Name: "Qwen (local)", Wire: "ollama", Source: ollamaLibrary + "qwen2.5-coder", Checked: "2026-12-03", Unverified: notRead, Confirmed: ConfirmedNone,
			Note: "a local model: it costs nothing"},
		{Profile: Profile{Pattern: "llama*", Provider: "ollama", Surface: "generic", ContextWindow: 131072, MaxOutput: 8192, NumCtx: MaxNumCtx},
			Name: "Llama (local)", Wire: "ollama", Source: ollamaLibrary + "llama3.1", Checked: "2026-12-03", Unverified: notRead, Confirmed: ConfirmedNone,
			Note: "a local model: it costs nothing"},
		{Profile: Profile{Pattern: "gpt-oss*", Provider: "ollama", Surface: "generic", ContextWindow: 131072, MaxOutput: 32768},
			Name: "gpt-oss (local)", Wire: "ollama", Source: openaiModels + "gpt-oss-120b", Checked: "2026-12-02", Unverified: notRead, Confirmed: ConfirmedNone,
			Note: "a local model: it costs nothing"},
		// Served elsewhere (Azure, a hosted OpenAI-compatible server), it
		// has the host's price, which the catalog does not know.
		{Profile: Profile{Pattern: "gpt-oss*", Surface: "generic", ContextWindow: 131072, MaxOutput: 32768, Prices: Prices{Unknown: true}},
			Name: "gpt-oss (hosted)", Source: openaiModels + "gpt-oss-120b", Checked: "2026-12-02", Unverified: notRead, Confirmed: ConfirmedNone,
			Note: "open weights: a host's price, which the catalog does not know"},

		// Prices are the standard tier's for prompts up to 200k tokens.
		gemini("Gemini 2.5 Pro", "gemini-2.5-pro*", 1.25, 10, 0.125),
		gemini("Gemini 2.5 Flash-Lite", "gemini-2.5-flash-lite*", 0.10, 0.40, 0.01),
		gemini("Gemini 2.5 Flash", "gemini-2.5-flash*", 0.30, 2.50, 0.03),
		gemini("Gemini 3 Pro", "gemini-3-pro*", 2, 12, 0.20),
	}
}

// isGlob reports whether pattern has a wildcard of path.Match.
func isGlob(pattern string) bool { return strings.ContainsAny(pattern, "*?[") }

// matchID reports whether name (lower case) is the model id pattern or
// one of its snapshots: pattern followed by a date (-YYYYMMDD,
// -YYYY-MM-DD), by @VERSION (Vertex AI's form) or by -latest. A glob
// pattern is matched with path.Match.
func matchID(pattern, name string) bool {
	p := strings.ToLower(pattern)
	if isGlob(p) {
		ok, _ := path.Match(p, name)
		return ok
	}
	rest, ok := strings.CutPrefix(name, p)
	switch {
	case !ok:
		return false
	case rest == "", rest == "-latest", strings.HasPrefix(rest, "@") && len(rest) > 1:
		return true
	case len(rest) == 9 && rest[0] == '-':
		return digits(rest[1:])
	case len(rest) == 11 && rest[0] == '-' && rest[5] == '-' && rest[8] == '-':
		return digits(rest[1:5]) && digits(rest[6:8]) && digits(rest[9:])
	}
	return false
}

func digits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

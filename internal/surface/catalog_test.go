package surface

import (
	"fmt"
	"math"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/model"
)

// officialHosts are the sites whose pages may be a row's source: the
// makers' and the platforms' own.
var officialHosts = []string{
	"platform.claude.com", "docs.anthropic.com", "www.anthropic.com",
	"platform.openai.com", "developers.openai.com", "openai.com",
	"ai.google.dev", "cloud.google.com",
	"aws.amazon.com", "docs.aws.amazon.com",
	"learn.microsoft.com", "azure.microsoft.com",
	"ollama.com",
}

// rowProblems returns what is wrong with one catalog row.
func rowProblems(e Entry) []string {
	var bad []string
	add := func(f string, a ...any) { bad = append(bad, fmt.Sprintf(f, a...)) }
	if e.Name == "" {
		add("no name")
	}
	if e.Pattern == "" || e.Pattern != strings.ToLower(e.Pattern) || strings.ContainsAny(e.Pattern, " \t/") {
		add("pattern %q: not a lower-case model id or glob", e.Pattern)
	}
	if _, err := path.Match(e.Pattern, "x"); err != nil {
		add("pattern %q: %v", e.Pattern, err)
	}
	switch e.Source {
	case "":
		if e.Unverified == "" {
			add("no source and no reason")
		}
	default:
		u, err := url.Parse(e.Source)
		if err != nil || u.Scheme != "https" || !slices.Contains(officialHosts, u.Host) {
			add("source %q is not an official page", e.Source)
		}
	}
	switch {
	case !slices.Contains([]string{ConfirmedAll, ConfirmedPart, ConfirmedNone}, e.Confirmed):
		add("confirmed %q", e.Confirmed)
	case (e.Confirmed == ConfirmedAll) != (e.Unverified == ""):
		add("confirmed %q with unverified %q: a row is confirmed in all exactly when nothing is unverified", e.Confirmed, e.Unverified)
	}
	if d, err := time.Parse(time.DateOnly, e.Checked); err != nil {
		add("checked %q: not a date", e.Checked)
	} else if max, _ := time.Parse(time.DateOnly, today); d.After(max) {
		add("checked %s: after %s", e.Checked, today)
	}
	p := e.Prices
	for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite, p.Long.Input, p.Long.Output, p.Long.CacheRead, p.Long.CacheWrite} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			add("price %v", v)
		}
	}
	if p.Long.Above < 0 || (p.Long.Above == 0) != (p.Long == LongPrices{}) {
		add("long-prompt tier %+v without a threshold, or a threshold without prices", p.Long)
	}
	// A family's guess has unknown prices; a known model's are known,
	// unless a note says why not (a host's price).
	if e.Guess && !p.Unknown || p.Unknown && !e.Guess && e.Note == "" {
		add("prices unknown %v on a row that is a family's guess %v: a row's prices are known unless it is a guess or a note says why", p.Unknown, e.Guess)
	}
	if e.ContextWindow <= 0 || e.MaxOutput <= 0 || e.MaxOutput > e.ContextWindow {
		add("limits %d/%d", e.ContextWindow, e.MaxOutput)
	}
	switch e.Surface {
	case "anthropic":
		if e.Editor != "text_editor_20250728" && e.Editor != "text_editor_20250124" {
			add("editor %q", e.Editor)
		}
	case "openai", "codex", "generic":
		if e.Editor != "" || e.Memory {
			add("anthropic's tools on the %s surface", e.Surface)
		}
	default:
		add("surface %q", e.Surface)
	}
	if !slices.Contains([]string{"", "anthropic", "responses", "gemini", "ollama", "sim"}, e.Wire) {
		add("wire %q", e.Wire)
	}
	return bad
}

// TestCatalogRows: every row names its model, has a valid pattern, an
// official source or the reason it has none, a date no later than the
// catalog's, non-negative prices and consistent limits and tools.
func TestCatalogRows(t *testing.T) {
	for _, e := range Catalog() {
		for _, p := range rowProblems(e) {
			t.Errorf("%s (%s): %s", e.Pattern, e.Name, p)
		}
	}
}

// TestRowProblemsFound: the row checks catch what they are for.
func TestRowProblemsFound(t *testing.T) {
	good := Catalog()[5]
	if p := rowProblems(good); len(p) != 0 {
		t.Fatalf("good row: %q", p)
	}
	for _, tc := range []struct {
		name string
		edit func(*Entry)
		want string
	}{
		{"third-party source", func(e *Entry) { e.Source = "https://example.com/claude-pricing" }, "not an official page"},
		{"plain http", func(e *Entry) { e.Source = "http://platform.claude.com/docs" }, "not an official page"},
		{"no source, no reason", func(e *Entry) { e.Source, e.Unverified = "", "" }, "no source and no reason"},
		{"bad pattern", func(e *Entry) { e.Pattern = "claude-[" }, "syntax error"},
		{"upper case", func(e *Entry) { e.Pattern = "Claude-X" }, "not a lower-case"},
		{"no date", func(e *Entry) { e.Checked = "" }, "not a date"},
		{"future date", func(e *Entry) { e.Checked = "2099-01-01" }, "after"},
		{"negative price", func(e *Entry) { e.Prices.CacheRead = -1 }, "price -1"},
		{"tier without threshold", func(e *Entry) { e.Prices.Long.Input = 1 }, "without a threshold"},
		{"unknown prices without a note", func(e *Entry) { e.Prices.Unknown, e.Note = true, "" }, "prices are known unless"},
		{"a guess with prices", func(e *Entry) { e.Guess = true }, "prices are known unless"},
		{"output over window", func(e *Entry) { e.MaxOutput = e.ContextWindow + 1 }, "limits"},
		{"no editor", func(e *Entry) { e.Editor = "" }, "editor"},
		{"unknown wire", func(e *Entry) { e.Wire = "bedrock" }, "wire"},
		{"no confirmation", func(e *Entry) { e.Confirmed = "" }, "confirmed"},
		{"confirmed with a reason it is not", func(e *Entry) { e.Confirmed, e.Unverified = ConfirmedAll, "the page lacks the limits" }, "confirmed in all exactly when"},
		{"unconfirmed without a reason", func(e *Entry) { e.Confirmed, e.Unverified = ConfirmedPart, "" }, "confirmed in all exactly when"},
	} {
		e := good
		tc.edit(&e)
		if p := strings.Join(rowProblems(e), "; "); !strings.Contains(p, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, p, tc.want)
		}
	}
}

// samples returns model names a pattern matches: its wildcards filled in
// several ways, or an id and its snapshots.
func samples(pattern string) []string {
	if !isGlob(pattern) {
		return []string{pattern, pattern + "-20260101", pattern + "@20260101", pattern + "-latest"}
	}
	var out []string
	for _, fill := range []string{"", "x", "-5-5", "-20260101"} {
		s := strings.ReplaceAll(pattern, "*", fill)
		s = strings.ReplaceAll(s, "?", "x")
		if ok, _ := path.Match(pattern, s); ok {
			out = append(out, s)
		}
	}
	return out
}

// deadRows returns the rows an earlier row always matches first: every
// name the later row matches, the earlier one matches too, for every
// dialect the later one is looked up with.
func deadRows(ps Profiles) []string {
	var dead []string
	for j, later := range ps {
		names := samples(later.Pattern)
		for i := range j {
			earlier := ps[i]
			if earlier.Provider != "" && earlier.Provider != later.Provider {
				continue
			}
			if len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return !matchID(earlier.Pattern, n) }) {
				dead = append(dead, fmt.Sprintf("%s (row %d) is shadowed by %s (row %d)", later.Pattern, j, earlier.Pattern, i))
				break
			}
		}
	}
	return dead
}

// TestCatalogNoDeadRows: no row is unreachable behind an earlier one.
func TestCatalogNoDeadRows(t *testing.T) {
	if d := deadRows(DefaultProfiles()); len(d) != 0 {
		t.Errorf("dead rows:\n%s", strings.Join(d, "\n"))
	}
	for _, e := range Catalog() {
		if len(samples(e.Pattern)) == 0 {
			t.Errorf("%s: no sample name matches it", e.Pattern)
		}
	}
}

// TestDeadRowsFound: the shadow check finds a family pattern placed
// before the model it contains, and passes the right order.
func TestDeadRowsFound(t *testing.T) {
	for _, tc := range []struct {
		rows []Profile
		dead int
	}{
		{[]Profile{{Pattern: "claude-opus-4*"}, {Pattern: "claude-opus-4-5"}}, 1},
		{[]Profile{{Pattern: "claude-opus-4-5"}, {Pattern: "claude-opus-4*"}}, 0},
		{[]Profile{{Pattern: "gpt-5*"}, {Pattern: "gpt-5.4-mini*"}}, 1},
		{[]Profile{{Pattern: "claude-opus-5"}, {Pattern: "claude-opus-5-5"}}, 0},
		{[]Profile{{Pattern: "qwen*", Provider: "ollama"}, {Pattern: "qwen*"}}, 0},
		{[]Profile{{Pattern: "qwen*"}, {Pattern: "qwen*", Provider: "ollama"}}, 1},
		{[]Profile{{Pattern: "claude-opus-5"}, {Pattern: "claude-opus-5"}}, 1},
	} {
		if got := deadRows(tc.rows); len(got) != tc.dead {
			t.Errorf("%v: dead %q, want %d", tc.rows, got, tc.dead)
		}
	}
}

func TestMatchID(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"claude-opus-5", "claude-opus-5", true},
		{"claude-opus-5", "claude-opus-5-20260724", true},
		{"claude-opus-5", "claude-opus-5@20260724", true},
		{"claude-opus-5", "claude-opus-5-2026-07-24", true},
		{"claude-opus-5", "claude-opus-5-latest", true},
		{"claude-opus-5", "claude-opus-5-5", false}, // a later model
		{"claude-opus-5", "claude-opus-5-6", false},
		{"claude-opus-5", "claude-opus-50", false},
		{"claude-opus-5", "claude-opus-5@", false},
		{"claude-opus-5", "claude-opus-5-2026072", false},
		{"claude-opus-5", "claude-opus-5-2026-07-2x", false},
		{"claude-opus-5", "claude-opus", false},
		{"gpt-5.4*", "gpt-5.4-2026-03-05", true},
		{"gpt-5.4*", "gpt-5.5", false},
		{"sim-*", "sim-coder", true},
	} {
		if got := matchID(tc.pattern, tc.name); got != tc.want {
			t.Errorf("matchID(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

// FuzzMatchID: the matcher never panics, an id matches itself and its
// snapshots, and a longer id that is not a snapshot does not match.
func FuzzMatchID(f *testing.F) {
	for _, s := range []string{"claude-opus-5", "claude-opus-5-5@x", "gpt-5.4*", "a[", "-20260101"} {
		f.Add(s, "-20260101")
	}
	f.Fuzz(func(t *testing.T, id, suffix string) {
		id = strings.ToLower(id)
		matchID(id, id+suffix)
		if isGlob(id) || id == "" {
			return
		}
		if !matchID(id, id) || !matchID(id, id+"@v1") || !matchID(id, id+"-20260101") {
			t.Fatalf("%q does not match itself or its snapshots", id)
		}
		if matchID(id, id+"-5") {
			t.Fatalf("%q matches a later model %q", id, id+"-5")
		}
	})
}

// TestCatalogLookup: names in each platform's form find their rows, a
// later model is not priced as an earlier one, and an unknown model gets
// a guess whose cost is unknown.
func TestCatalogLookup(t *testing.T) {
	ps := DefaultProfiles()
	for _, tc := range []struct {
		dialect, model string
		input          float64 // -1: unknown prices
		window, out    int
		surface        string
	}{
		{"anthropic", "claude-opus-5-5", 4, 1000000, 128000, "anthropic"},
		{"anthropic", "claude-opus-5@20260724", 5, 1000000, 128000, "anthropic"},
		{"anthropic", "claude-sonnet-5-5-20260928", 2, 1000000, 128000, "anthropic"},
		{"anthropic", "claude-sonnet-5", 2, 1000000, 128000, "anthropic"},
		{"anthropic", "claude-haiku-5-5", 0.10, 1000000, 128000, "anthropic"},
		{"anthropic", "claude-haiku-4-5-20251001", 1, 200000, 64000, "anthropic"},
		{"anthropic", "claude-fable-5-1", 10, 1000000, 128000, "anthropic"},
		{"anthropic", "claude-opus-4-1-20250805", 15, 200000, 32000, "anthropic"},
		{"anthropic", "claude-opus-4-20250514", 15, 200000, 32000, "anthropic"},
		{"anthropic", "claude-sonnet-4-5", 3, 200000, 64000, "anthropic"},
		{"anthropic", "claude-opus-5-6", -1, 200000, 64000, "anthropic"}, // not yet in the catalog
		{"anthropic", "claude-next", -1, 200000, 64000, "anthropic"},
		// Anthropic's rows are the anthropic wire's: through another
		// server a Claude is a guess (its typed surface is dropped where
		// the dialect cannot carry it), at that server's unknown prices.
		{"chat", "claude-sonnet-4-5", -1, 200000, 64000, "anthropic"},
		{"responses", "gpt-5.5", 5, 1050000, 128000, "openai"},
		{"responses", "gpt-5.3-codex", 1.75, 400000, 128000, "codex"},
		{"responses", "gpt-5.4-2026-03-05", 2.5, 1050000, 128000, "openai"},
		{"responses", "gpt-5-2025-08-07", 1.25, 400000, 128000, "generic"},
		{"responses", "gpt-5-mini", -1, 400000, 128000, "generic"}, // the family's surface, its price unknown
		{"responses", "gpt-5.9", -1, 1050000, 128000, "openai"},
		{"responses", "gpt-5.9-codex", -1, 400000, 128000, "codex"},
		{"gemini", "gemini-3-pro-preview", 2, 1048576, 65536, "generic"},
		{"ollama", "qwen2.5-coder:14b", 0, 32768, 8192, "generic"},
		{"chat", "some-local-model", -1, 32768, 4096, "generic"},
	} {
		p := ps.Lookup(tc.dialect, tc.model)
		input := p.Prices.Input
		if !p.Prices.Known() {
			input = -1
		}
		if input != tc.input || p.ContextWindow != tc.window || p.MaxOutput != tc.out || p.Surface != tc.surface || p.Guess != (tc.input == -1) {
			t.Errorf("%s %s: input %v, window %d, output %d, surface %s, guess %v; want %v, %d, %d, %s",
				tc.dialect, tc.model, input, p.ContextWindow, p.MaxOutput, p.Surface, p.Guess, tc.input, tc.window, tc.out, tc.surface)
		}
	}
}

// TestPricesCostTiers: a known model's cost follows its prompt-length
// tier; an unknown model's prices cost nothing and say they are unknown.
func TestPricesCostTiers(t *testing.T) {
	haiku := DefaultProfiles().Lookup("anthropic", "claude-haiku-5-5").Prices
	for _, tc := range []struct {
		u    model.Usage
		want float64
	}{
		{model.Usage{InputTokens: 100_000, OutputTokens: 1_000_000}, 0.01 + 0.50},
		{model.Usage{InputTokens: 90_000, CacheReadTokens: 10_000, OutputTokens: 1_000_000}, 0.009 + 0.0001 + 0.50},
		// 100,001 prompt tokens: every token at the long-prompt prices.
		{model.Usage{InputTokens: 50_000, CacheReadTokens: 40_000, CacheWriteTokens: 10_001, OutputTokens: 1_000_000},
			0.025 + 0.002 + 10_001*0.625/1e6 + 2.50},
	} {
		if got := haiku.Cost(tc.u); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%+v: cost %v, want %v", tc.u, got, tc.want)
		}
	}
	if !haiku.Known() {
		t.Error("Haiku 5.5's prices are unknown")
	}
	guess := DefaultProfiles().Lookup("anthropic", "claude-unreleased")
	if guess.Prices.Known() || guess.Prices.Cost(model.Usage{InputTokens: 1e6, OutputTokens: 1e6}) != 0 {
		t.Errorf("a guessed Claude's prices: %+v", guess.Prices)
	}
	if (Prices{}).Known() != true {
		t.Error("zero prices (a free model) are unknown")
	}
}

// BenchmarkLookup measures what a session's start spends on its model's
// profile: the table built and searched for a model near its end.
func BenchmarkLookup(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if p := DefaultProfiles().Lookup("gemini", "gemini-3-pro-preview"); p.Guess {
			b.Fatal("guess")
		}
	}
}

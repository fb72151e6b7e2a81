package trusscli

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/cli"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/surface"
)

// TestCatalogWiresServed: every catalog row's wire is one a provider of
// the table speaks, so that no row is out of every provider's reach (a
// misspelt wire), and every provider with a dialect of a maker's models
// has rows.
func TestCatalogWiresServed(t *testing.T) {
	wires := map[string]bool{}
	for _, p := range harness.Providers() {
		wires[providerWire(p)] = true
	}
	for _, e := range surface.Catalog() {
		if e.Wire != "" && !wires[e.Wire] {
			t.Errorf("%s: wire %q is no provider's", e.Pattern, e.Wire)
		}
	}
	for _, name := range []string{"bedrock", "vertex", "azure", "gemini"} {
		rows, err := catalogRows(name)
		if err != nil || !slices.ContainsFunc(rows, func(r modelRow) bool { return r.Wire != "" }) {
			t.Errorf("%s: no rows of its own (%v)", name, err)
		}
	}
}

func TestCatalogRowsByProvider(t *testing.T) {
	all, err := catalogRows("")
	if err != nil || len(all) != len(surface.Catalog()) {
		t.Fatalf("all rows: %d, %v", len(all), err)
	}
	for _, tc := range []struct {
		provider string
		has      []string // patterns listed
		hasNot   []string
		wire     string // every listed row's wire, or none
	}{
		{"bedrock", []string{"claude-opus-5-5", "claude-haiku-5-5", "gpt-oss*"}, []string{"gpt-5.5*", "gemini-3-pro*"}, "anthropic"},
		{"vertex", []string{"claude-sonnet-5-5"}, []string{"qwen*"}, "anthropic"},
		{"azure", []string{"gpt-5.5*", "gpt-5.3-codex*"}, []string{"claude-opus-5"}, "responses"},
		{"openai", []string{"gpt-5.4-mini*"}, []string{"gemini-2.5-pro*"}, "responses"},
		{"gemini", []string{"gemini-2.5-flash*"}, []string{"claude-opus-5"}, "gemini"},
		{"openai-compatible", []string{"gpt-oss*"}, []string{"claude-opus-5", "gpt-5.5*"}, ""},
		{"sim", []string{"sim-claude*"}, []string{"claude-opus-5"}, "sim"},
	} {
		rows, err := catalogRows(tc.provider)
		if err != nil {
			t.Errorf("%s: %v", tc.provider, err)
			continue
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.Pattern)
			if r.Wire != "" && r.Wire != tc.wire {
				t.Errorf("%s: row %s of wire %s", tc.provider, r.Pattern, r.Wire)
			}
		}
		for _, p := range tc.has {
			if !slices.Contains(got, p) {
				t.Errorf("%s: %s missing from %q", tc.provider, p, got)
			}
		}
		for _, p := range tc.hasNot {
			if slices.Contains(got, p) {
				t.Errorf("%s: %s listed", tc.provider, p)
			}
		}
	}
	_, err = catalogRows("openrouter")
	var ue cli.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `unknown provider "openrouter"; choose one of: chat, openai`) {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestTokens(t *testing.T) {
	for n, want := range map[int]string{1000000: "1M", 128000: "128K", 1048576: "1048576", 1050000: "1050K", 8192: "8192", 0: "0"} {
		if got := tokens(n); got != want {
			t.Errorf("tokens(%d) = %q, want %q", n, got, want)
		}
	}
}

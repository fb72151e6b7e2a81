package gitsafe

import (
	"slices"
	"strings"
	"testing"
)

func TestFilterNames(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want []string
	}{
		{"", nil},
		{"filter.lfs.clean\nfilter.lfs.smudge\nfilter.lfs.process\n", []string{"lfs"}},
		{"filter.a.b.clean\nfilter.x.required\n", []string{"a.b", "x"}},
		{"filter.noKey\ncore.fsmonitor\n", nil},
	} {
		if got := filterNames(tc.out); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.out, got, tc.want)
		}
	}
}

// Every key of a filter driver leads to its name being emptied: for each
// line "filter.NAME.KEY", NAME is among the names, once.
func FuzzFilterNames(f *testing.F) {
	f.Add("filter.lfs.clean\nfilter.a.b.process\n")
	f.Add("filter..x\nfilter.\n")
	f.Fuzz(func(t *testing.T, out string) {
		names := filterNames(out)
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			rest, ok := strings.CutPrefix(line, "filter.")
			if i := strings.LastIndexByte(rest, '.'); ok && i >= 0 && !slices.Contains(names, rest[:i]) {
				t.Fatalf("%q: the driver of %q is missing from %q", out, line, names)
			}
		}
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Fatalf("%q named twice", n)
			}
			seen[n] = true
		}
	})
}

// Package suggest finds what a mistyped name most likely meant, for the
// "did you mean" of a flag, a setting, a provider or a model.
package suggest

import "strings"

// Nearest is the one of names that name most likely meant: the same name
// but for case, _ and - ("base-url" and "baseurl" for base_url), else the
// only one closest to it within two edits (a letter left out, added or
// changed), and nearer than name is long; "" for none or a tie.
func Nearest(name string, names []string) string {
	for _, n := range names {
		if fold(n) == fold(name) {
			return n
		}
	}
	best, bestD, ties := "", 3, 0
	for _, n := range names {
		switch d := Distance(fold(name), fold(n)); {
		case d < bestD:
			best, bestD, ties = n, d, 0
		case d == bestD:
			ties++
		}
	}
	if ties > 0 || bestD >= len(name) {
		return ""
	}
	return best
}

// fold is s in lower case without _ and -.
func fold(s string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
}

// Distance is the Levenshtein distance of a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

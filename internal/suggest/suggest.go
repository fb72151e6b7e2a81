// Package suggest finds what a mistyped name most likely meant, for the
// "did you mean" of a flag, a setting, a provider or a model.
package suggest

import "strings"

// Nearest is the one of names that name most likely meant: the same name
// but for case, _ and - ("base-url" and "baseurl" for base_url), else the
// only one closest to it, by Distance, within one edit for a name of up to
// five letters and two for a longer one; "" for none or a tie. ("bogus"
// means nothing: "logs" is two edits away.)
func Nearest(name string, names []string) string {
	for _, n := range names {
		if fold(n) == fold(name) {
			return n
		}
	}
	reach := 1
	if len(fold(name)) > 5 {
		reach = 2
	}
	best, bestD, ties := "", reach+1, 0
	for _, n := range names {
		switch d := Distance(fold(name), fold(n)); {
		case d < bestD:
			best, bestD, ties = n, d, 0
		case d == bestD:
			ties++
		}
	}
	if ties > 0 || best == "" {
		return ""
	}
	return best
}

// fold is s in lower case without _ and -.
func fold(s string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
}

// Distance is the number of edits that make a into b, in bytes: a byte
// left out, added, changed, or two next to each other swapped (the
// optimal string alignment distance).
func Distance(a, b string) int {
	// d[i][j] is the distance of a[:i] and b[:j]; three rows suffice.
	w := len(b) + 1
	prev2, prev, cur := make([]int, w), make([]int, w), make([]int, w)
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
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

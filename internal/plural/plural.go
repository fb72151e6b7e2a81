// Package plural writes counts for people: "1 entry", "2 entries",
// "0 tool calls". Every count Truss prints with a noun goes through it, so
// that one is never followed by a plural.
package plural

import (
	"fmt"
	"strings"
)

// Count is n followed by noun, in the singular for 1 and the plural
// otherwise (Noun): Count(1, "run") is "1 run", Count(3, "entry")
// "3 entries", Count(0, "tool call") "0 tool calls".
func Count[N Number](n N, noun string) string {
	return fmt.Sprint(n) + " " + Noun(n, noun)
}

// Number is what can be counted.
type Number interface {
	~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64
}

// Noun is noun as it follows the count n: itself for 1, else its
// plural, formed on its last word by the regular rules of English: a
// consonant's y becomes ies (entry, entries), s, x, z, ch and sh take es
// (pass, passes), any other word takes s. Nouns whose plural is not
// regular are not to be passed.
func Noun[N Number](n N, noun string) string {
	if n == 1 || noun == "" {
		return noun
	}
	switch {
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "z"),
		strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	}
	return noun + "s"
}

package codex

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// outputTokens is the truncation budget of the codex family's models in
// Codex (their catalog's truncation_policy: tokens, 10,000): a tool output
// longer than four bytes a token times this keeps its head and tail.
const outputTokens = 10_000

// execOutput renders a command's result as Codex's
// format_exec_output_for_model does, byte for byte:
//
//	Exit code: N
//	Wall time: S seconds
//	Total output lines: L     (only when the output was cut)
//	Output:
//	<output>
//
// S is the duration in seconds as a 32-bit float rounded to one decimal
// and printed as Rust prints an f32 ("0", "0.4", "12"); the output is cut in
// the middle to the token budget with Codex's "…N tokens truncated…"
// marker.
func execOutput(code int, wall time.Duration, content string) string {
	formatted := truncateMiddle(content, outputTokens)
	sections := []string{fmt.Sprintf("Exit code: %d", code), "Wall time: " + wallSeconds(wall) + " seconds"}
	if total := lineCount(content); total != lineCount(formatted) {
		sections = append(sections, fmt.Sprintf("Total output lines: %d", total))
	}
	sections = append(sections, "Output:", formatted)
	return strings.Join(sections, "\n")
}

// wallSeconds is ((d.as_secs_f32() * 10.0).round() / 10.0) printed with
// Rust's Display for f32: the shortest digits that read back as the same
// f32, never an exponent, no ".0" for a whole number.
func wallSeconds(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	secs := float32(d/time.Second) + float32(d%time.Second)/float32(1e9)
	r := float32(math.Round(float64(secs*10))) / 10
	return strconv.FormatFloat(float64(r), 'f', -1, 32)
}

// lineCount counts lines as Rust's str::lines does: a final line ending
// does not start another line.
func lineCount(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// truncateMiddle is Codex's truncate_middle_with_token_budget: a string of
// at most four bytes a token is kept; a longer one keeps its first and last
// halves of that many bytes (on character boundaries) around
// "…N tokens truncated…", N the removed bytes over four, rounded up.
func truncateMiddle(s string, maxTokens int) string {
	maxBytes := maxTokens * 4
	if s == "" || len(s) <= maxBytes {
		return s
	}
	left := maxBytes / 2
	right := maxBytes - left
	prefixEnd := 0
	for prefixEnd < len(s) {
		_, size := utf8.DecodeRuneInString(s[prefixEnd:])
		if prefixEnd+size > left {
			break
		}
		prefixEnd += size
	}
	suffixStart := len(s) - right
	for suffixStart < len(s) && !utf8Start(s[suffixStart]) {
		suffixStart++
	}
	suffixStart = max(suffixStart, prefixEnd)
	removed := (len(s) - maxBytes + 3) / 4
	return s[:prefixEnd] + fmt.Sprintf("…%d tokens truncated…", removed) + s[suffixStart:]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

package swebench

import (
	"strings"
	"unicode"
)

// Status is a test's status as the harness's parsers record it. The five
// named values are the harness's TestStatus enum; a parser can record any
// other word it found in the log's status position (parse_log_pytest stores
// the line's first word as it is), and such a status is neither passed nor
// failed when grading, as in the harness.
type Status string

// The harness's TestStatus values.
const (
	StatusFailed  Status = "FAILED"
	StatusPassed  Status = "PASSED"
	StatusSkipped Status = "SKIPPED"
	StatusError   Status = "ERROR"
	StatusXFail   Status = "XFAIL"
)

// statusWords are the TestStatus values in the enum's order, which is the
// order the Python parsers test line.startswith against.
func statusWords() []Status {
	return []Status{StatusFailed, StatusPassed, StatusSkipped, StatusError, StatusXFail}
}

// Parser turns a test log into a map from test name to status. A Parser
// never panics, whatever its input.
type Parser func(log string) map[string]Status

// pySpace reports whether r is whitespace to Python's str.isspace and
// str.split(): Go's unicode.IsSpace plus the four information separators
// U+001C..U+001F, which Python counts as whitespace.
func pySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyFields is Python's str.split() with no argument.
func pyFields(s string) []string { return strings.FieldsFunc(s, pySpace) }

// pyStrip is Python's str.strip() with no argument.
func pyStrip(s string) string { return strings.TrimFunc(s, pySpace) }

// pyLstrip is Python's str.lstrip() with no argument.
func pyLstrip(s string) string { return strings.TrimLeftFunc(s, pySpace) }

// pyLines is Python's str.split("\n").
func pyLines(s string) []string { return strings.Split(s, "\n") }

// Regular-expression classes with Python's Unicode meaning for str
// patterns, for use inside Go patterns in place of \s, \S, \d and \w.
const (
	reS    = `[\t\n\v\f\r \x1c-\x1f\x85\p{Z}]`
	reNotS = `[^\t\n\v\f\r \x1c-\x1f\x85\p{Z}]`
	// reSNoNL is [^\S\r\n]: whitespace other than \r and \n.
	reSNoNL = `[\t\v\f \x1c-\x1f\x85\p{Z}]`
	reD     = `\p{Nd}`
	reW     = `[\p{L}\p{N}_]`
)

// pyRe expands the Python-class placeholders ⟨s⟩ ⟨S⟩ ⟨d⟩ ⟨w⟩ ⟨s-nl⟩ in a
// pattern written for this package.
func pyRe(p string) string {
	return strings.NewReplacer(
		"⟨s⟩", reS, "⟨S⟩", reNotS, "⟨d⟩", reD, "⟨w⟩", reW, "⟨s-nl⟩", reSNoNL,
	).Replace(p)
}

// Package termsafe neutralises text that did not come from Truss before it
// reaches a terminal: file contents, command output, model text and what an
// MCP server returns. After String, nothing in the text can move the
// cursor, clear the screen, set the window title, write the clipboard (OSC
// 52), open a hyperlink (OSC 8) or reorder what the reader sees.
//
// The contract of String:
//
//   - Newline and tab are kept; a carriage return followed by a newline
//     becomes the newline alone, and any other carriage return becomes a
//     newline, so that no line can overwrite another.
//   - A control sequence (ESC [ or U+009B, its parameters and its final
//     byte: colours, cursor moves, erasures) is removed; it carries no text.
//   - Every other control is shown as <U+XXXX>: ESC (so an OSC, DCS or any
//     other escape is left as inert, readable text, "<U+001B>]0;title<U+0007>",
//     and nothing it carries is hidden from the reader), the C0 controls
//     other than newline and tab, DEL and the C1 controls.
//   - Bidirectional overrides, embeddings, isolates and marks (U+202A..E,
//     U+2066..9, U+200E, U+200F, U+061C) are shown as <U+XXXX>, so that the
//     text reads in the order it is stored.
//   - Bytes that are not UTF-8 become U+FFFD.
//
// The result never contains a byte below 0x20 other than newline and tab,
// nor DEL, nor a C1 or bidirectional control. Text that needs none of this
// is returned as it is, without copying.
//
// A file name or workspace path is shown with Name instead: String would
// remove an escape sequence from it and show a name that is not the
// file's, where Name shows every byte, escaped where it cannot be shown.
//
// Truss's own output (its colours and layout) is written around the
// neutralised text, never through it. Machine-readable outputs (JSON)
// carry the exact bytes and do not pass through this package.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

const esc = 0x1b

// String returns s made safe to print on a terminal.
func String(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f):
			b.WriteByte(c)
			i++
		case c == '\r':
			if i+1 >= len(s) || s[i+1] != '\n' {
				b.WriteByte('\n')
			}
			i++
		case c == esc && i+1 < len(s) && s[i+1] == '[':
			i = skipCSI(s, i+2)
		case c < 0x20 || c == 0x7f:
			visible(&b, rune(c))
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n <= 1:
				b.WriteRune(utf8.RuneError)
			case r >= 0x80 && r <= 0x9f:
				if r == 0x9b {
					i = skipCSI(s, i+n)
					continue
				}
				visible(&b, r)
			case bidi(r):
				visible(&b, r)
			default:
				b.WriteString(s[i : i+n])
			}
			i += n
		}
	}
	return b.String()
}

// Line is String for text shown on one line (a name, a summary, a code
// fence's language): every line break, the newlines String keeps and the
// carriage returns it turns into newlines, becomes a space, and a tab
// becomes a space too. The result holds no byte below 0x20.
func Line(s string) string {
	s = String(s)
	if !strings.ContainsAny(s, "\n\t") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		return r
	}, s)
}

// Bytes is String for a byte slice.
func Bytes(b []byte) string { return String(string(b)) }

// Writer neutralises everything written through it, each Write on its own
// (a sequence split across two writes is still neutralised, only less
// tidily).
type Writer struct{ W io.Writer }

// Write writes String(p) to the underlying writer and reports len(p) on
// success.
func (w Writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.W, Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// clean reports whether s needs no change.
func clean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || (r >= 0x80 && r <= 0x9f) || bidi(r) {
			return false
		}
		i += n
	}
	return true
}

// bidi reports whether r is a bidirectional formatting character.
func bidi(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

func visible(b *strings.Builder, r rune) { fmt.Fprintf(b, "<U+%04X>", r) }

// skipCSI returns the index after the parameters, intermediates and final
// byte of the control sequence opened just before i. A sequence cut off by
// a control or by the end of s ends there; the control is handled on its
// own.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

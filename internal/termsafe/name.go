package termsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Name returns a file name or workspace path as a person reading a
// terminal should see it: every byte of it, with what cannot be shown
// written as a visible escape, the way Go's %q and
// ls --quoting-style=escape write it (without the surrounding quotes).
// Where String removes an escape sequence, Name shows it: a file named
// "new\x1b[2J.txt" is shown as new\x1b[2J.txt, not as new.txt, because
// the name shown must be the name of the file.
//
// The contract of Name:
//
//   - A printable character (strconv.IsPrint: letters, marks, digits,
//     punctuation, symbols and the ASCII space) is shown as it is, except
//     the backslash, which is shown as \\, a space at either end of the
//     name, shown as \x20, and a combining mark at its start, shown as
//     \uXXXX, so that neither merges with the text around the name.
//   - \a, \b, \f, \n, \r, \t and \v are shown so; every other C0 control,
//     ESC and DEL as \xXX.
//   - Every other rune that is not printable is shown as \uXXXX or
//     \UXXXXXXXX: the C1 controls, bidirectional overrides, embeddings,
//     isolates and marks (U+202A..E, U+2066..9, U+200E, U+200F, U+061C),
//     zero-width and other format characters (U+200B..D, U+2060, U+FEFF,
//     U+00AD), line and paragraph separators, spaces other than U+0020,
//     private-use and unassigned code points.
//   - A byte that is not part of valid UTF-8 is shown as \xXX.
//
// The result holds only printable runes, so nothing in it can act on the
// terminal or reorder what the reader sees, and Name is one-to-one: two
// different names never give the same result (putting the result between
// double quotes, with each " escaped, gives a Go string literal that
// strconv.Unquote turns back into the name). A name that needs none of
// this is returned as it is, without copying.
func Name(s string) string {
	if plainName(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			hex2(&b, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == ' ' && (i == 0 || i+n == len(s)):
			b.WriteString(`\x20`)
		case i == 0 && unicode.In(r, unicode.Mn, unicode.Me):
			escapeRune(&b, r)
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			escapeRune(&b, r)
		}
		i += n
	}
	return b.String()
}

// plainName reports whether Name(s) is s.
func plainName(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || c == '\\' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !strconv.IsPrint(r) || (i == 0 && unicode.In(r, unicode.Mn, unicode.Me)) {
			return false
		}
		i += n
	}
	return true
}

// escapeRune writes the escape of a valid rune that is not shown as it is.
func escapeRune(b *strings.Builder, r rune) {
	switch r {
	case '\a':
		b.WriteString(`\a`)
	case '\b':
		b.WriteString(`\b`)
	case '\f':
		b.WriteString(`\f`)
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	case '\v':
		b.WriteString(`\v`)
	default:
		switch {
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			hex2(b, byte(r))
		case r <= 0xffff:
			b.WriteString(`\u`)
			hex2(b, byte(r>>8))
			hex2(b, byte(r))
		default:
			b.WriteString(`\U`)
			hex2(b, byte(r>>24))
			hex2(b, byte(r>>16))
			hex2(b, byte(r>>8))
			hex2(b, byte(r))
		}
	}
}

func hex2(b *strings.Builder, c byte) {
	const digits = "0123456789abcdef"
	b.WriteByte(digits[c>>4])
	b.WriteByte(digits[c&0xf])
}

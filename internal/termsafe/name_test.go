package termsafe

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestName(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "src/main.go", "src/main.go"},
		{"empty", "", ""},
		{"inner space", "my notes/a b.txt", "my notes/a b.txt"},
		{"unicode", "docs/naïve 日本.md", "docs/naïve 日本.md"},
		{"erase display", "new\x1b[2J.txt", `new\x1b[2J.txt`},
		{"title", "a\x1b]0;pwned\x07b", `a\x1b]0;pwned\ab`},
		{"newline", "one\ntwo", `one\ntwo`},
		{"carriage return", "evil\rgood.go", `evil\rgood.go`},
		{"tab", "a\tb", `a\tb`},
		{"nul del", "a\x00b\x7f", `a\x00b\x7f`},
		{"c0", "\x01\x1f", `\x01\x1f`},
		{"backslash", `a\x1b.txt`, `a\\x1b.txt`},
		{"c1 csi", "a\u009b2Jb", `a\u009b2Jb`},
		{"raw 8-bit byte", "a\x9b2Jb", `a\x9b2Jb`},
		{"invalid utf-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"encoded surrogate", "\xed\xa0\x80", `\xed\xa0\x80`},
		{"bidi override", "invoice\u202efdp.exe", `invoice\u202efdp.exe`},
		{"bidi isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`},
		{"bidi marks", "a\u200eb\u200fc\u061cd", `a\u200eb\u200fc\u061cd`},
		{"zero width", "ma\u200bin.go", `ma\u200bin.go`},
		{"zero width joiner and bom", "\ufeffa\u200d\u2060", `\ufeffa\u200d\u2060`},
		{"soft hyphen", "a\u00adb", `a\u00adb`},
		{"no-break space", "a\u00a0b", `a\u00a0b`},
		{"line separator", "a\u2028b", `a\u2028b`},
		{"private use", "\ue000", `\ue000`},
		{"tag character", "a\U000e0041", `a\U000e0041`},
		{"emoji", "🙂.txt", "🙂.txt"},
		{"leading space", " a", `\x20a`},
		{"trailing space", "a.go ", `a.go\x20`},
		{"only a space", " ", `\x20`},
		{"combining mark at start", "\u0301a", `\u0301a`},
		{"combining mark inside", "e\u0301.txt", "e\u0301.txt"},
		{"replacement character", "\ufffd", "\ufffd"},
		{"quote", `say "hi".txt`, `say "hi".txt`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Name(tc.in); got != tc.want {
				t.Errorf("Name(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := unname(t, tc.want); got != tc.in {
				t.Errorf("%q reads back as %q, want %q", tc.want, got, tc.in)
			}
		})
	}
}

// TestNameDistinct checks names that other neutralisations show alike.
func TestNameDistinct(t *testing.T) {
	for _, pair := range [][2]string{
		{"new\x1b[2J.txt", "new.txt"},
		{"a\x1bb", `a\x1bb`},
		{"a\xffb", "a\ufffdb"},
		{"a\u009bb", "a\x9bb"},
		{"a ", "a"},
		{"a\u200b", "a"},
		{"a\u00a0b", "a b"},
		{"a\nb", "a b"},
	} {
		if a, b := Name(pair[0]), Name(pair[1]); a == b {
			t.Errorf("Name(%q) = Name(%q) = %q", pair[0], pair[1], a)
		}
	}
}

// unname reads a result of Name back as a Go string literal.
func unname(t *testing.T, shown string) string {
	t.Helper()
	s, err := strconv.Unquote(`"` + strings.ReplaceAll(shown, `"`, `\"`) + `"`)
	if err != nil {
		t.Fatalf("%q does not read back: %v", shown, err)
	}
	return s
}

// unprintable says why shown could act on a terminal or hide a
// character, or returns "".
func unprintable(shown string) string {
	if !utf8.ValidString(shown) {
		return "invalid UTF-8"
	}
	for i, r := range shown {
		if !strconv.IsPrint(r) {
			return "unprintable " + strconv.QuoteRune(r)
		}
		if r == ' ' && (i == 0 || i == len(shown)-1) {
			return "space at an end"
		}
	}
	return ""
}

func FuzzName(f *testing.F) {
	for _, s := range []string{"", "new\x1b[2J.txt", `a\x1b`, "\u202e\u2066", "\xff\xfe", " a ", "\u0301", "\u009b", "\r\n\t", "e\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Name(in)
		if why := unprintable(out); why != "" {
			t.Fatalf("Name(%q) = %q: %s", in, out, why)
		}
		if strings.ContainsFunc(out, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || bidi(r) }) {
			t.Fatalf("Name(%q) = %q holds a control", in, out)
		}
		// One-to-one: the result reads back as the input, so no two
		// inputs share a result.
		if back := unname(t, out); back != in {
			t.Fatalf("Name(%q) = %q reads back as %q", in, out, back)
		}
		if String(out) != out {
			t.Fatalf("String changes Name's result %q to %q", out, String(out))
		}
	})
}

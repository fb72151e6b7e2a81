package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "hello, world\n\tindented\n", "hello, world\n\tindented\n"},
		{"unicode", "naïve — ✓ 日本", "naïve — ✓ 日本"},
		{"title and clear", "a \x1b]0;HIJACK\x07 \x1b[2J", "a <U+001B>]0;HIJACK<U+0007> "},
		{"colour", "\x1b[1;31mFAIL\x1b[0m ok", "FAIL ok"},
		{"cursor moves", "x\x1b[10;20Hy\x1b[?25l", "xy"},
		{"clipboard", "\x1b]52;c;ZXZpbA==\x1b\\done", "<U+001B>]52;c;ZXZpbA==<U+001B>\\done"},
		{"hyperlink", "\x1b]8;;https://evil.example\x07docs\x1b]8;;\x07", "<U+001B>]8;;https://evil.example<U+0007>docs<U+001B>]8;;<U+0007>"},
		{"dcs", "\x1bPq#0;2;0;0;0\x1b\\", "<U+001B>Pq#0;2;0;0;0<U+001B>\\"},
		{"lone escape at end", "tail\x1b", "tail<U+001B>"},
		{"csi cut off", "a\x1b[12", "a"},
		{"csi cut by newline", "a\x1b[1\nb", "a\nb"},
		{"8-bit csi", "a\u009b2Jb", "ab"},
		{"8-bit osc", "a\u009d0;t\u009cb", "a<U+009D>0;t<U+009C>b"},
		{"bell backspace", "ding\x07\x08\x08", "ding<U+0007><U+0008><U+0008>"},
		{"nul and del", "a\x00b\x7f", "a<U+0000>b<U+007F>"},
		{"crlf", "one\r\ntwo\r\n", "one\ntwo\n"},
		{"carriage return overwrite", "rm -rf /\rls", "rm -rf /\nls"},
		{"bidi override", "user\u202e\u2066admin\u2069", "user<U+202E><U+2066>admin<U+2069>"},
		{"bidi marks", "a\u200eb\u200fc\u061cd", "a<U+200E>b<U+200F>c<U+061C>d"},
		{"invalid utf-8", "a\xffb\xc3", "a\ufffdb\ufffd"},
		{"raw 8-bit csi byte", "a\x9b2Jb", "a\ufffd2Jb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := Bytes([]byte(tc.in)); got != tc.want {
				t.Errorf("Bytes(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCleanTextIsNotCopied(t *testing.T) {
	s := strings.Repeat("plain text\n", 100)
	if got := String(s); got != s {
		t.Fatal("changed")
	}
	allocs := testing.AllocsPerRun(100, func() { String(s) })
	if allocs != 0 {
		t.Fatalf("%v allocations for clean text", allocs)
	}
}

// unsafe reports why out could still act on a terminal, or "".
func unsafe(out string) string {
	if !utf8.ValidString(out) {
		return "invalid UTF-8"
	}
	for _, r := range out {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f:
			return "C0 control or DEL"
		case r >= 0x80 && r <= 0x9f:
			return "C1 control"
		case bidi(r):
			return "bidi control"
		}
	}
	return ""
}

func TestLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"two\nlines", "two lines"},
		{"cr\roverwrite", "cr overwrite"},
		{"crlf\r\nend", "crlf end"},
		{"tab\there", "tab here"},
		{"title \x1b]0;x\x07", "title <U+001B>]0;x<U+0007>"},
	} {
		if got := Line(tc.in); got != tc.want {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a \x1b]0;HIJACK\x07 \x1b[2J", "\x1b[1;31mx", "\u009b2J\u202e", "\r\n\r", "\xff\xfe", "\x1bP\x1b\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := String(in)
		if why := unsafe(out); why != "" {
			t.Fatalf("String(%q) = %q: %s", in, out, why)
		}
		if String(out) != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, out, String(out))
		}
		if unsafe(in) == "" && out != in {
			t.Fatalf("changed clean text %q to %q", in, out)
		}
		if l := Line(in); unsafe(l) != "" || strings.ContainsAny(l, "\n\t") {
			t.Fatalf("Line(%q) = %q: not one safe line", in, l)
		}
	})
}

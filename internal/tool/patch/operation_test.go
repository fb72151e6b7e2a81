package patch

import (
	"strings"
	"testing"
)

// The Responses front end has no punctuation pass: a typographic dash in
// the file does not match an ASCII one in the diff, as in the reference
// applier; Codex's envelope does match it.
func TestOperationHasNoPunctuationPass(t *testing.T) {
	if _, err := UpdateContent("a \u2014 b\n", "@@\n-a - b\n+x"); err == nil {
		t.Fatal("the operation front end matched across punctuation")
	}
	got, err := applyChunks([]byte("a \u2014 b\n"), []Chunk{{Ops: []Op{{Kind: Remove, Text: "a - b"}, {Kind: Insert, Text: "x"}}}}, "f")
	if err != nil || string(got) != "x\n" {
		t.Fatalf("the envelope did not: %q %v", got, err)
	}
}

// TestCreateContent follows the reference applier's create mode
// (apply_diff.py: _normalize_diff_lines, _detect_newline,
// _parse_create_diff): lines split on CRLF or LF, a final empty element
// dropped, every line "+"-prefixed, joined with the diff's own newline, and
// a line starting a new patch section ends the content.
func TestCreateContent(t *testing.T) {
	tests := []struct {
		name, diff, want, err string
	}{
		{"trailing newline", "+hello\n", "hello", ""},
		{"no trailing newline", "+hello", "hello", ""},
		{"final bare plus", "+hello\n+world\n+", "hello\nworld\n", ""},
		{"final bare plus and newline", "+hello\n+\n", "hello\n", ""},
		{"empty diff", "", "", ""},
		{"lone newline", "\n", "", "Invalid Add File Line: "},
		{"crlf diff", "+a\r\n+b\r\n+", "a\r\nb\r\n", ""},
		{"stray carriage returns", "+a\r\r\n+b", "a\r\nb", ""},
		{"empty line inside", "+a\n\n+b", "", "Invalid Add File Line: "},
		{"two trailing newlines", "+a\n\n", "", "Invalid Add File Line: "},
		{"no plus", "plain line", "", "Invalid Add File Line: plain line"},
		{"section terminator ends", "+a\n*** End Patch\n+b", "a", ""},
		{"next file ends", "+a\n*** Add File: b\n", "a", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CreateContent(tc.diff)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("CreateContent(%q) = %q, %v; want error %q", tc.diff, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CreateContent(%q) = %q, %v; want %q", tc.diff, got, err, tc.want)
			}
		})
	}
}

// FuzzCreateContent: a create diff never panics; what it accepts is every
// line's text after its "+", joined again with the diff's newline.
func FuzzCreateContent(f *testing.F) {
	for _, s := range []string{"+hello\n", "+a\r\n+b\r\n+", "", "\n", "x", "+a\n*** End Patch\n+b", "+\r\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, diff string) {
		got, err := CreateContent(diff)
		if err != nil {
			return
		}
		nl := "\n"
		if strings.Contains(diff, "\r\n") {
			nl = "\r\n"
		}
		for _, line := range strings.Split(got, nl) {
			if got != "" && !strings.Contains(diff, "+"+strings.TrimRight(line, "\r")) {
				t.Fatalf("CreateContent(%q) = %q: line %q is not in the diff", diff, got, line)
			}
		}
	})
}

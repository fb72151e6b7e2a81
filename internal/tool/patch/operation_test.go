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

// TestUpdateContent follows the reference applier's default mode
// (apply_diff.py): the file is the lines between its newlines, so its
// final newline is kept or kept absent; CRLF files stay CRLF; a file
// without a newline takes the diff's; stacked anchors narrow the search,
// and one found before the cursor counts as found.
func TestUpdateContent(t *testing.T) {
	tests := []struct {
		name, content, diff, want, err string
	}{
		{"no final newline stays without", "a\nb\nc", "@@\n a\n-b\n+B\n c\n", "a\nB\nc", ""},
		{"final newline stays", "a\nb\nc\n", "@@\n a\n-b\n+B\n c\n", "a\nB\nc\n", ""},
		{"last line replaced without final newline", "a\nb", "@@\n a\n-b\n+B", "a\nB", ""},
		{"append without final newline", "a\nb", "@@\n a\n b\n+c\n", "a\nb\nc", ""},
		{"append with final newline", "a\nb\n", "@@\n a\n b\n+c\n", "a\nb\nc\n", ""},
		{"crlf kept", "a\r\nb\r\n", "@@\n-b\n+B\n", "a\r\nB\r\n", ""},
		{"crlf without final newline", "a\r\nb", "@@\n a\n-b\n+B\n", "a\r\nB", ""},
		{"lf file, crlf diff", "a\nb\n", "@@\r\n-b\r\n+B\r\n", "a\nB\n", ""},
		{"one line, crlf diff: the diff's newline", "v1", "@@\r\n-v1\r\n+v2\r\n+v3\r\n", "v2\r\nv3", ""},
		{"empty file, crlf diff", "", "@@\r\n+a\r\n+b", "a\r\nb\r\n", ""},
		{"empty file", "", "@@\n+hello\n+world", "hello\nworld\n", ""},
		{"empty diff", "a\nb", "", "a\nb", ""},
		{"insert before the first line", "a\nb\n", "@@\n+z\n a\n", "z\na\nb\n", ""},
		{"end of file marker", "x\ny\nx", "@@\n x\n+end\n*** End of File\n", "x\ny\nx\nend", ""},
		// The reference's end is the empty element after the final
		// newline, which the context does not match: it falls back to
		// the first match from the cursor.
		{"end of file marker after a final newline", "x\ny\nx\n", "@@\n x\n+end\n*** End of File\n", "x\nend\ny\nx\n", ""},
		{"end of file marker falls back", "x\ny\n", "@@\n x\n+after\n*** End of File\n", "x\nafter\ny\n", ""},
		{"rstrip pass", "a  \nb\n", "@@\n a\n-b\n+B\n", "a  \nB\n", ""},
		{"trim pass", "  a\nb\n", "@@\n a\n-b\n+B\n", "  a\nB\n", ""},
		{"tabs kept", "f:\n\tgo test\n", "@@ f:\n-\tgo test\n+\tgo test -race\n", "f:\n\tgo test -race\n", ""},
		{"single anchor not found is advisory", "a\nb\n", "@@ nope\n-b\n+B", "a\nB\n", ""},
		{"stacked anchors", "class A\n  f\n  x\nclass B\n  f\n  x\n", "@@ class B\n@@   f\n-  x\n+  y\n", "class A\n  f\n  x\nclass B\n  f\n  y\n", ""},
		{"a prior anchor is found again", "class T\n  def a():\n    pass\n  def b():\n    pass\n",
			"@@ class T\n@@   def a():\n-    pass\n+    return 1\n@@ class T\n@@   def b():\n-    pass\n+    return 2\n",
			"class T\n  def a():\n    return 1\n  def b():\n    return 2\n", ""},
		{"partly found stack", "class T\n  def a():\n    pass\n", "@@ class T\n@@   def missing():\n-    pass\n+    x\n", "", "Invalid Anchor:\n  def missing():"},
		{"missing anchor before a bare marker", "a\nb\n", "@@ missing\n@@\n-b\n+B", "", "Invalid Anchor:\nmissing"},
		{"context not found", "a\nb\n", "@@\n-zzz\n+y", "", "Invalid Context:\nzzz"},
		{"eof context not found", "a\nb\n", "@@\n-zzz\n*** End of File", "", "Invalid EOF Context:\nzzz"},
		{"section without marker after a section", "a\nb\n", "@@\n-a\n*** End of File\n+x", "", "Invalid Line:\n+x"},
		{"stray marker", "a\n", "@@\n a\n*** Frob", "", "Invalid Line: *** Frob"},
		{"bad line", "a\n", "@@\n a\nb", "", "Invalid Line: b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UpdateContent(tc.content, tc.diff)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("UpdateContent(%q, %q) = %q, %v; want error %q", tc.content, tc.diff, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("UpdateContent(%q, %q) = %q, %v; want %q", tc.content, tc.diff, got, err, tc.want)
			}
		})
	}
}

// FuzzUpdateContent: an update diff never panics, and a diff that repeats
// every line of a file as context leaves the file as it was, but for its
// newlines all taking the file's style.
func FuzzUpdateContent(f *testing.F) {
	for _, s := range [][2]string{
		{"a\nb\nc", "@@\n a\n-b\n+B\n c\n"},
		{"a\r\nb", "@@\r\n-b\r\n+B"},
		{"", "@@\n+x"},
		{"x\ny\n", "@@\n x\n+e\n*** End of File\n"},
		{"class T\n  f\n", "@@ class T\n@@   f\n+  g\n"},
		{"a\rb\n", "@@\n-a\rb\n+c"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, content, diff string) {
		UpdateContent(content, diff)
		lines := strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n")
		var d strings.Builder
		d.WriteString("@@\n")
		for _, l := range lines {
			d.WriteString(" " + l + "\n")
		}
		got, err := UpdateContent(content, d.String())
		if err != nil {
			t.Fatalf("UpdateContent(%q, all context) failed: %v", content, err)
		}
		nl := "\n"
		if strings.Contains(content, "\r\n") {
			nl = "\r\n"
		}
		if want := strings.Join(lines, nl); got != want {
			t.Fatalf("UpdateContent(%q, all context) = %q, want %q", content, got, want)
		}
	})
}

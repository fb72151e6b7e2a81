package patch

import "testing"

// The envelope's second pass drops trailing white space as Rust's
// str::trim_end does, Unicode white space included: a line ending in a
// no-break space matches there, before the third pass could match an
// earlier indented line.
func TestEnvelopeTrailingUnicodeSpace(t *testing.T) {
	got, err := applyChunks([]byte("  a\na\u00a0\n"), []Chunk{{Ops: []Op{{Kind: Remove, Text: "a"}, {Kind: Insert, Text: "b"}}}}, "f")
	if err != nil || string(got) != "  a\nb\n" {
		t.Fatalf("got %q, %v; want %q", got, err, "  a\nb\n")
	}
}

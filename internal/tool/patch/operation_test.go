package patch

import "testing"

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

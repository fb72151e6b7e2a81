package trusscli

import (
	"strings"
	"testing"
)

// TestWriteModelText: on a terminal and into a pipe (a pager's, cat's: it
// reaches the terminal too) the model's escape sequences and controls are
// shown as inert text; only a terminal gets a final newline added.
func TestWriteModelText(t *testing.T) {
	const text = "a \x1b]0;HIJACK\x07 \x1b[2J \u202eevil"
	for _, tc := range []struct {
		terminal bool
		want     string
	}{
		{false, "a <U+001B>]0;HIJACK<U+0007>  <U+202E>evil"},
		{true, "a <U+001B>]0;HIJACK<U+0007>  <U+202E>evil\n"},
	} {
		var b strings.Builder
		if err := writeModelText(&b, text, tc.terminal); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("terminal %v: %q, want %q", tc.terminal, b.String(), tc.want)
		}
	}
}

package main

import (
	"strings"
	"testing"
)

// TestWriteModelText: into a pipe the model's text goes byte for byte; on a
// terminal its escape sequences and controls are shown as inert text.
func TestWriteModelText(t *testing.T) {
	const text = "a \x1b]0;HIJACK\x07 \x1b[2J \u202eevil"
	for _, tc := range []struct {
		terminal bool
		want     string
	}{
		{false, text},
		{true, "a <U+001B>]0;HIJACK<U+0007>  <U+202E>evil\n"},
	} {
		var b strings.Builder
		if err := writeModelText(&b, text, tc.terminal); err != nil {
			t.Fatal(err)
		}
		if tc.terminal && strings.ContainsAny(b.String(), "\x1b\x07\u202e") {
			t.Errorf("terminal output keeps a control: %q", b.String())
		}
		if !tc.terminal && b.String() != tc.want {
			t.Errorf("pipe output %q, want %q", b.String(), tc.want)
		}
	}
}

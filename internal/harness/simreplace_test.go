package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimReplaceEveryDialect: a script's replace edits the file as
// str_replace would on every dialect and tool surface, the apply_patch ones
// included (the simulated model patches the whole lines that hold the old
// text), whether the simulator is given the workspace (SimRoot) or, as for
// `truss run --provider sim`, learns it from the prompt.
func TestSimReplaceEveryDialect(t *testing.T) {
	cases := []struct{ name, content, old, new string }{
		{"inside a line", "package a\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n", "return a", "return 2*a"},
		{"end of a line", "one\ntwo three\nfour\n", "three", "3"},
		{"parts of lines", "alpha beta\ngamma delta\nepsilon\n", "beta\ngamma", "BETA\nGAMMA\nZETA"},
		{"joins two lines", "alpha beta\ngamma delta\nepsilon\n", "beta\ngamma ", ""},
		{"whole line with its newline", "l1\nl2\nl3\nl4\n", "l2\n", ""},
		{"first line", "first\nsecond\n", "fir", "FIR"},
		{"last line without a newline", "a\nb\nlast line", "line", "LINE"},
		{"the final newline", "a\nb\n", "b\n", "b"},
		{"crlf", "one\r\ntwo three\r\nfour\r\n", "three", "3"},
		{"crlf across lines", "one\r\ntwo three\r\nfour five\r\nsix\r\n", "three\r\nfour", "3\r\n4"},
		{"among repeated lines", "}\n}\n}\n\treturn a\n}\n}\n", "return a", "return b"},
		{"deep in a file", "1\n2\n3\n4\n5\n6\n7 seven\n8\n9\n10\n11\n", "seven", "SEVEN"},
	}
	runs := []struct{ dialect, surface, region, project string }{
		{"anthropic", "", "", ""},
		{"responses", "", "", ""},
		{"responses", "codex", "", ""},
		{"responses", "generic", "", ""},
		{"azure", "", "", ""},
		{"azure", "codex", "", ""},
		{"chat", "", "", ""},
		{"ollama", "", "", ""},
		{"gemini", "", "", ""},
		{"vertex", "", "global", "my-proj"},
		{"vertex-gemini", "", "us-central1", "my-proj"},
		{"bedrock", "", "", ""},
	}
	for _, r := range runs {
		for _, given := range []bool{true, false} {
			name := r.dialect + "/" + r.surface
			if !given {
				name += "/root-from-prompt"
			}
			t.Run(name, func(t *testing.T) {
				for _, tc := range cases {
					want := strings.Replace(tc.content, tc.old, tc.new, 1)
					script, err := json.Marshal(map[string]any{"steps": []any{
						map[string]any{"actions": []any{map[string]any{"kind": "replace", "path": "f.txt", "old": tc.old, "new": tc.new}}},
						map[string]any{"say": "Done."},
					}})
					if err != nil {
						t.Fatal(err)
					}
					o := fixture(t, string(script))
					o.Validation.Off = true
					o.SimDialect, o.Surface, o.Region, o.Project = r.dialect, r.surface, r.region, r.project
					if !given {
						o.SimRoot = ""
					}
					f := filepath.Join(o.Root, "f.txt")
					if err := os.WriteFile(f, []byte(tc.content), 0o644); err != nil {
						t.Fatal(err)
					}
					s, err := Open(context.Background(), o)
					if err != nil {
						t.Fatal(err)
					}
					_, err = s.Run(context.Background(), "Edit f.txt.")
					surf := s.Info().Surface
					s.Close()
					if err != nil {
						t.Fatalf("%s: %v", tc.name, err)
					}
					b, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					got := string(b)
					if got != want && !(patches(surf) && finalNewline(surf, tc.content, want, got)) {
						t.Errorf("%s (surface %s): f.txt is %q, want %q", tc.name, surf, got, want)
					}
				}
			})
		}
	}
}

// patches says whether a surface edits through apply_patch.
func patches(surface string) bool { return surface == "openai" || surface == "codex" }

// finalNewline says whether got is want but for the file's final newline,
// which a patch does not express: Codex's freeform applier ends every line
// it writes, the last one too, and the Responses operation keeps whether
// the file ended with a newline.
func finalNewline(surface, content, want, got string) bool {
	ends := func(s string) bool { return strings.HasSuffix(s, "\n") }
	trim := func(s string) string { return strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r") }
	if trim(got) != trim(want) {
		return false
	}
	if surface == "codex" {
		return ends(got)
	}
	return ends(got) == ends(content)
}

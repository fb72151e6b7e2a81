//go:build linux

package changes

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestNewDotGit: only the root's .git present at Open is not tracked; one
// a command makes, or puts in the place of the first, is tracked like
// any other directory.
func TestNewDotGit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		atOpen   bool   // a .git exists at Open
		replace  bool   // the command removes it first
		file     string // the command writes it
		recorded bool
	}{
		{"made during the session", false, false, ".git/payload", true},
		{"replaced during the session", true, true, ".git/payload", true},
		{"the one at Open", true, false, ".git/payload", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.atOpen {
				if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			tr := open(t, []string{root}, Options{NoGit: true})
			if tc.replace {
				if err := os.RemoveAll(filepath.Join(root, ".git")); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, tc.file), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			ch, err := tr.Scan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(paths(ch), tc.file); got != tc.recorded {
				t.Fatalf("%s recorded: %v, want %v (%v)", tc.file, got, tc.recorded, paths(ch))
			}
		})
	}
}

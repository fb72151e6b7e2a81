//go:build linux

package changes

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// TestWatchPlantedLink: a command that turns a watched directory into a
// link to an ancestor must not blind the watcher: every later scan still
// records what changes in the root.
func TestWatchPlantedLink(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mkdir  []string // turn 1 makes them (below the workspace "W")
		target string   // turn 2 replaces "c" with a link to it
		dir    string   // later turns write in it
	}{
		{"parent", []string{"c/W"}, "..", ""},
		{"self", []string{"c/a", "a"}, ".", "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "W")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			tr, err := Open(ctx, []string{root}, Options{NoGit: true})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if err := tr.Ready(ctx); err != nil {
				t.Fatal(err)
			}
			scan := func() []string {
				t.Helper()
				ch, err := tr.Scan(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return paths(ch)
			}
			for _, d := range tc.mkdir {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			scan()
			if err := os.RemoveAll(filepath.Join(root, "c")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tc.target, filepath.Join(root, "c")); err != nil {
				t.Fatal(err)
			}
			scan()
			for i, f := range []string{"one", "two", "three"} {
				if err := os.WriteFile(filepath.Join(root, tc.dir, f), []byte(f), 0o644); err != nil {
					t.Fatal(err)
				}
				if got := scan(); !slices.Contains(got, path.Join(tc.dir, f)) {
					t.Fatalf("turn %d: scan recorded %q, not the new file %q", i+3, got, f)
				}
			}
		})
	}
}

func paths(ch []tool.FileChange) []string {
	var out []string
	for _, c := range ch {
		out = append(out, c.Path)
	}
	return out
}

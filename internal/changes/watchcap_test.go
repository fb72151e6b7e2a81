//go:build linux

package changes

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
)

// TestWatchCap: the tracker holds no more inotify watches than
// Options.MaxWatches; past it, scans walk everything, so a change in a
// directory left unwatched is still recorded.
func TestWatchCap(t *testing.T) {
	const dirs, limit = 40, 10
	root := t.TempDir()
	for i := range dirs {
		if err := os.Mkdir(filepath.Join(root, fmt.Sprintf("d%02d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	tr := open(t, []string{root}, Options{NoGit: true, MaxWatches: limit})
	if tr.watch == nil {
		t.Skip("no inotify")
	}
	for i := range dirs {
		f := path.Join(fmt.Sprintf("d%02d", i), "new")
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		ch, err := tr.Scan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(paths(ch), f) {
			t.Fatalf("%s not recorded: %v", f, paths(ch))
		}
		tr.watch.mu.Lock()
		n := len(tr.watch.wds)
		tr.watch.mu.Unlock()
		if n > limit {
			t.Fatalf("%d watches held, the cap is %d", n, limit)
		}
	}
	// Below the cap again (the directories removed), scans are served by
	// the watches.
	for i := 5; i < dirs; i++ {
		if err := os.RemoveAll(filepath.Join(root, fmt.Sprintf("d%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := tr.Scan(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tr.watch.mu.Lock()
	left := len(tr.watch.unwatched)
	tr.watch.mu.Unlock()
	if left != 0 {
		t.Errorf("%d directories still unwatched below the cap", left)
	}
}

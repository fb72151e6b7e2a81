//go:build linux

package changes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestBigDirMerges: a command that makes one directory of many more files
// than the index's memory budget costs a bounded number of merges of the
// index, not one per bulk chunk (each of which read the whole directory
// back into memory: a scan quadratic in the directory's size).
func TestBigDirMerges(t *testing.T) {
	const n = 12 * bulkChunk
	root := t.TempDir()
	ctx := context.Background()
	tr := open(t, []string{root}, Options{NoGit: true, IndexMemory: 2 * bulkChunk})
	big := filepath.Join(root, "big")
	if err := os.Mkdir(big, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("f%06d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx := tr.roots[0].idx
	before := idx.merges
	ch, err := tr.Scan(ctx)
	if err != nil || len(ch) != 1 {
		t.Fatalf("scan: %d changes, %v", len(ch), err)
	}
	if m := idx.merges - before; m > 3 {
		t.Errorf("the scan merged the index %d times (at most 3 wanted)", m)
	}
	// What the scan recorded is in the index: nothing is found again.
	again, err := tr.Scan(ctx)
	if err != nil || len(again) != 0 {
		t.Errorf("second scan: %d changes, %v", len(again), err)
	}
}

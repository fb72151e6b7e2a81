//go:build linux

package changes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestScanCut: a scan whose context is done (the command or the session
// cancelled) reads no further directory and says it was cut; what it
// left is not lost, the next scan records it.
func TestScanCut(t *testing.T) {
	for _, watch := range []bool{false, true} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			root := t.TempDir()
			tr := open(t, []string{root}, Options{NoGit: true, NoWatch: !watch})
			const dirs = 50
			for i := range dirs {
				d := filepath.Join(root, fmt.Sprintf("d%02d", i))
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			ch, err := tr.Scan(ctx)
			var cut *CutError
			if !errors.As(err, &cut) || !errors.Is(err, context.Canceled) {
				t.Fatalf("a cancelled scan: %d changes, error %v, want a *CutError", len(ch), err)
			}
			if len(ch) != 0 {
				t.Errorf("a scan cancelled before it began read %d changes", len(ch))
			}
			ch, err = tr.Scan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n := count(ch); n != dirs {
				t.Errorf("the next scan recorded %d files, want %d: %v", n, dirs, paths(ch))
			}
		})
	}
}

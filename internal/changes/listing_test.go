//go:build linux

package changes

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// TestAttackHugeListing: a directory of 200,000 names of 246 bytes (51
// MB of names, a listing the tracker used to read whole before counting
// it: 120 MB of RSS) costs a scan no more than what the tracker keeps of
// a directory (MaxDirBytes) and a batch of the listing: it is read a
// batch at a time and the reading stops at the bound, and the directory
// is recorded as too large to track. A file written in it while it is
// too large is not recorded then; once the directory is small again,
// the scan that reads it records the file, with the contents it has
// then, as what changed since the directory was last tracked.
func TestAttackHugeListing(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 200,000 names")
	}
	if raceDetector {
		t.Skip("measures memory, which the race detector distorts (.ci/run runs it without)")
	}
	root := t.TempDir()
	tr := open(t, []string{root}, Options{NoGit: true, StoreDir: t.TempDir(), IndexMemory: DefaultIndexMemory})
	dir := filepath.Join(root, "src")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 200_000
	pad := strings.Repeat("a", 240)
	name := func(i int) string { return filepath.Join(dir, fmt.Sprintf("%s%06d", pad, i)) }
	// Hard links: 200,000 names at the cost of a few files (ext4 takes
	// 65,000 links to one).
	seed := filepath.Join(root, "seed")
	for i := range n {
		if i%50_000 == 0 {
			os.Remove(seed)
			if err := os.WriteFile(seed, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Link(seed, name(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(seed); err != nil {
		t.Fatal(err)
	}
	tooLarge := func(what string, ch []tool.FileChange) {
		t.Helper()
		if len(ch) != 1 || ch[0].Path != "src" || ch[0].Type != "too_large" ||
			!strings.HasPrefix(ch[0].AfterUnavailable, "too large to track: ") {
			t.Fatalf("%s: got %+v, want src too large to track", what, ch)
		}
	}
	tooLarge("200,000 names made", scanHeap(t, tr, "200,000 names of 246 bytes made"))
	if ch := scanHeap(t, tr, "nothing changed"); len(ch) != 0 {
		t.Errorf("nothing changed: got %+v, want no change (recorded once)", ch)
	}
	// Written while the directory is too large: the directory is recorded
	// again (an entry was made in it), the file is not.
	if err := os.WriteFile(filepath.Join(dir, "y"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tooLarge("a file written in it", scanHeap(t, tr, "a file written in the large directory"))
	// Small again: what changed since it was last tracked is recorded.
	for i := range n {
		if err := os.Remove(name(i)); err != nil {
			t.Fatal(err)
		}
	}
	ch := scanHeap(t, tr, "the 200,000 names removed")
	if len(ch) != 1 || ch[0].Path != "src/y" || ch[0].Kind != tool.ChangeAdd || ch[0].After != tool.Digest([]byte("hi\n")) || string(ch[0].AfterData) != "hi\n" {
		t.Fatalf("the directory small again: got %+v, want src/y added with its contents", ch)
	}
}

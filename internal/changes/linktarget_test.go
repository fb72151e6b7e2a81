//go:build linux

package changes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// scanHeap scans tr and fails the test when the heap peaks more than
// memoryBound above what it was before the scan.
func scanHeap(t *testing.T, tr *Tracker, what string) []tool.FileChange {
	t.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	runtime.GC()
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	stop := peakHeap()
	ch, err := tr.Scan(context.Background())
	peak := stop()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	above := peak - min(base, peak)
	entry, manifest := recordBytes(t, ch)
	t.Logf("%s: heap peaked %.1f MB above the test's, %d changes (%d files), record %d bytes, manifest %.1f MB",
		what, mb(above), len(ch), count(ch), entry, mb(uint64(manifest)))
	if above > memoryBound {
		t.Errorf("%s: the scan's heap peaked %.1f MB above the test's, past %.0f MB", what, mb(above), mb(memoryBound))
	}
	return ch
}

// longTarget is a link target of n bytes ending in i.
func longTarget(n, i int) string {
	s := fmt.Sprint(i)
	return strings.Repeat("x", n-len(s)) + s
}

// TestAttackLongLinkTargets: a command that makes 20,000 links with 4 KB
// targets in one directory (80 MB of targets) does not cost the host what
// the targets weigh: what the tracker would keep of the directory is past
// MaxDirBytes, so it is recorded once as too large to track, with the
// reason, and none of its links is read. Retargeting them all changes the
// directory, which is recorded again. Once the directory is small again it
// is tracked, and what is in it recorded.
func TestAttackLongLinkTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 20,000 links")
	}
	if raceDetector {
		t.Skip("measures memory, which the race detector distorts (.ci/run runs it without)")
	}
	root := t.TempDir()
	tr := open(t, []string{root}, Options{NoGit: true, StoreDir: t.TempDir(), IndexMemory: DefaultIndexMemory})
	const n = 20000
	dir := filepath.Join(root, "l")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.Symlink(longTarget(4000, i), filepath.Join(dir, fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	tooLarge := func(what string, ch []tool.FileChange) {
		t.Helper()
		if len(ch) != 1 || ch[0].Path != "l" || ch[0].Type != "too_large" || ch[0].Kind != tool.ChangeUpdate ||
			!strings.HasPrefix(ch[0].AfterUnavailable, "too large to track: ") || ch[0].LinkAfter != "" {
			t.Fatalf("%s: got %+v, want one change of l, too large to track", what, ch)
		}
	}
	tooLarge("20,000 links made", scanHeap(t, tr, "20,000 links with 4 KB targets made"))
	if ch := scanHeap(t, tr, "nothing changed"); len(ch) != 0 {
		t.Errorf("nothing changed: got %+v, want no change (recorded once)", ch)
	}
	for i := range n {
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(longTarget(4001, i), p); err != nil {
			t.Fatal(err)
		}
	}
	tooLarge("20,000 links retargeted", scanHeap(t, tr, "20,000 links retargeted"))
	// Small again: tracked, and what is there recorded.
	for i := 10; i < n; i++ {
		if err := os.Remove(filepath.Join(dir, fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	ch := scanHeap(t, tr, "all but 10 links removed")
	if len(ch) != 10 || ch[0].Path != "l/0" || ch[0].Kind != tool.ChangeAdd || ch[0].LinkAfter != longTarget(4001, 0) {
		t.Fatalf("all but 10 links removed: got %d changes (%+v), want the 10 links left, added", len(ch), ch[:min(len(ch), 1)])
	}
	if err := os.Remove(filepath.Join(dir, "0")); err != nil {
		t.Fatal(err)
	}
	if ch := scanHeap(t, tr, "one link removed"); len(ch) != 1 || ch[0].Path != "l/0" || ch[0].Kind != tool.ChangeDelete {
		t.Fatalf("one link removed: got %+v, want l/0 deleted", ch)
	}
}

// TestAttackLongLinksSpread: the same 80 MB of link targets spread over
// 400 directories of 50 links each, every directory well within
// MaxDirBytes: the index's overlay is bounded by bytes as well as by
// entries, so the targets go to disk as the scan reads them rather than
// staying in memory (20,000 entries are within the overlay's budget of
// entries).
func TestAttackLongLinksSpread(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 20,000 links")
	}
	if raceDetector {
		t.Skip("measures memory, which the race detector distorts (.ci/run runs it without)")
	}
	root := t.TempDir()
	tr := open(t, []string{root}, Options{NoGit: true, StoreDir: t.TempDir(), IndexMemory: DefaultIndexMemory})
	make := func(length int) {
		for d := range 400 {
			dir := filepath.Join(root, fmt.Sprintf("d%03d", d))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := range 50 {
				p := filepath.Join(dir, fmt.Sprint(i))
				os.Remove(p)
				if err := os.Symlink(longTarget(length, d*50+i), p); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	make(4000)
	ch := scanHeap(t, tr, "20,000 links in 400 directories made")
	if len(ch) != 1 || ch[0].Files != 20000 {
		t.Fatalf("got %+v, want one bulk change of 20,000 files", ch)
	}
	make(4001)
	ch = scanHeap(t, tr, "20,000 links in 400 directories retargeted")
	if len(ch) != 1 || ch[0].Files != 20000 {
		t.Fatalf("got %+v, want one bulk change of 20,000 files", ch)
	}
	// The index kept every target, on disk: one link retargeted is
	// recorded with its target before.
	p := filepath.Join(root, "d123", "7")
	os.Remove(p)
	if err := os.Symlink("short", p); err != nil {
		t.Fatal(err)
	}
	ch = scanHeap(t, tr, "one link retargeted")
	if len(ch) != 1 || ch[0].Path != "d123/7" || ch[0].LinkBefore != longTarget(4001, 123*50+7) || ch[0].LinkAfter != "short" {
		t.Fatalf("got %+v, want d123/7 retargeted from its long target", ch)
	}
}

// TestTooLargeBaseline: a directory too large to track when the session
// begins is not a change (no command made it), and is recorded when a
// command adds to it.
func TestTooLargeBaseline(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "big")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, watch := range []bool{true, false} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			tr := open(t, []string{root}, Options{NoGit: true, NoWatch: !watch, MaxDirBytes: 30 * entryBytes})
			ch, err := tr.Scan(context.Background())
			if err != nil || len(ch) != 0 {
				t.Fatalf("nothing changed: %v %+v", err, ch)
			}
			sh(t, root, fmt.Sprintf("echo x > big/new%v && echo %v > a", watch, watch))
			ch, err = tr.Scan(context.Background())
			slices.SortFunc(ch, func(a, b tool.FileChange) int { return strings.Compare(a.Path, b.Path) })
			if err != nil || len(ch) != 2 || ch[0].Path != "a" || ch[1].Path != "big" || ch[1].Type != "too_large" || ch[1].Mode != "0755" {
				t.Fatalf("a file added to the large directory: %v %+v", err, ch)
			}
		})
	}
}

// TestAttackManyLongDirs: a command that makes 30,000 subdirectories with
// 200-byte names in one directory does not cost the host what reading
// them all would (36 MB of heap): a subdirectory counts its path and what
// reading it costs the scan towards MaxDirBytes, so the directory is
// recorded as too large to track.
func TestAttackManyLongDirs(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 30,000 directories")
	}
	if raceDetector {
		t.Skip("measures memory, which the race detector distorts (.ci/run runs it without)")
	}
	root := t.TempDir()
	tr := open(t, []string{root}, Options{NoGit: true, StoreDir: t.TempDir(), IndexMemory: DefaultIndexMemory})
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 30000 {
		if err := os.Mkdir(filepath.Join(root, "d", fmt.Sprintf("%0200d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ch := scanHeap(t, tr, "30,000 directories with 200-byte names made")
	if len(ch) != 1 || ch[0].Path != "d" || ch[0].Type != "too_large" {
		t.Fatalf("got %+v, want d too large to track", ch)
	}
}

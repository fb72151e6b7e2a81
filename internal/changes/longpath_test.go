//go:build linux

package changes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/tool"
)

// longDir makes, by descriptor, a directory of root whose path relative to
// it is top followed by depth names of 250 bytes, and in it n empty files
// whose names are 187 bytes long. It returns the directory's path relative
// to root.
func longDir(tb testing.TB, root, top string, depth, n int) string {
	tb.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	name := strings.Repeat("d", 250)
	parts := append([]string{top}, strings.Split(strings.Repeat(name+"/", depth), "/")[:depth]...)
	for _, c := range parts {
		if err := unix.Mkdirat(fd, c, 0o755); err != nil && err != unix.EEXIST {
			tb.Fatal(err)
		}
		nfd, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		unix.Close(fd)
		if err != nil {
			tb.Fatal(err)
		}
		fd = nfd
	}
	defer unix.Close(fd)
	for i := range n {
		f, err := unix.Openat(fd, fmt.Sprintf("f%06d%0180d", i, 0), unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, 0o644)
		if err != nil {
			tb.Fatal(err)
		}
		unix.Close(f)
	}
	return strings.Join(parts, "/")
}

// recordBytes is what the changes cost a record of them: their JSON and
// the payloads a bulk change carries (its manifest).
func recordBytes(tb testing.TB, ch []tool.FileChange) (entry, manifest int64) {
	tb.Helper()
	b, err := json.Marshal(ch)
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range ch {
		if c.Files == 0 {
			continue
		}
		r, err := c.OpenAfter()
		if err != nil {
			tb.Fatal(err)
		}
		n, err := io.Copy(io.Discard, r)
		r.Close()
		if err != nil {
			tb.Fatal(err)
		}
		manifest += n
	}
	return int64(len(b)), manifest
}

// TestLongPathsMemory: a command that makes 20,000 empty files in four
// directories whose paths are 3.8 KB long costs the scan a bounded heap:
// the diffs share their directory's path and are spilled to disk by
// bytes, not held as 20,000 full paths (76 MB). The record is one bulk
// change.
func TestLongPathsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20,000 files")
	}
	if raceDetector {
		t.Skip("measures memory, which the race detector distorts (.ci/run runs it without)")
	}
	const dirs, per = 4, 5000
	const n = dirs * per
	root := t.TempDir()
	ctx := context.Background()
	tr := open(t, []string{root}, Options{NoGit: true, StoreDir: t.TempDir()})
	for k := range dirs {
		longDir(t, root, fmt.Sprintf("k%d", k), 15, per)
	}

	defer debug.SetGCPercent(debug.SetGCPercent(20))
	runtime.GC()
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	stop := peakHeap()
	ch, err := tr.Scan(ctx)
	peak := stop()
	if err != nil {
		t.Fatal(err)
	}
	above := peak - min(base, peak)
	entry, manifest := recordBytes(t, ch)
	t.Logf("%d files, 3.8 KB paths: peak heap %.1f MB above the test's, %d changes, record %d bytes, manifest %.1f MB",
		n, mb(above), len(ch), entry, mb(uint64(manifest)))
	if len(ch) != 1 || ch[0].Files != n {
		t.Fatalf("got %d changes (%d files in the first), want one bulk change of %d files", len(ch), count(ch), n)
	}
	if above > memoryBound {
		t.Errorf("the scan's heap peaked %.1f MB above the test's, past %.0f MB", mb(above), mb(memoryBound))
	}
}

// TestLongPathsBulkByBytes: fewer files than the bulk threshold, but paths
// long enough that a change each would make a record of megabytes, are one
// bulk change: the record is bounded by bytes, not only by count.
func TestLongPathsBulkByBytes(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	tr := open(t, []string{root}, Options{NoGit: true})
	const n = 300 // under DefaultBulkThreshold
	longDir(t, root, "k0", 15, n)
	ch, err := tr.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	entry, manifest := recordBytes(t, ch)
	t.Logf("%d changes, record %d bytes, manifest %d bytes", len(ch), entry, manifest)
	if len(ch) != 1 || ch[0].Files != n {
		t.Fatalf("got %d changes, want one bulk change of %d files", len(ch), n)
	}
	if entry > 4<<10 {
		t.Errorf("the record is %d bytes", entry)
	}
	// Under the byte budget, the same files with short paths are a change each.
	tr2 := open(t, []string{t.TempDir()}, Options{NoGit: true})
	longDir(t, tr2.roots[0].abs, "k0", 0, n)
	ch, err = tr2.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != n {
		t.Errorf("short paths: %d changes, want %d", len(ch), n)
	}
}

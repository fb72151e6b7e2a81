package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/sandbox/helper"
)

// TestSpaceWalk: the walk counts the files changed since the session
// began, not those from before, and files deleted but held open.
func TestSpaceWalk(t *testing.T) {
	dir := t.TempDir()
	fill := func(name string, n int) {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fill("old.bin", 4<<20)
	// Change times come from a clock that lags by up to a tick.
	time.Sleep(100 * time.Millisecond)
	s := newSpace([]string{dir}, 64<<20)
	s.since = time.Now().Add(-40 * time.Millisecond)
	if len(s.fs) != 1 {
		t.Fatalf("file systems: %+v", s.fs)
	}
	fill("new.bin", 8<<20)
	f, err := os.Create(filepath.Join(dir, "held.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.Remove(f.Name())
	if _, err := f.Write(make([]byte, 2<<20)); err != nil {
		t.Fatal(err)
	}
	// A link to a directory elsewhere (a command's) is not walked through.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "far.bin"), make([]byte, 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(dir, "link"))
	held := s.rewalk(0, []int{os.Getpid()})
	if held < 10<<20 || held >= 14<<20 || s.unread != "" {
		t.Errorf("the walk found %s (unread %q), want 10 MiB and a little", FormatSize(held), s.unread)
	}
	// No walk while the free space has not fallen by what is left.
	s.nextWalk = time.Time{}
	fill("more.bin", 1<<20)
	if got := s.check(1<<40, func() []int { return nil }); got != held {
		t.Errorf("walked under a limit of 1 TiB: %s", FormatSize(got))
	}
	if os.Getuid() == 0 {
		t.Log("root reads every directory: the unreadable one is not tried")
		return
	}
	sub := filepath.Join(dir, "closed")
	os.Mkdir(sub, 0o755)
	os.Chmod(sub, 0)
	defer os.Chmod(sub, 0o755)
	prev := s.held
	if held := s.rewalk(5<<20, nil); s.unread != sub || held < prev+5<<20 {
		t.Errorf("an unreadable directory: unread %q, held %s", s.unread, FormatSize(held))
	}
}

// TestSpaceCountsFiles: files that take no blocks (empty ones) still
// take the budget, a block each at least: a command cannot use up the
// file system's inodes for free.
func TestSpaceCountsFiles(t *testing.T) {
	dir := t.TempDir()
	s := newSpace([]string{dir}, 64<<20)
	s.since = time.Now().Add(-time.Second)
	if s.fileCost < minFileCost {
		t.Fatalf("fileCost %d", s.fileCost)
	}
	const n = 5000
	for i := range n {
		f, err := os.Create(filepath.Join(dir, "e"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if fall := s.fall(false); fall < (n-100)*s.fileCost {
		t.Errorf("the free space watched fell by %s after %d new inodes, want %s or more", FormatSize(fall), n, FormatSize((n-100)*s.fileCost))
	}
	if held := s.rewalk(0, nil); held < n*s.fileCost {
		t.Errorf("the walk counts %s for %d empty files, want at least %s", FormatSize(held), n, FormatSize(n*s.fileCost))
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/x\134y`: `/x\y`, `/end\04`: `/end\04`} {
		if got := helper.UnescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

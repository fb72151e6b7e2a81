package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
	// The free space watched is the file system's: other processes (the
	// packages' tests run side by side) free inodes on it while the files
	// are made, so a round whose fall is short is made again, up to three.
	const n = 5000
	var fall, want int64
	for round := range 3 {
		dir := t.TempDir()
		s := newSpace([]string{dir}, 64<<20)
		s.since = time.Now().Add(-time.Second)
		if s.fileCost < minFileCost {
			t.Fatalf("fileCost %d", s.fileCost)
		}
		for i := range n {
			f, err := os.Create(filepath.Join(dir, "e"+strconv.Itoa(i)))
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		fall, want = s.fall(false), (n-100)*s.fileCost // before the walk, which measures again from there
		if held := s.rewalk(0, nil); held < n*s.fileCost {
			t.Errorf("the walk counts %s for %d empty files, want at least %s", FormatSize(held), n, FormatSize(n*s.fileCost))
		}
		if fall >= want {
			return
		}
		t.Logf("round %d: the free space watched fell by %s, want %s or more", round+1, FormatSize(fall), FormatSize(want))
	}
	t.Errorf("the free space watched fell by %s after %d new inodes, want %s or more", FormatSize(fall), n, FormatSize(want))
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/x\134y`: `/x\y`, `/end\04`: `/end\04`} {
		if got := helper.UnescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSpaceWalkMapped: a file deleted while this process keeps only a
// shared mapping of it (its descriptor closed) is counted, sized through
// /proc/PID/map_files; where that cannot be read (no
// CAP_CHECKPOINT_RESTORE in the initial user namespace), the file is one
// the walk cannot size, and the free space lost since the last walk
// counts.
func TestSpaceWalkMapped(t *testing.T) {
	dir := t.TempDir()
	s := newSpace([]string{dir}, 64<<20)
	s.since = time.Now().Add(-time.Second)
	f, err := os.Create(filepath.Join(dir, "mapped.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 8<<20)); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	f.Close()
	os.Remove(f.Name())
	pids := []int{os.Getpid()}
	if _, err := os.Stat(filepath.Join("/proc/self/map_files")); err != nil {
		t.Skip("no /proc/PID/map_files on this kernel")
	}
	var st unix.Stat_t
	sized := false
	ms, _ := deletedMappings(os.Getpid())
	for _, m := range ms {
		if unix.Stat("/proc/self/map_files/"+m.area, &st) == nil {
			sized = true
		}
	}
	if sized {
		if held, unread, _ := s.walk(pids); held < 8<<20 || unread != "" {
			t.Errorf("the walk found %s (unread %q), want the 8 MiB mapped", FormatSize(held), unread)
		}
	} else {
		t.Log("map_files cannot be read here: only the fallback is tried")
	}
	s.statMapped = func(string, *syscall.Stat_t) error { return syscall.EPERM }
	prev := s.held
	if held := s.rewalk(5<<20, pids); s.unread == "" || held < prev+5<<20 {
		t.Errorf("a mapped file that cannot be sized: unread %q, held %s", s.unread, FormatSize(held))
	}
}

// TestParseDeletedMappings: the lines of /proc/PID/maps whose file is
// deleted, one per device and inode.
func TestParseDeletedMappings(t *testing.T) {
	tests := []struct {
		name string
		maps string
		want []mapping
	}{
		{"none", "55d0-55d1 r--p 00000000 fd:00 1234 /usr/bin/cat\n7ffd-7ffe rw-p 00000000 00:00 0 [stack]\n", nil},
		{"one shared", "7f00-7f01 r--s 00000000 fd:01 42 /w/.de0 (deleted)\n", []mapping{{"7f00-7f01", unix.Mkdev(0xfd, 1), 42}}},
		{"private too", "7f00-7f01 r--p 00001000 08:10 7 /w/x (deleted)\n", []mapping{{"7f00-7f01", unix.Mkdev(8, 0x10), 7}}},
		{"once per inode", "7f00-7f01 r--s 00000000 fd:01 42 /w/a (deleted)\n7f02-7f03 r--s 00000000 fd:01 42 /w/a (deleted)\n", []mapping{{"7f00-7f01", unix.Mkdev(0xfd, 1), 42}}},
		{"spaces in the name", "7f00-7f01 r--s 00000000 fd:01 9 /w/a b  c (deleted)\n", []mapping{{"7f00-7f01", unix.Mkdev(0xfd, 1), 9}}},
		{"no inode", "7f00-7f01 rw-s 00000000 00:01 0 /SYSV00000000 (deleted)\n", nil},
		{"malformed", "7f00 r--s 00000000 fd:01 42 x (deleted)\nx-y r--s 0 zz:01 42 x (deleted)\n7f-80 r--s 0 fd01 42 x (deleted)\n (deleted)\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseDeletedMappings(tc.maps); !slices.Equal(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseDeletedMappings: any text parses without a panic into
// mappings with an inode, each device and inode once.
func FuzzParseDeletedMappings(f *testing.F) {
	f.Add("7f00-7f01 r--s 00000000 fd:01 42 /w/.de0 (deleted)\n")
	f.Add("55d0-55d1 r--p 00000000 fd:00 1234 /usr/bin/cat\n")
	f.Add("a-b c d ffffffff:ffffffff 18446744073709551615 e (deleted)")
	f.Fuzz(func(t *testing.T, maps string) {
		seen := map[[2]uint64]bool{}
		for _, m := range parseDeletedMappings(maps) {
			k := [2]uint64{m.dev, m.ino}
			if m.ino == 0 || seen[k] || !strings.Contains(m.area, "-") {
				t.Fatalf("%+v in %q", m, maps)
			}
			seen[k] = true
		}
	})
}

// bigDir makes a directory of n hard links with long names to one empty
// file: a listing that takes blocks of its own, and no file that does.
func bigDir(t *testing.T, dir string, n int) string {
	t.Helper()
	d := filepath.Join(dir, "big")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	seed := filepath.Join(dir, "seed")
	if err := os.WriteFile(seed, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("n", 200)
	for i := range n {
		if err := os.Link(seed, filepath.Join(d, pad+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// emptyOut removes what d holds, then d.
func emptyOut(t *testing.T, d string) {
	t.Helper()
	if err := os.RemoveAll(d); err != nil {
		t.Fatal(err)
	}
}

// onOwnThread runs f on a thread of its own that has first unshared
// flags (CLONE_FILES, CLONE_FS), and keeps the thread until the test
// ends; f's error fails the test.
func onOwnThread(t *testing.T, flags int, f func() error) {
	t.Helper()
	done, errc := make(chan struct{}), make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Unshare(flags); err != nil {
			errc <- err
			return
		}
		errc <- f()
		<-done
	}()
	t.Cleanup(func() { close(done) })
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestSpaceWalkHeldDeleted: an object of any type that no directory
// names any more but a process holds is counted, its blocks from stat —
// a deleted directory whose listing takes blocks, held open, as a
// child's working directory, or by a thread with a descriptor table or
// a working directory of its own — and while one is held, all the free
// space lost since the last walk counts.
func TestSpaceWalkHeldDeleted(t *testing.T) {
	tests := []struct {
		name string
		hold func(t *testing.T, d string) []int // holds d, and says which processes to read
	}{
		{"open", func(t *testing.T, d string) []int {
			f, err := os.Open(d)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return []int{os.Getpid()}
		}},
		{"a child's working directory", func(t *testing.T, d string) []int {
			cmd := exec.Command("sleep", "60")
			cmd.Dir = d
			if err := cmd.Start(); err != nil {
				t.Skipf("no sleep(1): %v", err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			return []int{cmd.Process.Pid}
		}},
		{"a thread's own descriptor table", func(t *testing.T, d string) []int {
			onOwnThread(t, unix.CLONE_FILES, func() error {
				_, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				return err // the descriptor is the thread's table's alone, and goes with it
			})
			return []int{os.Getpid()}
		}},
		{"a thread's own working directory", func(t *testing.T, d string) []int {
			onOwnThread(t, unix.CLONE_FS, func() error { return unix.Chdir(d) })
			return []int{os.Getpid()}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newSpace([]string{dir}, 64<<20)
			s.since = time.Now().Add(-time.Second)
			d := bigDir(t, dir, 3000)
			var st unix.Stat_t
			if err := unix.Stat(d, &st); err != nil {
				t.Fatal(err)
			}
			pids := tc.hold(t, d)
			emptyOut(t, d)
			// The directory's blocks after it is emptied and removed
			// (ext4 keeps them; a file system that frees them counts
			// what it keeps).
			size := int64(-1)
			for _, h := range heldObjects(pids[0], syscall.Stat) {
				if h.ino == st.Ino && h.st != nil {
					size = h.st.Blocks * 512
				}
			}
			if size < 0 {
				t.Fatalf("the deleted directory (inode %d) is not among what process %d holds: %+v", st.Ino, pids[0], heldObjects(pids[0], syscall.Stat))
			}
			t.Logf("the deleted directory takes %s (%s before it was emptied)", FormatSize(size), FormatSize(st.Blocks*512))
			held, unread, deleted := s.walk(pids)
			if held < size || unread != "" || !strings.Contains(deleted, "deleted directory") {
				t.Errorf("the walk found %s (unread %q, deleted %q), want the directory's %s", FormatSize(held), unread, deleted, FormatSize(size))
			}
			prev := s.held
			if held := s.rewalk(5<<20, pids); s.deleted == "" || held < prev+5<<20 {
				t.Errorf("the free space lost while a deleted object is held: deleted %q, held %s, want %s or more", s.deleted, FormatSize(held), FormatSize(prev+5<<20))
			}
		})
	}
}

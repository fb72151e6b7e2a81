package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestRegistryAdd: paths are recorded once per kind, absolute; the ones
// gone are dropped at the next Add and not returned by Paths; benchmarks
// adding at once lose nothing (the lock).
func TestRegistryAdd(t *testing.T) {
	dir := t.TempDir()
	r := &Registry{File: filepath.Join(dir, "data", "bench", "known-paths.json")}
	if got, err := r.Paths(); err != nil || len(got) != 0 {
		t.Fatalf("empty registry: %v, %v", got, err)
	}
	out1 := filepath.Join(dir, "out1")
	gone := filepath.Join(dir, "gone")
	for _, d := range []string{out1, gone} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Add(KnownOut, out1, gone, ""); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(KnownOut, out1); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	// Not dropped while it may be a --out not made yet; a day later, it is.
	b, err := os.ReadFile(r.File)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), gone) {
		t.Fatalf("a path just recorded was dropped:\n%s", b)
	}
	b = []byte(strings.ReplaceAll(string(b), `"added": "2`, `"added": "1`))
	if err := os.WriteFile(r.File, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := r.Paths()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path != out1 || got[0].Kind != KnownOut {
		t.Errorf("Paths() = %+v, want only %s", got, out1)
	}

	var wg sync.WaitGroup
	var want []string
	for i := range 8 {
		d := filepath.Join(dir, "many", string(rune('a'+i)))
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		want = append(want, d)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Add(KnownDataset, d); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err = r.Paths()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, k := range got {
		paths = append(paths, k.Path)
	}
	for _, w := range want {
		if !slices.Contains(paths, w) {
			t.Errorf("%s lost among concurrent adds: %v", w, paths)
		}
	}
	b, err = os.ReadFile(r.File)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), gone) {
		t.Errorf("a path gone is still recorded:\n%s", b)
	}
}

// TestRegistryRefusesBadFiles: a malformed registry is an error that names
// the file, not an empty registry.
func TestRegistryRefusesBadFiles(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"not json", "hello", "not a registry"},
		{"version", `{"version": 2, "paths": []}`, "version 2"},
		{"relative", `{"version": 1, "paths": [{"path": "out", "kind": "out"}]}`, "not a clean absolute path"},
		{"unclean", `{"version": 1, "paths": [{"path": "/a/../b", "kind": "out"}]}`, "not a clean absolute path"},
		{"no kind", `{"version": 1, "paths": [{"path": "/a"}]}`, "has no kind"},
		{"unknown field", `{"version": 1, "paths": [], "x": 1}`, "unknown field"},
		{"trailing", `{"version": 1, "paths": []} {}`, "data after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Registry{File: filepath.Join(t.TempDir(), "known-paths.json")}
			if err := os.WriteFile(r.File, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := r.Paths()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), r.File) {
				t.Errorf("Paths() error = %v, want one naming %s and saying %q", err, r.File, tc.want)
			}
			if err := r.Add(KnownOut, "/x"); err == nil {
				t.Errorf("Add over a bad registry: no error")
			}
		})
	}
}

// TestConfinement: which known paths a benchmark hides, which it covers
// (they hold its own directories) and which it leaves.
func TestConfinement(t *testing.T) {
	own := []string{"/w/bench/work", "/var/tmp/t/truss-bench-1"}
	known := func(paths ...string) []KnownPath {
		var out []KnownPath
		for _, p := range paths {
			out = append(out, KnownPath{Path: p, Kind: KnownOut})
		}
		return out
	}
	for _, tc := range []struct {
		name                     string
		paths                    []string
		hidden, covered, skipped []string
	}{
		{"others hidden", []string{"/w/old-out", "/data/tasks.jsonl"}, []string{"/w/old-out", "/data/tasks.jsonl"}, nil, nil},
		{"holding own covered", []string{"/w", "/w/bench"}, nil, []string{"/w", "/w/bench"}, nil},
		{"own and in own left", []string{"/w/bench/work", "/w/bench/work/x", "/var/tmp/t/truss-bench-1/y"}, nil, nil, nil},
		{"in the temporary directory or /tmp left", []string{"/var/tmp/t/other", "/tmp/out"}, nil, nil, nil},
		{"home and root skipped", []string{"/home", "/home/u", "/"}, nil, nil, []string{"/home", "/home/u", "/"}},
		{"in home hidden", []string{"/home/u/out"}, []string{"/home/u/out"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, c, s := Confinement(known(tc.paths...), own, []string{"/var/tmp/t", "/tmp"}, "/home/u")
			if !slices.Equal(h, tc.hidden) || !slices.Equal(c, tc.covered) || !slices.Equal(s, tc.skipped) {
				t.Errorf("Confinement(%q) = hidden %q, covered %q, skipped %q; want %q, %q, %q", tc.paths, h, c, s, tc.hidden, tc.covered, tc.skipped)
			}
		})
	}
}

// FuzzParseRegistry: any input parses or is refused, and what parses is
// clean absolute paths with kinds.
func FuzzParseRegistry(f *testing.F) {
	f.Add([]byte(`{"version": 1, "paths": [{"path": "/a/out", "kind": "out", "added": "2026-01-02T03:04:05Z"}]}`))
	f.Add([]byte(`{"version": 1, "paths": []}`))
	f.Add([]byte(`{"version": 1, "paths": [{"path": "a", "kind": "out"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		paths, err := ParseRegistry(b)
		if err != nil {
			return
		}
		for _, p := range paths {
			if !filepath.IsAbs(p.Path) || filepath.Clean(p.Path) != p.Path || p.Kind == "" {
				t.Fatalf("accepted %+v", p)
			}
		}
	})
}

// TestKnownViewSeesLaterPaths: a path recorded after the view was first
// read (a benchmark started later) is in its next answer, and so is a
// --out recorded before it is made.
func TestKnownViewSeesLaterPaths(t *testing.T) {
	dir := t.TempDir()
	r := &Registry{File: filepath.Join(dir, "known-paths.json")}
	early := filepath.Join(dir, "early-out")
	if err := os.Mkdir(early, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(KnownOut, early); err != nil {
		t.Fatal(err)
	}
	v := &KnownView{Registry: r, Own: []string{filepath.Join(dir, "own")}}
	hidden, _, err := v.Current()
	if err != nil {
		t.Fatal(err)
	}
	// The registry's own directory is hidden too.
	if !slices.Equal(hidden, []string{early, dir}) {
		t.Fatalf("hidden %q, want %q and %q", hidden, early, dir)
	}
	later := filepath.Join(dir, "later-out") // not made yet
	if err := r.Add(KnownOut, later); err != nil {
		t.Fatal(err)
	}
	hidden, _, err = v.Current()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hidden, []string{early, later, dir}) {
		t.Errorf("hidden %q, want %q, %q and %q", hidden, early, later, dir)
	}
	// A registry gone bad: the last answer, and the error.
	if err := os.WriteFile(r.File, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	hidden, _, err = v.Current()
	if err == nil || !slices.Equal(hidden, []string{early, later, dir}) {
		t.Errorf("bad registry: hidden %q, err %v; want the last answer and an error", hidden, err)
	}
}

// TestRegistryLockDoesNotBlock: while another holds the registry's lock,
// readers (KnownView, All) answer at once, and writers give up after
// LockWait with a *LockedError that names the lock and, where /proc/locks
// tells, the holder; once it is let go, writers succeed.
func TestRegistryLockDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	r := &Registry{File: filepath.Join(dir, "bench", "known-paths.json"), LockWait: 200 * time.Millisecond}
	out := filepath.Join(dir, "out")
	if err := r.Add(KnownOut, out); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "bench", "known-paths.lock")
	f, err := os.Open(lock) // read-only is enough to hold a flock
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if got, err := r.All(); err != nil || len(got) != 1 || got[0].Path != out {
		t.Errorf("All() while locked = %+v, %v; want %s", got, err, out)
	}
	v := &KnownView{Registry: r}
	if hidden, _, err := v.Current(); err != nil || !slices.Contains(hidden, out) {
		t.Errorf("Current() while locked = %q, %v; want %s hidden", hidden, err, out)
	}
	for name, write := range map[string]func() error{
		"add":    func() error { return r.Add(KnownOut, filepath.Join(dir, "out2")) },
		"remove": func() error { return r.Remove(KnownOut, out) },
	} {
		err := write()
		var le *LockedError
		if !errors.As(err, &le) || le.Lock != lock || !strings.Contains(err.Error(), lock) {
			t.Fatalf("%s while locked: %v; want a *LockedError naming %s", name, err, lock)
		}
		if b, rerr := os.ReadFile("/proc/locks"); rerr == nil && strings.Contains(string(b), "FLOCK") {
			want := fmt.Sprintf("process %d", os.Getpid())
			if !strings.Contains(le.Holder, want) {
				t.Errorf("%s: holder %q, want %q", name, le.Holder, want)
			}
		}
	}
	f.Close()
	if err := r.Remove(KnownOut, out); err != nil {
		t.Fatalf("after the lock is let go: %v", err)
	}
	if got, err := r.All(); err != nil || len(got) != 0 {
		t.Errorf("after Remove: %+v, %v; want none", got, err)
	}
}

// TestLockHolder: the holder of a lock on a file is read from /proc/locks'
// lines: the device and inode match, waiting processes ("->") are not
// holders.
func TestLockHolder(t *testing.T) {
	const locks = `1: POSIX  ADVISORY  WRITE 501 00:19:77 0 EOF
2: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF
2: -> FLOCK  ADVISORY  WRITE 999 08:01:5679 0 EOF
3: FLOCK  ADVISORY  WRITE 4321 103:02:5679 0 EOF
`
	for _, tc := range []struct {
		name         string
		major, minor uint32
		ino          uint64
		want         int
	}{
		{"held", 8, 1, 5678, 1234},
		{"waiter is not the holder", 8, 1, 5679, 0},
		{"three hex digits", 0x103, 2, 5679, 4321},
		{"other device", 8, 2, 5678, 0},
		{"none", 1, 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LockHolder([]byte(locks), tc.major, tc.minor, tc.ino); got != tc.want {
				t.Errorf("LockHolder(%d:%d:%d) = %d, want %d", tc.major, tc.minor, tc.ino, got, tc.want)
			}
		})
	}
}

// FuzzLockHolder: any /proc/locks text gives a holder that is positive or
// none, without panicking.
func FuzzLockHolder(f *testing.F) {
	f.Add([]byte("2: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF\n"), uint32(8), uint32(1), uint64(5678))
	f.Add([]byte("2: -> FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF\n"), uint32(8), uint32(1), uint64(5678))
	f.Add([]byte("x: y z w -5 08:01:5678"), uint32(8), uint32(1), uint64(5678))
	f.Fuzz(func(t *testing.T, b []byte, major, minor uint32, ino uint64) {
		if pid := LockHolder(b, major, minor, ino); pid < 0 {
			t.Fatalf("holder %d", pid)
		}
	})
}

// TestResolvePath: links are resolved as far as the path exists; the rest
// is kept as given.
func TestResolvePath(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{link, real},
		{filepath.Join(link, "sub"), filepath.Join(real, "sub")},
		{filepath.Join(link, "not", "yet"), filepath.Join(real, "not", "yet")},
		{filepath.Join(dir, "none", "x"), filepath.Join(dir, "none", "x")},
		{"/", "/"},
	} {
		if got, err := ResolvePath(tc.in); err != nil || got != tc.want {
			t.Errorf("ResolvePath(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	// Recorded through the link, it is recorded where it is.
	r := &Registry{File: filepath.Join(dir, "known-paths.json")}
	if err := r.Add(KnownOut, filepath.Join(link, "out")); err != nil {
		t.Fatal(err)
	}
	if got, err := r.All(); err != nil || len(got) != 1 || got[0].Path != filepath.Join(real, "out") {
		t.Errorf("recorded %+v, %v; want %s", got, err, filepath.Join(real, "out"))
	}
}

// TestKnownViewResolves: the view compares resolved paths: a recorded
// directory that holds the home directory reached through a link is
// skipped, and one that holds an own directory reached through a link is
// covered, not hidden.
func TestKnownViewResolves(t *testing.T) {
	dir := t.TempDir()
	realHome := filepath.Join(dir, "real", "home")
	realOwn := filepath.Join(dir, "real", "tmp", "own")
	for _, d := range []string{realHome, realOwn} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	r := &Registry{File: filepath.Join(dir, "reg", "known-paths.json")}
	if err := r.Add(KnownWork, realHome, filepath.Join(dir, "real", "tmp")); err != nil {
		t.Fatal(err)
	}
	v := &KnownView{Registry: r, Own: []string{filepath.Join(dir, "link", "tmp", "own")}, Home: filepath.Join(dir, "link", "home")}
	hidden, covered, err := v.Current()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, "real", "tmp")}; !slices.Equal(covered, want) {
		t.Errorf("covered %q, want %q", covered, want)
	}
	if want := []string{filepath.Join(dir, "reg")}; !slices.Equal(hidden, want) {
		t.Errorf("hidden %q, want only the registry's directory %q", hidden, want)
	}
	if want := []string{realHome}; !slices.Equal(v.Skipped(), want) {
		t.Errorf("skipped %q, want %q", v.Skipped(), want)
	}
}

package bench

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSweepStale: of the private directories in a temporary directory,
// only those whose lock can be taken (their process gone) are removed; a
// live one (its lock held), one with no lock, a link named like one and
// another name are left.
func TestSweepStale(t *testing.T) {
	tmp := t.TempDir()
	live, err := MakePrivateDir(tmp, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	if fi, err := os.Stat(live.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("private directory %s: %v, %v; want mode 0700", live.Dir, fi, err)
	}

	mk := func(name string, lock bool) string {
		d := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "sub", "test.patch"), []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		if lock {
			if err := os.WriteFile(filepath.Join(d, lockName), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	stale := mk("truss-bench-111", true)
	// A read-only directory in it, as Go's module cache makes.
	ro := filepath.Join(stale, "sub", "mod")
	if err := os.Mkdir(ro, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "go.mod"), nil, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	nolock := mk("truss-bench-222", false)
	other := mk("other-333", true)
	target := mk("elsewhere", true)
	link := filepath.Join(tmp, "truss-bench-444")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	removed, err := SweepStale(tmp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{stale}) {
		t.Errorf("removed %q, want only %q", removed, stale)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("stale directory still there: %v", err)
	}
	for _, d := range []string{live.Dir, nolock, other, target, link} {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	// Once its process lets it go, the live one is stale too.
	if err := live.lock.Close(); err != nil {
		t.Fatal(err)
	}
	live.lock = nil
	removed, err = SweepStale(tmp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{live.Dir}) {
		t.Errorf("removed %q, want %q", removed, live.Dir)
	}
}

// TestPrivateDirRemove: Remove removes the directory, and a second
// Remove does nothing.
func TestPrivateDirRemove(t *testing.T) {
	tmp := t.TempDir()
	p, err := MakePrivateDir(tmp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.Dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p.Dir); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", p.Dir, err)
	}
	if err := p.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

// TestTempCover: the temporary directory is covered unless it is /tmp or
// in it, the root, or holds the home directory.
func TestTempCover(t *testing.T) {
	home := "/nonexistent-home-of-test/h"
	t.Setenv("HOME", home)
	for _, tc := range []struct {
		tmpdir, want string
	}{
		{"/tmp", ""},
		{"/tmp/x", ""},
		{"/", ""},
		{"/nonexistent-home-of-test", ""},
		{home, ""},
		{home + "/tmp", home + "/tmp"},
		{"/var/tmp/truss-x", "/var/tmp/truss-x"},
	} {
		t.Setenv("TMPDIR", tc.tmpdir)
		if got := TempCover(); got != tc.want {
			t.Errorf("TMPDIR=%s: TempCover() = %q, want %q", tc.tmpdir, got, tc.want)
		}
	}
}

// TestSweepSparesDirectoriesBeingMade: sweeps running while private
// directories are made never remove one (its lock is held before the
// lock file has its name).
func TestSweepSparesDirectoriesBeingMade(t *testing.T) {
	tmp := t.TempDir()
	done := make(chan struct{})
	swept := make(chan []string)
	go func() {
		var all []string
		for {
			select {
			case <-done:
				swept <- all
				return
			default:
			}
			removed, err := SweepStale(tmp, nil)
			if err != nil {
				t.Error(err)
			}
			all = append(all, removed...)
		}
	}()
	var made []*PrivateDir
	for range 200 {
		p, err := MakePrivateDir(tmp, nil)
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, p)
	}
	close(done)
	if removed := <-swept; len(removed) > 0 {
		t.Errorf("the sweeps removed live directories: %q", removed)
	}
	for _, p := range made {
		if _, err := os.Stat(filepath.Join(p.Dir, lockName)); err != nil {
			t.Errorf("%s: %v", p.Dir, err)
		}
		p.Remove()
	}
}

// TestPrivateDirRecorded: a private directory made with a registry is
// recorded there as it is made, hidden from every other benchmark's view
// (KnownView) whatever its temporary directory, and its record dropped
// when it is removed; a crashed benchmark's recorded directory, in a
// temporary directory other than the sweeper's, is swept and dropped.
func TestPrivateDirRecorded(t *testing.T) {
	dir := t.TempDir()
	reg := &Registry{File: filepath.Join(dir, "data", "bench", "known-paths.json")}
	tmpA, tmpB := filepath.Join(dir, "tmpA"), filepath.Join(dir, "tmpB")
	for _, d := range []string{tmpA, tmpB} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	a, err := MakePrivateDir(tmpA, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Remove()
	b, err := MakePrivateDir(tmpB, reg)
	if err != nil {
		t.Fatal(err)
	}
	viewB := &KnownView{Registry: reg, Own: []string{b.Dir, tmpB}, Whole: []string{tmpB, "/tmp-not-this"}}
	hidden, _, err := viewB.Current()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(hidden, a.Dir) || slices.Contains(hidden, b.Dir) {
		t.Errorf("B hides %q; want A's %s and not its own %s", hidden, a.Dir, b.Dir)
	}
	if err := b.Remove(); err != nil {
		t.Fatal(err)
	}
	known, err := reg.All()
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(known, func(k KnownPath) bool { return k.Path == b.Dir }) {
		t.Errorf("removed %s still recorded: %+v", b.Dir, known)
	}

	// A crashed benchmark's: its lock let go (the process gone), the
	// directory left; a sweep from another temporary directory removes it.
	a.lock.Close()
	a.lock = nil
	removed, err := SweepStale(tmpB, reg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{a.Dir}) {
		t.Errorf("swept %q, want %s", removed, a.Dir)
	}
	if known, err := reg.All(); err != nil || len(known) != 0 {
		t.Errorf("after the sweep: %+v, %v; want nothing recorded", known, err)
	}
}

// TestPrivateDirThroughLink: a temporary directory that is a link gives a
// private directory at the link's target, and TempCover names the target
// when it is outside /tmp even though the link is in /tmp.
func TestPrivateDirThroughLink(t *testing.T) {
	outside, err := os.MkdirTemp("/var/tmp", "truss-test-")
	if err != nil {
		t.Skipf("no directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	link := filepath.Join(t.TempDir(), "lnk")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", link)
	p, err := MakePrivateDir("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Remove()
	if filepath.Dir(p.Dir) != outside {
		t.Errorf("private directory %s, want one in %s", p.Dir, outside)
	}
	if within(link, "/tmp") {
		if got := TempCover(); got != outside {
			t.Errorf("TMPDIR=%s (-> %s): TempCover() = %q, want %q", link, outside, got, outside)
		}
	}
	// A link outside /tmp to /tmp is /tmp: nothing to cover.
	inTmp := filepath.Join(outside, "to-tmp")
	if err := os.Symlink(t.TempDir(), inTmp); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", inTmp)
	if r, _ := ResolvePath(inTmp); within(r, "/tmp") {
		if got := TempCover(); got != "" {
			t.Errorf("TMPDIR=%s (-> /tmp): TempCover() = %q, want none", inTmp, got)
		}
	}
}

package hostfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// tree makes a directory with a secret beside it (outside the root) and
// returns the root and the secret's path.
func tree(t *testing.T) (root, secret string) {
	t.Helper()
	base := t.TempDir()
	secret = filepath.Join(base, "ledger.key")
	if err := os.WriteFile(secret, []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "ok.txt"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, secret
}

// TestReadRefusals: what a command can plant where the host reads.
func TestReadRefusals(t *testing.T) {
	root, secret := tree(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(secret, filepath.Join(root, "abs-link")))
	must(os.Symlink("../ledger.key", filepath.Join(root, "rel-link")))
	must(os.Symlink("/proc/self/environ", filepath.Join(root, "environ")))
	must(os.Symlink("/dev/zero", filepath.Join(root, "zero")))
	must(os.Symlink("sub/ok.txt", filepath.Join(root, "inside-link")))
	must(os.Symlink(filepath.Dir(secret), filepath.Join(root, "dirlink")))
	must(unix.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(os.WriteFile(filepath.Join(root, "big"), bytes.Repeat([]byte("x"), 100), 0o644))

	strict, err := OpenRoot(root)
	must(err)
	defer strict.Close()
	beneath, err := OpenRootWith(root, Options{Beneath: true})
	must(err)
	defer beneath.Close()

	for _, tc := range []struct {
		name     string
		root     *Root
		want     error // nil: read succeeds
		wantData string
		max      int64
	}{
		{"sub/ok.txt", strict, nil, "fine", 64},
		{"abs-link", strict, ErrLink, "", 64},
		{"abs-link", beneath, ErrEscapes, "", 64},
		{"rel-link", strict, ErrLink, "", 64},
		{"rel-link", beneath, ErrEscapes, "", 64},
		{"environ", strict, ErrLink, "", 64},
		{"environ", beneath, ErrEscapes, "", 64},
		{"zero", strict, ErrLink, "", 64},
		{"zero", beneath, ErrEscapes, "", 64},
		{"inside-link", strict, ErrLink, "", 64},
		{"inside-link", beneath, nil, "fine", 64},
		{"dirlink/ledger.key", strict, ErrLink, "", 64},
		{"dirlink/ledger.key", beneath, ErrEscapes, "", 64},
		{"../ledger.key", strict, ErrEscapes, "", 64},
		{"/etc/passwd", strict, ErrEscapes, "", 64},
		{"fifo", strict, ErrNotRegular, "", 64},
		{"fifo", beneath, ErrNotRegular, "", 64},
		{"sub", strict, ErrNotRegular, "", 64},
		{"big", strict, ErrTooLarge, "", 10},
		{"missing", strict, os.ErrNotExist, "", 10},
	} {
		b, err := tc.root.ReadFile(tc.name, tc.max)
		if tc.want == nil {
			if err != nil || string(b) != tc.wantData {
				t.Errorf("%s (beneath %v): %q, %v; want %q", tc.name, tc.root.beneath, b, err, tc.wantData)
			}
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s (beneath %v): %q, %v; want %v", tc.name, tc.root.beneath, b, err, tc.want)
		}
		if bytes.Contains(b, []byte("SECRET")) {
			t.Errorf("%s: read the secret", tc.name)
		}
	}

	head, truncated, err := strict.ReadHead("big", 10)
	if err != nil || len(head) != 10 || !truncated {
		t.Errorf("ReadHead: %q %v %v", head, truncated, err)
	}
}

// TestWriteNeverThroughLinks: a link planted at the name or at the
// temporary name is replaced or avoided, never written through.
func TestWriteNeverThroughLinks(t *testing.T) {
	root, secret := tree(t)
	if err := os.Symlink(secret, filepath.Join(root, "state.env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.WriteFile("state.env", []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "SECRET" {
		t.Fatalf("the secret was overwritten: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(root, "state.env")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state.env: %v %v", fi, err)
	}
	if err := r.WriteFile("d/ledger.key", []byte("FORGED"), 0o600); !errors.Is(err, ErrLink) {
		t.Fatalf("write through a directory link: %v", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "SECRET" {
		t.Fatalf("the secret was overwritten: %q", b)
	}
	// Nothing left behind.
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left %s", e.Name())
		}
	}

	// The package-level form for Truss's own files.
	own := filepath.Join(t.TempDir(), "n.env")
	if err := os.Symlink(secret, own); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(own, []byte("B=2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "SECRET" {
		t.Fatalf("WriteFileAtomic wrote through a link: %q", b)
	}
	if _, err := ReadFile(filepath.Join(root, "d", "..", "d"), 10); err == nil {
		t.Error("ReadFile of a link at the name succeeded")
	}
}

// TestWalkNeverFollows: a walk reports links as links, never descends into
// them, and a directory swapped for another between the listing and the
// descent is refused.
func TestWalkNeverFollows(t *testing.T) {
	root, secret := tree(t)
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var names []string
	err = r.Walk(func(name string, dir *Root, info Info) error {
		names = append(names, name)
		if info.IsRegular() {
			f, err := dir.OpenEntry(Entry{Name: info.Name(), Info: info})
			if err != nil {
				return err
			}
			b, err := f.ReadAll(1 << 10)
			f.Close()
			if err != nil {
				return err
			}
			if bytes.Contains(b, []byte("SECRET")) {
				t.Errorf("%s: read the secret", name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, " "); got != "out sub sub/ok.txt" {
		t.Fatalf("walked %s", got)
	}

	// The swap: after the listing reported sub, sub becomes a link to the
	// secret's directory.
	err = r.Walk(func(name string, dir *Root, info Info) error {
		if name == "sub" {
			if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub2")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Dir(secret), filepath.Join(root, "sub")); err != nil {
				t.Fatal(err)
			}
		}
		if strings.HasSuffix(name, "ledger.key") {
			t.Errorf("walked into the link: %s", name)
		}
		return nil
	})
	if !errors.Is(err, ErrLink) && !errors.Is(err, ErrChanged) {
		t.Fatalf("walk over a swapped directory: %v", err)
	}
}

// TestLeaseDoesNotBlock: a write lease held on a file makes an ordinary
// open wait up to lease-break-time (45 s); the layer's open does not wait.
func TestLeaseDoesNotBlock(t *testing.T) {
	root, _ := tree(t)
	p := filepath.Join(root, "AGENTS.md")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A write lease needs a descriptor opened read-only with no other
	// open of the file; the holder is another process's role, played
	// here by this one's own descriptor.
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		t.Skipf("no leases here: %v", err)
	}
	defer unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
	r, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.ReadFile("AGENTS.md", 1<<10)
	if !errors.Is(err, ErrBusy) && !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("open of a leased file: %v, want ErrBusy", err)
	}
}

func TestMkdirAllAndRemove(t *testing.T) {
	root, secret := tree(t)
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.MkdirAll("a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(root, "a/b/c")); err != nil || !fi.IsDir() {
		t.Fatal(err)
	}
	if err := r.MkdirAll("l/x", 0o755); !errors.Is(err, ErrLink) {
		t.Fatalf("MkdirAll through a link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(secret), "x")); err == nil {
		t.Fatal("made a directory through the link")
	}
	if err := r.Remove("l"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatal("removed the link's target")
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", ".", "a/b", "../x", "/abs", "a/../../b", "a\x00b", "./a//b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := clean(s)
		if err != nil {
			return
		}
		if strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../") || strings.Contains(c, "\x00") {
			t.Fatalf("clean(%q) = %q", s, c)
		}
	})
}

// TestReadDirMatching lists only the names keep accepts, sorted, each
// with what it is.
func TestReadDirMatching(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"main.go", "main_test.go", "util.go"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "mainpkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	err = r.ReadDirMatching(func(n string) bool { return strings.HasPrefix(n, "main") }, func(n string, i Info) {
		if i.IsDir() {
			n += "/"
		}
		got = append(got, n)
	})
	if err != nil || strings.Join(got, " ") != "main.go main_test.go mainpkg/" {
		t.Errorf("ReadDirMatching = %q, %v", got, err)
	}
}

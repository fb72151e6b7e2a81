//go:build unix

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

// CopyTree copies files, directories and links as they are (a link to a
// secret stays a link), leaves out and reports FIFOs without blocking,
// and stops at its bounds.
func TestCopyTree(t *testing.T) {
	root, secret := tree(t)
	os.Symlink(secret, filepath.Join(root, "key"))
	os.Symlink(filepath.Dir(secret), filepath.Join(root, "sub", "up"))
	unix.Mkfifo(filepath.Join(root, "fifo"), 0o644)
	os.WriteFile(filepath.Join(root, "x.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.MkdirAll(filepath.Join(root, ".git"), 0o755)
	os.WriteFile(filepath.Join(root, ".git", "config"), nil, 0o644)
	src, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out := t.TempDir()
	dst, err := OpenRoot(out)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	rep, err := CopyTree(src, dst, CopyOptions{MaxBytes: 1 << 20, MaxEntries: 100, Skip: func(_ string, i Info) bool { return i.Name() == ".git" }})
	if err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(out, "key")); err != nil || l != secret {
		t.Errorf("key: %q %v", l, err)
	}
	if l, err := os.Readlink(filepath.Join(out, "sub", "up")); err != nil || l != filepath.Dir(secret) {
		t.Errorf("sub/up: %q %v", l, err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "sub", "ok.txt")); err != nil || string(b) != "fine" {
		t.Errorf("ok.txt: %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(out, "x.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("x.sh: %v %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(out, ".git")); err == nil {
		t.Error(".git copied despite Skip")
	}
	if _, err := os.Lstat(filepath.Join(out, "fifo")); err == nil || strings.Join(rep.Skipped, ",") != "fifo" {
		t.Errorf("fifo: %v, skipped %v", err, rep.Skipped)
	}
	if rep.Files != 2 || rep.Links != 2 || rep.Dirs != 1 {
		t.Errorf("report %+v", rep)
	}
	for _, o := range []CopyOptions{{MaxBytes: 5, MaxEntries: 100}, {MaxBytes: 1 << 20, MaxEntries: 2}} {
		d2, _ := OpenRoot(t.TempDir())
		if _, err := CopyTree(src, d2, o); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%+v: %v, want ErrTooLarge", o, err)
		}
		d2.Close()
	}
	// Create never writes through what is at the name.
	os.Symlink(secret, filepath.Join(out, "planted"))
	if f, err := dst.Create("planted", 0o644); err == nil {
		f.Close()
		t.Error("Create opened a planted link")
	}
	if b, _ := os.ReadFile(secret); string(b) != "SECRET" {
		t.Error("the secret changed")
	}
}

// TestCopySparse: a sparse file copies as sparse, its content the same.
func TestCopySparse(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	f, err := os.Create(filepath.Join(src, "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("middle"), 32<<20)
	f.Truncate(64 << 20)
	f.Close()
	sr, _ := OpenRoot(src)
	defer sr.Close()
	dr, _ := OpenRoot(dst)
	defer dr.Close()
	if _, err := CopyTree(sr, dr, CopyOptions{MaxBytes: 1 << 30, MaxEntries: 10}); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dst, "sparse.bin"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 64<<20 || st.Blocks*512 > 1<<20 {
		t.Errorf("the copy of a 64 MiB sparse file: size %d, %d KiB allocated", st.Size, st.Blocks/2)
	}
	a, _ := os.ReadFile(filepath.Join(src, "sparse.bin"))
	b, _ := os.ReadFile(filepath.Join(dst, "sparse.bin"))
	if !bytes.Equal(a, b) {
		t.Error("the copy's content differs")
	}
}

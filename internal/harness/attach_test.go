package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/tool/fs"
)

// readFileWithin calls read and fails the test when it does not return
// within a generous deadline: a hang detector (a blocked open of a FIFO
// never returns), not a timing assertion.
func readFileWithin(t *testing.T, read func() ([]byte, error)) ([]byte, error) {
	t.Helper()
	type res struct {
		b   []byte
		err error
	}
	done := make(chan res, 1)
	go func() { b, err := read(); done <- res{b, err} }()
	select {
	case r := <-done:
		return r.b, r.err
	case <-time.After(30 * time.Second):
		t.Fatal("attaching the file hangs")
		return nil, nil
	}
}

// TestReadFileAttachAttacks plants in the workspace what a sandboxed
// command could, and attaches it through Session.ReadFile: links to a
// secret outside (direct, through a linked directory, and a link that
// stays inside, which attachments do not follow either), a FIFO, a file
// over MaxAttach. Each is refused, promptly, and no secret byte is read.
func TestReadFileAttachAttacks(t *testing.T) {
	const secret = "SECRET-9d2e71"
	o := fixture(t, twoRuns)
	o.Validation.Off = true
	outside := t.TempDir()
	key := filepath.Join(outside, "ledger.key")
	if err := os.WriteFile(key, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := o.Root
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(key, filepath.Join(ws, "key.txt")))
	must(os.Symlink(outside, filepath.Join(ws, "out")))
	must(os.WriteFile(filepath.Join(ws, "inside.txt"), []byte(secret), 0o644))
	must(os.Symlink("inside.txt", filepath.Join(ws, "alias.txt")))
	must(syscall.Mkfifo(filepath.Join(ws, "fifo.txt"), 0o644))
	must(os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("x", MaxAttach+1)), 0o644))
	must(os.Mkdir(filepath.Join(ws, "dir"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "bin.txt"), []byte("a\x00b"), 0o644))

	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	tests := []struct {
		name string
		want error // nil: any error
	}{
		{"key.txt", nil},
		{"out/ledger.key", nil},
		{"alias.txt", hostfs.ErrLink},
		{"fifo.txt", hostfs.ErrNotRegular},
		{"big.txt", hostfs.ErrTooLarge},
		{"dir", hostfs.ErrNotRegular},
		{"bin.txt", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := readFileWithin(t, func() ([]byte, error) { _, b, err := s.ReadFile(tc.name); return b, err })
			if err == nil {
				t.Fatalf("ReadFile(%q) read %d bytes", tc.name, len(b))
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("ReadFile(%q): %v, want %v", tc.name, err, tc.want)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(string(b), secret) {
				t.Errorf("the secret leaked: %v", err)
			}
		})
	}
	if rel, b, err := s.ReadFile("a.txt"); err != nil || rel != "a.txt" || string(b) != "one\n" {
		t.Errorf("ReadFile(a.txt) = %q, %q, %v", rel, b, err)
	}
}

// TestReadAttachmentFlip: a command swaps a directory for a link to
// outside between the path's check and its read; the read, by name
// beneath the root's descriptor, refuses the link.
func TestReadAttachmentFlip(t *testing.T) {
	const secret = "SECRET-0a77c3"
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "notes.txt"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "docs", "notes.txt"), []byte("fine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := fs.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p, err := w.Resolve("docs/notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The flip, after the check.
	if err := os.Rename(filepath.Join(ws, "docs"), filepath.Join(ws, "docs.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "docs")); err != nil {
		t.Fatal(err)
	}
	b, err := readFileWithin(t, func() ([]byte, error) { return readAttachment(p) })
	if err == nil || strings.Contains(string(b), secret) {
		t.Fatalf("read through the flipped link: %q, %v", b, err)
	}
	if !errors.Is(err, hostfs.ErrLink) {
		t.Errorf("err = %v, want hostfs.ErrLink", err)
	}
}

// TestFiles lists what @path completion offers: names under the prefix's
// directory that begin with its rest, directories with a "/", dot files
// only when asked for, no link (not even one that stays inside) and no
// FIFO, nothing outside the workspace, at most max.
func TestFiles(t *testing.T) {
	o := fixture(t, twoRuns)
	o.Validation.Off = true
	root := o.Root
	for _, d := range []string{"src/inner", "secret", ".hidden"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"src/main.go", "src/main_test.go", "src/util.go", ".env", "secret/key"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	must(t, os.Symlink(outside, filepath.Join(root, "src", "outlink")))
	must(t, os.Symlink("main.go", filepath.Join(root, "src", "mainlink")))
	must(t, os.Symlink(filepath.Join(root, "src"), filepath.Join(root, "srclink")))
	must(t, syscall.Mkfifo(filepath.Join(root, "src", "mainpipe"), 0o644))
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		prefix string
		max    int
		want   []string
		err    string
	}{
		{"", 50, []string{"a.txt", "secret/", "src/"}, ""},
		{"s", 50, []string{"secret/", "src/"}, ""},
		{"src/", 50, []string{"src/inner/", "src/main.go", "src/main_test.go", "src/util.go"}, ""},
		{"src/ma", 50, []string{"src/main.go", "src/main_test.go"}, ""},
		{"src/ma", 1, []string{"src/main.go"}, ""},
		{".", 50, []string{".env", ".hidden/"}, ""},
		{"nothing", 50, nil, ""},
		{"srclink/", 50, nil, "link"},
		{"../", 50, nil, "not a path inside the workspace"},
		{"/etc/", 50, nil, "not a path inside the workspace"},
		{"src/outlink/", 50, nil, "link"},
	} {
		got, err := s.Files(context.Background(), tc.prefix, tc.max)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Files(%q) = %q, %v; want an error with %q", tc.prefix, got, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("Files(%q, %d) = %q, %v; want %q", tc.prefix, tc.max, got, err, tc.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

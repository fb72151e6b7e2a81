package fs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/tool"
)

// execWithin runs one call and fails the test when it does not return
// within a generous deadline: a hang detector (a blocking open of a FIFO
// never returns), not a timing assertion.
func execWithin(t *testing.T, e *Executor, op tool.Op, args any) tool.Result {
	t.Helper()
	done := make(chan tool.Result, 1)
	go func() { done <- e.Execute(context.Background(), tool.Call{ID: "c1", Op: op, Args: args}) }()
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("%s hangs on what a command planted", op)
		return tool.Result{}
	}
}

// TestPlantedSpecialFiles plants what a sandboxed command could where the
// model's file tools look: FIFOs, a socket, a link to a FIFO beneath the
// root, links to /dev/zero and to a secret outside. Views and edits of
// them return at once with an error the model reads; listings, deletes
// and renames of directories holding them do not open them.
func TestPlantedSpecialFiles(t *testing.T) {
	const secret = "SECRET-31b0aa"
	e, dir := newWS(t, map[string]string{"ok.txt": "one\n", "d/a.txt": "a\n", "m/a.txt": "a\n"})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "key"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.txt"), 0o644))
	must(syscall.Mkfifo(filepath.Join(dir, "d", "pipe"), 0o644))
	must(syscall.Mkfifo(filepath.Join(dir, "m", "pipe"), 0o644))
	must(os.Symlink("fifo.txt", filepath.Join(dir, "tofifo.txt")))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero.txt")))
	must(os.Symlink(filepath.Join(outside, "key"), filepath.Join(dir, "key.txt")))
	sock, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	must(err)
	defer syscall.Close(sock)
	must(syscall.Bind(sock, &syscall.SockaddrUnix{Name: filepath.Join(dir, "sock.txt")}))

	tests := []struct {
		name string
		op   tool.Op
		args any
		kind tool.ErrorKind // "" for success
		msg  string         // in the error's message
	}{
		{"view a FIFO", tool.OpView, &tool.ViewArgs{Path: "fifo.txt"}, tool.ErrUnsupported, "fifo.txt is not a regular file (a FIFO); Truss reads and edits only regular files"},
		{"view a range of a FIFO", tool.OpView, &tool.ViewArgs{Path: "fifo.txt", Start: 1, End: 2}, tool.ErrUnsupported, "(a FIFO)"},
		{"replace in a FIFO", tool.OpReplace, &tool.ReplaceArgs{Path: "fifo.txt", Old: "a", New: "b"}, tool.ErrUnsupported, "(a FIFO)"},
		{"insert into a FIFO", tool.OpInsert, &tool.InsertArgs{Path: "fifo.txt", Line: 0, Text: "x"}, tool.ErrUnsupported, "(a FIFO)"},
		{"overwrite a FIFO", tool.OpWrite, &tool.CreateArgs{Path: "fifo.txt", Content: "x"}, tool.ErrUnsupported, "(a FIFO)"},
		{"view through a link to a FIFO", tool.OpView, &tool.ViewArgs{Path: "tofifo.txt"}, tool.ErrUnsupported, "(a FIFO)"},
		{"view a socket", tool.OpView, &tool.ViewArgs{Path: "sock.txt"}, tool.ErrUnsupported, "sock.txt is not a regular file"},
		{"view a link to /dev/zero", tool.OpView, &tool.ViewArgs{Path: "zero.txt"}, tool.ErrOutsideRoot, ""},
		{"replace through a link to /dev/zero", tool.OpReplace, &tool.ReplaceArgs{Path: "zero.txt", Old: "a", New: "b"}, tool.ErrOutsideRoot, ""},
		{"view a link to a secret outside", tool.OpView, &tool.ViewArgs{Path: "key.txt"}, tool.ErrOutsideRoot, ""},
		{"list a directory holding a FIFO", tool.OpList, &tool.ListArgs{Path: "d"}, "", ""},
		{"rename a directory holding a FIFO", tool.OpRename, &tool.RenameArgs{From: "m", To: "m2"}, "", ""},
		{"delete a directory holding a FIFO", tool.OpDelete, &tool.DeleteArgs{Path: "d", Recursive: true}, "", ""},
		{"delete a FIFO", tool.OpDelete, &tool.DeleteArgs{Path: "fifo.txt"}, "", ""},
		{"a regular file still works", tool.OpReplace, &tool.ReplaceArgs{Path: "ok.txt", Old: "one", New: "two"}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := execWithin(t, e, tc.op, tc.args)
			switch {
			case tc.kind == "" && r.Err != nil:
				t.Fatalf("error: %+v", r.Err)
			case tc.kind != "" && (r.Err == nil || r.Err.Kind != tc.kind):
				t.Fatalf("got %+v (output %.80q), want a %s error", r.Err, r.Output, tc.kind)
			case tc.kind != "" && !strings.Contains(r.Err.Message, tc.msg):
				t.Errorf("message %q lacks %q", r.Err.Message, tc.msg)
			}
			if strings.Contains(r.Output, secret) || r.File != nil && strings.Contains(r.File.Content, secret) {
				t.Error("the secret was read")
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "key")); string(b) != secret {
		t.Errorf("the file outside changed: %q", b)
	}
}

// TestLeasedFileDoesNotBlock: a file lease held by a command makes an
// ordinary open wait for the lease-break time (45 s by default); the
// file tools' opens do not wait, and say why.
func TestLeasedFileDoesNotBlock(t *testing.T) {
	e, dir := newWS(t, map[string]string{"leased.txt": "one\n"})
	// A write lease needs a descriptor opened read-only with no other
	// open of the file; the holder is a command's role, played here by
	// this process's own descriptor.
	f, err := os.Open(filepath.Join(dir, "leased.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		t.Skipf("no leases here: %v", err)
	}
	defer unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
	start := time.Now()
	r := execWithin(t, e, tool.OpReplace, &tool.ReplaceArgs{Path: "leased.txt", Old: "one", New: "two"})
	if r.Err == nil || r.Err.Kind != tool.ErrIO || !strings.Contains(r.Err.Message, "file lease") {
		t.Fatalf("replace in a leased file: %+v", r.Err)
	}
	// The lease-break time is 45 s; a wait for it is what this catches.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the open waited %v for the lease", d)
	}
}

// TestWriteNeverFollowsPlantedLink: a link planted at the name an edit
// writes is replaced by the new file, never written through, whether it
// points beneath the root or outside it.
func TestWriteNeverFollowsPlantedLink(t *testing.T) {
	e, dir := newWS(t, map[string]string{"target.txt": "keep\n"})
	if err := os.Symlink("target.txt", filepath.Join(dir, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	r := execWithin(t, e, tool.OpWrite, &tool.CreateArgs{Path: "alias.txt", Content: "new\n"})
	if r.Err != nil {
		t.Fatalf("write: %+v", r.Err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "target.txt")); string(b) != "keep\n" {
		t.Errorf("written through the link: target.txt = %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "alias.txt")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("alias.txt after the write: %v %v", fi, err)
	}
	ents, _ := os.ReadDir(dir)
	for _, d := range ents {
		if strings.Contains(d.Name(), "tmp") {
			t.Errorf("a temporary file was left: %s", d.Name())
		}
	}
}

package fs

import (
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/tool"
)

// snapshot is every entry below dir with its type and, for a regular
// file, its content; links are read, never followed, FIFOs never opened.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&iofs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			m[rel] = "link:" + target
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[rel] = "file:" + string(b)
		default:
			m[rel] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameSnapshot(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// previewWithin previews one call, failing the test when it does not
// return within a generous deadline (a hang detector, as execWithin).
func previewWithin(t *testing.T, e *Executor, op tool.Op, args any) (string, error) {
	t.Helper()
	type res struct {
		d   string
		err error
	}
	done := make(chan res, 1)
	go func() {
		d, err := e.Preview(context.Background(), tool.Call{ID: "c1", Op: op, Args: args})
		done <- res{d, err}
	}()
	select {
	case r := <-done:
		return r.d, r.err
	case <-time.After(30 * time.Second):
		t.Fatalf("the preview of %s hangs", op)
		return "", nil
	}
}

// TestPreview: for every operation that changes files, the preview writes
// nothing, and it is the diff of the changes the call then makes; a call
// that fails, fails its preview with the same kind of error.
func TestPreview(t *testing.T) {
	files := map[string]string{
		"a.go":       "package a\n\nfunc A() int {\n\treturn 1\n}\n",
		"noeol.txt":  "x\ny",
		"d/one.txt":  "one\n",
		"d/two.txt":  "two\n",
		"empty.txt":  "",
		"bin.dat":    "\x00\x01\x02",
		".git/HEAD":  "ref: refs/heads/main\n",
		"sub/s.txt":  "s\n",
		"sub2/.keep": "",
	}
	tests := []struct {
		name string
		op   tool.Op
		args any
		kind tool.ErrorKind // the error of both, "" for a success
		want []string       // lines the preview holds
	}{
		{"create", tool.OpCreate, &tool.CreateArgs{Path: "new/n.go", Content: "package n\n"}, "", []string{"--- /dev/null", "+++ b/new/n.go", "+package n"}},
		{"create empty", tool.OpCreate, &tool.CreateArgs{Path: "e.txt"}, "", []string{"--- /dev/null", "+++ b/e.txt"}},
		{"create over a file", tool.OpCreate, &tool.CreateArgs{Path: "a.go", Content: "x"}, tool.ErrExists, nil},
		{"write over", tool.OpWrite, &tool.CreateArgs{Path: "a.go", Content: "package a\n"}, "", []string{"--- a/a.go", "+++ b/a.go", "-func A() int {"}},
		{"write binary", tool.OpWrite, &tool.CreateArgs{Path: "bin.dat", Content: "\x00\x09"}, "", []string{"Binary files a/bin.dat and b/bin.dat differ"}},
		{"write into .git", tool.OpWrite, &tool.CreateArgs{Path: ".git/HEAD", Content: "x"}, tool.ErrReadOnly, nil},
		{"replace", tool.OpReplace, &tool.ReplaceArgs{Path: "a.go", Old: "return 1", New: "return 2"}, "", []string{"-\treturn 1", "+\treturn 2", "@@ -1,5 +1,5 @@"}},
		{"replace all", tool.OpReplace, &tool.ReplaceArgs{Path: "d/one.txt", Old: "o", New: "0", All: true}, "", []string{"-one", "+0ne"}},
		{"replace no match", tool.OpReplace, &tool.ReplaceArgs{Path: "a.go", Old: "return 3", New: "x"}, tool.ErrNoMatch, nil},
		{"replace missing file", tool.OpReplace, &tool.ReplaceArgs{Path: "nope.go", Old: "a", New: "b"}, tool.ErrNotFound, nil},
		{"insert", tool.OpInsert, &tool.InsertArgs{Path: "noeol.txt", Line: 2, Text: "z"}, "", []string{"-y", "\\ No newline at end of file", "+y", "+z"}},
		{"insert out of range", tool.OpInsert, &tool.InsertArgs{Path: "noeol.txt", Line: 9, Text: "z"}, tool.ErrInvalidRange, nil},
		{"delete", tool.OpDelete, &tool.DeleteArgs{Path: "a.go"}, "", []string{"--- a/a.go", "+++ /dev/null", "-package a"}},
		{"delete empty", tool.OpDelete, &tool.DeleteArgs{Path: "empty.txt"}, "", []string{"--- a/empty.txt", "+++ /dev/null"}},
		{"delete tree", tool.OpDelete, &tool.DeleteArgs{Path: "d", Recursive: true}, "", []string{"--- a/d/one.txt", "--- a/d/two.txt", "-two"}},
		{"delete dir without recursive", tool.OpDelete, &tool.DeleteArgs{Path: "d"}, tool.ErrIsDir, nil},
		{"rename", tool.OpRename, &tool.RenameArgs{From: "a.go", To: "b/b.go"}, "", []string{"rename from a.go", "rename to b/b.go"}},
		{"rename dir", tool.OpRename, &tool.RenameArgs{From: "sub", To: "sub3"}, "", []string{"rename from sub/s.txt", "rename to sub3/s.txt"}},
		{"rename over", tool.OpRename, &tool.RenameArgs{From: "a.go", To: "noeol.txt"}, tool.ErrExists, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, dir := newWS(t, files)
			before := snapshot(t, dir)
			preview, perr := previewWithin(t, e, tc.op, tc.args)
			if after := snapshot(t, dir); !sameSnapshot(before, after) {
				t.Fatalf("the preview changed the workspace:\nbefore %v\nafter  %v", before, after)
			}
			r := exec(e, tc.op, tc.args)
			if tc.kind != "" {
				if tool.KindOf(perr) != tc.kind || r.Err == nil || r.Err.Kind != tc.kind {
					t.Fatalf("preview error %v, result error %+v; want both %s", perr, r.Err, tc.kind)
				}
				return
			}
			if perr != nil || r.Err != nil {
				t.Fatalf("preview error %v, result error %+v", perr, r.Err)
			}
			if got := Diff(r.Changes); got != preview {
				t.Errorf("the preview is not the diff of the changes made:\npreview:\n%s\nmade:\n%s", preview, got)
			}
			for _, l := range tc.want {
				if !strings.Contains("\n"+preview, "\n"+l+"\n") {
					t.Errorf("the preview lacks the line %q:\n%s", l, preview)
				}
			}
		})
	}
}

// TestPreviewUndo: an undo's preview is the diff of what it restores, and
// it leaves the history as it was (the undo after it still works).
func TestPreviewUndo(t *testing.T) {
	e, dir := newWS(t, map[string]string{"a.txt": "one\n"})
	e.Opts.History = true
	if r := exec(e, tool.OpReplace, &tool.ReplaceArgs{Path: "a.txt", Old: "one", New: "two"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	for range 2 {
		before := snapshot(t, dir)
		p, err := previewWithin(t, e, tool.OpUndo, &tool.UndoArgs{Path: "a.txt"})
		if err != nil || !strings.Contains(p, "-two\n+one\n") {
			t.Fatalf("preview %q, %v", p, err)
		}
		if !sameSnapshot(before, snapshot(t, dir)) {
			t.Fatal("the preview changed the workspace")
		}
	}
	p, _ := previewWithin(t, e, tool.OpUndo, &tool.UndoArgs{Path: "a.txt"})
	r := exec(e, tool.OpUndo, &tool.UndoArgs{Path: "a.txt"})
	if r.Err != nil || Diff(r.Changes) != p {
		t.Fatalf("undo %+v: made\n%s\npreviewed\n%s", r.Err, Diff(r.Changes), p)
	}
	if _, err := previewWithin(t, e, tool.OpUndo, &tool.UndoArgs{Path: "a.txt"}); tool.KindOf(err) != tool.ErrNotFound {
		t.Errorf("preview of an undo without history: %v", err)
	}
}

// TestPreviewStale: an edit the executor would refuse as stale (the file
// changed since it was viewed) is refused by its preview too.
func TestPreviewStale(t *testing.T) {
	e, dir := newWS(t, map[string]string{"a.txt": "one\n"})
	if r := exec(e, tool.OpView, &tool.ViewArgs{Path: "a.txt"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("ONE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := previewWithin(t, e, tool.OpReplace, &tool.ReplaceArgs{Path: "a.txt", Old: "ONE", New: "two"}); tool.KindOf(err) != tool.ErrStale {
		t.Errorf("preview of a stale edit: %v", err)
	}
}

// TestPreviewPlanted: what a sandboxed command can plant where the model
// points an edit — a FIFO, a link to one, a link to a secret outside the
// workspace, a link to /dev/zero — fails the preview at once, as the
// edit itself fails, without opening the FIFO, reading the secret or
// writing anything; a view or a listing has no preview.
func TestPreviewPlanted(t *testing.T) {
	const secret = "SECRET-5be1"
	e, dir := newWS(t, map[string]string{"ok.txt": "one\n"})
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "key"), []byte(secret+"\n"), 0o600))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.txt"), 0o644))
	must(os.Symlink("fifo.txt", filepath.Join(dir, "tofifo.txt")))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero.txt")))
	must(os.Symlink(filepath.Join(outside, "key"), filepath.Join(dir, "key.txt")))
	before := snapshot(t, dir)
	for _, name := range []string{"fifo.txt", "tofifo.txt", "zero.txt", "key.txt"} {
		for _, c := range []struct {
			op   tool.Op
			args any
		}{
			{tool.OpReplace, &tool.ReplaceArgs{Path: name, Old: secret, New: "x"}},
			{tool.OpInsert, &tool.InsertArgs{Path: name, Line: 0, Text: "x"}},
			{tool.OpWrite, &tool.CreateArgs{Path: name, Content: "x"}},
		} {
			p, err := previewWithin(t, e, c.op, c.args)
			if err == nil || strings.Contains(p, secret) || strings.Contains(err.Error(), secret) {
				t.Errorf("%s of %s: preview %q, %v; want a refusal", c.op, name, p, err)
			}
			if k := tool.KindOf(err); k != tool.ErrUnsupported && k != tool.ErrOutsideRoot {
				t.Errorf("%s of %s: %v (kind %q); want unsupported or outside_workspace", c.op, name, err, k)
			}
		}
	}
	if !sameSnapshot(before, snapshot(t, dir)) {
		t.Error("a preview changed the workspace")
	}
	for _, op := range []tool.Op{tool.OpView, tool.OpList} {
		if _, err := e.Preview(context.Background(), tool.Call{Op: op, Args: &tool.ViewArgs{Path: "ok.txt"}}); !errors.Is(err, tool.ErrNoPreview) {
			t.Errorf("%s: %v, want ErrNoPreview", op, err)
		}
	}
}

// TestDiffNames: the names in a diff's headers are shown by
// termsafe.Name, whatever the model named the file: an escape sequence, a
// carriage return, a newline, a bidirectional override or bytes that are
// not UTF-8 are written as visible escapes, so the header is one line
// naming the file, and nothing in it acts on a terminal.
func TestDiffNames(t *testing.T) {
	for _, tc := range []struct {
		name, shown string
	}{
		{"clear\x1b[2J.go", `clear\x1b[2J.go`},
		{"title\x1b]0;owned\a", `title\x1b]0;owned\a`},
		{"over\rwrite", `over\rwrite`},
		{"new\nline", `new\nline`},
		{"evil\u202Etxt.go", `evil\u202etxt.go`},
		{"run\xff.sh", `run\xff.sh`},
		{`back\slash`, `back\\slash`},
		{"/abs/esc\x1b[31m", `/abs/esc\x1b[31m`},
	} {
		t.Run(tc.shown, func(t *testing.T) {
			a, b := "a/"+tc.shown, "b/"+tc.shown
			if strings.HasPrefix(tc.name, "/") {
				a, b = tc.shown, tc.shown
			}
			for _, c := range []struct {
				change tool.FileChange
				want   []string
			}{
				{tool.FileChange{Path: tc.name, Kind: tool.ChangeUpdate, Before: tool.Digest([]byte("x\n")), After: tool.Digest([]byte("y\n")),
					BeforeData: []byte("x\n"), AfterData: []byte("y\n")}, []string{"--- " + a, "+++ " + b, "-x", "+y"}},
				{tool.FileChange{Path: tc.name, Kind: tool.ChangeAdd, After: tool.Digest([]byte("y\n")), AfterData: []byte("y\n")},
					[]string{"--- /dev/null", "+++ " + b}},
				{tool.FileChange{Path: tc.name, Kind: tool.ChangeDelete, Before: tool.Digest([]byte("x\n")), BeforeData: []byte("x\n")},
					[]string{"--- " + a, "+++ /dev/null"}},
				{tool.FileChange{Path: "old", MovedTo: tc.name, Kind: tool.ChangeUpdate}, []string{"rename from old", "rename to " + tc.shown}},
				{tool.FileChange{Path: tc.name, Kind: tool.ChangeAdd, LinkAfter: "x"}, []string{"--- /dev/null", "+++ " + b}},
				{tool.FileChange{Path: tc.name, Kind: tool.ChangeAdd, After: tool.Digest([]byte{0}), AfterData: []byte{0}},
					[]string{"Binary files /dev/null and " + b + " differ"}},
			} {
				got := Diff([]tool.FileChange{c.change})
				for _, l := range c.want {
					if !strings.Contains("\n"+got, "\n"+l+"\n") {
						t.Errorf("%s: no line %q in\n%s", c.change.Kind, l, got)
					}
				}
				for _, r := range got {
					if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || r == utf8.RuneError {
						t.Errorf("%s: %U in\n%q", c.change.Kind, r, got)
					}
				}
			}
		})
	}
}

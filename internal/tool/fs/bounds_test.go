package fs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// sparse makes name beneath dir a file of size bytes, all zeros but for
// tail at its end, that takes almost no disk: what a command makes with
// truncate -s to have Truss read it.
func sparse(t *testing.T, dir, name string, size int64, tail string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size-int64(len(tail))); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(tail); err != nil {
		t.Fatal(err)
	}
	return p
}

// allocated returns the bytes fn allocated.
func allocated(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// zerosDigest is the digest of n zero bytes followed by tail.
func zerosDigest(t *testing.T, n int64, tail string) string {
	t.Helper()
	h := sha256.New()
	if _, err := io.CopyN(h, zeroReader{}, n-int64(len(tail))); err != nil {
		t.Fatal(err)
	}
	h.Write([]byte(tail))
	return hex.EncodeToString(h.Sum(nil))
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestEditPastBound is the attack of a sparse 250 MiB file edited (M3,
// D1): every operation that rewrites a file refuses it before reading a
// byte, with its size, the bound and the way on, and so nothing of it is
// held, carried to the ledger or written.
func TestEditPastBound(t *testing.T) {
	const size = 250 << 20
	for _, tc := range []struct {
		op   tool.Op
		args any
	}{
		{tool.OpReplace, &tool.ReplaceArgs{Path: "big.txt", Old: "MARK", New: "MORK"}},
		{tool.OpInsert, &tool.InsertArgs{Path: "big.txt", Line: 0, Text: "x"}},
		{tool.OpWrite, &tool.CreateArgs{Path: "big.txt", Content: "small now"}},
	} {
		t.Run(string(tc.op), func(t *testing.T) {
			e, dir := newWS(t, nil)
			e.Opts.History = true
			sparse(t, dir, "big.txt", size, "MARK\n")
			var r tool.Result
			if got := allocated(func() { r = exec(e, tc.op, tc.args) }); got > 4<<20 {
				t.Errorf("the refused %s allocated %d bytes", tc.op, got)
			}
			if r.Err == nil || r.Err.Reason != "too_large" {
				t.Fatalf("got %+v, want a refusal of the file's size", r.Err)
			}
			for _, want := range []string{fmt.Sprint(size), "16 MiB", "shell command"} {
				if !strings.Contains(r.Err.Message, want) {
					t.Errorf("the message %q lacks %q", r.Err.Message, want)
				}
			}
			if fi, _ := os.Stat(filepath.Join(dir, "big.txt")); fi.Size() != size {
				t.Errorf("the file is %d bytes now", fi.Size())
			}
		})
	}
}

// TestUndoHistoryBounded is the attack of M1: many edits of a large file
// on the surface with undo_edit. The history holds at most
// MaxHistoryBytes, the oldest entries go first, and an undo past them
// says so.
func TestUndoHistoryBounded(t *testing.T) {
	const size, edits = 8<<20 - 1024, 12
	e, dir := newWS(t, nil)
	e.Opts.History = true
	sparse(t, dir, "big.txt", size, "MARK0\n")
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range edits {
		r := exec(e, tool.OpReplace, &tool.ReplaceArgs{Path: "big.txt", Old: fmt.Sprintf("MARK%d", i), New: fmt.Sprintf("MARK%d", i+1)})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > DefaultMaxHistoryBytes+4<<20 {
		t.Errorf("%d edits of a %d-byte file hold %d bytes after them", edits, size, held)
	}
	if e.hist.bytes > DefaultMaxHistoryBytes {
		t.Errorf("the history holds %d bytes", e.hist.bytes)
	}
	kept := DefaultMaxHistoryBytes / size
	for i := edits; i > edits-kept; i-- {
		r := exec(e, tool.OpUndo, &tool.UndoArgs{Path: "big.txt"})
		if r.Err != nil {
			t.Fatalf("undo %d: %v", edits-i+1, r.Err)
		}
		if !strings.HasSuffix(r.File.Content, fmt.Sprintf("MARK%d\n", i-1)) {
			t.Fatalf("undo %d restored the wrong content", edits-i+1)
		}
	}
	r := exec(e, tool.OpUndo, &tool.UndoArgs{Path: "big.txt"})
	if r.Err == nil || r.Err.Reason != "history_dropped" || !strings.Contains(r.Err.Message, "64 MiB") || !strings.Contains(r.Err.Message, "git") {
		t.Errorf("an undo past the kept history: %+v", r.Err)
	}
	// A file that was never edited keeps the reference's answer.
	if r := exec(e, tool.OpUndo, &tool.UndoArgs{Path: "other.txt"}); r.Err == nil || r.Err.Reason != "" || r.Err.Kind != tool.ErrNotFound {
		t.Errorf("an undo without history: %+v", r.Err)
	}
}

// TestHistoryDropsAFileTooLargeForIt: an edit whose old content is larger
// than the whole history keeps nothing of that file, so that no undo
// skips it.
func TestHistoryDropsAFileTooLargeForIt(t *testing.T) {
	e, _ := newWS(t, map[string]string{"f": "one\n"})
	e.Opts.History, e.Opts.MaxHistoryBytes = true, 8
	for _, step := range [][2]string{{"one", "two"}, {"two", "three-is-long"}, {"three-is-long", "four"}} {
		if r := exec(e, tool.OpReplace, &tool.ReplaceArgs{Path: "f", Old: step[0], New: step[1]}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if r := exec(e, tool.OpUndo, &tool.UndoArgs{Path: "f"}); r.Err == nil || r.Err.Reason != "history_dropped" {
		t.Errorf("undo after an edit of a content past the history's bound: %+v %+v", r.File, r.Err)
	}
}

// TestDeletePastBound is the attack of M2 and D1 on delete and rename: a
// file past the bound is recorded by digest and size, never read whole,
// and what a directory's delete carries is bounded in total.
func TestDeletePastBound(t *testing.T) {
	const size = 200 << 20
	e, dir := newWS(t, nil)
	sparse(t, dir, "big.bin", size, "end")
	sparse(t, dir, "moved.bin", size, "end")
	want := zerosDigest(t, size, "end")
	check := func(what string, c tool.FileChange) {
		t.Helper()
		if c.Before != want || c.BeforeData != nil || c.Size != size || !strings.Contains(c.BeforeUnavailable, "digest and size only") {
			t.Errorf("%s: %s %q, %d bytes carried, size %d, %q", what, c.Path, c.Before, len(c.BeforeData), c.Size, c.BeforeUnavailable)
		}
	}
	var r tool.Result
	if got := allocated(func() { r = exec(e, tool.OpDelete, &tool.DeleteArgs{Path: "big.bin"}) }); got > 4<<20 {
		t.Errorf("the delete allocated %d bytes", got)
	}
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	check("delete", r.Changes[0])
	if got := allocated(func() { r = exec(e, tool.OpRename, &tool.RenameArgs{From: "moved.bin", To: "m2.bin"}) }); got > 4<<20 {
		t.Errorf("the rename allocated %d bytes", got)
	}
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	check("rename", r.Changes[0])
	if c := r.Changes[0]; c.After != want || c.AfterData != nil || c.AfterUnavailable == "" {
		t.Errorf("rename's after side: %q, %d bytes carried, %q", c.After, len(c.AfterData), c.AfterUnavailable)
	}

	// Ten files of 12 MiB: each within the file bound, 120 MiB together.
	for i := range 10 {
		sparse(t, dir, fmt.Sprintf("d/f%d", i), 12<<20, "x")
	}
	if got := allocated(func() { r = exec(e, tool.OpDelete, &tool.DeleteArgs{Path: "d", Recursive: true}) }); got > DefaultMaxKeptBytes+8<<20 {
		t.Errorf("the directory's delete allocated %d bytes", got)
	}
	if r.Err != nil || len(r.Changes) != 10 {
		t.Fatalf("%d changes, %v", len(r.Changes), r.Err)
	}
	var carried int
	unkept := 0
	for _, c := range r.Changes {
		carried += len(c.BeforeData)
		if c.BeforeData == nil {
			unkept++
			if c.Before == "" || c.Size != 12<<20 || c.BeforeUnavailable == "" {
				t.Errorf("an unkept change: %s %q, size %d, %q", c.Path, c.Before, c.Size, c.BeforeUnavailable)
			}
		}
	}
	if carried > DefaultMaxKeptBytes || unkept == 0 {
		t.Errorf("the delete carries %d bytes, %d files by digest only", carried, unkept)
	}
}

// TestViewPastBound: a view of a file past the bound reads only its first
// MaxFileBytes, shows whole lines from them and says so.
func TestViewPastBound(t *testing.T) {
	line := "a line of text that a command wrote\n" // 36 bytes
	data := strings.Repeat(line, 3<<20/36)
	e, dir := newWS(t, map[string]string{"big.txt": data})
	e.Opts.MaxFileBytes = 1 << 20
	// And a sparse tail past what any view reads whole.
	const size = 1 << 30
	if err := os.Truncate(filepath.Join(dir, "big.txt"), size); err != nil {
		t.Fatal(err)
	}
	whole := (1 << 20) / 36 // whole lines in the first MiB
	for _, tc := range []struct {
		name        string
		args        tool.ViewArgs
		start, endL int
	}{
		{"whole", tool.ViewArgs{Path: "big.txt"}, 1, whole},
		{"range past what is read", tool.ViewArgs{Path: "big.txt", Start: 10, End: 50000}, 10, whole},
		{"range within", tool.ViewArgs{Path: "big.txt", Start: 2, End: 3}, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r tool.Result
			if got := allocated(func() { r = exec(e, tool.OpView, &tc.args) }); got > 8<<20 {
				t.Errorf("the view allocated %d bytes", got)
			}
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			f := r.File
			want := strings.TrimSuffix(strings.Repeat(line, tc.endL-tc.start+1), "\n")
			if f.Content != want || f.TotalLines != whole || !r.Truncated {
				t.Errorf("%d bytes of content (want %d), %d lines, truncated %v", len(f.Content), len(want), f.TotalLines, r.Truncated)
			}
			for _, s := range []string{fmt.Sprint(size), "1 MiB", "sed -n"} {
				if !strings.Contains(f.Note, s) {
					t.Errorf("the note %q lacks %q", f.Note, s)
				}
			}
		})
	}
	if r := exec(e, tool.OpView, &tool.ViewArgs{Path: "big.txt", Start: whole + 5, End: whole + 6}); r.Err == nil || r.Err.Reason != "past_bound" || !strings.Contains(r.Err.Message, "sed -n") {
		t.Errorf("a range past what a view reads: %+v", r.Err)
	}
	// A file within the bound has no note.
	e.Opts.MaxFileBytes = 0
	if err := os.Truncate(filepath.Join(dir, "big.txt"), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if r := exec(e, tool.OpView, &tool.ViewArgs{Path: "big.txt", Start: 1, End: 1}); r.Err != nil || r.File.Note != "" || r.File.TotalLines != strings.Count(data, "\n")+1 {
		t.Errorf("a view within the bound: %+v", r)
	}
}

// TestReplaceAllBounded: replacing a short text everywhere by a long one
// would multiply a file within the bound (a megabyte of "a", each made a
// kilobyte: a gigabyte); the result's size is checked before it is made.
func TestReplaceAllBounded(t *testing.T) {
	e, _ := newWS(t, map[string]string{"a.txt": strings.Repeat("a", 1<<20)})
	var r tool.Result
	if got := allocated(func() {
		r = exec(e, tool.OpReplace, &tool.ReplaceArgs{Path: "a.txt", Old: "a", New: strings.Repeat("b", 1024), All: true})
	}); got > 8<<20 {
		t.Errorf("the refused replace allocated %d bytes", got)
	}
	if r.Err == nil || r.Err.Reason != "too_large" || !strings.Contains(r.Err.Message, "16 MiB") {
		t.Errorf("got %+v", r.Err)
	}
}

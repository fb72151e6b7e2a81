package fs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

func newWS(t *testing.T, files map[string]string) (*Executor, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &Executor{W: w}, w.Dir()
}

func exec(e *Executor, op tool.Op, args any) tool.Result {
	return e.Execute(context.Background(), tool.Call{ID: "c1", Op: op, Args: args})
}

func TestView(t *testing.T) {
	e, _ := newWS(t, map[string]string{
		"a.txt":      "one\n\ttwo\r\nthree\n",
		"noeol.txt":  "x\ny",
		"d/e/f/g.go": "package g\n",
		"d/.hidden":  "h",
		"d/vis.txt":  "v",
	})
	tests := []struct {
		name       string
		args       tool.ViewArgs
		content    string
		start, tot int
		kind       tool.ErrorKind
	}{
		{"whole", tool.ViewArgs{Path: "a.txt"}, "one\n\ttwo\r\nthree\n", 1, 4, ""},
		{"range", tool.ViewArgs{Path: "a.txt", Start: 2, End: 3}, "\ttwo\r\nthree", 2, 4, ""},
		{"to end", tool.ViewArgs{Path: "a.txt", Start: 3, End: -1}, "three\n", 3, 4, ""},
		{"single line", tool.ViewArgs{Path: "noeol.txt", Start: 2, End: 2}, "y", 2, 2, ""},
		{"start past end", tool.ViewArgs{Path: "a.txt", Start: 9}, "", 0, 0, tool.ErrInvalidRange},
		{"end before start", tool.ViewArgs{Path: "a.txt", Start: 3, End: 2}, "", 0, 0, tool.ErrInvalidRange},
		{"end zero", tool.ViewArgs{Path: "a.txt", Start: 2, End: 0}, "", 0, 0, tool.ErrInvalidRange},
		{"end past last", tool.ViewArgs{Path: "a.txt", Start: 1, End: 5}, "", 0, 0, tool.ErrInvalidRange},
		{"missing", tool.ViewArgs{Path: "nope.txt"}, "", 0, 0, tool.ErrNotFound},
		{"outside", tool.ViewArgs{Path: "../x"}, "", 0, 0, tool.ErrOutsideRoot},
		{"absolute outside", tool.ViewArgs{Path: "/etc/passwd"}, "", 0, 0, tool.ErrOutsideRoot},
		{"range on dir", tool.ViewArgs{Path: "d", Start: 1}, "", 0, 0, tool.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := exec(e, tool.OpView, &tt.args)
			if tt.kind != "" {
				if r.Err == nil || r.Err.Kind != tt.kind {
					t.Fatalf("got %+v, want error kind %s", r.Err, tt.kind)
				}
				return
			}
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.File.Content != tt.content || r.File.StartLine != tt.start || r.File.TotalLines != tt.tot {
				t.Fatalf("got %q start %d total %d", r.File.Content, r.File.StartLine, r.File.TotalLines)
			}
		})
	}
	t.Run("directory two levels, no hidden", func(t *testing.T) {
		r := exec(e, tool.OpView, &tool.ViewArgs{Path: "d"})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		var got []string
		for _, en := range r.Entries {
			got = append(got, en.Path)
		}
		if want := "e e/f vis.txt"; strings.Join(got, " ") != want {
			t.Fatalf("entries %q, want %q", got, want)
		}
	})
}

func TestReplace(t *testing.T) {
	tests := []struct {
		name, content string
		args          tool.ReplaceArgs
		want          string
		kind          tool.ErrorKind
		lines         []int
	}{
		{"unique", "a\n\tb\nc\n", tool.ReplaceArgs{Old: "\tb", New: "\tB"}, "a\n\tB\nc\n", "", nil},
		{"keeps crlf", "a\r\nb\r\n", tool.ReplaceArgs{Old: "b", New: "x"}, "a\r\nx\r\n", "", nil},
		{"no match", "abc", tool.ReplaceArgs{Old: "zz", New: "y"}, "", tool.ErrNoMatch, nil},
		{"tabs are not spaces", "\tx\n", tool.ReplaceArgs{Old: "    x", New: "y"}, "", tool.ErrNoMatch, nil},
		{"several", "x\ny\nx\nx y x\n", tool.ReplaceArgs{Old: "x", New: "z"}, "", tool.ErrMultipleMatches, []int{1, 3, 4, 4}},
		{"all", "x\ny\nx\n", tool.ReplaceArgs{Old: "x", New: "z", All: true}, "z\ny\nz\n", "", nil},
		{"multiline several", "a\nb\na\nb\n", tool.ReplaceArgs{Old: "a\nb", New: "c"}, "", tool.ErrMultipleMatches, []int{1, 3}},
		{"empty old", "abc", tool.ReplaceArgs{Old: "", New: "y"}, "", tool.ErrInvalidInput, nil},
		{"delete", "keep\ndrop\n", tool.ReplaceArgs{Old: "drop\n", New: ""}, "keep\n", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, dir := newWS(t, map[string]string{"f.txt": tt.content})
			tt.args.Path = "f.txt"
			r := exec(e, tool.OpReplace, &tt.args)
			got, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
			if tt.kind != "" {
				if r.Err == nil || r.Err.Kind != tt.kind {
					t.Fatalf("got %+v, want %s", r.Err, tt.kind)
				}
				if tt.lines != nil && joinInts(r.Err.Lines) != joinInts(tt.lines) {
					t.Fatalf("lines %v, want %v", r.Err.Lines, tt.lines)
				}
				if string(got) != tt.content {
					t.Fatalf("file changed on error: %q", got)
				}
				return
			}
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if string(got) != tt.want {
				t.Fatalf("file %q, want %q", got, tt.want)
			}
			c := r.Changes[0]
			if c.Before != tool.Digest([]byte(tt.content)) || c.After != tool.Digest(got) || c.Path != "f.txt" {
				t.Fatalf("change %+v", c)
			}
		})
	}
}

func TestInsert(t *testing.T) {
	tests := []struct {
		content string
		line    int
		text    string
		want    string
		fail    bool
	}{
		{"Line 1\nLine 2\nLine 3", 2, "New Line", "Line 1\nLine 2\nNew Line\nLine 3", false},
		{"a\nb\n", 0, "top", "top\na\nb\n", false},
		{"a\nb", 2, "end", "a\nb\nend", false},
		{"a\nb\n", 3, "end", "a\nb\n\nend", false}, // after the empty piece the final newline leaves, as the reference editor does
		{"# old\nall:\n\t@printf x\n", 0, "# heading", "# heading\n# old\nall:\n\t@printf x\n", false},
		{"a\n", 3, "x", "", true},
		{"a\n", -1, "x", "", true},
	}
	for _, tt := range tests {
		e, dir := newWS(t, map[string]string{"f": tt.content})
		r := exec(e, tool.OpInsert, &tool.InsertArgs{Path: "f", Line: tt.line, Text: tt.text})
		if tt.fail {
			if r.Err == nil || r.Err.Kind != tool.ErrInvalidRange {
				t.Errorf("insert %d into %q: got %+v, want invalid range", tt.line, tt.content, r.Err)
			}
			continue
		}
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		got, _ := os.ReadFile(filepath.Join(dir, "f"))
		if string(got) != tt.want {
			t.Errorf("insert %d into %q: got %q, want %q", tt.line, tt.content, got, tt.want)
		}
	}
}

func TestCreateWriteAtomicModeKept(t *testing.T) {
	e, dir := newWS(t, map[string]string{"run.sh": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := exec(e, tool.OpCreate, &tool.CreateArgs{Path: "run.sh", Content: "x"})
	if r.Err == nil || r.Err.Kind != tool.ErrExists {
		t.Fatalf("create over existing: %+v", r.Err)
	}
	r = exec(e, tool.OpWrite, &tool.CreateArgs{Path: "run.sh", Content: "#!/bin/sh\necho hi\n"})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "run.sh"))
	if fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v, want 0755", fi.Mode().Perm())
	}
	r = exec(e, tool.OpCreate, &tool.CreateArgs{Path: "new/dir/x.go", Content: "package x\n"})
	if r.Err != nil || r.Changes[0].Kind != tool.ChangeAdd || r.Changes[0].Before != "" {
		t.Fatalf("create: %+v", r)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "new/dir"))
	if len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
}

func TestConfinement(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	e, dir := newWS(t, map[string]string{"in.txt": "in"})
	os.Symlink(outside, filepath.Join(dir, "link"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "secretlink"))
	os.Symlink("in.txt", filepath.Join(dir, "goodlink"))
	os.Symlink(filepath.Join(outside, "nothing"), filepath.Join(dir, "dangling"))
	sib := dir + "-sibling"
	os.MkdirAll(sib, 0o755)
	t.Cleanup(func() { os.RemoveAll(sib) })

	refused := []string{
		"../x", "../../etc/passwd", "/etc/passwd", "link/secret", "link/new", "secretlink",
		"dangling", sib + "/x", "a/../../x", filepath.Join(dir, "..", "x"),
	}
	for _, p := range refused {
		for _, op := range []struct {
			op   tool.Op
			args any
		}{
			{tool.OpView, &tool.ViewArgs{Path: p}},
			{tool.OpWrite, &tool.CreateArgs{Path: p, Content: "pwned"}},
			{tool.OpReplace, &tool.ReplaceArgs{Path: p, Old: "s", New: "pwned"}},
		} {
			r := exec(e, op.op, op.args)
			if r.Err == nil || r.Err.Kind != tool.ErrOutsideRoot {
				t.Errorf("%s %s: got %+v, want outside_workspace", op.op, p, r.Err)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "s" {
		t.Fatal("a file outside the workspace was changed")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("a file was created outside the workspace: %v", ents)
	}
	for _, p := range []string{"goodlink", filepath.Join(dir, "in.txt"), "./sub/../in.txt"} {
		if r := exec(e, tool.OpView, &tool.ViewArgs{Path: p}); r.Err != nil {
			t.Errorf("view %s: %v", p, r.Err)
		}
	}
}

func TestExtraRoots(t *testing.T) {
	ro, rw := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ro, "lib.txt"), []byte("lib"), 0o644)
	dir := t.TempDir()
	w, err := Open(dir, RootSpec{Path: ro, ReadOnly: true}, RootSpec{Path: rw})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e := &Executor{W: w}
	if r := exec(e, tool.OpView, &tool.ViewArgs{Path: filepath.Join(ro, "lib.txt")}); r.Err != nil || r.File.Content != "lib" {
		t.Fatalf("read extra root: %+v", r)
	}
	if r := exec(e, tool.OpWrite, &tool.CreateArgs{Path: filepath.Join(ro, "lib.txt"), Content: "x"}); r.Err == nil || r.Err.Kind != tool.ErrReadOnly {
		t.Fatalf("write read-only root: %+v", r.Err)
	}
	if r := exec(e, tool.OpWrite, &tool.CreateArgs{Path: filepath.Join(rw, "out.txt"), Content: "x"}); r.Err != nil {
		t.Fatalf("write rw root: %v", r.Err)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a", "../a", "/etc", "a/../../b", "./.", "link/x", "\x00", "a//b/", "~", "%2e%2e%2f"} {
		f.Add(s)
	}
	base := f.TempDir()
	dir := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.Symlink(base, filepath.Join(dir, "link"))
	w, err := Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	defer w.Close()
	e := &Executor{W: w}
	f.Fuzz(func(t *testing.T, name string) {
		p, err := w.Resolve(name)
		if err != nil {
			return
		}
		if _, ok := within(w.Dir(), p.Abs); !ok {
			t.Fatalf("Resolve(%q) = %q, outside %q", name, p.Abs, w.Dir())
		}
		// Writing through any accepted path never creates anything outside.
		exec(e, tool.OpWrite, &tool.CreateArgs{Path: name, Content: "x"})
		ents, _ := os.ReadDir(base)
		if len(ents) != 1 {
			t.Fatalf("write of %q created %v outside the workspace", name, ents)
		}
	})
}

func TestEditSpan(t *testing.T) {
	content := "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\n"
	tests := []struct {
		old, new    string
		line, start int
		window      string
	}{
		{"l6\n", "L6\n", 5, 1, "l2\nl3\nl4\nl5\nL6\nl7\nl8\nl9\nl10\nl11"}, // a final newline in the new text counts a line, as in the reference editor
		{"l1\n", "L1\nL1b\n", 0, 0, "L1\nL1b\nl2\nl3\nl4\nl5\nl6"},
		{"l12\n", "L12\n", 11, 7, "l8\nl9\nl10\nl11\nL12\n"},
	}
	for _, tt := range tests {
		e, _ := newWS(t, map[string]string{"f": content})
		r := exec(e, tool.OpReplace, &tool.ReplaceArgs{Path: "f", Old: tt.old, New: tt.new})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if r.Edit.Line != tt.line || r.Edit.WindowStart != tt.start || r.Edit.Window != tt.window {
			t.Errorf("%q: got line %d start %d window %q", tt.old, r.Edit.Line, r.Edit.WindowStart, r.Edit.Window)
		}
	}
	e, _ := newWS(t, map[string]string{"f": "a\nb\n"})
	r := exec(e, tool.OpInsert, &tool.InsertArgs{Path: "f", Line: 3, Text: "end"})
	if r.Err != nil || r.Edit.Line != 3 || r.Edit.Window != "a\nb\n\nend" || !r.Edit.EOF {
		t.Fatalf("insert at the end: %+v %+v", r.Err, r.Edit)
	}
}

func TestDeleteRenameUndo(t *testing.T) {
	e, dir := newWS(t, map[string]string{"a.txt": "one\n", "d/x.txt": "x", "d/e/y.txt": "y", "b.txt": "b"})
	e.Opts.History = true
	if r := exec(e, tool.OpRename, &tool.RenameArgs{From: "a.txt", To: "b.txt"}); r.Err == nil || r.Err.Kind != tool.ErrExists {
		t.Fatalf("rename over an existing file: %+v", r.Err)
	}
	if r := exec(e, tool.OpRename, &tool.RenameArgs{From: "a.txt", To: "new/dir/a.txt"}); r.Err != nil || r.Changes[0].MovedTo != "new/dir/a.txt" {
		t.Fatalf("rename: %+v", r)
	}
	if r := exec(e, tool.OpRename, &tool.RenameArgs{From: "new/dir/a.txt", To: "../escape.txt"}); r.Err == nil || r.Err.Kind != tool.ErrOutsideRoot {
		t.Fatalf("rename outside: %+v", r.Err)
	}
	if r := exec(e, tool.OpDelete, &tool.DeleteArgs{Path: "d"}); r.Err == nil || r.Err.Kind != tool.ErrIsDir {
		t.Fatalf("delete a directory without recursive: %+v", r.Err)
	}
	if r := exec(e, tool.OpDelete, &tool.DeleteArgs{Path: "d", Recursive: true}); r.Err != nil || len(r.Changes) != 2 {
		t.Fatalf("recursive delete: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "d")); !os.IsNotExist(err) {
		t.Fatal("d still exists")
	}
	if r := exec(e, tool.OpDelete, &tool.DeleteArgs{Path: ".", Recursive: true}); r.Err == nil {
		t.Fatal("the root was deleted")
	}
	// Undo steps back through edits, then removes a file the executor created.
	exec(e, tool.OpCreate, &tool.CreateArgs{Path: "c.txt", Content: "v1\n"})
	exec(e, tool.OpReplace, &tool.ReplaceArgs{Path: "c.txt", Old: "v1", New: "v2"})
	exec(e, tool.OpReplace, &tool.ReplaceArgs{Path: "c.txt", Old: "v2", New: "v3"})
	for _, want := range []string{"v2\n", "v1\n"} {
		if r := exec(e, tool.OpUndo, &tool.UndoArgs{Path: "c.txt"}); r.Err != nil || r.File.Content != want {
			t.Fatalf("undo: %+v", r)
		}
	}
	if r := exec(e, tool.OpUndo, &tool.UndoArgs{Path: "c.txt"}); r.Err != nil || r.Changes[0].Kind != tool.ChangeDelete {
		t.Fatalf("undo of the create: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "c.txt")); !os.IsNotExist(err) {
		t.Fatal("undo of a create left the file")
	}
	if r := exec(e, tool.OpUndo, &tool.UndoArgs{Path: "c.txt"}); r.Err == nil || r.Err.Kind != tool.ErrNotFound {
		t.Fatalf("undo without history: %+v", r.Err)
	}
}

func TestModes(t *testing.T) {
	e, dir := newWS(t, nil)
	e.Opts.FileMode, e.Opts.DirMode = 0o600, 0o700
	if r := exec(e, tool.OpCreate, &tool.CreateArgs{Path: "p/q/f", Content: "s"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	for name, want := range map[string]os.FileMode{"p": 0o700, "p/q": 0o700, "p/q/f": 0o600} {
		fi, _ := os.Stat(filepath.Join(dir, name))
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
}

// TestAliases: a path below an alias of the primary root (the
// workspace's path in a container) resolves to the same path below the
// root; an alias does not widen the workspace.
func TestAliases(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWith(dir, WorkspaceOptions{Aliases: []string{"/testbed", "relative", "/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	real, _ := filepath.EvalSymlinks(dir)
	for _, tc := range []struct {
		name, abs string
		ok        bool
	}{
		{"/testbed/a.txt", filepath.Join(real, "a.txt"), true},
		{"/testbed", real, true},
		{"/testbed/sub/../a.txt", filepath.Join(real, "a.txt"), true},
		{"/testbed/../etc/passwd", "", false},
		{"/testbedx/a.txt", "", false},
		{"/etc/passwd", "", false}, // "/" is not taken as an alias
	} {
		p, err := w.Resolve(tc.name)
		if (err == nil) != tc.ok || (tc.ok && p.Abs != tc.abs) {
			t.Errorf("Resolve(%q) = %q, %v; want %q, ok %v", tc.name, p.Abs, err, tc.abs, tc.ok)
		}
	}
}

package memory

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

func TestResolve(t *testing.T) {
	ok := map[string]string{"/memories": ".", "/memories/": ".", "/memories/a.md": "a.md", "/memories/d/../b.md": "b.md", "/memories/./x/y": "x/y"}
	for in, want := range ok {
		if got, err := Resolve(in); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"/memoriesX/a", "/memories-evil", "memories/a", "/etc/passwd", "/memories/../x", "/memories/a/../../x",
		"/memories/%2e%2e/x", "/memories/%2E%2E%2Fx", `/memories/..\x`, "/memories/a\x00b", "", "/"} {
		if _, err := Resolve(bad); err == nil {
			t.Errorf("Resolve(%q) accepted", bad)
		}
	}
}

func TestStore(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "mem")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(op tool.Op, args any) tool.Result {
		return s.Execute(context.Background(), tool.Call{ID: "c", Op: op, Args: args})
	}
	if r := run(tool.OpMemoryCreate, &tool.CreateArgs{Path: "/memories/notes/a.md", Content: "hi\n"}); r.Err != nil || r.Changes[0].Path != "/memories/notes/a.md" {
		t.Fatalf("create: %+v", r)
	}
	fi, _ := os.Stat(filepath.Join(dir, "notes", "a.md"))
	di, _ := os.Stat(filepath.Join(dir, "notes"))
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Fatalf("modes %v %v", fi.Mode().Perm(), di.Mode().Perm())
	}
	os.Symlink(base, filepath.Join(dir, "out"))
	for _, r := range []tool.Result{
		run(tool.OpMemoryView, &tool.ViewArgs{Path: "/memories/out/mem/notes/a.md"}),
		run(tool.OpMemoryCreate, &tool.CreateArgs{Path: "/memories/out/pwned", Content: "x"}),
		run(tool.OpMemoryRename, &tool.RenameArgs{From: "/memories/notes/a.md", To: "/memories/out/a.md"}),
	} {
		if r.Err == nil || r.Err.Message != "Path /memories/out/mem/notes/a.md would escape /memories directory" && r.Err.Kind != tool.ErrOutsideRoot {
			t.Errorf("symlink escape: %+v", r.Err)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "pwned")); err == nil {
		t.Fatal("wrote through a symlink")
	}
	if r := run(tool.OpMemoryDelete, &tool.DeleteArgs{Path: "/memories", Recursive: true}); r.Err == nil || r.Err.Message != "Cannot delete the /memories directory itself" {
		t.Fatalf("delete root: %+v", r.Err)
	}
	if r := run(tool.OpMemoryRename, &tool.RenameArgs{From: "/memories/notes/a.md", To: "/memories/b.md"}); r.Err != nil || r.Changes[0].MovedTo != "/memories/b.md" {
		t.Fatalf("rename: %+v", r)
	}
	if r := run(tool.OpMemoryView, &tool.ViewArgs{Path: "/memories/b.md"}); r.Err != nil || r.File.Content != "hi\n" || r.File.Path != "/memories/b.md" {
		t.Fatalf("view: %+v", r)
	}
	// An edit's change carries the bytes its digests were computed from,
	// for the ledger to store.
	r := run(tool.OpMemoryReplace, &tool.ReplaceArgs{Path: "/memories/b.md", Old: "hi", New: "ho"})
	if r.Err != nil || len(r.Changes) != 1 || string(r.Changes[0].BeforeData) != "hi\n" || string(r.Changes[0].AfterData) != "ho\n" ||
		r.Changes[0].After != tool.Digest([]byte("ho\n")) {
		t.Fatalf("replace: %+v", r)
	}
}

func TestText(t *testing.T) {
	if got := ReadText([]byte("a\r\nb\rc\n\r\n")); got != "a\nb\nc\n\n" {
		t.Errorf("ReadText: %q", got)
	}
	for in, want := range map[string][]string{
		"": nil, "a": {"a"}, "a\n": {"a"}, "a\n\n": {"a", ""}, "a\r\nb": {"a", "b"}, "a\rb\n": {"a", "b"},
		"a\vb\fc\x1cd\x1de\x1ef\u0085g\u2028h\u2029i": {"a", "b", "c", "d", "e", "f", "g", "h", "i"},
	} {
		if got := SplitLines(in); strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("SplitLines(%q) = %q, want %q", in, got, want)
		}
	}
	for _, tt := range []struct {
		s, old string
		want   []int
	}{
		{"aaa\naa\n", "aa", []int{1, 1, 2}},
		{"ab\nc", "", []int{1, 1, 1, 2, 2}},
		{"é\nxé\n", "", []int{1, 1, 2, 2, 2, 3}},
		{"x\ny\nx", "x", []int{1, 3}},
		{"x", "y", nil},
	} {
		if got := MatchLines(tt.s, tt.old); JoinInts(got) != JoinInts(tt.want) {
			t.Errorf("MatchLines(%q, %q) = %v, want %v", tt.s, tt.old, got, tt.want)
		}
	}
}

func FuzzSplitLines(f *testing.F) {
	for _, s := range []string{"", "a\nb", "a\r\n\rb\n", "\u2028x\x85", "\v\f\x1c\x1d\x1e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lines := SplitLines(s)
		n := 0
		for _, l := range lines {
			if strings.ContainsAny(l, "\n\r\v\f\x1c\x1d\x1e\u0085\u2028\u2029") {
				t.Fatalf("a line holds a line break: %q", l)
			}
			n += len(l)
		}
		// What is not in a line is line breaks.
		rest := strings.NewReplacer("\r\n", "", "\n", "", "\r", "", "\v", "", "\f", "", "\x1c", "", "\x1d", "", "\x1e", "", "\u0085", "", "\u2028", "", "\u2029", "").Replace(s)
		if n != len(rest) {
			t.Fatalf("%q: lines %q hold %d bytes, the text without breaks %d", s, lines, n, len(rest))
		}
		if MatchLines(s, "\n") == nil && len(lines) > 1 && !strings.ContainsAny(s, "\r\v\f\x1c\x1d\x1e\u0085\u2028\u2029") {
			t.Fatalf("%q: several lines without a break", s)
		}
	})
}

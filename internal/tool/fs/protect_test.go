package fs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// No operation writes a .git (of the workspace, of a nested repository,
// one made during the session, in any letter case), the git directory a
// .git file names, or the project's configuration; reads still work.
func TestProtectedPaths(t *testing.T) {
	e, dir := newWS(t, map[string]string{
		".git/config":           "[core]\n",
		".truss/config.toml":    "[validate]\n",
		".truss/agents/r.md":    "x",
		"sub/.git/config":       "[core]\n",
		"sub/src.go":            "package sub\n",
		"wt/.git":               "gitdir: ../gitdirs/wt\n",
		"gitdirs/wt/config":     "[core]\n",
		"free/a.txt":            "a",
		"free/.gitignore":       "x",
		"notes/.truss/x.toml":   "nested .truss is an ordinary directory",
		"holder/deep/.git/HEAD": "ref: refs/heads/main\n",
	})
	// Links a command made inside the workspace, which the file tools
	// follow while they stay beneath the root.
	for link, target := range map[string]string{"g": ".git", "tl": ".truss", "free/up": "../sub/.git"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		op   tool.Op
		args any
	}{
		{"write through a link to .git", tool.OpWrite, &tool.CreateArgs{Path: "g/config", Content: "[core]\n\tfsmonitor = touch /tmp/p\n"}},
		{"replace through a link to .git", tool.OpReplace, &tool.ReplaceArgs{Path: "g/config", Old: "[core]", New: "[core]\n\tfsmonitor = x"}},
		{"create under a link to .git", tool.OpCreate, &tool.CreateArgs{Path: "g/hooks/new/pre-commit", Content: "#!/bin/sh\n"}},
		{"write through a link to .truss", tool.OpWrite, &tool.CreateArgs{Path: "tl/config.toml", Content: "[sandbox]\n"}},
		{"write through a relative link to a nested .git", tool.OpWrite, &tool.CreateArgs{Path: "free/up/config", Content: "x"}},
		{"write .git/config", tool.OpWrite, &tool.CreateArgs{Path: ".git/config", Content: "[core]\n\tfsmonitor = touch /tmp/p\n"}},
		{"create a hook", tool.OpCreate, &tool.CreateArgs{Path: ".git/hooks/post-checkout", Content: "#!/bin/sh\n"}},
		{"absolute .git path", tool.OpWrite, &tool.CreateArgs{Path: filepath.Join(dir, ".git", "config"), Content: "x"}},
		{"upper case", tool.OpWrite, &tool.CreateArgs{Path: ".GIT/config", Content: "x"}},
		{"nested repository", tool.OpReplace, &tool.ReplaceArgs{Path: "sub/.git/config", Old: "[core]", New: "[core]\n\thooksPath = /x"}},
		{"a new repository", tool.OpCreate, &tool.CreateArgs{Path: "fresh/.git/config", Content: "[core]\n"}},
		{"a .git file", tool.OpCreate, &tool.CreateArgs{Path: "free/.git", Content: "gitdir: /elsewhere\n"}},
		{"insert", tool.OpInsert, &tool.InsertArgs{Path: ".git/config", Line: 0, Text: "x"}},
		{"delete .git", tool.OpDelete, &tool.DeleteArgs{Path: ".git", Recursive: true}},
		{"delete a directory holding one", tool.OpDelete, &tool.DeleteArgs{Path: "holder", Recursive: true}},
		{"rename into .git", tool.OpRename, &tool.RenameArgs{From: "free/a.txt", To: ".git/a.txt"}},
		{"rename out of .git", tool.OpRename, &tool.RenameArgs{From: ".git/config", To: "config"}},
		{"rename a repository away", tool.OpRename, &tool.RenameArgs{From: "sub", To: "sub2"}},
		{"config", tool.OpWrite, &tool.CreateArgs{Path: ".truss/config.toml", Content: "[sandbox]\nwritable = [\"/\"]\n"}},
		{"new agent", tool.OpCreate, &tool.CreateArgs{Path: ".truss/agents/evil.md", Content: "x"}},
		{"delete config", tool.OpDelete, &tool.DeleteArgs{Path: ".truss", Recursive: true}},
		{"rename config", tool.OpRename, &tool.RenameArgs{From: ".truss", To: "t"}},
	} {
		r := exec(e, tc.op, tc.args)
		if r.Err == nil || r.Err.Kind != tool.ErrReadOnly || !strings.Contains(r.Err.Message, "read-only to every tool") {
			t.Errorf("%s: %+v", tc.name, r.Err)
		}
	}
	for p, want := range map[string]string{".git/config": "[core]\n", ".truss/config.toml": "[validate]\n", "sub/.git/config": "[core]\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, p)); string(b) != want {
			t.Errorf("%s changed: %q", p, b)
		}
	}
	for _, p := range []string{"fresh", "free/.git", ".git/hooks", ".truss/agents/evil.md", "sub2", "t"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was made", p)
		}
	}
	// Reading is allowed; so is writing beside them.
	if r := exec(e, tool.OpView, &tool.ViewArgs{Path: ".git/config"}); r.Err != nil {
		t.Errorf("view .git/config: %v", r.Err)
	}
	for _, tc := range []struct {
		op   tool.Op
		args any
	}{
		{tool.OpWrite, &tool.CreateArgs{Path: "free/.gitignore", Content: "y"}},
		{tool.OpWrite, &tool.CreateArgs{Path: "notes/.truss/x.toml", Content: "y"}},
		{tool.OpWrite, &tool.CreateArgs{Path: "sub/src.go", Content: "package sub // ok\n"}},
		{tool.OpRename, &tool.RenameArgs{From: "free", To: "free2"}},
		{tool.OpDelete, &tool.DeleteArgs{Path: "free2", Recursive: true}},
	} {
		if r := exec(e, tc.op, tc.args); r.Err != nil {
			t.Errorf("%s %+v: %v", tc.op, tc.args, r.Err)
		}
	}
}

// A workspace whose .git is a "gitdir:" file protects the directory it
// names when that lies in a root.
func TestProtectedGitdirFile(t *testing.T) {
	_, dir := newWS(t, map[string]string{
		"repo/.git":           "gitdir: ../store/repo.git\n",
		"store/repo.git/HEAD": "ref: refs/heads/main\n",
	})
	w, err := Open(filepath.Join(dir, "repo"), RootSpec{Path: filepath.Join(dir, "store")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e := &Executor{W: w}
	for _, p := range []string{filepath.Join(dir, "store", "repo.git", "HEAD"), filepath.Join(dir, "store", "repo.git", "hooks", "x"), ".git"} {
		r := exec(e, tool.OpWrite, &tool.CreateArgs{Path: p, Content: "x"})
		if r.Err == nil || r.Err.Kind != tool.ErrReadOnly {
			t.Errorf("%s: %+v", p, r.Err)
		}
	}
	if r := exec(e, tool.OpDelete, &tool.DeleteArgs{Path: filepath.Join(dir, "store"), Recursive: true}); r.Err == nil {
		t.Error("the root holding the gitdir was deleted")
	}
	if r := exec(e, tool.OpWrite, &tool.CreateArgs{Path: filepath.Join(dir, "store", "other.txt"), Content: "x"}); r.Err != nil {
		t.Errorf("beside the gitdir: %v", r.Err)
	}
}

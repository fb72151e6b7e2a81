package patch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
)

// A patch cannot write a .git or the project's configuration, and a patch
// that tries changes none of its files.
func TestPatchRefusesProtectedPaths(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	w, err := tfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	x := NewExecutor(&tfs.Executor{W: w})
	for _, text := range []string{
		"*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Update File: .git/config\n@@\n [core]\n+\tfsmonitor = touch /tmp/p\n*** End Patch",
		"*** Begin Patch\n*** Add File: .truss/config.toml\n+[sandbox]\n+writable = [\"/\"]\n*** End Patch",
		"*** Begin Patch\n*** Update File: a.txt\n*** Move to: .git/hooks/pre-commit\n@@\n-a\n+b\n*** End Patch",
	} {
		r := x.Execute(context.Background(), tool.Call{ID: "c", Op: tool.OpPatch, Args: &tool.PatchArgs{Text: text}})
		if r.Err == nil || r.Err.Kind != tool.ErrReadOnly {
			t.Errorf("%q: %+v", text, r.Err)
		}
	}
	for p, want := range map[string]string{"a.txt": "a\n", ".git/config": "[core]\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, p)); string(b) != want {
			t.Errorf("%s: %q", p, b)
		}
	}
	for _, p := range []string{".truss", ".git/hooks"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was made", p)
		}
	}
}

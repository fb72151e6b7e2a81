package patch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
)

// conformanceCall is the call of a conformance case: its envelope or its
// single operation.
func conformanceCall(t *testing.T, dir string, c conformanceCase) tool.Call {
	if c.Operation != nil {
		return tool.Call{ID: "c", Op: tool.OpPatchOp, Args: &tool.PatchOpArgs{Type: c.Operation.Type, Path: c.Operation.Path, Diff: c.Operation.Diff}}
	}
	text, err := os.ReadFile(filepath.Join(dir, "patch.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return tool.Call{ID: "c", Op: tool.OpPatch, Args: &tool.PatchArgs{Text: string(text)}}
}

// TestPreviewConformance previews every conformance case before applying
// it: the preview writes nothing, a case that applies has for preview the
// diff of the changes the executor then returns, and a case that fails
// fails its preview with the same kind of error.
func TestPreviewConformance(t *testing.T) {
	cases, err := filepath.Glob("testdata/conformance/*/case.json")
	if err != nil || len(cases) == 0 {
		t.Fatal("no conformance cases")
	}
	for _, f := range cases {
		dir := filepath.Dir(f)
		var c conformanceCase
		b, _ := os.ReadFile(f)
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		if c.Mode == "normalize_lf" {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			ws := t.TempDir()
			copyTree(t, filepath.Join(dir, "input"), ws)
			before := tree(t, ws)
			w, err := tfs.Open(ws)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			x := NewExecutor(&tfs.Executor{W: w})
			call := conformanceCall(t, dir, c)
			preview, perr := x.Preview(context.Background(), call)
			equalTrees(t, tree(t, ws), before)
			r := x.Execute(context.Background(), call)
			if c.Expect == "error" {
				if perr == nil || r.Err == nil || tool.KindOf(perr) != r.Err.Kind {
					t.Fatalf("preview error %v, result error %+v: want the same kind", perr, r.Err)
				}
				return
			}
			if perr != nil || r.Err != nil {
				t.Fatalf("preview error %v, result error %+v", perr, r.Err)
			}
			if got := tfs.Diff(r.Changes); got != preview {
				t.Errorf("preview:\n%s\nthe changes made:\n%s", preview, got)
			}
			if preview == "" {
				t.Error("empty preview of a patch that changed files")
			}
		})
	}
}

// TestPreviewPatch: the preview of a patch that adds, moves, updates and
// deletes files shows each, and a patch naming a planted FIFO or a link
// leading outside the workspace fails its preview at once, as applying
// it fails, without writing or reading what lies outside.
func TestPreviewPatch(t *testing.T) {
	const secret = "SECRET-77c1"
	ws := t.TempDir()
	for name, content := range map[string]string{"a.txt": "a\nb\n", "old.txt": "o\n", "gone.txt": "g\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "key"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "f.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "key"), filepath.Join(ws, "key.txt")); err != nil {
		t.Fatal(err)
	}
	w, err := tfs.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	x := NewExecutor(&tfs.Executor{W: w})
	before := tree(t, ws)
	preview := func(text string) (string, error) {
		t.Helper()
		type res struct {
			d   string
			err error
		}
		done := make(chan res, 1)
		go func() {
			d, err := x.Preview(context.Background(), tool.Call{ID: "c", Op: tool.OpPatch, Args: &tool.PatchArgs{Text: text}})
			done <- res{d, err}
		}()
		select {
		case r := <-done:
			return r.d, r.err
		case <-time.After(30 * time.Second):
			t.Fatal("the preview hangs on what a command planted")
			return "", nil
		}
	}
	d, err := preview("*** Begin Patch\n*** Add File: new.txt\n+n\n*** Update File: a.txt\n@@\n a\n-b\n+B\n*** Update File: old.txt\n*** Move to: moved.txt\n@@\n-o\n+O\n*** Delete File: gone.txt\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"--- /dev/null\n+++ b/new.txt\n", "-b\n+B\n", "--- a/old.txt\n+++ /dev/null\n", "--- /dev/null\n+++ b/moved.txt\n", "+O\n", "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-g\n"} {
		if !strings.Contains(d, l) {
			t.Errorf("the preview lacks %q:\n%s", l, d)
		}
	}
	for _, text := range []string{
		"*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: f.txt\n@@\n-x\n+y\n*** End Patch",
		"*** Begin Patch\n*** Delete File: f.txt\n*** End Patch",
		"*** Begin Patch\n*** Update File: key.txt\n@@\n-" + secret + "\n+x\n*** End Patch",
		"*** Begin Patch\n*** Delete File: key.txt\n*** End Patch",
	} {
		d, err := preview(text)
		if err == nil || strings.Contains(d+err.Error(), secret) {
			t.Errorf("preview %q, %v: want a refusal that does not show the secret", d, err)
		}
	}
	equalTrees(t, tree(t, ws), before)
}

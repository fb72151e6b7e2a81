package patch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
)

// TestPatchSerialized: one agent patches a file while another replaces
// other lines of it through its own file executor on the same workspace.
// A patch holds the workspace's lock from reading the file to writing it,
// so no change of either is lost (the editing agent views the file again
// when its edit is refused because the patch changed it).
func TestPatchSerialized(t *testing.T) {
	const n = 100
	dir := t.TempDir()
	var sb strings.Builder
	for i := range 2 * n {
		fmt.Fprintf(&sb, "k%d=old\n", i)
	}
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte(sb.String()), 0o644)
	w, err := tfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	px := NewExecutor(&tfs.Executor{W: w})
	fx := &tfs.Executor{W: w}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 2*n; i += 2 {
			text := fmt.Sprintf("*** Begin Patch\n*** Update File: f.txt\n@@\n-k%d=old\n+k%d=new\n*** End Patch", i, i)
			if r := px.Execute(context.Background(), tool.Call{ID: "p", Op: tool.OpPatch, Args: &tool.PatchArgs{Text: text}}); r.Err != nil {
				t.Errorf("patch k%d: %v", i, r.Err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 1; i < 2*n; i += 2 {
			for {
				r := fx.Execute(context.Background(), tool.Call{ID: "r", Op: tool.OpReplace,
					Args: &tool.ReplaceArgs{Path: "f.txt", Old: fmt.Sprintf("k%d=old\n", i), New: fmt.Sprintf("k%d=new\n", i)}})
				if r.Err == nil {
					break
				}
				if r.Err.Kind != tool.ErrStale {
					t.Errorf("replace k%d: %v", i, r.Err)
					return
				}
				// The patch changed the file since: view it again.
				fx.Execute(context.Background(), tool.Call{ID: "v", Op: tool.OpView, Args: &tool.ViewArgs{Path: "f.txt"}})
			}
		}
	}()
	wg.Wait()
	got, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
	if lost := strings.Count(string(got), "=old"); lost != 0 {
		t.Fatalf("%d of %d changes lost", lost, 2*n)
	}
}

// TestPatchChangesCarryContents: a patch's file changes carry the
// contents they digest.
func TestPatchChangesCarryContents(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "d.txt"), []byte("d\n"), 0o644)
	w, err := tfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	x := NewExecutor(&tfs.Executor{W: w})
	r := x.Execute(context.Background(), tool.Call{ID: "p", Op: tool.OpPatch, Args: &tool.PatchArgs{Text: "*** Begin Patch\n" +
		"*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+b\n*** Add File: n.txt\n+n\n*** Delete File: d.txt\n*** End Patch"}})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	want := map[string][2]string{"a.txt": {"a\n", ""}, "b.txt": {"", "b\n"}, "n.txt": {"", "n\n"}, "d.txt": {"d\n", ""}}
	if len(r.Changes) != len(want) {
		t.Fatalf("changes %+v", r.Changes)
	}
	for _, ch := range r.Changes {
		wc := want[ch.Path]
		for i, c := range []struct {
			digest string
			data   []byte
		}{{ch.Before, ch.BeforeData}, {ch.After, ch.AfterData}} {
			if wc[i] == "" {
				if c.digest != "" || c.data != nil {
					t.Errorf("%s side %d: %q %q, want none", ch.Path, i, c.digest, c.data)
				}
				continue
			}
			if !bytes.Equal(c.data, []byte(wc[i])) || c.digest != tool.Digest(c.data) {
				t.Errorf("%s side %d: %q (%s), want %q", ch.Path, i, c.data, c.digest, wc[i])
			}
		}
	}
}

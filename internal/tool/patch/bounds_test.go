package patch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
)

// sparse makes a file of size bytes beneath dir, zeros but for tail at its
// end, that takes almost no disk (truncate -s, as a command would).
func sparse(t *testing.T, dir, name string, size int64, tail string) {
	t.Helper()
	p := filepath.Join(dir, name)
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
}

func runPatch(t *testing.T, dir, text string) (tool.Result, uint64) {
	t.Helper()
	w, err := tfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	x := NewExecutor(&tfs.Executor{W: w})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := x.Execute(context.Background(), tool.Call{ID: "c", Op: tool.OpPatch, Args: &tool.PatchArgs{Text: text}})
	runtime.ReadMemStats(&after)
	return r, after.TotalAlloc - before.TotalAlloc
}

// TestPatchBounds is the attack of M2 and its kin: a patch naming large
// sparse files. Deleting them reads none of them (each is recorded by
// digest and size), updating one past the file tools' bound is refused
// before it is read, and a patch whose files add up past what a patch
// holds is refused before anything is written.
func TestPatchBounds(t *testing.T) {
	t.Run("delete", func(t *testing.T) {
		dir := t.TempDir()
		var text strings.Builder
		text.WriteString("*** Begin Patch\n")
		for i := range 3 {
			sparse(t, dir, fmt.Sprintf("s%d.bin", i), 100<<20, "x")
			fmt.Fprintf(&text, "*** Delete File: s%d.bin\n", i)
		}
		text.WriteString("*** End Patch")
		r, alloc := runPatch(t, dir, text.String())
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if alloc > 8<<20 {
			t.Errorf("deleting three 100 MiB files allocated %d bytes", alloc)
		}
		for _, c := range r.Changes {
			if c.Kind != tool.ChangeDelete || c.Before == "" || c.BeforeData != nil || c.Size != 100<<20 || c.BeforeUnavailable == "" {
				t.Errorf("change of %s: %s %q, %d bytes carried, size %d, %q", c.Path, c.Kind, c.Before, len(c.BeforeData), c.Size, c.BeforeUnavailable)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("left %v", ents)
		}
	})
	t.Run("update past the file bound", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sparse(t, dir, "big.txt", 100<<20, "\nMARK\n")
		r, alloc := runPatch(t, dir, "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Update File: big.txt\n@@\n-MARK\n+MORK\n*** End Patch")
		if r.Err == nil || !strings.Contains(r.Err.Message, fmt.Sprint(100<<20)) || !strings.Contains(r.Err.Message, "16 MiB") || !strings.Contains(r.Err.Message, "shell command") {
			t.Fatalf("got %+v, want the file's size, the bound and the way on", r.Err)
		}
		if alloc > 8<<20 {
			t.Errorf("the refused patch allocated %d bytes", alloc)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "a\n" {
			t.Errorf("a.txt: %q", b)
		}
	})
	t.Run("files adding up past the patch's bound", func(t *testing.T) {
		dir := t.TempDir()
		var text strings.Builder
		text.WriteString("*** Begin Patch\n")
		for i := range 6 {
			sparse(t, dir, fmt.Sprintf("f%d.txt", i), 12<<20, "\nMARK\n")
			fmt.Fprintf(&text, "*** Update File: f%d.txt\n@@\n-MARK\n+MORK\n", i)
		}
		text.WriteString("*** End Patch")
		r, _ := runPatch(t, dir, text.String())
		if r.Err == nil || !strings.Contains(r.Err.Message, "64 MiB") || !strings.Contains(r.Err.Message, "smaller patches") {
			t.Fatalf("got %+v, want a refusal of the patch's total", r.Err)
		}
		for i := range 6 {
			if b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i))); !strings.HasSuffix(string(b), "MARK\n") {
				t.Errorf("f%d.txt changed by a refused patch", i)
			}
		}
	})
	t.Run("a failed write restores what an earlier delete took", func(t *testing.T) {
		dir := t.TempDir()
		for name, content := range map[string]string{"gone.txt": "g\n", "a.txt": "a\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// The add's parent is a file: its write fails after the delete ran.
		r, _ := runPatch(t, dir, "*** Begin Patch\n*** Delete File: gone.txt\n*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: a.txt/x\n+x\n*** End Patch")
		if r.Err == nil {
			t.Fatal("the patch applied")
		}
		for name, want := range map[string]string{"gone.txt": "g\n", "a.txt": "a\n"} {
			if b, err := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
				t.Errorf("%s: %q, %v", name, b, err)
			}
		}
	})
}

package patch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
)

// TestPatchPlantedSpecialFiles: apply_patch on names a sandboxed command
// turned into FIFOs, sockets or links to /dev/zero returns at once with
// an error the model reads, and changes none of the patch's files. (A
// blocking open of a FIFO never returns: the deadline is a hang
// detector, not a timing assertion.)
func TestPatchPlantedSpecialFiles(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, dir string)
		patch string // an envelope (apply_patch), or "OP PATH\nDIFF" for one typed operation
		msg   string
	}{
		{"update a FIFO", mkfifo("f.txt"), "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Update File: f.txt\n@@\n-a\n+b\n*** End Patch", "(a FIFO)"},
		{"delete a FIFO", mkfifo("f.txt"), "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Delete File: f.txt\n*** End Patch", "(a FIFO)"},
		{"move a FIFO", mkfifo("f.txt"), "*** Begin Patch\n*** Update File: f.txt\n*** Move to: g.txt\n@@\n-a\n+b\n*** End Patch", "(a FIFO)"},
		{"update through a link to a FIFO", func(t *testing.T, dir string) {
			mkfifo("f.txt")(t, dir)
			if err := os.Symlink("f.txt", filepath.Join(dir, "l.txt")); err != nil {
				t.Fatal(err)
			}
		}, "*** Begin Patch\n*** Update File: l.txt\n@@\n-a\n+b\n*** End Patch", "(a FIFO)"},
		{"update a link to /dev/zero", func(t *testing.T, dir string) {
			if err := os.Symlink("/dev/zero", filepath.Join(dir, "z.txt")); err != nil {
				t.Fatal(err)
			}
		}, "*** Begin Patch\n*** Update File: z.txt\n@@\n-a\n+b\n*** End Patch", "outside the workspace"},
		{"update_file of a FIFO", mkfifo("f.txt"), "update_file f.txt\n@@\n-a\n+b\n", "(a FIFO)"},
		{"delete_file of a FIFO", mkfifo("f.txt"), "delete_file f.txt\n", "(a FIFO)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, dir)
			w, err := tfs.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			x := NewExecutor(&tfs.Executor{W: w})
			done := make(chan tool.Result, 1)
			call := tool.Call{ID: "c", Op: tool.OpPatch, Args: &tool.PatchArgs{Text: tc.patch}}
			if head, diff, ok := strings.Cut(tc.patch, "\n"); ok && !strings.HasPrefix(head, "***") {
				typ, path, _ := strings.Cut(head, " ")
				call = tool.Call{ID: "c", Op: tool.OpPatchOp, Args: &tool.PatchOpArgs{Type: typ, Path: path, Diff: diff}}
			}
			go func() { done <- x.Execute(context.Background(), call) }()
			var r tool.Result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("apply_patch hangs on what a command planted")
			}
			if r.Err == nil || !strings.Contains(r.Err.Message, tc.msg) {
				t.Fatalf("got %+v, want an error saying %q", r.Err, tc.msg)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "a\n" {
				t.Errorf("a.txt changed by a failed patch: %q", b)
			}
		})
	}
}

func mkfifo(name string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

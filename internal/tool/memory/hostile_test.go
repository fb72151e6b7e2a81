package memory

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool"
)

// TestPlantedFIFO: a FIFO in the memory directory (which a command may
// reach when the directory is under a writable root) is refused at once
// by every memory operation, never opened blocking. The deadline is a
// hang detector, not a timing assertion.
func TestPlantedFIFO(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mem")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := syscall.Mkfifo(filepath.Join(dir, "notes.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		op   tool.Op
		args any
	}{
		{"view", tool.OpMemoryView, &tool.ViewArgs{Path: "/memories/notes.md"}},
		{"str_replace", tool.OpMemoryReplace, &tool.ReplaceArgs{Path: "/memories/notes.md", Old: "a", New: "b"}},
		{"insert", tool.OpMemoryInsert, &tool.InsertArgs{Path: "/memories/notes.md", Line: 0, Text: "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan tool.Result, 1)
			go func() { done <- s.Execute(context.Background(), tool.Call{ID: "c", Op: tc.op, Args: tc.args}) }()
			select {
			case r := <-done:
				if r.Err == nil {
					t.Fatalf("%s of a FIFO succeeded: %+v", tc.op, r)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s hangs on a FIFO", tc.op)
			}
		})
	}
}

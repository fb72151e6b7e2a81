package patch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	tfs "github.com/trussdev/truss/internal/tool/fs"
)

// FuzzPatch parses and applies arbitrary patches to a small workspace: no
// panic, and nothing outside the workspace is ever written.
func FuzzPatch(f *testing.F) {
	dirs, _ := filepath.Glob("testdata/conformance/*/patch.txt")
	for _, d := range dirs {
		b, _ := os.ReadFile(d)
		f.Add(string(b))
	}
	f.Add("*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch")
	f.Add("*** Begin Patch\n*** Update File: a.txt\n*** Move to: /tmp/escape\n@@\n-a\n+b\n*** End Patch")
	f.Add("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End of File\n@@\n-a\n*** End of File\n*** End Patch")
	base := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		dir, err := os.MkdirTemp(base, "ws")
		if err != nil {
			t.Skip()
		}
		defer os.RemoveAll(dir)
		os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\r\nb\nc\n"), 0o644)
		w, err := tfs.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		e := &Engine{W: w, FX: &tfs.Executor{W: w}}
		p, err := Parse(text)
		if err != nil {
			return
		}
		plan, err := e.PlanPatch(p)
		if err != nil {
			return
		}
		e.Apply(context.Background(), plan)
		ents, _ := os.ReadDir(base)
		if len(ents) != 1 {
			t.Fatalf("the patch wrote outside the workspace: %v", ents)
		}
	})
}

package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// big writes a 10 MB source-like file with one unique line in the middle.
func big(b *testing.B) (*Executor, string) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := 0; sb.Len() < 10<<20; i++ {
		if i == 100000 {
			sb.WriteString("\tunique := \"needle\"\n")
		}
		fmt.Fprintf(&sb, "\tx%d := compute(%d, \"some text on this line\")\n", i, i)
	}
	os.WriteFile(filepath.Join(dir, "big.go"), []byte(sb.String()), 0o644)
	w, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	return &Executor{W: w}, dir
}

func BenchmarkView10MB(b *testing.B) {
	e, _ := big(b)
	b.SetBytes(10 << 20)
	for b.Loop() {
		if r := exec(e, tool.OpView, &tool.ViewArgs{Path: "big.go"}); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkViewRange10MB(b *testing.B) {
	e, _ := big(b)
	for b.Loop() {
		if r := exec(e, tool.OpView, &tool.ViewArgs{Path: "big.go", Start: 150000, End: 150100}); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkReplace10MB(b *testing.B) {
	e, _ := big(b)
	b.SetBytes(10 << 20)
	old, new := "\tunique := \"needle\"\n", "\tunique := \"thread\"\n"
	for b.Loop() {
		if r := exec(e, tool.OpReplace, &tool.ReplaceArgs{Path: "big.go", Old: old, New: new}); r.Err != nil {
			b.Fatal(r.Err)
		}
		old, new = new, old
	}
}

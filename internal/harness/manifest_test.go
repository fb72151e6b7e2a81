package harness

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// memContent is a content outside AfterData, read in pieces of at most
// chunk bytes (a file's reads may stop anywhere).
type memContent struct {
	b     []byte
	chunk int
}

func (c memContent) Open() (io.ReadCloser, error) {
	return io.NopCloser(&pieces{r: bytes.NewReader(c.b), n: c.chunk}), nil
}
func (c memContent) Size() int64 { return int64(len(c.b)) }

type pieces struct {
	r *bytes.Reader
	n int
}

func (p *pieces) Read(b []byte) (int, error) { return p.r.Read(b[:min(len(b), p.n)]) }

// TestManifestNamesGit: a bulk change's manifest names a git directory's
// file wherever the mark lies, in memory or in a file read in pieces,
// the mark cut by a piece's end included.
func TestManifestNamesGit(t *testing.T) {
	line := func(p string) string { return `add file - ` + strings.Repeat("0", 64) + ` 0 "` + p + "\"\n" }
	filler := strings.Repeat(line("src/a.go"), 2000) // past a 64 KiB chunk
	for _, tc := range []struct {
		name     string
		manifest string
		want     bool
	}{
		{"none", filler, false},
		{"a file in .git", line("sub/.git/config") + filler, true},
		{"a .git file", filler + line("sub/.git"), true},
		{"HEAD", filler[:65531] + line("x/HEAD") + filler, true},
		{"HEAD, not a directory's", filler + line("x/HEADER"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := []byte(tc.manifest)
			for i, ch := range []tool.FileChange{
				{Path: ".", Files: 1, AfterData: m},
				{Path: ".", Files: 1, AfterFile: memContent{m, 1 << 20}},
				{Path: ".", Files: 1, AfterFile: memContent{m, 4093}},
				{Path: ".", Files: 1, AfterFile: memContent{m, 3}},
			} {
				if got := manifestNamesGit(ch); got != tc.want {
					t.Errorf("manifest %d (0 in memory, then in a file read in pieces of 1 MiB, 4093 and 3 bytes): %v, want %v", i, got, tc.want)
				}
			}
		})
	}
}

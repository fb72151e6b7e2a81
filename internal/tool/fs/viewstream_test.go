package fs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// wholeSelect is the selection a view made from the whole file in memory:
// lines start..end (end -1 = the last) joined by '\n'.
func wholeSelect(b []byte, start, end int) string {
	lines := strings.Split(string(b), "\n")
	if end == -1 {
		end = len(lines)
	}
	return strings.Join(lines[start-1:end], "\n")
}

// TestViewStreamMatchesWhole: the streamed view returns, for every range,
// the bytes, line count and final newline the whole-file view returned,
// with lines that cross the read chunk's bounds.
func TestViewStreamMatchesWhole(t *testing.T) {
	long := strings.Repeat("x", 64<<10-3)
	files := map[string]string{
		"empty":   "",
		"nl":      "\n",
		"crlf":    "a\r\nb\r\n",
		"noeol":   "one\ntwo",
		"cross":   long + "\nab\n" + long + long + "\n\nz",
		"exact":   strings.Repeat("y", 64<<10-1) + "\n" + "tail\n",
		"manynl":  strings.Repeat("\n", 70<<10),
		"unicode": strings.Repeat("ü€\n", 30<<10),
	}
	e, _ := newWS(t, files)
	for name, data := range files {
		total := strings.Count(data, "\n") + 1
		ranges := [][2]int{{0, 0}, {1, -1}, {1, 1}, {total, total}, {total, -1}, {1, total}}
		if total > 2 {
			ranges = append(ranges, [2]int{2, total - 1}, [2]int{total / 2, total/2 + 1})
		}
		for _, rg := range ranges {
			r := exec(e, tool.OpView, &tool.ViewArgs{Path: name, Start: rg[0], End: rg[1]})
			if r.Err != nil {
				t.Fatalf("%s %v: %v", name, rg, r.Err)
			}
			s, en := rg[0], rg[1]
			if s == 0 {
				s, en = 1, -1
			}
			want := wholeSelect([]byte(data), s, en)
			f := r.File
			if f.Content != want || r.Output != want || r.Truncated {
				t.Errorf("%s %v: content %d bytes, want %d (truncated %v)", name, rg, len(f.Content), len(want), r.Truncated)
			}
			if f.TotalLines != total || f.FinalNewline != strings.HasSuffix(data, "\n") || f.StartLine != s {
				t.Errorf("%s %v: view %d lines from %d, final newline %v", name, rg, f.TotalLines, f.StartLine, f.FinalNewline)
			}
		}
	}
}

// TestViewLimit: a selection longer than MaxViewBytes is cut there and
// marked truncated; the file's line count is still whole.
func TestViewLimit(t *testing.T) {
	data := strings.Repeat("0123456789\n", 1000)
	e, _ := newWS(t, map[string]string{"f": data})
	e.Opts.MaxViewBytes = 100
	for _, args := range []tool.ViewArgs{{Path: "f"}, {Path: "f", Start: 3, End: 900}} {
		r := exec(e, tool.OpView, &args)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		start := max(args.Start, 1)
		want := data[(start-1)*11:][:100]
		if r.File.Content != want || !r.Truncated || r.File.TotalLines != 1001 {
			t.Errorf("%+v: %q truncated %v, %d lines", args, r.File.Content, r.Truncated, r.File.TotalLines)
		}
	}
	// A selection that fits is not marked.
	r := exec(e, tool.OpView, &tool.ViewArgs{Path: "f", Start: 2, End: 3})
	if r.Err != nil || r.Truncated || r.File.Content != "0123456789\n0123456789" {
		t.Errorf("short range: %+v %v", r, r.Err)
	}
}

// TestViewMemoryBounded: viewing a file allocates in proportion to what
// the view returns, not to the file.
func TestViewMemoryBounded(t *testing.T) {
	const size = 48 << 20
	dir := t.TempDir()
	big := bytes.Repeat([]byte("a line of text that a command wrote\n"), size/36)
	if err := os.WriteFile(filepath.Join(dir, "big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	big = nil
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := &Executor{W: w}
	for _, args := range []tool.ViewArgs{{Path: "big", Start: 1, End: 3}, {Path: "big"}} {
		t.Run(fmt.Sprint(args.Start, args.End), func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r := exec(e, tool.OpView, &args)
			runtime.ReadMemStats(&after)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
				t.Errorf("view %+v allocated %d bytes of a %d-byte file", args, got, size)
			}
		})
	}
}

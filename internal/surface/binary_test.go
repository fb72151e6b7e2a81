package surface_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/anthropic"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/memory"
)

// Every view of every surface tells the model that a binary file is binary,
// with its size and type, instead of showing its bytes; text, non-ASCII
// included, and an empty file are shown as before. (The MCP server's view
// is tested with the server, in package mcp.)
func TestBinaryViewEverySurface(t *testing.T) {
	random := make([]byte, 4096)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range random {
		random[i] = byte(r.UintN(256))
	}
	random[17] = 0 // whatever the seed, a NUL byte
	files := []struct {
		name, data string
		binary     string // the description, "" for text
	}{
		{"random.bin", string(random), "4096 bytes, application/octet-stream, with NUL bytes"},
		{"dot.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89", "33 bytes, image/png, with NUL bytes"},
		{"umlaut.txt", "grüße, 世界\nzweite Zeile\n", ""},
		{"empty.txt", "", ""},
	}
	ws := t.TempDir()
	memDir := t.TempDir()
	for _, f := range files {
		for _, dir := range []string{ws, memDir} {
			if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	w, err := fs.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	store, err := memory.Open(memDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	fx := &fs.Executor{W: w}
	root := w.Dir()

	surfaces := []struct {
		name    string
		binding surface.Binding
		exec    tool.Executor
		input   func(file string) map[string]any
		// want is the binary file's text, from its path and description.
		want func(path, desc string) string
	}{
		{"anthropic editor", anthropic.NewEditor("text_editor_20250728"), fx,
			func(f string) map[string]any {
				return map[string]any{"command": "view", "path": filepath.Join(root, f)}
			},
			func(p, d string) string {
				return "The file " + p + " is a binary file (" + d + ") and cannot be viewed as text."
			}},
		{"anthropic editor 20250124", anthropic.NewEditor("text_editor_20250124"), fx,
			func(f string) map[string]any {
				return map[string]any{"command": "view", "path": filepath.Join(root, f), "view_range": []int{1, 1}}
			},
			func(p, d string) string {
				return "The file " + p + " is a binary file (" + d + ") and cannot be viewed as text."
			}},
		{"anthropic memory", anthropic.Memory{}, store,
			func(f string) map[string]any { return map[string]any{"command": "view", "path": "/memories/" + f} },
			func(p, d string) string {
				return "The file " + p + " is a binary file (" + d + ") and cannot be viewed as text."
			}},
		{"generic memory", anthropic.MemoryFunction{}, store,
			func(f string) map[string]any { return map[string]any{"command": "view", "path": "/memories/" + f} },
			func(p, d string) string {
				return "The file " + p + " is a binary file (" + d + ") and cannot be viewed as text."
			}},
		{"generic read_file", generic.ReadFile{}, fx,
			func(f string) map[string]any { return map[string]any{"path": f} },
			func(p, d string) string {
				return "Error: " + p + " is a binary file (" + d + "); read_file shows only text files."
			}},
		{"generic read_file range", generic.ReadFile{}, fx,
			func(f string) map[string]any { return map[string]any{"path": f, "offset": 1, "limit": 1} },
			func(p, d string) string {
				return "Error: " + p + " is a binary file (" + d + "); read_file shows only text files."
			}},
	}
	for _, s := range surfaces {
		for _, f := range files {
			in := s.input(f.name)
			raw, _ := json.Marshal(in)
			mc := model.ToolCall{ID: "c1", Name: s.binding.Spec().Name, Kind: s.binding.Spec().Kind, Input: string(raw)}
			calls, err := s.binding.Decode(mc)
			if err != nil {
				t.Fatalf("%s %s: decode: %v", s.name, f.name, err)
			}
			rs := []tool.Result{s.exec.Execute(context.Background(), calls[0])}
			res := s.binding.Encode(mc, rs)
			if f.binary == "" {
				if res.IsError || strings.Contains(res.Text, "binary") {
					t.Errorf("%s %s: text file answered %q", s.name, f.name, res.Text)
				}
				if first, _, _ := strings.Cut(f.data, "\n"); !strings.Contains(res.Text, first) {
					t.Errorf("%s %s: %q does not show the text", s.name, f.name, res.Text)
				}
				continue
			}
			path, _ := in["path"].(string)
			if want := s.want(path, f.binary); !res.IsError || res.Text != want {
				t.Errorf("%s %s: error %v, text %q\nwant %q", s.name, f.name, res.IsError, res.Text, want)
			}
			if strings.ContainsRune(res.Text, 0) || strings.ContainsRune(res.Text, '\uFFFD') || !strings.Contains(res.Text, strconv.Itoa(len(f.data))) {
				t.Errorf("%s %s: %q", s.name, f.name, res.Text)
			}
		}
	}
}

package fs

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/tool"
)

// BinaryFiles are the files every view of every surface is tested on: a
// random 4 KiB file, a PNG header, text past the ASCII range and an empty
// file, and the edges of the sniffing bound. Want is nil for text.
func binaryFiles() []struct {
	name string
	data []byte
	want *tool.Binary
} {
	random := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.UintN(256))
	}
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	// A 3-byte character cut by the 8 KiB bound: still text.
	cut := append(bytes.Repeat([]byte("a"), tool.BinarySniffLen-1), "€ and more"...)
	// Invalid UTF-8 past the bound is not looked at.
	late := append(bytes.Repeat([]byte("a\n"), tool.BinarySniffLen), 0xff)
	return []struct {
		name string
		data []byte
		want *tool.Binary
	}{
		{"random", random, &tool.Binary{Size: 4096, MediaType: "application/octet-stream", Reason: tool.BinaryNUL}},
		{"png", png, &tool.Binary{Size: int64(len(png)), MediaType: "image/png", Reason: tool.BinaryNUL}},
		{"utf8", []byte("grüße, 世界 — ünïcödé\n"), nil},
		{"empty", nil, nil},
		{"latin1", []byte("gr\xfc\xdfe\n"), &tool.Binary{Size: 6, MediaType: "text/plain", Reason: tool.BinaryInvalidUTF8}},
		{"nul in text", []byte("a\x00b\n"), &tool.Binary{Size: 4, MediaType: "application/octet-stream", Reason: tool.BinaryNUL}},
		{"rune cut at the bound", cut, nil},
		{"invalid past the bound", late, nil},
	}
}

func TestSniff(t *testing.T) {
	for _, tt := range binaryFiles() {
		got := Sniff(tt.data)
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("%s: Sniff = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestViewBinary(t *testing.T) {
	files := map[string]string{}
	for _, tt := range binaryFiles() {
		files[tt.name] = string(tt.data)
	}
	e, _ := newWS(t, files)
	for _, tt := range binaryFiles() {
		for _, args := range []tool.ViewArgs{{Path: tt.name}, {Path: tt.name, Start: 1, End: 1}} {
			r := exec(e, tool.OpView, &args)
			if r.Err != nil {
				t.Fatalf("%s %+v: %v", tt.name, args, r.Err)
			}
			f := r.File
			if tt.want == nil {
				if f.Binary != nil || (args.End == 0 && f.Content != string(tt.data)) {
					t.Errorf("%s: text viewed as %+v", tt.name, f.Binary)
				}
				continue
			}
			if f.Binary == nil || *f.Binary != *tt.want || f.Content != "" || r.Output != "" || f.Path != tt.name {
				t.Errorf("%s %+v: view %+v (binary %+v)", tt.name, args, f, f.Binary)
			}
		}
	}
}

// FuzzSniff: text is what has no NUL byte and is valid UTF-8 within the
// bound, whatever follows.
func FuzzSniff(f *testing.F) {
	for _, tt := range binaryFiles() {
		f.Add(tt.data)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := Sniff(b)
		head := b[:min(len(b), tool.BinarySniffLen)]
		text := bytes.IndexByte(head, 0) < 0 && utf8.Valid(head)
		if text && got != nil {
			t.Fatalf("valid text sniffed as binary: %+v", got)
		}
		if got != nil && (got.Size != int64(len(b)) || got.MediaType == "" || strings.Contains(got.MediaType, ";")) {
			t.Fatalf("binary %+v", got)
		}
		if got == nil && len(b) <= tool.BinarySniffLen && !text {
			t.Fatalf("binary sniffed as text")
		}
	})
}

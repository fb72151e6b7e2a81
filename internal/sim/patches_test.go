package sim

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestWorkspaceRoot: the workspace a request's prompt names, wherever the
// dialect carries the prompt, is the first one in the body; a container's
// workspace, a relative path or no sentence name none.
func TestWorkspaceRoot(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"messages system", `{"system":[{"type":"text","text":"Be brief.\n\nThe workspace root is /w/repo; the shell starts there. Name files…"}]}`, "/w/repo"},
		{"responses instructions", `{"instructions":"x\n\nThe workspace root is /a b/c; the shell starts there.","input":[]}`, "/a b/c"},
		{"gemini after contents", `{"contents":[{"parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"The workspace root is /g; the shell starts there."}]}}`, "/g"},
		{"the first of two", `{"system":"The workspace root is /one; the shell starts there.","messages":[{"content":"The workspace root is /two; the shell starts there."}]}`, "/one"},
		{"escaped", `{"system":"The workspace root is /q\"x\\y; the shell starts there."}`, `/q"x\y`},
		{"a container", `{"system":"The workspace root is /testbed, in a container from the image img, where the shell and the tests run;"}`, ""},
		{"relative", `{"system":"The workspace root is repo; the shell starts there."}`, ""},
		{"none", `{"system":"You are a model."}`, ""},
		{"not JSON", `The workspace root is /x; the shell starts there.`, ""},
	} {
		if got := workspaceRoot([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestReadInPlanted: the file a replace reads to write its patch is read
// through the host's file layer: a FIFO, a link leading outside or a path
// outside the workspace is refused at once (the patch then falls back to
// whole lines), never waited on.
func TestReadInPlanted(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.go"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range []string{"fifo.go", filepath.Join(root, "fifo.go"), "link.go", filepath.Join(outside, "secret")} {
			if b, err := readIn(root, p); err == nil {
				t.Errorf("%s read: %q", p, b)
			}
		}
		if b, err := readIn(root, "a.go"); err != nil || b != "package a\n" {
			t.Errorf("a.go: %q, %v", b, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("readIn waits on a planted FIFO") // a hang detector, not a timing assertion
	}
}

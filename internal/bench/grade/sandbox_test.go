package grade_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool"
)

// TestGradingCachesOwn: each grading's build cache shows the host's, warm,
// and what a graded command writes there (an object file planted for the
// next build) reaches neither the host's cache nor a later grading's.
func TestGradingCachesOwn(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	hostCache := t.TempDir()
	os.MkdirAll(filepath.Join(hostCache, "ab"), 0o755)
	os.WriteFile(filepath.Join(hostCache, "ab", "std-d"), []byte("warm-4711"), 0o644)
	t.Setenv("GOCACHE", hostCache)
	s := &grade.Sandboxed{Layered: true}
	run := func(cmd string) tool.Result {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "repo")
		os.MkdirAll(dir, 0o755)
		sh, err := s.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Close()
		return sh.Run(context.Background(), cmd, time.Minute)
	}
	r1 := run(`cat "$GOCACHE/ab/std-d"; echo; mkdir -p "$GOCACHE/ab"; echo planted > "$GOCACHE/ab/std-d"; echo planted > "$GOCACHE/ab/new-d"; echo x > ` + hostCache + `/direct`)
	r2 := run(`cat "$GOCACHE/ab/std-d"; ls "$GOCACHE/ab"`)
	if strings.Contains(r2.Stdout, "planted") || strings.Contains(r2.Stdout, "new-d") {
		t.Errorf("a later grading sees what an earlier one wrote: %q", r2.Stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(hostCache, "ab", "std-d")); string(b) != "warm-4711" {
		t.Errorf("the host's cache was written: %q", b)
	}
	for _, p := range []string{"ab/new-d", "direct"} {
		if _, err := os.Stat(filepath.Join(hostCache, p)); err == nil {
			t.Errorf("%s was made in the host's cache", p)
		}
	}
	if !strings.Contains(r1.Stdout, "warm-4711") || !strings.Contains(r2.Stdout, "warm-4711") {
		t.Skipf("no warm layer here (overlayfs in a user namespace): %q %q", r1.Stdout, r2.Stdout)
	}
}

// TestGradingHidesWhatSessionsHide: a graded command reads none of what a
// session's commands cannot: the signing key, the saved sessions, other
// projects' memories and caches, the user's credentials.
func TestGradingHidesWhatSessionsHide(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	th := t.TempDir()
	t.Setenv("TRUSS_HOME", th)
	home := t.TempDir()
	t.Setenv("HOME", home)
	files := map[string]string{
		filepath.Join(th, "ledger.key"):                                  "KEY-4711",
		filepath.Join(th, "sessions", "s1", "transcript.jsonl"):          "SESSION-4711",
		filepath.Join(th, "memories", "other-1234", "notes.md"):          "MEMORY-4711",
		filepath.Join(th, "cache", "workspaces", "other-ab", "x", "obj"): "CACHE-4711",
		filepath.Join(home, ".ssh", "id_ed25519"):                        "SSH-4711",
	}
	var cmd strings.Builder
	for p, content := range files {
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(content), 0o600)
		cmd.WriteString("cat " + p + " 2>/dev/null; ")
	}
	dir := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(dir, 0o755)
	sh, err := (&grade.Sandboxed{}).Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	r := sh.Run(context.Background(), cmd.String()+`mkdir -p "$GOCACHE" && touch "$GOCACHE/w" && echo cache-writable; echo done`, time.Minute)
	if !strings.Contains(r.Stdout, "done") {
		t.Fatalf("the command did not run: %+v", r)
	}
	// The grading's own cache, though among Truss's caches, is not
	// hidden with the others.
	if !strings.Contains(r.Stdout, "cache-writable") {
		t.Errorf("the grading cannot write its own cache: %q %q", r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout, "4711") {
		t.Errorf("a graded command read what it must not: %q", r.Stdout)
	}
}

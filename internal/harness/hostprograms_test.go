package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestHostProgramsNotFromWritableRoots: a git (and go) that a command put
// in an --add-dir root's bin, which the user's PATH names first (~/go/bin,
// ~/.local/bin), is never run on the host: not for the repository's state
// the ledger records, not by the boundary's warm-up. (A program found
// there would run outside the sandbox, with the user's files.)
func TestHostProgramsNotFromWritableRoots(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	o := fixture(t, `{"steps": [{"say": "Done."}]}`)
	gitRepo(t, o.Root)
	add := t.TempDir()
	ran := filepath.Join(t.TempDir(), "ran")
	for _, prog := range []string{"git", "go"} {
		p := filepath.Join(add, "bin", prog)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho "+prog+" >> "+ran+"\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", filepath.Join(add, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	o.WritableDirs = []string{add}
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(context.Background(), "hi")
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Fatalf("the host ran the planted programs: %s", b)
	}
	// The real git read the state the ledger records.
	entries, err := os.ReadFile(filepath.Join(out.LedgerDir, "entries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"head":"[0-9a-f]{40}"`).Match(entries) {
		t.Errorf("no repository state recorded")
	}
}

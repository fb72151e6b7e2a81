package trusscli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without truss-bench next to truss or on PATH, truss bench says what is
// missing and how to install it.
func TestBenchWithoutProgram(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "run"}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(stderr.String(), "truss-bench, which is neither next to truss") || !strings.Contains(stderr.String(), "go install ./cmd/truss-bench") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// truss-bench on PATH is found when none is next to truss.
func TestFindBench(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, benchProgram)
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	got, err := findBench()
	if err != nil || got != prog {
		t.Fatalf("%q %v", got, err)
	}
}

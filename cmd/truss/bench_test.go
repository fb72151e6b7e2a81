package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/examples"
	"github.com/trussdev/truss/internal/sim"
)

// buildTruss builds the real binary once per benchmark run.
func buildTruss(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "truss")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func BenchmarkVersion(b *testing.B) {
	bin := buildTruss(b)
	for b.Loop() {
		if err := exec.Command(bin, "--version").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// serve starts the simulated model with a script in the chat dialect.
func serve(b *testing.B, script string) (*sim.Server, string, func()) {
	s, err := sim.ParseScript([]byte(script))
	if err != nil {
		b.Fatal(err)
	}
	srv := sim.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	base, err := srv.Listen(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return srv, base, cancel
}

// BenchmarkFirstRequest measures the time from starting `truss run` to the
// simulated model receiving its first request.
func BenchmarkFirstRequest(b *testing.B) {
	bin := buildTruss(b)
	dir := b.TempDir()
	examples.Unpack(examples.DemoRepo, dir)
	var total time.Duration
	for b.Loop() {
		srv, base, stop := serve(b, `{"steps": [{"say": "done"}]}`)
		cmd := exec.Command(bin, "run", "--provider", "chat", "--model", "sim-coder", "--no-session", "go")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+base+"/v1")
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		total += srv.Requests()[0].Received.Sub(start)
		stop()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms-to-first-request")
}

// BenchmarkRun20Turns runs a 20-turn session of views, edits and shell
// commands on the demo repository and reports the process's peak RSS.
//
// The peak is measured by GNU time around the process: Go starts children
// with CLONE_VM|CLONE_VFORK, so the ru_maxrss that wait4 reports to this
// benchmark would include this test process's own pages from before exec.
func BenchmarkRun20Turns(b *testing.B) {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		b.Skip("needs GNU time (/usr/bin/time) to measure the peak RSS")
	}
	bin := buildTruss(b)
	var steps []string
	for i := 0; i < 19; i++ {
		switch i % 3 {
		case 0:
			steps = append(steps, `{"say": "Reading.", "actions": [{"kind": "view", "path": "stats.go"}]}`)
		case 1:
			steps = append(steps, `{"say": "Running.", "actions": [{"kind": "run", "command": "ls -la && git --version >/dev/null 2>&1; echo ok"}]}`)
		case 2:
			steps = append(steps, `{"say": "Editing.", "actions": [{"kind": "replace", "path": "README.md", "old": "float64", "new": "float64", "tool": "edit_file", "raw_input": "{\"path\":\"README.md\",\"old_string\":\"slices.\",\"new_string\":\"slices.\\n\"}"}]}`)
		}
	}
	script := `{"steps": [` + strings.Join(steps, ",") + `, {"say": "done"}]}`
	var peak int64 // KB
	for b.Loop() {
		dir := b.TempDir()
		examples.Unpack(examples.DemoRepo, dir)
		srv, base, stop := serve(b, script)
		// GNU time reports the largest process of the tree; --no-validate
		// keeps the verification boundary's `go test` (the project's own
		// toolchain, far larger than Truss) out of the figure.
		cmd := exec.Command("/usr/bin/time", "-f", "TIME-RSS %M", bin, "run", "--provider", "chat", "--model", "sim-coder", "--no-session", "--no-validate", "go")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+base+"/v1")
		out, err := cmd.CombinedOutput()
		for _, l := range strings.Split(string(out), "\n") {
			var kb int64
			if _, serr := fmt.Sscanf(l, "TIME-RSS %d", &kb); serr == nil && kb > peak {
				peak = kb
			}
		}
		if err != nil || !strings.Contains(string(out), "completed after 20 turns") {
			b.Fatalf("%v\n%s", err, out)
		}
		if n := len(srv.Requests()); n != 20 {
			b.Fatalf("%d requests", n)
		}
		stop()
	}
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MB")
}

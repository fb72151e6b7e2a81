package benchcli

import (
	"bytes"
	"errors"
	"github.com/trussdev/truss/internal/cli"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCmdBenchReport(t *testing.T) {
	sample := filepath.Join("..", "..", "internal", "bench", "report", "testdata", "sample")
	out := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		usage  bool   // a usage error (exit status 2)
		err    string // another error containing this
		stdout string
		html   string // a file the command must write
		stderr string
	}{
		{name: "no directory", args: nil, usage: true},
		{name: "two directories", args: []string{sample, "other"}, usage: true},
		{name: "unknown flag", args: []string{sample, "--pdf", "x"}, usage: true},
		{name: "zero resamples", args: []string{sample, "--resamples", "0"}, usage: true},
		{name: "missing directory", args: []string{filepath.Join(out, "nope")}, err: "no results file"},
		{name: "markdown", args: []string{sample}, stdout: "## Paired comparisons"},
		{name: "html after the directory", args: []string{sample, "--html", filepath.Join(out, "a.html")}, stdout: "# Benchmark report", html: filepath.Join(out, "a.html"), stderr: "wrote "},
		{name: "html before the directory", args: []string{"--html=" + filepath.Join(out, "b.html"), "--seed", "7", sample}, stdout: "seed 7", html: filepath.Join(out, "b.html")},
		{name: "html into a missing directory", args: []string{sample, "--html", filepath.Join(out, "no", "c.html")}, err: "writing the HTML report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := cmdBenchReport(tt.args, &stdout, &stderr)
			var ue cli.UsageError
			switch {
			case tt.usage:
				if !errors.As(err, &ue) {
					t.Fatalf("err %v, want a usage error", err)
				}
				return
			case tt.err != "":
				if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q", err, tt.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.stderr)
			}
			if tt.html != "" {
				data, err := os.ReadFile(tt.html)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(data, []byte("<!DOCTYPE html>")) || !bytes.Contains(data, []byte(`id="chart-resolved"`)) {
					t.Errorf("%s is not the report page", tt.html)
				}
			}
		})
	}
}

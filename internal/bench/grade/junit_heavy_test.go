//go:build heavy

package grade_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/sandbox"
)

// A sandboxed grading's test command writes its JUnit report where
// $TRUSS_BENCH_JUNIT says and the verdicts come from it; a report planted
// as a link, a FIFO or past the size cap is refused without blocking the
// grader, which then reads the verdicts from the log and says why.
func TestSandboxedGradingReadsItsJUnitReport(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	set := generated(t)
	// Not under /tmp, which a grading's sandbox replaces with its own.
	base, err := os.MkdirTemp(".", ".junit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if base, err = filepath.Abs(base); err != nil {
		t.Fatal(err)
	}
	const report = `<?xml version="1.0"?><testsuites><testsuite name="s">` +
		`<testcase classname="c" name="TestOne"/>` +
		`<testcase classname="c" name="TestTwo"><failure message="no"/></testcase>` +
		`</testsuite></testsuites>`
	// The log says both pass: a verdict from the report differs.
	const logBoth = `printf '%s\n' '{"Action":"pass","Test":"TestOne"}' '{"Action":"pass","Test":"TestTwo"}'`
	for _, tc := range []struct {
		name, cmd, source string
		two               string
	}{
		{"report", `printf '%s' '` + report + `' > "$TRUSS_BENCH_JUNIT" && ` + logBoth, "junit", bench.TestFailed},
		{"link", `printf '%s' '` + report + `' > real.xml && ln -s "$PWD/real.xml" "$TRUSS_BENCH_JUNIT" && ` + logBoth,
			"go test -json (the JUnit report was refused: ", bench.TestPassed},
		{"fifo", `mkfifo "$TRUSS_BENCH_JUNIT" && ` + logBoth, "go test -json (the JUnit report was refused: ", bench.TestPassed},
		{"too large", `truncate -s 65M "$TRUSS_BENCH_JUNIT" && ` + logBoth, "go test -json (the JUnit report is larger than 64 MiB", bench.TestPassed},
		{"absent", logBoth + ` # no report to $TRUSS_BENCH_JUNIT`, "go test -json (no JUnit report was written", bench.TestPassed},
		{"not named", logBoth, "go test -json", bench.TestPassed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := set.Tasks[0]
			task.FailToPass, task.PassToPass = bench.TestList{"TestOne"}, bench.TestList{"TestTwo"}
			task.SetupCmd, task.TestCmd = nil, tc.cmd
			g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: base}
			v, err := g.Grade(context.Background(), &task, task.Patch)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(v.Source, tc.source) || tc.source == "go test -json" && v.Source != tc.source {
				t.Fatalf("source %q, want %q…\n%s", v.Source, tc.source, v.Log)
			}
			if v.Tests["TestOne"] != bench.TestPassed || v.Tests["TestTwo"] != tc.two {
				t.Fatalf("verdicts %v, want TestTwo %s (source %q)\n%s", v.Tests, tc.two, v.Source, v.Log)
			}
		})
	}
}

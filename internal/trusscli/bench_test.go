package trusscli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/examples"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// buildTruss builds the real binary once per benchmark run (or test).
func buildTruss(b testing.TB) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "truss")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/trussdev/truss/cmd/truss")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkVersion measures a process's start and exit with nothing
// else done: `truss --version` (the process image and flag parsing), and,
// side by side, the bare loops of testdata/bareloop and testdata/sdkloop
// given no task (each one's image and its usage message), the floors of
// BenchmarkFirstRequest's loops.
func BenchmarkVersion(b *testing.B) {
	b.Run("truss", func(b *testing.B) {
		bin := buildTruss(b)
		for b.Loop() {
			if err := exec.Command(bin, "--version").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, loop := range []string{"loop", "sdkloop"} {
		b.Run(loop, func(b *testing.B) {
			bin := buildLoop(b, loop)
			for b.Loop() {
				var exit *exec.ExitError
				if err := exec.Command(bin).Run(); !errors.As(err, &exit) || exit.ExitCode() != 2 {
					b.Fatalf("the %s without a task: %v, not exit status 2", loop, err)
				}
			}
		})
	}
}

// serve starts the simulated model with a script in the chat dialect.
func serve(b *testing.B, script string) (*sim.Server, string, func()) {
	s, err := sim.ParseScript([]byte(script))
	if err != nil {
		b.Fatal(err)
	}
	srv := simtest.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	base, err := srv.Listen(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return srv, base, cancel
}

// BenchmarkFirstRequest measures the time from starting a program to the
// simulated model receiving its first request, in the demo repository
// made a git repository: `truss run` without a session (bare), with the
// session, the signed ledger, the sandbox and change tracking (ledger),
// and, side by side, the bare loop of testdata/bareloop (a Chat
// Completions loop with one bash tool and nothing else, on the standard
// library alone: the floor) and the same loop on the official OpenAI SDK
// (testdata/sdkloop: the floor of a program whose requests the SDK makes).
func BenchmarkFirstRequest(b *testing.B) {
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"bare", []string{"--no-session", "--no-validate"}},
		{"ledger", []string{"--no-validate"}},
		{"loop", nil},
		{"sdkloop", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.args == nil {
				benchFirstRequest(b, buildLoop(b, bc.name), nil)
				return
			}
			benchFirstRequest(b, buildTruss(b), append([]string{"run", "--provider", "chat", "--model", "sim-coder"}, bc.args...))
		})
	}
}

// buildLoop builds one of the bare loops: "loop" (testdata/bareloop) or
// "sdkloop" (testdata/sdkloop).
func buildLoop(b *testing.B, name string) string {
	b.Helper()
	dir := map[string]string{"loop": "bareloop", "sdkloop": "sdkloop"}[name]
	bin := filepath.Join(b.TempDir(), dir)
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/"+dir)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// gitInit makes dir a git repository with one commit, as a user's
// checkout is: the session records its state.
func gitInit(b *testing.B, dir string) {
	b.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "start"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// benchFirstRequest runs bin with args (the bare loops' when nil) and the
// task in the demo repository, against a fresh simulated model each time.
func benchFirstRequest(b *testing.B, bin string, args []string) {
	dir := b.TempDir()
	home := b.TempDir()
	examples.Unpack(examples.DemoRepo, dir)
	gitInit(b, dir)
	if args == nil {
		args = []string{"sim-coder"}
	}
	var total time.Duration
	for b.Loop() {
		srv, base, stop := serve(b, `{"steps": [{"say": "done"}]}`)
		cmd := exec.Command(bin, append(args, "go")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+base+"/v1", "HOME="+home, "XDG_DATA_HOME="+home+"/.local/share", "XDG_CONFIG_HOME="+home+"/.config")
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

// BenchmarkBinaryRoundTrip runs the real binary for a 40-turn session
// against the simulated model, with the session, the ledger and the
// sandbox on (the defaults), alternating a file view and a shell `true`.
// It reports, over all the runs' round trips, the median and p90 of the
// time from the model's answer being written to the next request having
// arrived (tool time included), the time to the first request, and the
// process tree's CPU per round trip.
func BenchmarkBinaryRoundTrip(b *testing.B) {
	for _, d := range []struct{ name, provider, env, suffix string }{
		{"chat", "chat", "OPENAI_BASE_URL", "/v1"},
		{"anthropic", "anthropic", "ANTHROPIC_BASE_URL", ""},
	} {
		b.Run(d.name, func(b *testing.B) {
			bin := buildTruss(b)
			home := b.TempDir()
			var steps []string
			for i := 0; i < 40; i++ {
				// Different calls, so that the loop's repetition check
				// never stops the session.
				files := []string{"stats.go", "README.md", "go.mod", "stats_test.go", "AGENTS.md"}
				if i%2 == 0 {
					steps = append(steps, `{"actions": [{"kind": "view", "path": "`+files[i/2%len(files)]+`"}]}`)
				} else {
					steps = append(steps, `{"actions": [{"kind": "run", "command": "true `+strconv.Itoa(i)+`"}]}`)
				}
			}
			script := `{"steps": [` + strings.Join(steps, ",") + `, {"say": "done"}]}`
			var gaps, firsts []time.Duration
			var cpu time.Duration
			turns := 0
			for b.Loop() {
				dir := b.TempDir()
				examples.Unpack(examples.DemoRepo, dir)
				srv, base, stop := serve(b, script)
				srv.Root = dir
				model := "sim-coder"
				if d.provider == "anthropic" {
					model = "claude-sonnet-4-5"
				}
				cmd := exec.Command(bin, "run", "--provider", d.provider, "--model", model, "--no-validate", "go")
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), d.env+"="+base+d.suffix, "ANTHROPIC_API_KEY=k", "OPENAI_API_KEY=k", "HOME="+home, "XDG_DATA_HOME="+home+"/.local/share", "XDG_CONFIG_HOME="+home+"/.config")
				start := time.Now()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				reqs := srv.Requests()
				firsts = append(firsts, reqs[0].Received.Sub(start))
				for i := 0; i+1 < len(reqs); i++ {
					gaps = append(gaps, reqs[i+1].Received.Sub(reqs[i].Answered))
				}
				turns += len(reqs)
				stop()
			}
			slices.Sort(gaps)
			b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(gaps[len(gaps)*9/10].Microseconds())/1000, "p90-ms")
			b.ReportMetric(float64(median(firsts).Microseconds())/1000, "first-request-ms")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(turns), "cpu-ms/turn")
		})
	}
}

func median(x []time.Duration) time.Duration {
	slices.Sort(x)
	return x[len(x)/2]
}

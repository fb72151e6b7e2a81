package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/benchtest"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/queue"
	"github.com/trussdev/truss/internal/sim"
)

// benchtasks [-n N] [-scripts DIR] [-latency MS] SET: writes a generated
// task set to SET (SET/tasks.jsonl and SET/repos/ID, each repository's
// later history holding its hidden test): calc-add and calc-max, or N
// instances alternating between them; -scripts writes a simulated model's
// script for each that fixes it, each turn taking MS milliseconds.
func benchTasks(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("benchtasks", flag.ContinueOnError)
	n := fs.Int("n", 0, "instances")
	scripts := fs.String("scripts", "", "scripts directory")
	latency := fs.Int("latency", 0, "milliseconds per turn")
	if neg || fs.Parse(args) != nil || fs.NArg() != 1 {
		ts.Fatalf("usage: benchtasks [-n N] [-scripts DIR] [-latency MS] SET")
	}
	probs := benchtest.Problems()
	if *n > 0 {
		base := probs
		probs = nil
		for i := range *n {
			p := base[i%len(base)]
			p.ID = fmt.Sprintf("%s-%02d", p.ID, i+1)
			probs = append(probs, p)
		}
	}
	if _, err := benchtest.Make(context.Background(), ts.MkAbs(fs.Arg(0)), probs); err != nil {
		ts.Fatalf("benchtasks: %v", err)
	}
	if *scripts == "" {
		return
	}
	dir := ts.MkAbs(*scripts)
	ts.Check(os.MkdirAll(dir, 0o755))
	for _, p := range probs {
		sc := sim.Script{LatencyMS: *latency, Steps: []sim.Step{
			{Say: "Looking.", Actions: []sim.Action{{Kind: sim.ActView, Path: "calc.go"}}},
			{Say: "Fixing.", Actions: []sim.Action{{Kind: sim.ActReplace, Path: "calc.go", Old: "return " + p.Buggy + "\n}\n\n// Sub", New: "return " + p.Fixed + "\n}\n\n// Sub"}}},
			{Say: "Fixed."},
		}}
		b, err := json.Marshal(sc)
		ts.Check(err)
		ts.Check(os.WriteFile(filepath.Join(dir, p.ID+".json"), b, 0o644))
	}
}

// queueurl DIR VAR: sets VAR to the URL of DIR's queue (DIR/queue.json).
func queueURL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: queueurl DIR VAR")
	}
	qi, err := runner.ReadQueueInfo(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Setenv(args[1], qi.WorkerURL())
}

// waitrunning DIR WORKER VAR: waits (up to two minutes) until WORKER runs
// a job of DIR's queue, and sets VAR to the job's id.
func waitRunning(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitrunning DIR WORKER VAR")
	}
	qi, err := runner.ReadQueueInfo(ts.MkAbs(args[0]))
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := queue.Connect(ctx, qi.URL, queue.ConnectOptions{Name: "test", Token: qi.Token})
	ts.Check(err)
	defer nc.Close()
	q, err := queue.Join(ctx, nc, qi.Name)
	ts.Check(err)
	for ctx.Err() == nil {
		sts, err := q.Status(ctx)
		ts.Check(err)
		for _, s := range sts {
			if s.State == queue.Running && s.Worker == args[1] {
				ts.Setenv(args[2], s.ID)
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("worker %s ran nothing", args[1])
}

// benchcheck DIR N: DIR/results.jsonl has exactly one line for each of N
// runs, each without an error, with a worker, and a ledger that verifies
// against the installation's key ($TRUSS_HOME) and ends with its verdict.
func benchCheck(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: benchcheck DIR N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	_, vkey, err := ledger.LoadOrCreateKey(ts.Getenv("TRUSS_HOME"))
	ts.Check(err)
	seen := map[bench.RunKey]bool{}
	dir := ts.MkAbs(args[0])
	for l := range strings.SplitSeq(strings.TrimSpace(ts.ReadFile(filepath.Join(args[0], bench.ResultsName))), "\n") {
		var r bench.Result
		ts.Check(json.Unmarshal([]byte(l), &r))
		if seen[r.Key()] {
			ts.Fatalf("two results for %v", r.Key())
		}
		seen[r.Key()] = true
		if r.Error != "" || r.Worker == "" || r.Deliveries < 1 {
			ts.Fatalf("result %s", l)
		}
		ld := r.Ledger.Dir
		if !filepath.IsAbs(ld) {
			ld = filepath.Join(dir, ld) // relative to the results directory
		}
		_, entries, err := ledger.Verify(ld, vkey)
		if err != nil {
			ts.Fatalf("the ledger of %v: %v", r.Key(), err)
		}
		if entries[len(entries)-1].Type != "bench.verdict" {
			ts.Fatalf("the ledger of %v ends with %s", r.Key(), entries[len(entries)-1].Type)
		}
	}
	if len(seen) != want {
		ts.Fatalf("%d results, want %d", len(seen), want)
	}
}

// envsubst FILE...: replaces $VAR and ${VAR} in each file by the script's
// environment (a simulated model's script that names absolute paths).
func envSubst(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: envsubst FILE...")
	}
	for _, f := range args {
		ts.Check(os.WriteFile(ts.MkAbs(f), []byte(os.Expand(ts.ReadFile(f), ts.Getenv)), 0o644))
	}
}

// gitsha DIR VAR: sets VAR to the commit DIR's HEAD names.
func gitSHA(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: gitsha DIR VAR")
	}
	out, err := exec.Command("git", "-C", ts.MkAbs(args[0]), "rev-parse", "HEAD").Output()
	ts.Check(err)
	ts.Setenv(args[1], strings.TrimSpace(string(out)))
}

// benchresults FILE: prints each line of a results.jsonl as one sorted
// line of the facts a script can compare (no times, no ledger roots):
// instance arm repeat, resolved, applied, the tests, the stop reason, the
// tool calls, the edit channels, the validation, the errors, worker and
// deliveries when set, and whether the line names a ledger.
func benchResults(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: benchresults FILE")
	}
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		var r bench.Result
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			ts.Fatalf("%s: %v in %s", args[0], err, l)
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s %s r%d resolved=%t applied=%t tests=%s stop=%s turns=%d tools=%s edits=%d/%d/%d validation=%t/%d/%t/%t errors=%d/%d/%d ledger=%t",
			r.InstanceID, r.Arm, r.Repeat, r.Resolved, r.PatchApplied, kv(r.Tests), r.StopReason, r.Turns, kv(r.ToolCalls),
			r.Edits.Editor, r.Edits.Patch, r.Edits.Shell, r.Validation.RanTests, r.Validation.Runs, r.Validation.LastPassed, r.Validation.FinishedFailing,
			r.Errors.Tool, r.Errors.InvalidCalls, r.Errors.Retries, r.Ledger.Dir != "" && r.Ledger.Root != "")
		if r.Worker != "" {
			fmt.Fprintf(&b, " worker deliveries=%d", r.Deliveries)
		}
		if r.Error != "" {
			fmt.Fprintf(&b, " error=%q", r.Error)
		}
		lines = append(lines, b.String())
	}
	slices.Sort(lines)
	fmt.Fprintln(ts.Stdout(), strings.Join(lines, "\n"))
}

func kv[V any](m map[string]V) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s:%v", k, m[k]))
	}
	return strings.Join(parts, ",")
}

// benchjob DIR JOB: prints the worker and deliveries of the result line
// of the run whose queue id is JOB (INSTANCE/ARM/rN).
func benchJob(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: benchjob DIR JOB")
	}
	for l := range strings.SplitSeq(strings.TrimSpace(ts.ReadFile(filepath.Join(args[0], bench.ResultsName))), "\n") {
		var r bench.Result
		ts.Check(json.Unmarshal([]byte(l), &r))
		if runner.JobID(r.Key()) == args[1] {
			fmt.Fprintf(ts.Stdout(), "worker=%s deliveries=%d\n", r.Worker, r.Deliveries)
		}
	}
}

// freeport VAR: sets VAR to a TCP port on loopback that is free now.
func freePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := l.Addr().(*net.TCPAddr).Port
	ts.Check(l.Close())
	ts.Setenv(args[0], strconv.Itoa(port))
}

// waitresults DIR N: waits (up to three minutes) until DIR/results.jsonl
// has at least N lines.
func waitResults(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitresults DIR N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(ts.MkAbs(args[0]), bench.ResultsName))
		if bytes.Count(b, []byte("\n")) >= n {
			return
		}
	}
	ts.Fatalf("%s has fewer than %d results", args[0], n)
}

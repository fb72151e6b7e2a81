package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/benchtest"
)

// benchtasks DIR: writes a generated task set to DIR (DIR/tasks.jsonl and
// DIR/repos/ID, each repository's later history holding its hidden test):
// calc-add and calc-max.
func benchTasks(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: benchtasks DIR")
	}
	if _, err := benchtest.Make(context.Background(), ts.MkAbs(args[0]), benchtest.Problems()); err != nil {
		ts.Fatalf("benchtasks: %v", err)
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

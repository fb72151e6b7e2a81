// Command truss-bench is `truss bench`: the benchmark runner, its grader,
// its report and its work queue's workers (docs/bench.md). truss runs it
// for its bench command; it is a program of its own so that the
// benchmark's dependencies stay out of every agent session's start and
// memory.
package main

import (
	"os"

	"github.com/trussdev/truss/internal/benchcli"
	"github.com/trussdev/truss/internal/sandbox"
)

func main() {
	if sandbox.IsHelper() {
		sandbox.RunHelper() // the sandbox may re-execute this binary as its helper
	}
	os.Exit(benchcli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

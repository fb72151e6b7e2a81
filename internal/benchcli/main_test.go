package benchcli

import (
	"os"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/testenv"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper() // the grader's sandbox re-executes this binary as its helper
	}
	if os.Getenv(asTrussBench) == "1" {
		// A test runs the command in a process of its own (to signal it).
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(testenv.Run(m))
}

// asTrussBench, set to 1, makes the test binary truss-bench.
const asTrussBench = "TRUSS_BENCHCLI_TEST_AS_TRUSS_BENCH"

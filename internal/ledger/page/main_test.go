package page_test

import (
	"os"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/testenv"
)

// TestMain runs the tests in a home and temporary directory of their own;
// the browser tests' demo sessions re-execute this binary as the
// sandbox's helper.
func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper()
	}
	os.Exit(testenv.Run(m))
}

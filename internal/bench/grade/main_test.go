package grade_test

import (
	"os"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/testenv"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper()
	}
	os.Exit(testenv.Run(m))
}

func mkdirTemp() (string, error) { return os.MkdirTemp("", "truss-grade-test-") }

package grade_test

import (
	"os"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper()
	}
	os.Exit(m.Run())
}

func mkdirTemp() (string, error) { return os.MkdirTemp("", "truss-grade-test-") }

package surface_test

import (
	"os"
	"testing"

	"github.com/trussdev/truss/internal/testenv"
)

// TestMain runs the tests in a home and temporary directory of their own,
// removed when they end.
func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

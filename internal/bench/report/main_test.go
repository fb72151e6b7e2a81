package report

import (
	"os"
	"testing"

	"github.com/trussdev/truss/internal/testenv"
)

// TestMain runs the tests in a home of their own: the report page's
// browser writes its settings and cache under it.
func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

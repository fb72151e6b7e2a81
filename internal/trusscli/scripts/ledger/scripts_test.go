// Package ledger_test runs the truss command's scripts about the ledger
// commands: verify, show, prove, export, a crash, an unsealed tail
// (testdata/script; internal/trusscli/clitest has their commands).
package ledger_test

import (
	"flag"
	"testing"

	"github.com/trussdev/truss/internal/trusscli/clitest"
)

var update = flag.Bool("update", false, "rewrite the cmp files of the scripts in testdata/script")

func TestMain(m *testing.M) { clitest.Main(m) }

func TestScripts(t *testing.T) { clitest.Run(t, "testdata/script", *update) }

// Package run_test runs the truss command's scripts about truss run and
// exec on the simulated model in each dialect: faults, resume, validation,
// live output, closed output
// (testdata/script; internal/trusscli/clitest has their commands).
package run_test

import (
	"flag"
	"testing"

	"github.com/trussdev/truss/internal/trusscli/clitest"
)

var update = flag.Bool("update", false, "rewrite the cmp files of the scripts in testdata/script")

func TestMain(m *testing.M) { clitest.Main(m) }

func TestScripts(t *testing.T) { clitest.Run(t, "testdata/script", *update) }

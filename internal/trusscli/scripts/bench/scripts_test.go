//go:build heavy

// The heavy tier (go test -tags heavy; .ci/run runs it): benchmark runs
// and grading through real sandboxes, queues and images.

// Package bench_test runs the truss command's scripts about the benchmark
// runner through truss bench: runs, grading, the work queue, images
// (testdata/script; internal/trusscli/clitest has their commands).
package bench_test

import (
	"flag"
	"testing"

	"github.com/trussdev/truss/internal/trusscli/clitest"
)

var update = flag.Bool("update", false, "rewrite the cmp files of the scripts in testdata/script")

func TestMain(m *testing.M) { clitest.Main(m) }

func TestScripts(t *testing.T) { clitest.Run(t, "testdata/script", *update) }

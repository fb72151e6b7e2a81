//go:build heavy

// The heavy tier (go test -tags heavy; .ci/run runs it): sandboxed builds,
// task images and MCP servers.

// Package sandbox_test runs the truss command's scripts about the sandbox
// and what it confines: caches, hostile git, MCP servers, escapes, task
// images
// (testdata/script; internal/trusscli/clitest has their commands).
package sandbox_test

import (
	"flag"
	"testing"

	"github.com/trussdev/truss/internal/trusscli/clitest"
)

var update = flag.Bool("update", false, "rewrite the cmp files of the scripts in testdata/script")

func TestMain(m *testing.M) { clitest.Main(m) }

func TestScripts(t *testing.T) { clitest.Run(t, "testdata/script", *update) }

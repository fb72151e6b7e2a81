package trusscli

import (
	"os"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/testenv"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper() // the sandbox re-executes this binary as its helper
	}
	os.Exit(testenv.Run(m))
}

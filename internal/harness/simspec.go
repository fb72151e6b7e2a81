//go:build apispec

package harness

import (
	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/sim"
)

// simSpec is the schema check of the built-in simulated model. Built with
// -tags apispec (as the tests build Truss), it validates every request
// against the providers' OpenAPI descriptions.
func simSpec() sim.SpecChecker { return apispec.Checker{} }

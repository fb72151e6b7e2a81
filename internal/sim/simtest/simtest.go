// Package simtest gives tests the simulated model at its strictest: the
// dialects' rules and every request validated against the providers'
// OpenAPI descriptions (internal/apispec), which the truss binary does not
// link.
package simtest

import (
	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/sim"
)

// New returns a server for a script that validates every request against
// the providers' OpenAPI descriptions.
func New(s *sim.Script) *sim.Server {
	srv := sim.New(s)
	srv.Spec = apispec.Checker{}
	return srv
}

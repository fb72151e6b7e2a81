//go:build !apispec

package harness

import "github.com/trussdev/truss/internal/sim"

// simSpec is the schema check of the built-in simulated model: none in a
// default build, which keeps kin-openapi's JSON Schema compiler (about
// 4 ms and 1.7 MB at every start) and 4.6 MB of OpenAPI descriptions out of
// the binary. The dialects' own rules still apply; the tests build with
// -tags apispec to validate against the descriptions too.
func simSpec() sim.SpecChecker { return nil }

//go:build !apispec

package harness

import "testing"

// The released build's simulated model has no OpenAPI check (kin-openapi
// is not linked; TestBinaryLeavesOut).
func TestSimSpecLeftOut(t *testing.T) {
	if simSpec() != nil {
		t.Fatal("a schema check in the default build")
	}
}

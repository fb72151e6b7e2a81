package container

import (
	"slices"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
)

// TestTraceCallsAsSandbox: the containers refuse the calls the host's
// sandbox refuses to reach into another process, no more, no fewer.
func TestTraceCallsAsSandbox(t *testing.T) {
	if c, s := TraceCalls(), sandbox.TraceCalls(); !slices.Equal(c, s) {
		t.Errorf("containers refuse %v, the sandbox %v", c, s)
	}
}

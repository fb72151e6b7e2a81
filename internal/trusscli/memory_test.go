package trusscli

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestLimitMemory: truss gives itself the soft limit unless GOMEMLIMIT
// sets one, which it leaves as the runtime read it.
func TestLimitMemory(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, tc := range []struct {
		env  string
		want int64
	}{
		{"", SoftMemoryLimit},
		{"1GiB", math.MaxInt64}, // as set below: the runtime read the variable at start
	} {
		debug.SetMemoryLimit(math.MaxInt64)
		t.Setenv("GOMEMLIMIT", tc.env)
		LimitMemory()
		if got := debug.SetMemoryLimit(-1); got != tc.want {
			t.Errorf("GOMEMLIMIT=%q: limit %d, want %d", tc.env, got, tc.want)
		}
	}
}

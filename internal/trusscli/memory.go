package trusscli

import (
	"os"
	"runtime/debug"
)

// SoftMemoryLimit is the soft limit the truss process gives Go's
// collector (runtime/debug.SetMemoryLimit) unless GOMEMLIMIT sets one.
// It is a complement to what bounds Truss's memory (the change tracker's
// on-disk index, the caps on every read and on contents held), never a
// replacement: a soft limit makes the collector work harder as the heap
// nears it, and does not stop a heap that must be larger. Its effect is
// that garbage is collected before it grows the process, where the
// default (a heap twice the live one) would let a burst of work — a
// command that makes a hundred thousand files — double what the process
// holds.
const SoftMemoryLimit = 32 << 20

// LimitMemory sets the process's soft memory limit to SoftMemoryLimit,
// unless the environment's GOMEMLIMIT sets one. The truss program calls it
// first; tests that run the command in-process do not.
func LimitMemory() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(SoftMemoryLimit)
}

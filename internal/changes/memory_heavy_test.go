//go:build linux && heavy

package changes

import "testing"

// TestTrackerMemoryMillion is TestTrackerMemory on a million files (4 GB
// of disk blocks for 64 MB of contents, and a few minutes): the same bound
// holds.
func TestTrackerMemoryMillion(t *testing.T) {
	trackerMemory(t, 1_000_000)
}

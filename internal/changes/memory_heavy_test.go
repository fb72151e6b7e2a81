//go:build linux && heavy

package changes

import "testing"

// TestTrackerMemoryMillion is TestTrackerMemory on a million files (4 GB
// of disk blocks for 64 MB of contents, and a few minutes): the same bound
// holds. It is run by hand (go test -tags heavy -run Million): under the
// race detector, as .ci/run's heavy tier runs, it would take ten minutes
// to measure what the detector distorts.
func TestTrackerMemoryMillion(t *testing.T) {
	if raceDetector {
		t.Skip("measures memory, which the race detector distorts")
	}
	trackerMemory(t, 1_000_000)
}

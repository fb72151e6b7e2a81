package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWatcherForkBombKilledOnce: the forks a bomb has refused while it is
// being killed are its own, not the next command's. The next poll, and
// the next command's Guard, find nothing; a new bomb is still caught.
func TestWatcherForkBombKilledOnce(t *testing.T) {
	dir := t.TempDir()
	var refused int64
	set := func(n int64) {
		refused = n
		if err := os.WriteFile(filepath.Join(dir, "pids.events"), fmt.Appendf(nil, "max %d\n", n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set(0)
	kills := 0
	w := newWatcher([]*group{{dir: dir, v2: true, ctrls: []string{ctrlPids}}}, Limits{Pids: 256}, nil, func() {
		kills++
		set(refused + 500) // the bomb goes on forking while it is killed
	})

	if w.pollPids() {
		t.Fatal("a quiet sandbox was killed")
	}
	set(forkBurst + 10)
	if !w.pollPids() || kills != 1 {
		t.Fatalf("a burst of refused forks was not killed: kills %d", kills)
	}
	if err := w.guard(); err == nil || !strings.Contains(err.Error(), "kept hitting") {
		t.Fatalf("the bomb's command is not told why: %v", err)
	}
	for i := range forkWindow + 1 {
		if w.pollPids() {
			t.Fatalf("poll %d after the kill killed again (kills %d)", i+1, kills)
		}
	}
	if err := w.guard(); err != nil {
		t.Errorf("the next command is blamed for the bomb's forks: %v", err)
	}

	// Three polls of ten that saw forks refused: a bomb again.
	for i := range forkPolls {
		set(refused + 1)
		if got := w.pollPids(); got != (i == forkPolls-1) {
			t.Fatalf("poll %d with a refused fork: killed %v", i+1, got)
		}
	}
	if kills != 2 {
		t.Errorf("kills %d, want 2", kills)
	}
}

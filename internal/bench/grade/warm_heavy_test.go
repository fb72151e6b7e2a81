//go:build heavy

package grade_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/toolcache"
)

// TestWarmGo: on a host whose user has no Go build cache, the warm-up
// fills Truss's own with the standard library (a cold build of it, a
// minute or more), after which a grading compiles only the checkout's
// packages; with a host cache, or another cache mode, it does nothing.
func TestWarmGo(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	if raceEnabled {
		t.Skip("the warm cache is built without the race detector")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	t.Setenv("TRUSS_HOME", t.TempDir())
	if did, err := (&grade.Sandboxed{}).WarmGo(context.Background()); did || err != nil {
		t.Fatalf("warmed (%v, %v) with the host's cache there", did, err)
	}
	t.Setenv("GOCACHE", filepath.Join(t.TempDir(), "none"))
	if did, err := (&grade.Sandboxed{Caches: grade.CacheShared}).WarmGo(context.Background()); did || err != nil {
		t.Fatalf("warmed (%v, %v) for shared caches", did, err)
	}
	s := &grade.Sandboxed{}
	did, err := s.WarmGo(context.Background())
	if err != nil || !did {
		t.Fatalf("warm-up: %v, %v", did, err)
	}
	warm, _ := toolcache.WarmGoDir()
	if ents, _ := filepath.Glob(filepath.Join(warm, "*", "*-a")); len(ents) < 100 {
		t.Fatalf("the warm cache %s holds %d entries", warm, len(ents))
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("GOCACHE"))); err == nil {
		t.Error("the warm-up made the host's cache")
	}
	checkWarm(t, s)
}

package harness

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGradingCaches: by default Go's build cache is read through the
// cache program, the helper binary, over the user's build cache; a lower
// cache the grading could write is dropped; a program the sandbox's own
// /tmp or /dev/shm would hide is refused with what to do.
func TestGradingCaches(t *testing.T) {
	host := t.TempDir()
	gocache := filepath.Join(host, "go-build")
	os.MkdirAll(gocache, 0o755)
	t.Setenv("GOCACHE", gocache)
	t.Setenv("TRUSS_HOME", t.TempDir())
	for _, tc := range []struct {
		name, helper string
		dir          string // the checkout
		lowers       []string
		err          string
	}{
		{"the user's cache", "/opt/truss/truss-sandbox", filepath.Join(t.TempDir(), "repo"), []string{gocache}, ""},
		{"a cache in the checkout", "/opt/truss/truss-sandbox", host, nil, ""},
		{"a program in /tmp", "/tmp/truss", filepath.Join(t.TempDir(), "repo"), nil, "directly in /tmp"},
		{"a program in /dev/shm", "/dev/shm/bench/truss", filepath.Join(t.TempDir(), "repo"), nil, "directly in /dev/shm/bench"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TRUSS_SANDBOX_HELPER", tc.helper)
			tmp := t.TempDir()
			c, err := gradingCaches(GradingShell{Dir: tc.dir}, tmp)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--grade-cache") {
					t.Fatalf("error %v, want one saying %q and what to do", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.GoProgram != tc.helper || !slices.Equal(c.GoLowers, tc.lowers) {
				t.Errorf("program %q lowers %v, want %q %v", c.GoProgram, c.GoLowers, tc.helper, tc.lowers)
			}
			if !slices.Contains(c.Env, "GOCACHE="+filepath.Join(tmp, "cache", "go-build")) || !slices.ContainsFunc(c.Env, func(kv string) bool { return strings.HasPrefix(kv, "GOCACHEPROG="+tc.helper+" ") }) {
				t.Errorf("env %v", c.Env)
			}
		})
	}
	if c, err := gradingCaches(GradingShell{Dir: t.TempDir(), Overlay: true}, t.TempDir()); err != nil || c.GoProgram != "" || len(c.Layers) == 0 {
		t.Errorf("overlay: %+v, %v", c, err)
	}
	// Over the host's build cache, go test runs every test: the user's
	// cached results are not the grading's. The host's GOFLAGS stay.
	t.Setenv("GOFLAGS", "-mod=mod")
	if c, err := gradingCaches(GradingShell{Dir: t.TempDir(), Overlay: true}, t.TempDir()); err != nil || !slices.Contains(c.Env, "GOFLAGS=-mod=mod -count=1") {
		t.Errorf("overlay over the host's build cache: env %v, %v", c.Env, err)
	}
	t.Setenv("GOCACHE", filepath.Join(host, "none"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(host, "none"))
	if c, err := gradingCaches(GradingShell{Dir: t.TempDir(), Overlay: true}, t.TempDir()); err != nil || slices.ContainsFunc(c.Env, func(kv string) bool { return strings.HasPrefix(kv, "GOFLAGS=") }) {
		t.Errorf("overlay with no host build cache: env %v, %v", c.Env, err)
	}
	if c, err := gradingCaches(GradingShell{Dir: t.TempDir(), CacheDir: host}, t.TempDir()); err != nil || c.Dir != host || c.GoProgram != "" {
		t.Errorf("shared: %+v, %v", c, err)
	}
}

package grade_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/bench/benchtest"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/sandbox"
)

// BenchmarkGradingCaches is the time of one grading of a small Go task
// (a generated calc repository: checkout, patch, go test of a package
// that imports testing) with each way of making the grading's build
// cache: one writable cache every grading shares, warmed by a grading
// before the timer (shared-warm); the cache program over the host's warm
// build cache, the default (own); Go's build cache an overlay of the
// host's (overlay, --grade-cache overlay; where the kernel refuses an
// overlay in a user namespace, an empty directory: cold); and the cache
// program over no lower cache at all (cold). The tests run with
// -count=1, so that no mode reports a result cached by an earlier
// iteration. Run it with:
//
//	go test -run '^$' -bench GradingCaches -benchtime 5x ./internal/bench/grade/
func BenchmarkGradingCaches(b *testing.B) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		b.Skip("this host cannot enforce the sandbox")
	}
	set, err := benchtest.Make(context.Background(), b.TempDir(), benchtest.Problems()[:1])
	if err != nil {
		b.Fatal(err)
	}
	task := set.Tasks[0]
	task.TestCmd = "go test -count=1 -json ./..."
	for _, c := range []struct {
		name   string
		shells func(b *testing.B) *grade.Sandboxed
	}{
		{"shared-warm", func(b *testing.B) *grade.Sandboxed { return &grade.Sandboxed{CacheDir: b.TempDir()} }},
		{"own", func(*testing.B) *grade.Sandboxed { return &grade.Sandboxed{Caches: grade.CacheOwn} }},
		{"overlay", func(*testing.B) *grade.Sandboxed { return &grade.Sandboxed{Caches: grade.CacheOverlay} }},
		{"cold", func(b *testing.B) *grade.Sandboxed {
			empty := filepath.Join(b.TempDir(), "none")
			b.Setenv("GOCACHE", empty) // no host cache, and no warm one under TRUSS_HOME
			b.Setenv("TRUSS_HOME", b.TempDir())
			return &grade.Sandboxed{Caches: grade.CacheOwn}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := &grade.Grader{Shells: c.shells(b), Dir: b.TempDir()}
			grade1 := func() {
				v, err := g.Grade(context.Background(), &task, task.Patch)
				if err != nil {
					b.Fatal(err)
				}
				if !v.Resolved {
					b.Fatalf("the gold patch is not resolved: %+v", v)
				}
			}
			if c.name == "shared-warm" {
				grade1()
			}
			for b.Loop() {
				grade1()
			}
		})
	}
}

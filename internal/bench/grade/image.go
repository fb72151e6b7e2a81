package grade

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/container"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/validate"
)

// InImage starts each grading's shell in a fresh container from Image
// (internal/container), never an agent's: the grading directory mounted at
// Workdir (SWE-bench's images: /testbed), its .git read-only, the network
// off unless Network is set, the sandbox's default limits. The container is
// removed when the shell closes. It is what `truss bench --env image:REF`
// grades with, so that the tests run against the task's own toolchain.
//
// The image is made sure of first (container.Engine.Ensure): pulled when
// the engine's store lacks it, once however many gradings ask at once,
// unless the engine's NoPull is set. An image that is absent and cannot
// be pulled is Open's *container.MissingImageError, unwrapped ("image X:
// not found locally and the pull failed: …"), which the runner records
// as that run's error, not the benchmark's.
type InImage struct {
	Engine *container.Engine
	// Image is the image of every grading; with PerTask, each task's own
	// (its "image" field) instead, as SWE-bench builds one per instance.
	Image   string
	PerTask bool
	Workdir string
	Network bool
	// Timeout is each command's timeout; 0 means 30 minutes.
	Timeout time.Duration
}

// ForTask implements TaskShells: with PerTask, the shells of task's own
// image, an error naming the task when it has none.
func (s *InImage) ForTask(task *bench.Task) (Shells, error) {
	if !s.PerTask {
		return s, nil
	}
	if task.Image == "" {
		return nil, fmt.Errorf("instance %s has no image (the task's \"image\" field), which --env task needs", task.InstanceID)
	}
	c := *s
	c.Image, c.PerTask = task.Image, false
	c.Workdir = cmp.Or(task.Workdir, s.Workdir) // the task's own place wins
	return &c, nil
}

// Open implements Shells. env's variables are set in the container; the
// grading's report directory (TRUSS_BENCH_JUNIT's) is mounted there at
// harness.ReportsTarget, writable, and the variable names the report
// there, so a test runner's JUnit report reaches the grader as in a
// sandboxed grading. The image is
// ensured first (see InImage); Shells.Open takes no context, so a pull
// it starts runs to its end (a benchmark's prefetch and its agents'
// starts have mostly pulled the image before its first grading).
func (s *InImage) Open(dir string, env []string) (validate.Shell, error) {
	if s.PerTask {
		return nil, fmt.Errorf("the grading container: each task's own image is chosen by ForTask")
	}
	ctx := context.Background()
	if _, err := s.Engine.Ensure(ctx, s.Image); err != nil {
		if _, ok := errors.AsType[*container.MissingImageError](err); ok {
			return nil, err
		}
		return nil, fmt.Errorf("the grading container: %w", err)
	}
	id := make([]byte, 6)
	rand.Read(id)
	// The grading's report directory is mounted in the container, and
	// the variable names the report there; the host reads it back where
	// it is (through hostfs, as a sandboxed grading's).
	var reports string
	env = slices.Clone(env)
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TRUSS_BENCH_JUNIT="); ok && filepath.IsAbs(v) {
			reports = filepath.Dir(v)
			env[i] = "TRUSS_BENCH_JUNIT=" + path.Join(harness.ReportsTarget, filepath.Base(v))
		}
	}
	return harness.OpenGradingContainer(ctx, s.Engine, harness.GradingContainer{Image: s.Image, Dir: dir, Workdir: s.Workdir,
		Session: "grade-" + hex.EncodeToString(id), Network: s.Network, Timeout: s.Timeout, MaxOutput: maxLog, Env: env, Reports: reports})
}

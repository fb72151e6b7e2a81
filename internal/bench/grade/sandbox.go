package grade

import (
	"sync"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/validate"
)

// Shells starts the fresh shells a grading runs its commands in.
type Shells interface {
	// Open starts a fresh shell whose working directory is dir, with env
	// (NAME=VALUE) set. Closing the shell releases everything Open made.
	Open(dir string, env []string) (validate.Shell, error)
}

// TaskShells is a Shells whose environment depends on the task graded
// (InImage with PerTask: each task's own image). The grader asks it for
// the task's shells before opening one.
type TaskShells interface {
	ForTask(task *bench.Task) (Shells, error)
}

// Sandboxed starts each shell in a sandbox of its own (internal/sandbox):
// workspace-write over the grading directory, the network off unless
// Network is set, the ledger's signing key and Hidden hidden, at the
// default CPU weight. Each grading gets build and package caches of its
// own over the host's (toolcache.Layered): warm from the start, and what a
// graded patch writes there is gone with the grading, so no grading can
// plant what a later one builds. It is what `truss bench` grades with.
type Sandboxed struct {
	// CacheDir, when set, holds caches every grading shares and writes
	// (toolcache.For) instead of each its own.
	CacheDir string
	Network  bool
	// Fallback is the weaker sandbox accepted when this host cannot
	// enforce the policy ("" refuses).
	Fallback sandbox.Fallback
	// Hidden are further paths the graded commands must not read (the
	// task file, other repositories).
	Hidden []string
	// Timeout is each command's timeout; 0 means 30 minutes.
	Timeout time.Duration

	once sync.Once
	host sandbox.Host
}

// Private implements Private: a CacheDir every grading writes, which the
// agents must not read. Each grading's own caches are in its temporary
// directory, beside its checkout in the grader's directory.
func (s *Sandboxed) Private() []string {
	if s.CacheDir != "" {
		return []string{s.CacheDir}
	}
	return nil
}

// Open implements Shells: harness.OpenGradingShell, which composes the
// sandbox as a session's commands' is.
func (s *Sandboxed) Open(dir string, env []string) (validate.Shell, error) {
	s.once.Do(func() { s.host = sandbox.Probe() })
	return harness.OpenGradingShell(harness.GradingShell{Dir: dir, Network: s.Network, Fallback: s.Fallback, Hidden: s.Hidden,
		CacheDir: s.CacheDir, Timeout: s.Timeout, MaxOutput: maxLog, Env: env}, s.host)
}

// maxLog caps each stream of a test command kept for its verdicts.
const maxLog = 64 << 20

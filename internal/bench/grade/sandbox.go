package grade

import (
	"os"
	"slices"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/toolcache"
	"github.com/trussdev/truss/internal/validate"
)

// Shells starts the fresh shells a grading runs its commands in.
type Shells interface {
	// Open starts a fresh shell whose working directory is dir, with env
	// (NAME=VALUE) set. Closing the shell releases everything Open made.
	Open(dir string, env []string) (validate.Shell, error)
}

// HidingShells is a Shells that can hide paths from one shell's commands
// besides those it always hides. The grader passes the checkouts its
// templates made ahead (other tasks' trees); a Shells whose commands see
// no host path (a container) need not implement it.
type HidingShells interface {
	OpenHiding(dir string, env, hidden []string) (validate.Shell, error)
}

// TaskShells is a Shells whose environment depends on the task graded
// (InImage with PerTask: each task's own image). The grader asks it for
// the task's shells before opening one.
type TaskShells interface {
	ForTask(task *bench.Task) (Shells, error)
}

// Sandboxed starts each shell in a sandbox of its own, composed by the
// harness as a session's commands' is (harness.OpenGradingShell): the
// network off unless Network is set, the ledger's signing key, the saved
// sessions, the user's credentials, other projects' data and Hidden
// hidden, at the default CPU weight. Its build and package caches are
// CacheDir's, shared by every grading (toolcache.For; "" means
// toolcache.DirFor("bench")), or with Layered each grading's own over
// the host's (toolcache.Layered): then no grading can plant what a later
// one builds, at the price of copying up each host cache entry a grading
// uses (Go's build cache touches the entries it uses). It is what `truss
// bench` grades with.
type Sandboxed struct {
	CacheDir string
	Layered  bool
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

// cacheDir is the graded commands' shared cache directory.
func (s *Sandboxed) cacheDir() (string, error) {
	if s.CacheDir != "" {
		return s.CacheDir, nil
	}
	return toolcache.DirFor("bench")
}

// Private implements Private: the shared caches the graded commands
// write, which the agents must not read — unless toolcache.SharedEnv makes
// one cache of every sandboxed command's. Layered caches are in each
// grading's temporary directory, in the grader's own.
func (s *Sandboxed) Private() []string {
	if s.Layered || s.CacheDir == "" && os.Getenv(toolcache.SharedEnv) != "" {
		return nil
	}
	if d, err := s.cacheDir(); err == nil {
		return []string{d}
	}
	return nil
}

// Open implements Shells: harness.OpenGradingShell, which composes the
// sandbox as a session's commands' is.
func (s *Sandboxed) Open(dir string, env []string) (validate.Shell, error) {
	return s.OpenHiding(dir, env, nil)
}

// OpenHiding implements HidingShells: Open, with hidden hidden too.
func (s *Sandboxed) OpenHiding(dir string, env, hidden []string) (validate.Shell, error) {
	s.once.Do(func() { s.host = sandbox.Probe() })
	g := harness.GradingShell{Dir: dir, Network: s.Network, Fallback: s.Fallback, Hidden: append(slices.Clip(s.Hidden), hidden...),
		Timeout: s.Timeout, MaxOutput: maxLog, Env: env}
	if !s.Layered {
		d, err := s.cacheDir()
		if err != nil {
			return nil, err
		}
		g.CacheDir = d
	}
	return harness.OpenGradingShell(g, s.host)
}

// maxLog caps each stream of a test command kept for its verdicts.
const maxLog = 64 << 20

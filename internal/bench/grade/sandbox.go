package grade

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/hostfs"
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
// besides those it always hides: hidden (files and directories the
// commands cannot read at all) and covered (directories they see empty
// but for the shell's own: dir, its temporary directory and caches, and
// writable, further directories the commands may write). The
// grader hides the checkouts its templates made ahead (other tasks'
// trees) and covers its own directory (every grading's checkout). A
// Shells whose commands see no host path (a container) need not
// implement it.
type HidingShells interface {
	OpenHiding(dir string, env, hidden, covered, writable []string) (validate.Shell, error)
}

// TaskShells is a Shells whose environment depends on the task graded
// (InImage with PerTask: each task's own image). The grader asks it for
// the task's shells before opening one.
type TaskShells interface {
	ForTask(task *bench.Task) (Shells, error)
}

// CacheMode is how a grading's build and package caches are made.
type CacheMode string

// The cache modes.
const (
	// CacheDefault is CacheOwn. toolcache.SharedEnv, which names one
	// cache for every agent's sandboxed commands, does not change it: the
	// agents write that cache, and a grading must not read what they
	// (or an earlier graded patch) planted.
	CacheDefault CacheMode = ""
	// CacheOwn gives each grading caches of its own over trusted ones
	// (toolcache.Programmed): Go's build cache through a cache program
	// that reads the host user's build cache (and Truss's warm one, see
	// WarmGo) in place, read-only, pip's and npm's as overlays of the
	// host's. Warm, and no grading can plant what another builds.
	CacheOwn CacheMode = "own"
	// CacheOverlay is CacheOwn with Go's build cache an overlay too
	// (toolcache.Layered): each host entry Go touches is copied up.
	CacheOverlay CacheMode = "overlay"
	// CacheShared gives every grading one writable cache (Sandboxed's
	// CacheDir, else the "bench" workspace cache under toolcache.Base,
	// never toolcache.SharedEnv's), which starts empty and which a graded
	// patch can write: Go trusts a build cache entry whose output has the
	// size it records, so a patch that rewrites an entry under the key of
	// an honest build changes what every later grading builds and tests
	// (a failing test passes). Only for patches trusted not to.
	CacheShared CacheMode = "shared"
)

// ParseCacheMode reads a --grade-cache value.
func ParseCacheMode(s string) (CacheMode, error) {
	switch m := CacheMode(s); m {
	case CacheDefault, CacheOwn, CacheOverlay, CacheShared:
		return m, nil
	}
	return "", fmt.Errorf("unknown grading cache %q: choose own, overlay or shared", s)
}

// KnownPaths gives the paths every grading must not see now: hidden, and
// covered (directories that hold its own, bound back).
type KnownPaths interface {
	Current() (hidden, covered []string, err error)
}

// Sandboxed starts each shell in a sandbox of its own, composed by the
// harness as a session's commands' is (harness.OpenGradingShell): the
// network off unless Network is set, the ledger's signing key, the saved
// sessions, the user's credentials, other projects' data and Hidden
// hidden, Covered covered, at the default CPU weight, with the caches
// Caches says (a CacheDir makes them CacheShared). It is what `truss
// bench` grades with.
type Sandboxed struct {
	Caches   CacheMode
	CacheDir string
	Network  bool
	// Fallback is the weaker sandbox accepted when this host cannot
	// enforce the policy ("" refuses).
	Fallback sandbox.Fallback
	// Hidden are further paths the graded commands must not read (the
	// task file, other repositories).
	Hidden []string
	// Covered are directories the graded commands see empty but for the
	// shell's own checkout, temporary directory and caches (bound back):
	// the benchmark's workspaces (--work) and output directory (--out),
	// which hold other runs' patches and verdicts.
	Covered []string
	// Timeout is each command's timeout; 0 means 30 minutes.
	Timeout time.Duration
	// Known, when set, gives further paths to hide and to cover, asked
	// as each shell opens: the registry of every benchmark's outputs and
	// datasets (bench.KnownView). When it cannot answer, the shell gets
	// what it answered last.
	Known KnownPaths

	once sync.Once
	host sandbox.Host
}

// mode is the cache mode in effect.
func (s *Sandboxed) mode() CacheMode {
	switch {
	case s.CacheDir != "":
		return CacheShared
	case s.Caches == CacheDefault:
		return CacheOwn
	}
	return s.Caches
}

// cacheDir is the graded commands' shared cache directory: CacheDir, else
// the "bench" workspace cache under toolcache.Base — not the one
// toolcache.SharedEnv names, which the agents write.
func (s *Sandboxed) cacheDir() (string, error) {
	if s.CacheDir != "" {
		return s.CacheDir, nil
	}
	base, err := toolcache.Base()
	if err != nil {
		return "", err
	}
	return toolcache.WorkspaceDir(base, "bench"), nil
}

// Private implements Private: the shared cache the graded commands
// write, which the agents must not read. A grading's own caches are in
// its temporary directory, in the grader's own.
func (s *Sandboxed) Private() []string {
	if s.mode() != CacheShared {
		return nil
	}
	if d, err := s.cacheDir(); err == nil {
		return []string{d}
	}
	return nil
}

// Confinement implements Confiner: Hidden and Covered, absolute.
func (s *Sandboxed) Confinement() (hidden, covered []string) {
	return absPaths(s.Hidden), absPaths(s.Covered)
}

// absPaths are paths made absolute, each once.
func absPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Open implements Shells: harness.OpenGradingShell, which composes the
// sandbox as a session's commands' is.
func (s *Sandboxed) Open(dir string, env []string) (validate.Shell, error) {
	return s.OpenHiding(dir, env, nil, nil, nil)
}

// OpenHiding implements HidingShells: Open, with hidden hidden, covered
// covered and writable writable too.
func (s *Sandboxed) OpenHiding(dir string, env, hidden, covered, writable []string) (validate.Shell, error) {
	s.once.Do(func() { s.host = sandbox.Probe() })
	// Each path once: a worker's gradings are given the coordinator's
	// paths, which on its own machine are these.
	var knownHidden, knownCovered []string
	if s.Known != nil {
		knownHidden, knownCovered, _ = s.Known.Current() // on an error, what it read last
	}
	g := harness.GradingShell{Dir: dir, Network: s.Network, Fallback: s.Fallback, Hidden: absPaths(slices.Concat(s.Hidden, hidden, knownHidden)),
		Covered: absPaths(slices.Concat(s.Covered, covered, knownCovered)), Writable: writable, Timeout: s.Timeout, MaxOutput: maxLog, Env: env}
	switch s.mode() {
	case CacheShared:
		d, err := s.cacheDir()
		if err != nil {
			return nil, err
		}
		g.CacheDir = d
	case CacheOverlay:
		g.Overlay = true
	}
	return harness.OpenGradingShell(g, s.host)
}

// maxLog caps each stream of a test command kept for its verdicts.
const maxLog = 64 << 20

// WarmGo fills Truss's warm Go build cache (toolcache.WarmGoDir), the
// lower cache of CacheOwn's gradings on a host whose user has no Go build
// cache of their own, so that they do not each compile the standard
// library: `go build std` (the testing packages included), run by the
// host in a sandbox of the gradings' kind whose only writable places are
// an empty directory and that cache, with no repository and nothing a
// model wrote in it. It does nothing, and returns false, where the
// gradings are not CacheOwn, the host has a Go build cache, or there is
// no go command; a cache already warm takes a second or two.
func (s *Sandboxed) WarmGo(ctx context.Context) (bool, error) {
	if !s.WarmsGo() {
		return false, nil
	}
	warm, err := toolcache.WarmGoDir()
	if err != nil {
		return false, err
	}
	s.once.Do(func() { s.host = sandbox.Probe() })
	tmp, err := os.MkdirTemp("", "truss-go-warm-")
	if err != nil {
		return false, err
	}
	defer hostfs.RemoveAll(tmp)
	empty := filepath.Join(tmp, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		return false, err
	}
	sh, err := harness.OpenGradingShell(harness.GradingShell{Dir: empty, Fallback: s.Fallback, Hidden: s.Hidden, Covered: s.Covered,
		CacheDir: filepath.Dir(warm), Timeout: 30 * time.Minute, MaxOutput: 1 << 20,
		Env: []string{"GOFLAGS=", "GOTOOLCHAIN=local"}}, s.host)
	if err != nil {
		return false, fmt.Errorf("warming the Go build cache: %w", err)
	}
	defer sh.Close()
	r := sh.Run(ctx, "go build std", 30*time.Minute)
	if r.ExitCode == nil || *r.ExitCode != 0 {
		return false, fmt.Errorf("warming the Go build cache: go build std failed: %s", tail(r.Stderr+r.Output, 2000))
	}
	return true, nil
}

// WarmsGo reports whether WarmGo would build anything.
func (s *Sandboxed) WarmsGo() bool {
	if s.mode() != CacheOwn || toolcache.HostGoCache() != "" {
		return false
	}
	_, err := hostfs.LookPath("go", hostfs.UserPath())
	return err == nil
}

// tail is the last n bytes of s at most.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

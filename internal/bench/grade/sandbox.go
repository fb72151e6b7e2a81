package grade

import (
	"fmt"
	"github.com/trussdev/truss/internal/bench"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool/shell"
	"github.com/trussdev/truss/internal/toolcache"
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

// Open implements Shells.
func (s *Sandboxed) Open(dir string, env []string) (validate.Shell, error) {
	s.once.Do(func() { s.host = sandbox.Probe() })
	// The temporary directory is beside the grading checkout, in the
	// grader's directory, which the runs' agents cannot read: what the
	// graded commands leave there (the hidden tests, built) stays theirs.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "tmp-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (validate.Shell, error) {
		os.RemoveAll(tmp)
		return nil, err
	}
	caches := toolcache.Layered(filepath.Join(tmp, "cache"), s.Network)
	if s.CacheDir != "" {
		caches = toolcache.For(s.CacheDir, s.Network)
	}
	if err := caches.Make(); err != nil {
		return fail(err)
	}
	p := sandbox.DefaultPolicy(dir, tmp)
	p.Network = s.Network
	// A grading measures tests: the default CPU weight, not the tenth an
	// agent's commands get (under load, a suite took 16 times longer).
	p.Limits.CPUWeight = 100
	p.Writable = append(p.Writable, caches.Writable...)
	for _, l := range caches.Layers {
		p.Overlays = append(p.Overlays, sandbox.Overlay{Target: l.Dir, Lower: l.Lower, Upper: l.Upper, Work: l.Work})
	}
	p.Readable = append(p.Readable, caches.ReadOnly...)
	if kd, err := ledger.KeyDir(); err == nil {
		p.Hidden = append(p.Hidden, filepath.Join(kd, "ledger.key"))
	}
	p.Hidden = append(p.Hidden, s.Hidden...)
	if home, err := os.UserHomeDir(); err == nil {
		p.Hidden = append(p.Hidden, sandbox.DefaultHiddenCredentials(home)...)
	}
	plan, err := sandbox.MakePlan(p, s.host, s.Fallback)
	if err != nil {
		return fail(fmt.Errorf("the grading sandbox: %w", err))
	}
	sb, err := sandbox.New(plan)
	if err != nil {
		return fail(fmt.Errorf("the grading sandbox: %w", err))
	}
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 30 * time.Minute
	}
	own := filepath.Join(tmp, "shell")
	if err := os.Mkdir(own, 0o700); err != nil {
		sb.Close()
		return fail(err)
	}
	sh := shell.New(shell.Config{Dir: dir, Timeout: timeout, Env: os.Environ(),
		SetEnv:    append(append([]string{"TMPDIR=" + tmp}, caches.Env...), env...),
		MaxOutput: maxLog, TmpDir: own, Launcher: sb, Guard: sb.Guard})
	return &sandboxShell{Session: sh, sb: sb, tmp: tmp, enforced: plan.Enforced()}, nil
}

// maxLog caps each stream of a test command kept for its verdicts.
const maxLog = 64 << 20

// sandboxShell is a shell with its own sandbox and temporary directory.
type sandboxShell struct {
	*shell.Session
	sb       *sandbox.Sandbox
	tmp      string
	enforced string
}

// Enforced names the sandbox the commands ran in (for the record).
func (s *sandboxShell) Enforced() string { return s.enforced }

func (s *sandboxShell) Close() error {
	err := s.Session.Close()
	s.sb.Close()
	os.RemoveAll(s.tmp)
	return err
}

package harness

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/cacheprog"
	"github.com/trussdev/truss/internal/container"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool/shell"
	"github.com/trussdev/truss/internal/toolcache"
	"github.com/trussdev/truss/internal/validate"
)

// GradingShell is how a benchmark's grading runs its setup and tests on
// this host: a fresh sandbox of its own, composed as a session's commands'
// is (the same hidden paths: the signing key, the saved sessions, the
// user's credentials as the user's configuration has them, other projects'
// memories and caches; the same private /tmp and loopback with the network
// off), but at the default CPU weight, with build and package caches of
// its own over the host's (toolcache.Programmed: Go's build cache through
// a cache program over toolcache.GoLowers, bound read-only; pip's and
// npm's as overlays), or all as overlays (Overlay, toolcache.Layered), or
// the one CacheDir every grading shares.
type GradingShell struct {
	// Dir is the grading checkout: the shell's working directory and its
	// only writable root besides its temporary directory and caches.
	Dir      string
	Network  bool
	Fallback sandbox.Fallback
	// Hidden are further paths the graded commands must not read (the
	// task file, other repositories).
	Hidden []string
	// Covered are directories the graded commands see empty but for what
	// the sandbox keeps in them (Dir, the temporary directory and the
	// caches, bound back): the grader's directory of every grading's
	// checkout, a benchmark's workspaces and its output
	// (sandbox.Policy.Covered).
	Covered []string
	// Writable are further directories the graded commands may write,
	// bound back inside a covered one (the grading's report directory,
	// where a test command writes its JUnit report).
	Writable []string
	CacheDir string
	// Overlay puts Go's build cache, like pip's and npm's, under an
	// overlay instead of a cache program (ignored with CacheDir).
	Overlay bool
	// Timeout is each command's (0: 30 minutes); MaxOutput caps each
	// stream kept; Env (NAME=VALUE) is set in the shell.
	Timeout   time.Duration
	MaxOutput int
	Env       []string
}

// OpenGradingShell starts g's shell on host (sandbox.Probe's). Its
// temporary directory is made beside Dir, in the grader's directory,
// which no agent reads, and removed, with the caches in it, when the
// shell closes.
func OpenGradingShell(g GradingShell, host sandbox.Host) (*SandboxShell, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(g.Dir), "tmp-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*SandboxShell, error) {
		hostfs.RemoveAll(tmp)
		return nil, err
	}
	caches, err := gradingCaches(g, tmp)
	if err != nil {
		return fail(err)
	}
	if err := caches.Make(); err != nil {
		return fail(err)
	}
	p := sandbox.DefaultPolicy(g.Dir, tmp)
	p.Network = g.Network
	// A grading measures tests: the default CPU weight, not the tenth an
	// agent's commands get (under load, a suite took 16 times longer).
	p.Limits.CPUWeight = 100
	// The setup commands run the graded patch's build scripts, which must
	// not command the shell that runs the tests (sandbox.Policy.HideShell).
	p.HideShell = true
	withCaches(&p, caches)
	p.Writable = append(p.Writable, g.Writable...)
	s := &Session{}
	if err := s.loadUser(); err != nil {
		return fail(err)
	}
	p.Hidden = append(p.Hidden, s.hiddenFromCommands(g.Dir, caches)...) // its own caches excepted
	p.Hidden = append(p.Hidden, g.Hidden...)
	for _, c := range g.Covered {
		abs, err := filepath.Abs(c)
		if err != nil {
			return fail(err)
		}
		p.Covered = append(p.Covered, abs)
	}
	plan, err := sandbox.MakePlan(p, host, g.Fallback)
	if err != nil {
		return fail(fmt.Errorf("the grading sandbox: %w", err))
	}
	sb, err := sandbox.New(plan)
	if err != nil {
		return fail(fmt.Errorf("the grading sandbox: %w", err))
	}
	own := filepath.Join(tmp, "shell")
	if err := os.Mkdir(own, 0o700); err != nil {
		sb.Close()
		return fail(err)
	}
	sh := shell.New(shell.Config{Dir: g.Dir, Timeout: cmp.Or(g.Timeout, 30*time.Minute), Env: os.Environ(), OwnEnv: userWithheldEnv(),
		SetEnv:    append(append([]string{"TMPDIR=" + tmp}, caches.Env...), g.Env...),
		MaxOutput: g.MaxOutput, TmpDir: own, Launcher: sb, Guard: sb.Guard})
	return &SandboxShell{Session: sh, sb: sb, tmp: tmp, enforced: plan.Enforced(), caches: caches, shared: g.CacheDir != ""}, nil
}

// gradingCaches are g's caches, the grading's own in tmp unless g names
// a shared one (ownCaches).
func gradingCaches(g GradingShell, tmp string) (*toolcache.Caches, error) {
	if g.CacheDir != "" {
		return toolcache.For(g.CacheDir, g.Network), nil
	}
	return ownCaches(filepath.Join(tmp, "cache"), g.Network, g.Overlay, slices.Concat([]string{g.Dir, tmp}, g.Writable))
}

// ownCaches are the build and package caches of commands that must
// neither write a cache another run reads nor start cold (a grading's, a
// session's with Options.PrivateCaches): their own in dir, which is in
// their temporary directory and goes with it, over the trusted ones,
// read-only (toolcache.Programmed: Go's build cache through a cache
// program over toolcache.GoLowers; pip's and npm's as overlays; with
// overlay, Go's as an overlay too, toolcache.Layered). writable are the
// commands' other writable roots. The Go cache program is the binary the
// sandbox would run as its helper (sandbox.ChooseHelper: never one the
// commands can replace; every such binary is also the program); a lower
// cache that a writable root holds, or that holds one, is dropped (the
// commands could write it), leaving those commands colder.
func ownCaches(dir string, network, overlay bool, writable []string) (*toolcache.Caches, error) {
	if overlay {
		c := toolcache.Layered(dir, network)
		if slices.ContainsFunc(c.Layers, func(l toolcache.Layer) bool { return l.Dir == filepath.Join(dir, "go-build") }) {
			// The host's build cache holds the user's test results, which
			// go test would report as its own ("(cached)"), computed
			// outside the sandbox: -count=1 runs every test (the cache
			// program refuses a lower's test results instead). A task's
			// own GOFLAGS replaces this.
			c.Env = append(c.Env, "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -count=1"))
		}
		return c, nil
	}
	exe, err := sandbox.ChooseHelper(writable)
	if err != nil {
		return nil, fmt.Errorf("the Go build cache program: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	// The sandbox puts a /tmp and a /dev/shm of its own in place of the
	// host's, keeping directories under /tmp it is told of: /tmp itself,
	// or /dev/shm, cannot be kept without the host's whole directory.
	if d := filepath.Dir(exe); d == "/" || d == "/tmp" || within(d, "/dev/shm") {
		return nil, fmt.Errorf("the Go build cache program %s is directly in %s, which the sandbox replaces with its own: install truss in a directory of its own, or grade with --grade-cache overlay or shared", exe, d)
	}
	var lowers []string
	for _, l := range toolcache.GoLowers() {
		if !slices.ContainsFunc(writable, func(w string) bool { return within(w, l) || within(l, w) }) {
			lowers = append(lowers, l)
		}
	}
	return toolcache.Programmed(dir, network, exe, lowers)
}

// withCaches lets p's commands use c: its writable directories, its
// overlays, the host's caches it reads in place and the Go cache
// program's directory (read-only, kept where the sandbox puts a /tmp of
// its own, as a test binary's).
func withCaches(p *sandbox.Policy, c *toolcache.Caches) {
	p.Writable = append(p.Writable, c.Writable...)
	for _, l := range c.Layers {
		p.Overlays = append(p.Overlays, sandbox.Overlay{Target: l.Dir, Lower: l.Lower, Upper: l.Upper, Work: l.Work})
	}
	p.Readable = append(p.Readable, c.ReadOnly...)
	if c.GoProgram != "" {
		p.Readable = append(p.Readable, filepath.Dir(c.GoProgram))
	}
}

// SandboxShell is a shell with a sandbox and a temporary directory of its
// own, both released by Close.
type SandboxShell struct {
	*shell.Session
	sb       *sandbox.Sandbox
	tmp      string
	enforced string
	caches   *toolcache.Caches
	shared   bool // the caches are GradingShell.CacheDir's, shared
}

// Enforced names the sandbox the commands ran in (for the record).
func (s *SandboxShell) Enforced() string { return s.enforced }

// Close ends the shell, its sandbox's processes and its temporary
// directory.
func (s *SandboxShell) Close() error {
	err := s.Session.Close()
	s.sb.Close()
	hostfs.RemoveAll(s.tmp)
	return err
}

// KillOthers ends every process the shell's commands left running but the
// shell (shell.Session.KillOthers), where the sandbox gives the shell a
// PID namespace of its own; without one, what left the shell's process
// group cannot be told from the user's processes: validate.ErrStraysUnreachable.
func (s *SandboxShell) KillOthers(ctx context.Context) error {
	if !s.sb.Plan().Mechanisms.Namespaces {
		return validate.ErrStraysUnreachable
	}
	return s.Session.KillOthers(ctx)
}

// FreshCaches gives the shell's next commands a Go build cache of their
// own, empty, in place of the one the commands so far wrote (over the
// same trusted read-only layers, through the cache program where there
// is one), and an empty XDG cache: a cache entry maps a compile's inputs
// to an output nobody can check came from them, so a setup command that
// ran a patch's code could have pointed the test binaries' entries at
// forged ones. It is for the moment after the setup commands (and after
// the test command, before its binaries are asked again); what it left
// running must be ended first (KillOthers). A grading with a shared
// cache (GradingShell.CacheDir, trusted code only) keeps it.
func (s *SandboxShell) FreshCaches(ctx context.Context) error {
	if s.shared || s.caches == nil {
		return nil
	}
	dir, err := os.MkdirTemp(s.tmp, "cache-")
	if err != nil {
		return err
	}
	// Go's build cache, the XDG one, and pip's and npm's too: a wheel or
	// a tarball planted there would be installed by a test command that
	// installs (their host layers are left behind: with the network off
	// nothing downloads anyway).
	fresh := []struct{ name, sub string }{{"GOCACHE", "go-build"}, {"XDG_CACHE_HOME", "xdg"}, {"PIP_CACHE_DIR", "pip"}, {"npm_config_cache", "npm"}}
	// A module cache the commands could write (with the network on):
	// source planted in its extracted modules would be built as the
	// module's. The tests get an empty one whose modules come, through
	// the go command's checks against go.sum and the checksum database,
	// from the zips the commands downloaded, then wherever the commands'
	// GOPROXY said.
	var modProxy string
	if old := s.caches.Value("GOMODCACHE"); old != "" && slices.Contains(s.caches.Writable, old) {
		fresh = append(fresh, struct{ name, sub string }{"GOMODCACHE", "go-mod"})
		modProxy = "file://" + filepath.ToSlash(filepath.Join(old, "cache", "download"))
	}
	var env []string
	for _, c := range fresh {
		d := filepath.Join(dir, c.sub)
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
		env = append(env, c.name+"="+d)
	}
	gocache := filepath.Join(dir, "go-build")
	if s.caches.GoProgram != "" {
		prog, err := cacheprog.Command(s.caches.GoProgram, gocache, s.caches.GoLowers...)
		if err != nil {
			return err
		}
		env = append(env, "GOCACHEPROG="+prog)
	}
	var b strings.Builder
	for _, kv := range env {
		name, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s='%s'; ", name, strings.ReplaceAll(v, "'", `'\''`))
	}
	if modProxy != "" {
		// Before the proxies the shell has (the task's own, or the
		// caches'), which stay after it.
		fmt.Fprintf(&b, "export GOPROXY='%s',\"${GOPROXY:-https://proxy.golang.org,direct}\"; ", strings.ReplaceAll(modProxy, "'", `'\''`))
	}
	b.WriteString(":")
	r := s.Session.Run(ctx, b.String(), time.Minute)
	if r.Err != nil {
		return fmt.Errorf("fresh caches for the tests: %s", r.Err.Message)
	}
	return nil
}

// GradingContainer is how a benchmark's grading runs its setup and tests in
// an image: a fresh container of its own from Image (never an agent's),
// the grading checkout Dir mounted at Workdir ("": the image's working
// directory) with its .git read-only, the network off unless Network, the
// sandbox's default limits and every CPU. Session names it in the
// engine's labels.
type GradingContainer struct {
	Image, Dir, Workdir, Session string
	Network                      bool
	// Timeout is each command's (0: 30 minutes); MaxOutput caps each
	// stream kept; Env (NAME=VALUE) is set in the container.
	Timeout   time.Duration
	MaxOutput int
	Env       []string
	// Reports, when set, is a host directory of the grading's own
	// mounted writable at ReportsTarget (the test runner's reports:
	// JUnit XML), which the host reads back after the tests.
	Reports string
}

// ReportsTarget is where a grading container sees its Reports directory.
const ReportsTarget = "/truss-reports"

// OpenGradingContainer starts g's container on eng and a shell in it. The
// image must be in the engine's store (Engine.Ensure). Closing the shell
// removes the container.
func OpenGradingContainer(ctx context.Context, eng *container.Engine, g GradingContainer) (*ContainerShell, error) {
	lim := container.Limits{CPUs: float64(runtime.NumCPU()), Memory: sandbox.DefaultMemory, Pids: sandbox.DefaultPids, OpenFiles: sandbox.DefaultOpenFiles}
	var extra []container.Mount
	if g.Reports != "" {
		extra = append(extra, container.Mount{Source: g.Reports, Target: ReportsTarget})
	}
	e, err := eng.Start(ctx, container.Config{Image: g.Image, Workspace: g.Dir, Workdir: g.Workdir, Network: g.Network,
		Limits: lim, Session: g.Session, Protected: sandbox.GitPaths(g.Dir), Extra: extra})
	if err != nil {
		return nil, fmt.Errorf("the grading container: %w", err)
	}
	sh, err := e.NewShell(shell.Config{Timeout: cmp.Or(g.Timeout, 30*time.Minute), MaxOutput: g.MaxOutput, SetEnv: g.Env})
	if err != nil {
		e.Close(ctx)
		return nil, fmt.Errorf("the grading container's shell: %w", err)
	}
	f := e.Facts()
	return &ContainerShell{Session: sh, env: e, enforced: fmt.Sprintf("container from %s (%s) on %s %s", f.Image, f.ImageID, f.Engine, f.EngineVersion)}, nil
}

// ContainerShell is a shell in a container of its own, removed by Close.
type ContainerShell struct {
	*shell.Session
	env      *container.Env
	enforced string
}

// Enforced names where the commands ran (for the record).
func (s *ContainerShell) Enforced() string { return s.enforced }

// Facts are the container's facts: its image's ID and repository
// digests, which a grader records with each verdict.
func (s *ContainerShell) Facts() container.Facts { return s.env.Facts() }

// KillOthers ends every process of the container but its first and the
// shell (shell.Session.KillOthers): the container has a PID namespace of
// its own.
func (s *ContainerShell) KillOthers(ctx context.Context) error { return s.Session.KillOthers(ctx) }

// Close ends the shell and removes the container.
func (s *ContainerShell) Close() error {
	err := s.Session.Close()
	if cerr := s.env.Close(context.Background()); err == nil {
		err = cerr
	}
	return err
}

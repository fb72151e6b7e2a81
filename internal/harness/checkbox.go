package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/shell"
	"github.com/trussdev/truss/internal/toolcache"
	"github.com/trussdev/truss/internal/validate"
)

// checksShell is a fresh shell for the verification boundary's checks,
// which must read no cache the session's commands could write: a command
// that writes the Go build cache can map a buggy source's compile to a
// correct object (and likewise a module the build reads, a .pyc, a test
// runner's transform cache in TMPDIR), and the checks would then pass on
// code that fails. So the checks get caches of their own, made now in the
// session's private directory (which no command can write, and whose
// commands are all killed by now): Go's build cache through the cache
// program over the trusted lower caches (toolcache.GoLowers: the user's
// own, which no sandboxed command writes, and Truss's warm one), pip's and
// npm's as overlays of the host's, an empty XDG cache, a module cache of
// their own (read-only from the host's, or fresh with the network on),
// Python's bytecode in a directory of their own (PYTHONPYCACHEPREFIX) and a
// TMPDIR of their own. When the cache program cannot be had, Go's build
// cache is an overlay of the host's instead (ownCaches). The shell runs in
// the session's sandbox derived for them: the same workspace, writable
// roots, hidden paths and limits, without the commands' caches. Closing
// the shell removes its sandbox and directory. With full access (no
// caches of Truss's: commands write the host's) or in a task environment
// (whose checks run in a fresh container) the boundary does not call it.
func (w *workspace) checksShell() (validate.Shell, error) {
	dir, err := os.MkdirTemp(w.priv, "checks-")
	if err != nil {
		return nil, fmt.Errorf("the checks' own directory: %w", err)
	}
	fail := func(err error) (validate.Shell, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	tmp, own := filepath.Join(dir, "tmp"), filepath.Join(dir, "shell")
	for _, d := range []string{tmp, own} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fail(fmt.Errorf("the checks' own directory: %w", err))
		}
	}
	p := w.sandbox.Plan().Policy
	caches, err := checkCaches(filepath.Join(dir, "caches"), p, w.caches)
	if err != nil {
		return fail(err)
	}
	if err := caches.Make(); err != nil {
		return fail(err)
	}
	p = checksPolicy(p, w.caches, caches, dir, w.priv)
	sb, err := w.sandbox.Derive(p)
	if err != nil {
		return fail(fmt.Errorf("the checks' sandbox: %w", err))
	}
	env := append([]string{"TMPDIR=" + tmp, "PYTHONPYCACHEPREFIX=" + filepath.Join(dir, "pycache")}, caches.Env...)
	env = append(append(env, checkEnv()...), w.cfg.Validate.EnvList()...)
	sh := shell.New(shell.Config{Dir: w.ws.Dir(), Timeout: w.timeout, AllowEnv: w.allowEnv, WithholdEnv: w.withholdEnv, OwnEnv: w.ownEnv,
		Env: os.Environ(), SetEnv: env, TmpDir: own, Launcher: sb, Guard: sb.Guard, Bash: w.bash})
	return &checksShellT{Session: sh, sb: sb, dir: dir}, nil
}

// checkCaches are the boundary's checks' own caches in dir (ownCaches,
// Go's build cache through the cache program, else as an overlay), with
// the network of p; a trusted lower cache that one of p's writable roots
// or the commands' caches hold is left out.
func checkCaches(dir string, p sandbox.Policy, cmds *toolcache.Caches) (*toolcache.Caches, error) {
	writable := slices.Concat([]string{p.Workspace, p.TempDir, dir}, p.Writable)
	if cmds != nil {
		writable = append(writable, cmds.Writable...)
	}
	writable = slices.DeleteFunc(writable, func(d string) bool { return d == "" })
	c, err := ownCaches(dir, p.Network, false, writable)
	if err != nil {
		// No cache program the commands could not replace: Go's build
		// cache as an overlay of the host's (or empty), still the checks'
		// own.
		c, err = ownCaches(dir, p.Network, true, writable)
	}
	if err != nil {
		return nil, fmt.Errorf("the checks' own caches: %w", err)
	}
	return c, nil
}

// checksPolicy is p for the boundary's checks: what the commands' caches
// (cmds) added — their writable directories and overlays — taken out, the
// checks' own (own) put in, dir (in the private directory priv) their
// temporary directory, and priv covered rather than hidden, so that the
// checks see their own directory in it and nothing else of it. What only
// the commands write — their caches' directory and each of its writable
// parts, their temporary directory — is hidden, not merely read-only: a
// module the model's command put there (named by a `replace` in go.mod, an
// import path, a PYTHONPATH entry in a file) would otherwise still build
// into the checks.
func checksPolicy(p sandbox.Policy, cmds, own *toolcache.Caches, dir, priv string) sandbox.Policy {
	p.Writable = slices.Clone(p.Writable)
	hide := []string{p.TempDir}
	if cmds != nil {
		p.Writable = slices.DeleteFunc(p.Writable, func(d string) bool { return slices.Contains(cmds.Writable, d) })
		hide = append(append(hide, cmds.Dir), cmds.Writable...)
	}
	p.Overlays = nil // only caches have overlays
	p.Readable = slices.Clone(p.Readable)
	p.Hidden = slices.DeleteFunc(slices.Clone(p.Hidden), func(h string) bool { return h == priv })
	for _, h := range hide {
		// priv is covered below; what is in it is gone already.
		if h != "" && !within(h, priv) && !within(p.Workspace, h) && !slices.Contains(p.Hidden, h) {
			p.Hidden = append(p.Hidden, h)
		}
	}
	p.Covered = append(slices.Clone(p.Covered), priv)
	p.TempDir = dir
	withCaches(&p, own)
	return p
}

// checksShellT is the boundary's checks' shell, with its sandbox and
// directory, both released by Close.
type checksShellT struct {
	*shell.Session
	sb  *sandbox.Sandbox
	dir string
}

func (s *checksShellT) Close() error {
	err := s.Session.Close()
	s.sb.Close()
	os.RemoveAll(s.dir)
	return err
}

// runChecks runs r's checks for the verification boundary on the host:
// in a checksShell, unless the commands have no caches of Truss's (full
// access), when they run as a validation does. When the checks' shell
// cannot be made no check runs, and the verdict fails saying why.
func (w *workspace) runChecks(ctx context.Context, r *validate.Runner) (validate.Summary, tool.Result) {
	if w.caches == nil {
		return r.Run(ctx)
	}
	sh, err := w.checksShell()
	if err != nil {
		return validate.Summary{Command: r.Env.Test, Unit: "tests", ExitCode: -1, Setup: "make the checks' own caches"},
			tool.Result{Stderr: err.Error(), Err: &tool.Error{Kind: tool.ErrInternal, Message: err.Error()}}
	}
	own := *r
	own.NewShell = func() validate.Shell { return sh }
	return own.Run(ctx)
}

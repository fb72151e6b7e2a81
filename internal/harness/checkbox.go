package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/hostfs"
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
		hostfs.RemoveAll(dir)
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
	// No program of the model's stands in for the checks' tools: PATH
	// without the entries it could have written (the workspace's
	// .venv/bin, a relative bin).
	env = append(env, "PATH="+trustedPath(lastEnv(env, "PATH"), checkWritable(p, w.caches, dir)))
	confined := false
	if exe, err := sandbox.ChooseHelper(checkWritable(p, w.caches, dir)); err == nil {
		// Every test binary a go test of the checks runs, through a
		// wrapper that lets it write nothing the go command reads
		// afterwards (sandbox.GoTestExec).
		if flag, err := sandbox.GoTestExec(exe, sb.Plan()); err == nil && flag != "" {
			env = append(env, "GOFLAGS="+strings.TrimSpace(lastEnv(env, "GOFLAGS")+" "+flag))
			confined = true
		}
	}
	sh := shell.New(shell.Config{Dir: w.ws.Dir(), Timeout: w.timeout, AllowEnv: w.allowEnv, WithholdEnv: w.withholdEnv, OwnEnv: w.ownEnv,
		Env: os.Environ(), SetEnv: env, TmpDir: own, Launcher: sb, Guard: sb.Guard, Bash: w.bash})
	return &checksShellT{Session: sh, sb: sb, dir: dir, confined: confined}, nil
}

// lastEnv is the value env sets name to last, else the process's own.
func lastEnv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return os.Getenv(name)
}

// trustedPath is the PATH list path without its relative entries (which
// name a directory of the workspace: the checks run there) and those in
// one of writable, as they are or resolved.
func trustedPath(path string, writable []string) string {
	var keep []string
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		r := d
		if e, err := filepath.EvalSymlinks(d); err == nil {
			r = e
		}
		if slices.ContainsFunc(writable, func(w string) bool {
			return within(d, w) || within(r, w)
		}) {
			continue
		}
		keep = append(keep, d)
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// checkWritable are the places the checks' commands (p's, with the
// commands' caches cmds and the checks' own directory dir) can write.
func checkWritable(p sandbox.Policy, cmds *toolcache.Caches, dir string) []string {
	writable := slices.Concat([]string{p.Workspace, p.TempDir, dir}, p.Writable)
	if cmds != nil {
		writable = append(writable, cmds.Writable...)
	}
	return slices.DeleteFunc(writable, func(d string) bool { return d == "" })
}

// checkCaches are the boundary's checks' own caches in dir (ownCaches,
// Go's build cache through the cache program, else as an overlay), with
// the network of p; a trusted lower cache that one of p's writable roots
// or the commands' caches hold is left out.
func checkCaches(dir string, p sandbox.Policy, cmds *toolcache.Caches) (*toolcache.Caches, error) {
	writable := checkWritable(p, cmds, dir)
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
	// confined: every test binary of a go test runs through the wrapper
	// of sandbox.GoTestExec.
	confined bool
}

func (s *checksShellT) Close() error {
	err := s.Session.Close()
	s.sb.Close()
	hostfs.RemoveAll(s.dir)
	return err
}

// runChecks runs r's checks for the verification boundary on the host:
// in a checksShell, unless the commands have no caches of Truss's (full
// access), when they run as a validation does. When the checks' shell
// cannot be made no check runs, and the verdict fails saying why.
// confined reports that go test's binaries ran through the wrapper of
// sandbox.GoTestExec.
func (w *workspace) runChecks(ctx context.Context, r *validate.Runner) (sum validate.Summary, res tool.Result, confined bool) {
	if w.caches == nil {
		sum, res = r.Run(ctx)
		return sum, res, false
	}
	if w.coldGo() {
		// Whatever goes wrong, the checks compile what they need as
		// before; the next boundary tries again.
		if err := w.warmStd(ctx); err != nil && ctx.Err() == nil && w.warn != nil {
			w.warn("Truss's warm Go build cache was not filled (the checks compile the standard library themselves): " + err.Error())
		}
	}
	sh, err := w.checksShell()
	if err != nil {
		return validate.Summary{Command: r.Env.Test, Unit: "tests", ExitCode: -1, Setup: "make the checks' own caches"},
			tool.Result{Stderr: err.Error(), Err: &tool.Error{Kind: tool.ErrInternal, Message: err.Error()}}, false
	}
	confined = sh.(*checksShellT).confined
	own := *r
	own.NewShell = func() validate.Shell { return sh }
	sum, res = own.Run(ctx)
	return sum, res, confined
}

// coldGo reports whether the checks would compile the standard library's
// packages every time: a Go module's workspace, a go command, and no Go
// build cache of the user's for the checks to read (a fresh machine, a
// CI runner, a container), so that only Truss's warm cache
// (toolcache.WarmGoDir) can spare them the compile.
func (w *workspace) coldGo() bool {
	if toolcache.HostGoCache() != "" {
		return false
	}
	if fi, err := os.Lstat(filepath.Join(w.ws.Dir(), "go.mod")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	_, err := hostfs.LookPath("go", w.hostPath)
	return err == nil
}

// stdListName is the file in toolcache.WarmGoDir's directory naming the
// standard library packages warmStd built there, one per line; past
// warmKeep it is taken as stale (the go command trims cache entries
// unused for five days).
const (
	stdListName = "std-built"
	warmKeep    = 4 * 24 * time.Hour
	// warmTimeout bounds the warm-up's build, as a benchmark's does.
	warmTimeout = 30 * time.Minute
)

// stdPackage is what a standard library package's import path looks
// like (vendored ones, vendor/golang.org/x/…, included); anything else a
// listing prints is dropped.
func stdPackage(s string) bool {
	if s == "" || s[0] == '.' || s[0] == '-' || s[0] == '/' || len(s) > 256 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_./-", c) >= 0) {
			return false
		}
	}
	return true
}

// warmStd puts the standard library packages the workspace's tests
// import into Truss's warm Go build cache (toolcache.WarmGoDir), the
// trusted lower cache the checks read (ownCaches), so that a boundary
// compiles them once per machine rather than once per session. The
// packages are listed by `go list -deps -test` in a checks' shell (the
// workspace in sight, nothing built); they are built by the host in a
// sandbox derived for that alone, whose workspace is an empty directory
// and whose only writable places are it and the warm cache, with the
// workspace and every cache of the commands hidden, and only the names
// that `go list std` prints there are built: nothing the model wrote is
// compiled into the warm cache, so no later check can read a forged
// entry from it. Packages built before (stdListName, while fresh) are
// not listed again.
func (w *workspace) warmStd(ctx context.Context) error {
	warm, err := toolcache.WarmGoDir()
	if err != nil {
		return err
	}
	base := filepath.Dir(warm)
	list := func(sh validate.Shell, cmd string, timeout time.Duration) ([]string, error) {
		r := sh.Run(ctx, cmd, timeout)
		switch {
		case r.TimedOut:
			return nil, fmt.Errorf("%s: timed out after %s", cmd, timeout)
		case r.ExitCode == nil || *r.ExitCode != 0:
			msg := strings.TrimSpace(r.Stderr)
			if r.Err != nil {
				msg = strings.TrimSpace(r.Err.Message + " " + msg)
			}
			return nil, fmt.Errorf("%s: %s", cmd, msg)
		}
		var out []string
		for _, l := range strings.Split(r.Stdout, "\n") {
			if l = strings.TrimSpace(l); stdPackage(l) && !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
		return out, nil
	}
	sh, err := w.checksShell()
	if err != nil {
		return err
	}
	want, err := list(sh, `GOFLAGS= go list -e -deps -test -f '{{if .Standard}}{{.ImportPath}}{{end}}' ./...`, w.timeout)
	sh.Close()
	if err != nil {
		return err
	}
	built := readStdList(filepath.Join(base, stdListName))
	want = slices.DeleteFunc(want, func(p string) bool { return built[p] })
	if len(want) == 0 {
		return nil
	}
	dir, err := os.MkdirTemp(w.priv, "warm-")
	if err != nil {
		return err
	}
	defer hostfs.RemoveAll(dir)
	empty, tmp, own := filepath.Join(dir, "empty"), filepath.Join(dir, "tmp"), filepath.Join(dir, "shell")
	for _, d := range []string{empty, tmp, own} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(empty, "want"), []byte(strings.Join(want, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	caches := toolcache.For(base, false)
	if err := caches.Make(); err != nil {
		return err
	}
	p := w.sandbox.Plan().Policy
	ws := p.Workspace
	p = checksPolicy(p, w.caches, caches, tmp, w.priv)
	p.Workspace, p.Network, p.Protected = empty, false, nil
	p.Writable = slices.DeleteFunc(p.Writable, func(d string) bool { return d != tmp && !slices.Contains(caches.Writable, d) })
	p.Hidden = append(p.Hidden, ws)
	sb, err := w.sandbox.Derive(p)
	if err != nil {
		return err
	}
	defer sb.Close()
	// The go command found on the host's PATH now, without the entries
	// in a writable root (w.hostPath: an --add-dir's bin put first on
	// the user's PATH would give the model's go, writing the warm cache
	// every later session's checks trust), by its absolute path, with no
	// go env file (an empty GOFLAGS would fall back to one): no setting a
	// command could have written reaches the warm cache's build.
	goExe, err := hostfs.LookPath("go", w.hostPath)
	if err != nil {
		return err
	}
	if goExe, err = filepath.Abs(goExe); err != nil {
		return err
	}
	env := append([]string{"TMPDIR=" + tmp, "GOENV=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOWORK=off", "GO111MODULE=", "GO=" + goExe}, caches.Env...)
	wsh := shell.New(shell.Config{Dir: empty, Timeout: w.timeout, AllowEnv: w.allowEnv, WithholdEnv: w.withholdEnv, OwnEnv: w.ownEnv,
		Env: os.Environ(), SetEnv: env, TmpDir: own, Launcher: sb, Guard: sb.Guard, Bash: w.bash})
	defer wsh.Close()
	got, err := list(wsh, `"$GO" list std | grep -Fx -f want | tee built | xargs -r "$GO" build && cat built`, warmTimeout)
	if err != nil {
		return err
	}
	for p := range built {
		got = append(got, p)
	}
	slices.Sort(got)
	return hostfs.WriteFileAtomic(filepath.Join(base, stdListName), []byte(strings.Join(slices.Compact(got), "\n")+"\n"), 0o600)
}

// readStdList reads stdListName's packages, none when it is missing,
// stale (warmKeep) or not a regular file of its own size.
func readStdList(path string) map[string]bool {
	m := map[string]bool{}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20 || time.Since(fi.ModTime()) > warmKeep {
		return m
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	for _, l := range strings.Split(string(data), "\n") {
		if stdPackage(l) {
			m[l] = true
		}
	}
	return m
}

package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/container"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/shell"
	"github.com/trussdev/truss/internal/validate"
)

// The task environment (docs/environments.md): with an image, the
// session's shells — the model's, each sub-agent's, each validation's —
// run in a container from it, with the workspace bind-mounted; the file
// tools keep working on the host side of the mount.

// envChoice is the environment the options and the configuration choose.
type envChoice struct {
	spec    container.Spec
	engine  string // "" for the first that works
	workdir string // "" for the image's
	source  string // what chose the image: "--env" or the configuration
}

// chooseEnv decides the environment: the options, else the project's
// configuration ([env]; its image only when trusted), else the host.
func (s *Session) chooseEnv(cfg *config.Config) (envChoice, error) {
	o := &s.opts
	c := envChoice{engine: cmp.Or(o.Engine, cfg.Env.Engine), workdir: cmp.Or(o.EnvWorkdir, cfg.Env.Workdir)}
	switch {
	case o.Env != "":
		spec, err := container.ParseSpec(o.Env)
		if err != nil {
			return c, configErrorf("--env: %v", err)
		}
		c.spec, c.source = spec, "--env"
	case cfg.Env.Image != "":
		c.spec, c.source = container.Spec{Image: cfg.Env.Image}, config.Path
	}
	if c.engine != "" && c.engine != container.Podman && c.engine != container.Docker {
		return c, configErrorf("--engine must be podman or docker, not %q", c.engine)
	}
	if c.workdir != "" && !path.IsAbs(c.workdir) {
		return c, configErrorf("--env-workdir must be an absolute path in the container, not %q", c.workdir)
	}
	return c, nil
}

// envState is a workspace's task environment when it is an image.
type envState struct {
	engine *container.Engine
	env    *container.Env // the session's container

	// base is the session container's configuration, for sub-agents' own.
	base container.Config

	// children are the containers of isolated sub-agents, by their
	// workspace copy's directory.
	mu       sync.Mutex
	children map[string]*container.Env
}

// startEnv starts the session's environment, after the session has its
// id (the container's label names it): on the host it only removes the
// containers ended sessions left, when there may be some (leftStates);
// with an image
// it finds the engine, removes ended sessions' containers, starts the
// container, and routes the shell into it. Open calls it once the
// workspace and the session exist.
func (s *Session) startEnv(ctx context.Context) error {
	w := s.w
	if w.envc.spec.Host() {
		if leftStates() {
			s.reap(ctx, w.envc.engine) // no engine: nothing it could remove
		}
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	e, err := container.FindIn(rctx, w.envc.engine, w.hostPath)
	if err != nil {
		return configErrorf("--env %s needs a working container engine (truss env check): %v", w.envc.spec, err)
	}
	// Ended sessions' containers are removed while this one starts (Reap
	// never removes a live session's).
	reaped := make(chan func(), 1)
	go func() {
		gone, err := e.Reap(rctx)
		reaped <- func() { s.reported(gone, err) }
	}()
	defer func() { (<-reaped)() }()
	pl := w.sandbox.Plan()
	lim := pl.Policy.Limits
	limits := container.Limits{CPUs: float64(runtime.NumCPU()), Pids: lim.Pids, OpenFiles: lim.OpenFiles}
	if lim.Memory > 0 {
		limits.Memory = lim.Memory
	}
	cfg := container.Config{Image: w.envc.spec.Image, Workspace: w.root, Workdir: w.envc.workdir,
		Network: pl.Policy.Network, Limits: limits, Session: cmpOr(s.sessionID, "session"),
		Protected: pl.Policy.Protected, Hidden: pl.Policy.Hidden}
	env, err := e.Start(ctx, cfg)
	if err != nil {
		var nf *container.ImageNotFoundError
		var re *container.ReferenceError
		if errors.As(err, &nf) || errors.As(err, &re) {
			return &ConfigError{Msg: err.Error()}
		}
		return fmt.Errorf("start the task environment: %w", err)
	}
	w.envs = &envState{engine: e, env: env, children: map[string]*container.Env{}, base: cfg}
	// The file tools take the container's spelling of the workspace too
	// (the model sees it in the shell): the workspace is opened again
	// with it as an alias.
	ws, err := fs.OpenWith(w.ws.Dir(), fs.WorkspaceOptions{Extra: w.extra, Locks: w.locks, Aliases: []string{env.Workdir()}})
	if err != nil {
		return err
	}
	w.ws.Close()
	w.ws = ws
	w.shell = w.newShellIn(ws.Dir(), "")
	w.route(&w.mux, ws, w.shell)
	return nil
}

// reap finds the engine named ("" for the first that works) and removes
// the containers of sessions whose process is gone, saying what it
// removed. The error is the engine's not working.
func (s *Session) reap(ctx context.Context, name string) (*container.Engine, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	e, err := container.FindIn(ctx, name, s.w.hostPath)
	if err != nil {
		return nil, err
	}
	s.reported(e.Reap(ctx))
	return e, nil
}

// reported says what Reap removed, and its error.
func (s *Session) reported(gone []container.Reaped, err error) {
	for _, g := range gone {
		s.warn(fmt.Sprintf("removed container %.12s of ended session %s (process %d is gone)", g.ID, g.Session, g.PID))
	}
	if err != nil {
		s.warn(err.Error())
	}
}

// leftStates reports whether a task environment's state directory is in
// the temporary directory: a container session is running, or one ended
// without removing its container (killed, or the machine stopped). Reap
// removes the directory with the container, so a host session asks the
// engine only then.
func leftStates() bool {
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), "truss-env-*"))
	return len(m) > 0
}

// envShellIn starts a shell session in dir in the task environment's
// container (an isolated sub-agent's copy: a container of its own). Its
// own files are in the container's state directory.
func (w *workspace) envShellIn(dir string) *shell.Session {
	// The host's variables, its temporary directory and its build caches
	// are the host's: the image's environment is in force, with the
	// project's configured variables.
	cfg := w.envShellConfig(dir)
	env, err := w.envs.envFor(dir)
	if err == nil {
		cfg, err = env.ShellConfig(cfg)
	}
	if err != nil {
		// The shell reports the failure with each command.
		cfg.Launcher = shell.LauncherFunc(func(*exec.Cmd) error { return fmt.Errorf("the task environment: %w", err) })
	}
	return shell.New(cfg)
}

// envFor is the container whose workspace holds dir: the session's, or
// an isolated sub-agent's (started on first use).
func (v *envState) envFor(dir string) (*container.Env, error) {
	if _, ok := v.env.ContainerPath(dir); ok {
		return v.env, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if env, ok := v.children[dir]; ok {
		return env, nil
	}
	// An isolated sub-agent's copy of the workspace: a container of its
	// own from the same image, with the copy mounted where the
	// workspace is in the session's.
	cfg := v.base
	cfg.Workspace, cfg.Workdir = dir, v.env.Workdir()
	cfg.Protected, cfg.Hidden = sandbox.GitPaths(dir), nil
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := v.engine.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	v.children[dir] = env
	return env, nil
}

// envShellConfig is the configuration of a shell in dir in the task
// environment: the image's environment with the project's configured
// variables, and extra.
func (w *workspace) envShellConfig(dir string, extra ...string) shell.Config {
	return shell.Config{Dir: dir, Timeout: w.timeout, SetEnv: append(w.cfg.Validate.EnvList(), extra...)}
}

// checks runs the verification boundary's checks (r's) in a task
// environment: it halts the session's container (every process in it
// dies, whatever it did) and runs the checks in a fresh container from
// the session's image ID, with the session container's mounts, limits
// and lockdown; the fresh container starts while the session's is
// halted, and is removed while the session's starts again (Resume,
// warned about through warn when it fails). Facts are where the checks
// ran. The error is an environment that could not be had; failing
// checks are a summary.
func (v *envState) checks(ctx context.Context, r *validate.Runner, shellCfg func(string, ...string) shell.Config, warn func(string)) (sum validate.Summary, log string, facts any, err error) {
	cfg := v.base
	f := v.env.Facts()
	// The image the session started from, by ID: a tag moved since (or
	// re-pointed by anyone) is not followed.
	cfg.Image = cmp.Or(f.ImageID, cfg.Image)
	cfg.Workdir = v.env.Workdir()
	cfg.Session = cfg.Session + "-checks"
	type started struct {
		env *container.Env
		err error
	}
	fresh := make(chan started, 1)
	go func() {
		e, err := v.engine.Start(ctx, cfg)
		fresh <- started{e, err}
	}()
	herr := v.env.Halt(ctx)
	st := <-fresh
	defer func() {
		// The checks' container goes while the session's starts again.
		var wg sync.WaitGroup
		if st.env != nil {
			wg.Go(func() {
				if cerr := st.env.Close(ctx); cerr != nil {
					warn(fmt.Sprintf("the checks' container could not be removed: %v", cerr))
				}
			})
		}
		if rerr := v.env.Resume(context.WithoutCancel(ctx)); rerr != nil {
			warn(fmt.Sprintf("the task environment's container could not be started again: %v", rerr))
		}
		wg.Wait()
	}()
	if herr != nil {
		return sum, "", nil, fmt.Errorf("halt the session's container: %w", herr)
	}
	if st.err != nil {
		return sum, "", nil, fmt.Errorf("start a fresh container for the checks: %w", st.err)
	}
	rr := *r
	rr.NewShell = func() validate.Shell {
		sh, err := st.env.NewShell(shellCfg(st.env.Workspace(), checkEnv()...))
		if err != nil {
			return shell.New(shell.Config{Dir: st.env.Workspace(), Launcher: shell.LauncherFunc(func(*exec.Cmd) error {
				return fmt.Errorf("the checks' container: %w", err)
			})})
		}
		return sh
	}
	sum, res := rr.Run(ctx)
	return sum, res.Stdout + res.Stderr, st.env.Facts(), nil
}

// closeChild removes the container of an isolated sub-agent's copy.
func (v *envState) closeChild(dir string) {
	v.mu.Lock()
	env := v.children[dir]
	delete(v.children, dir)
	v.mu.Unlock()
	if env != nil {
		env.Close(context.Background())
	}
}

// closeEnv removes the task environment's containers (after the shells
// in them are closed).
func (w *workspace) closeEnv() {
	if w.envs != nil {
		w.envs.close(w.warn)
		w.envs = nil
	}
}

// close removes every container of the session; errors go to warn.
func (v *envState) close(warn func(string)) {
	v.mu.Lock()
	all := []*container.Env{v.env}
	for _, e := range v.children {
		all = append(all, e)
	}
	v.children = nil
	v.mu.Unlock()
	for _, e := range all {
		if err := e.Close(context.Background()); err != nil && warn != nil {
			warn(fmt.Sprintf("the task environment's container could not be removed: %v", err))
		}
	}
}

// facts are the environment's provenance; nil on the host (the ledger's
// session.start then has none).
func (w *workspace) envFacts() any {
	if w == nil || w.envs == nil {
		return nil
	}
	return w.envs.env.Facts()
}

// envDescription says where commands run, for a person: "" on the host.
func (w *workspace) envDescription() string {
	if w == nil || w.envs == nil {
		return ""
	}
	f := w.envs.env.Facts()
	net := "off"
	if f.Network {
		net = "on"
	}
	return fmt.Sprintf("image %s (%s) on %s %s, workspace at %s, network %s", f.Image, shortID(f.ImageID), f.Engine, f.EngineVersion, f.Workdir, net)
}

// envEnforced is what confines the commands, as the ledger's
// session.start and Info say it.
func (w *workspace) envEnforced() string {
	f := w.envs.env.Facts()
	net := "off"
	if f.Network {
		net = "on"
	}
	return fmt.Sprintf("container (%s %s, image %s, network %s, pids %d, memory %s)", f.Engine, f.EngineVersion, f.Image, net, f.Limits.Pids, sandbox.FormatSize(cmp.Or(f.Limits.Memory, -1)))
}

func shortID(id string) string {
	if h, ok := strings.CutPrefix(id, "sha256:"); ok && len(h) > 12 {
		return "sha256:" + h[:12]
	}
	return id
}

// systemPrompt is the top agent's system prompt: with an image, the
// workspace root it names is the container's, where the shell starts.
func (s *Session) systemPrompt() string {
	root := s.w.ws.Dir()
	s.base = s.baseSystem()
	pr := agent.NewPrompt(root, s.base)
	if n := pr.Notice(); n != "" {
		s.warn(n)
	}
	p := pr.Text
	if s.w.envs == nil {
		return p
	}
	f := s.w.envs.env.Facts()
	old := "The workspace root is " + root + ";"
	repl := fmt.Sprintf("The workspace root is %s, in a container from the image %s, where the shell and the tests run;", f.Workdir, f.Image)
	if strings.Contains(p, old) {
		return strings.Replace(p, old, repl, 1)
	}
	return p + "\n\n" + repl + " name files by paths inside it or relative to it."
}

// baseSystem is Truss's own system prompt followed by the user's own
// instructions for every session, AGENTS.md in Truss's user directory
// beside config.toml (agent.ReadUserDoc); a file there that cannot be
// read, or only in part, is said to the user.
func (s *Session) baseSystem() string {
	dir, err := s.keyDir()
	if err != nil {
		return agent.DefaultSystem
	}
	path := filepath.Join(dir, "AGENTS.md")
	doc, err := agent.ReadUserDoc(dir)
	switch {
	case err != nil:
		s.warn(fmt.Sprintf("%s was not read: %v; your instructions are left out (Truss reads a regular file there, not a link)", path, err))
		return agent.DefaultSystem
	case doc.Truncated:
		s.warn(fmt.Sprintf("%s is %d bytes; only its first %d bytes are in the model's instructions.", path, doc.Size, agent.ProjectDocMaxBytes))
	}
	return agent.WithUserDoc(agent.DefaultSystem, doc, path)
}

// aliases are the other spellings of a workspace the file tools take:
// the container's path of it.
func (w *workspace) aliases() []string {
	if w.envs == nil {
		return nil
	}
	return []string{w.envs.env.Workdir()}
}

// closeChildEnv removes the container of an isolated sub-agent's copy in
// dir, if it has one.
func (w *workspace) closeChildEnv(dir string) {
	if w.envs != nil {
		w.envs.closeChild(dir)
	}
}

package harness

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/subagent"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/memory"
	"github.com/trussdev/truss/internal/tool/patch"
	"github.com/trussdev/truss/internal/tool/shell"
	"github.com/trussdev/truss/internal/toolcache"
	"github.com/trussdev/truss/internal/trust"
	"github.com/trussdev/truss/internal/validate"
)

// workspace is the executors of one session on its workspace.
type workspace struct {
	ws      *fs.Workspace
	locks   *fs.Locks // every workspace the session opens on a directory shares them
	shell   *shell.Session
	memory  *memory.Store
	sandbox *sandbox.Sandbox
	tmp     string // the session's temporary directory, the commands' TMPDIR
	// priv holds Truss's own files of the session out of every command's
	// reach (privateDir): isolated sub-agents' copies and temporary
	// directories, escalated shells' saved variables, the change
	// tracker's store.
	priv string
	// hostPath is the PATH of the programs Truss runs on the host (bash
	// for the shells, MCP servers): none of the directories the session's
	// commands write (hostfs.SafePath).
	hostPath string
	// bash is the shells' program, found in hostPath ("bash" when it is
	// not there: the shells then fail to start, saying so).
	bash string
	mux  tool.Mux
	root string // the absolute workspace root

	cfg      *config.Config // the project's .truss/config.toml
	cacheEnv []string       // the sandboxed commands' cache variables
	// caches are the sandboxed commands' caches (nil with full access).
	caches   *toolcache.Caches
	timeout  time.Duration
	allowEnv []string
	// withholdEnv are the variables the user's configuration withholds
	// besides Truss's rule.
	withholdEnv []string
	// ownEnv are the model providers' variables (withheldEnv), which
	// commands get only when allowEnv names them.
	ownEnv []string
	undo   bool // the editor keeps an edit history
	extra  []fs.RootSpec

	// envc is the task environment chosen; envs its containers when it is
	// an image (nil on the host).
	envc envChoice
	envs *envState
	warn func(string)

	// shared are the routes sub-agents share with the top agent (memory,
	// MCP); runner is the validation runner, if any.
	shared map[tool.Op]tool.Executor
	runner *validate.Runner
}

// handleShared routes op to e for the top agent and every sub-agent.
func (w *workspace) handleShared(op tool.Op, e tool.Executor) {
	if w.shared == nil {
		w.shared = map[tool.Op]tool.Executor{}
	}
	w.shared[op] = e
	w.mux.Handle(op, e)
}

// openWorkspace opens the workspace and its executors; the memory store
// only when the tool set has a memory tool, and edit history when it can
// undo. On error nothing stays open.
func (s *Session) openWorkspace(set *surface.Set) (w *workspace, err error) {
	o := &s.opts
	var extra []fs.RootSpec
	for _, d := range o.ReadOnlyDirs {
		extra = append(extra, fs.RootSpec{Path: d, ReadOnly: true})
	}
	for _, d := range o.WritableDirs {
		extra = append(extra, fs.RootSpec{Path: d})
	}
	locks := &fs.Locks{}
	ws, err := fs.OpenWith(cmp.Or(o.Root, "."), fs.WorkspaceOptions{Extra: extra, Locks: locks})
	if err != nil {
		return nil, err
	}
	w = &workspace{ws: ws, locks: locks, extra: extra, warn: s.warn, timeout: cmp.Or(o.ShellTimeout, shell.DefaultTimeout), allowEnv: o.AllowEnv,
		ownEnv: withheldEnv(s.user)}
	if s.user != nil {
		w.allowEnv = append(append([]string(nil), o.AllowEnv...), s.user.ShellEnvironment.Include...)
		w.withholdEnv = s.user.ShellEnvironment.Exclude
	}
	defer func() {
		if err != nil {
			w.close()
			w = nil
		}
	}()
	if w.tmp, err = os.MkdirTemp(o.TempDir, "truss-session-"); err != nil {
		return w, err
	}
	w.root, _ = filepath.Abs(ws.Dir())
	if err := s.stateOutside(w.root, extra); err != nil {
		return w, err
	}
	if w.priv, err = privateDir(w.root, o.TempDir, extra); err != nil {
		return w, err
	}
	if w.cfg, err = config.Load(w.root); err != nil {
		return w, err
	}
	pl, caches, err := s.plan(w.root, w.tmp, w.cfg)
	if err != nil {
		return w, err
	}
	if caches != nil {
		if err := caches.Make(); err != nil {
			return w, err
		}
		w.cacheEnv, w.caches = caches.Env, caches
	}
	// The private directory is hidden from commands where it is not
	// under the sandbox's own /tmp already (a TMPDIR elsewhere).
	pl.Policy.Hidden = append(pl.Policy.Hidden, w.priv)
	if w.sandbox, err = sandbox.New(pl); err != nil {
		return w, err
	}
	w.hostPath = hostfs.SafePath(os.Getenv("PATH"), append([]string{pl.Policy.Workspace, pl.Policy.TempDir, w.priv}, pl.Policy.Writable...))
	if w.bash, err = hostfs.LookPath("bash", w.hostPath); err != nil {
		w.bash = "bash"
	}
	_, w.undo = set.Lookup("str_replace_editor")
	if w.envc, err = s.chooseEnv(w.cfg); err != nil {
		return w, err
	}
	if w.envc.spec.Host() {
		// With an image, startEnv routes them once the container runs.
		w.shell = w.newShellIn(ws.Dir(), w.tmp)
		w.route(&w.mux, ws, w.shell)
	}
	if _, ok := set.Lookup("memory"); ok {
		dir := o.MemoryDir
		if dir == "" {
			if dir, err = defaultMemoryDir(ws.Dir()); err != nil {
				return w, err
			}
		}
		if w.memory, err = memory.Open(dir); err != nil {
			return w, err
		}
		for _, op := range memory.Ops {
			w.handleShared(op, w.memory)
		}
	}
	return w, nil
}

// plan decides the sandbox of a workspace on this host: the options, else
// the project's configuration, else workspace-write with the network off.
// It returns the commands' caches (nil with full access).
func (s *Session) plan(root, tmp string, cfg *config.Config) (*sandbox.Plan, *toolcache.Caches, error) {
	so := s.opts.Sandbox
	mode := so.Mode
	if mode == "" {
		m, err := sandbox.ParseMode(cmp.Or(cfg.Sandbox.Mode, string(sandbox.WorkspaceWrite)))
		if err != nil {
			return nil, nil, &ConfigError{Msg: err.Error()}
		}
		mode = m
	}
	network := false
	if so.Network != nil {
		network = *so.Network
	} else if cfg.Sandbox.Network != nil {
		network = *cfg.Sandbox.Network
	}
	p := sandbox.DefaultPolicy(root, tmp)
	p.Mode, p.Network = mode, network
	if so.Memory != 0 {
		p.Limits.Memory = so.Memory
	}
	if so.DiskBudget != 0 {
		p.Limits.DiskBudget = so.DiskBudget
	}
	// The project's configuration is read-only to commands, as .git is,
	// and so is the record of trusted configurations should the workspace
	// hold it.
	p.Protected = append(p.Protected, config.Protected(root)...)
	if st, err := trust.UserStore(); err == nil && within(st.Path, root) {
		if _, err := os.Stat(st.Path); err == nil {
			p.Protected = append(p.Protected, st.Path)
		}
	}
	for _, d := range s.opts.ReadOnlyDirs {
		if abs, err := filepath.Abs(d); err == nil {
			p.Readable = append(p.Readable, abs)
		}
	}
	for _, h := range so.Hidden {
		abs, err := filepath.Abs(h)
		if err != nil {
			return nil, nil, err
		}
		p.Hidden = append(p.Hidden, abs)
	}
	for _, c := range so.Covered {
		abs, err := filepath.Abs(c)
		if err != nil {
			return nil, nil, err
		}
		p.Covered = append(p.Covered, abs)
	}
	p.Writable = append(p.Writable, cfg.Sandbox.Writable...)
	for _, d := range s.opts.WritableDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, nil, err
		}
		p.Writable = append(p.Writable, abs)
		// An extra root that is a repository keeps its .git read-only, as
		// the workspace does: the user's git there would obey it.
		p.Protected = append(p.Protected, sandbox.GitPaths(abs)...)
	}
	// Commands write caches of their own, never the host's.
	var caches *toolcache.Caches
	switch {
	case mode == sandbox.FullAccess:
	case mode == sandbox.ReadOnly || s.opts.PrivateCaches:
		// The session's own, in its temporary directory (all a read-only
		// sandbox's commands write), over the trusted caches read-only:
		// warm from the start, as the workspace's own are after its first
		// build. Read-only, where nothing else depends on the program, Go's
		// build cache is an overlay when it cannot be had.
		writable := slices.Concat([]string{root, tmp}, p.Writable)
		c, err := ownCaches(filepath.Join(tmp, "caches"), network, false, writable)
		if err != nil && mode == sandbox.ReadOnly {
			c, err = ownCaches(filepath.Join(tmp, "caches"), network, true, writable)
		}
		if err != nil {
			return nil, nil, err
		}
		caches = c
		withCaches(&p, caches)
	default:
		dir, err := toolcache.DirFor(cmp.Or(s.opts.CacheName, root))
		if err != nil {
			dir = filepath.Join(tmp, "caches")
		}
		caches = toolcache.For(dir, network)
		p.Writable = append(p.Writable, caches.Writable...)
		// The host's caches commands read in place stay visible where the
		// sandbox replaces what holds them (a module cache in /tmp).
		p.Readable = append(p.Readable, caches.ReadOnly...)
	}
	p.Hidden = append(p.Hidden, s.hiddenFromCommands(root, caches)...)
	pl, err := sandbox.MakePlan(p, sandbox.Probe(), so.Fallback)
	return pl, caches, err
}

// hiddenFromCommands are the paths no sandboxed command of root may read,
// whoever runs it (a session's commands, a grading's): the signing key (a
// command that read it could forge a ledger), the saved sessions, the
// user's credentials (~/.ssh, ~/.aws, ~/.netrc, …, with what the user's
// configuration adds and releases) and what Truss keeps of other
// projects: memories (the memory tool, on the host, is how the model reads
// this project's) and the other workspaces' command caches (all of them
// when caches is nil).
func (s *Session) hiddenFromCommands(root string, caches *toolcache.Caches) []string {
	var out []string
	if dir, err := s.keyDir(); err == nil {
		out = append(out, filepath.Join(dir, "ledger.key"))
	}
	if dir, err := s.sessionDir(); err == nil && !within(root, dir) {
		out = append(out, dir)
	}
	out = append(out, s.hiddenCredentials()...)
	return append(out, s.otherProjects(root, caches)...)
}

// otherProjects are the directories of Truss's that hold other projects'
// data, hidden from commands: the memories directory (all of it, and the
// one --memory-dir names), and every workspace's cache directory but
// this one's (the ones that exist now; one made later is another
// session's to hide). A memory directory in the workspace is the
// workspace's, and stays.
func (s *Session) otherProjects(root string, caches *toolcache.Caches) []string {
	var out []string
	if d := dataDir(); d != "" {
		out = append(out, filepath.Join(d, "memories"))
	}
	if s.opts.MemoryDir != "" {
		if abs, err := filepath.Abs(s.opts.MemoryDir); err == nil && !within(abs, root) {
			out = append(out, abs)
		}
	}
	base, err := toolcache.Base()
	if err != nil {
		return out
	}
	all := filepath.Join(base, "workspaces")
	entries, err := os.ReadDir(all)
	if err != nil {
		return out
	}
	for _, e := range entries {
		d := filepath.Join(all, e.Name())
		if caches != nil && caches.Dir == d {
			continue
		}
		out = append(out, d)
	}
	return out
}

// loadUser reads the user's configuration, beside the signing key.
func (s *Session) loadUser() error {
	dir, err := s.keyDir()
	if err != nil {
		return nil // no Truss directory: no user configuration either
	}
	u, err := config.LoadUser(filepath.Join(dir, config.UserFile))
	if err != nil {
		return &ConfigError{Msg: err.Error()}
	}
	s.user = u
	return nil
}

// stateOutside refuses a workspace or an extra root that holds Truss's
// own state — its configuration and signing key, its sessions, its trust
// store, its caches, TRUSS_HOME — or is one of them: the file tools could
// read the signing key there, and commands could plant a trust store, a
// key, a cache root that is a link, or rename the directory around the
// covers the sandbox puts on what they hold; nor may a root lie inside
// one of them. Paths are compared with their symbolic links resolved (the
// nearest existing ancestor's, for a directory not made yet), and
// directories by identity (device and inode), so that a bind mount of
// $HOME elsewhere is refused as $HOME is.
func (s *Session) stateOutside(root string, extra []fs.RootSpec) error {
	var state []string
	add := func(d string, err error) {
		if err == nil && d != "" {
			state = append(state, d)
		}
	}
	add(s.keyDir())
	if d, err := s.sessionDir(); err == nil {
		add(d, nil)
		if s.opts.SessionDir == "" {
			add(filepath.Dir(d), nil) // the data directory, …/truss
		}
	}
	if st, err := trust.UserStore(); err == nil {
		add(filepath.Dir(st.Path), nil)
	}
	add(toolcache.Base())
	add(os.Getenv("TRUSS_HOME"), nil)
	// Each path is resolved, and its ancestors looked up, once.
	roots := []*place{newPlace(root)}
	for _, e := range extra {
		roots = append(roots, newPlace(e.Path))
	}
	for _, d := range state {
		pd := newPlace(d)
		for _, r := range roots {
			if r.reaches(pd) {
				return configErrorf("%s holds Truss's own state (%s), which commands and the file tools must not reach: run Truss on a directory that does not contain it, or set TRUSS_HOME (and XDG_CACHE_HOME) to a directory outside it", r.path, d)
			}
		}
	}
	// Nor the user's credentials: the sandbox hides them from commands,
	// but the file tools run on the host and would read them.
	for _, c := range s.hiddenCredentials() {
		if _, err := os.Lstat(c); err != nil {
			continue
		}
		pc := newPlace(c)
		for _, r := range roots {
			if r.reaches(pc) {
				return configErrorf("%s holds the user's credentials (%s), which the file tools must not reach: run Truss on a directory that does not contain them (or release the path in the user's configuration, [sandbox] release)", r.path, c)
			}
		}
	}
	return nil
}

// privateDir makes the session's private directory, mode 0700, in the
// first of tempDir (Options.TempDir, "" for the system's temporary
// directory), $XDG_RUNTIME_DIR and Truss's
// data directory that lies outside the workspace and every extra root,
// so that no sandboxed command can write it, nor rename it or what holds
// it (under the sandbox's private /tmp, commands do not even see it).
// Truss keeps there what it later reads, copies, diffs or sources.
func privateDir(root, tempDir string, extra []fs.RootSpec) (string, error) {
	roots := []string{resolveExisting(root)}
	for _, e := range extra {
		roots = append(roots, resolveExisting(e.Path))
	}
	outside := func(d string) bool {
		rd := resolveExisting(d)
		for _, r := range roots {
			if within(rd, r) {
				return false
			}
		}
		return true
	}
	var tried []string
	bases := []string{cmp.Or(tempDir, os.TempDir()), os.Getenv("XDG_RUNTIME_DIR")}
	if d := dataDir(); d != "" {
		bases = append(bases, filepath.Join(d, "tmp"))
	}
	for _, base := range bases {
		if base == "" {
			continue
		}
		if !outside(base) {
			tried = append(tried, base)
			continue
		}
		if err := os.MkdirAll(base, 0o700); err != nil {
			tried = append(tried, base)
			continue
		}
		return os.MkdirTemp(base, "truss-private-")
	}
	return "", configErrorf("no directory for Truss's private files outside the workspace and the extra roots (tried %s): set TMPDIR to one", strings.Join(tried, ", "))
}

// hiddenCredentials are the credential paths hidden from commands: the
// default ones and the providers' (CredentialFiles) less those the user's
// configuration releases, and those it adds.
func (s *Session) hiddenCredentials() []string {
	home, _ := os.UserHomeDir()
	var out, release []string
	if s.user != nil {
		for _, h := range s.user.Sandbox.Hidden {
			out = append(out, config.ExpandHome(h, home))
		}
		for _, r := range s.user.Sandbox.Release {
			release = append(release, filepath.Clean(config.ExpandHome(r, home)))
		}
	}
	if home != "" {
		for _, c := range append(sandbox.DefaultHiddenCredentials(home), CredentialFiles(home)...) {
			if !slices.Contains(release, filepath.Clean(c)) && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// resolveExisting returns p with the symbolic links of its nearest
// existing ancestor resolved, the rest as it is.
func resolveExisting(p string) string {
	p, _ = filepath.Abs(p)
	return hostfs.Resolve(p)
}

// keyDir is the directory of the signing key.
func (s *Session) keyDir() (string, error) {
	if s.opts.KeyDir != "" {
		return s.opts.KeyDir, nil
	}
	return ledger.KeyDir()
}

// sessionDir is the session store's directory.
func (s *Session) sessionDir() (string, error) {
	if s.opts.SessionDir != "" {
		return s.opts.SessionDir, nil
	}
	return session.DefaultDir()
}

// A place is a path as reaches compares it: resolved, its file
// information, and its existing ancestors' (looked up on first use), so
// that one path compared with many is resolved and walked once.
type place struct {
	path     string // as given
	resolved string // links resolved (resolveExisting)
	fi       os.FileInfo
	stated   bool
	anc      []os.FileInfo
	walked   bool
}

func newPlace(p string) *place { return &place{path: p, resolved: resolveExisting(p)} }

// info is the resolved path's file information; nil when it does not
// exist.
func (p *place) info() os.FileInfo {
	if !p.stated {
		p.fi, _ = os.Stat(p.resolved)
		p.stated = true
	}
	return p.fi
}

// ancestors are existingAncestors of the resolved path.
func (p *place) ancestors() []os.FileInfo {
	if !p.walked {
		p.anc = existingAncestors(p.resolved)
		p.walked = true
	}
	return p.anc
}

// reaches reports whether the tree at r holds p or lies inside it: by
// path, links resolved, or by identity, when r or one of its ancestors
// is the directory p or one of p's (the nearest existing one's, for a
// path not made yet) — a bind mount is another path to the same
// directory.
func (r *place) reaches(p *place) bool {
	if within(p.resolved, r.resolved) || within(r.resolved, p.resolved) {
		return true
	}
	ri := r.info()
	if ri == nil {
		return false
	}
	// p below root: an ancestor of p is root.
	for _, a := range p.ancestors() {
		if os.SameFile(a, ri) {
			return true
		}
	}
	// root below p: an ancestor of root is p, when p exists.
	pi := p.info()
	if pi == nil {
		return false
	}
	for _, a := range r.ancestors() {
		if os.SameFile(a, pi) {
			return true
		}
	}
	return false
}

// existingAncestors returns the file information of the nearest existing
// directory at or above the absolute path p and of each of its ancestors
// up to the file system's root.
func existingAncestors(p string) []os.FileInfo {
	var out []os.FileInfo
	for {
		if fi, err := os.Stat(p); err == nil {
			out = append(out, fi)
		}
		up := filepath.Dir(p)
		if up == p {
			return out
		}
		p = up
	}
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// box is where a shell's commands run: a sandbox, and the temporary
// directory they are given (TMPDIR), one of its writable roots.
type box struct {
	sb  *sandbox.Sandbox
	tmp string
}

// box is the session's own: the top agent's and its shared sub-agents'.
func (w *workspace) box() box { return box{w.sandbox, w.tmp} }

// newShellIn starts a shell session in dir, in the session's sandbox,
// keeping its own files in own. The model's shell is one; each
// validation run and each sub-agent gets a fresh one.
func (w *workspace) newShellIn(dir, own string) *shell.Session { return w.shellIn(w.box(), dir, own) }

// shellIn starts a shell session in dir, in b, keeping its own files (its
// saved variables, which the next shell sources) in own, a directory that
// only b's commands and Truss write.
func (w *workspace) shellIn(b box, dir, own string, extra ...string) *shell.Session {
	if w.envs != nil {
		return w.envShellIn(dir)
	}
	return shell.New(shell.Config{Dir: dir, Timeout: w.timeout, AllowEnv: w.allowEnv, WithholdEnv: w.withholdEnv, OwnEnv: w.ownEnv,
		Env: os.Environ(), SetEnv: append(append(append([]string{"TMPDIR=" + b.tmp}, w.cacheEnv...), extra...), w.cfg.Validate.EnvList()...),
		TmpDir: own, Launcher: b.sb, Guard: b.sb.Guard, Bash: w.bash})
}

// stopCommands kills the model's shell and every process the session's
// sandbox (and the isolated sub-agents' sandboxes derived from it) runs.
func (w *workspace) stopCommands() {
	if w.shell != nil {
		w.shell.Restart()
	}
	if w.sandbox != nil {
		w.sandbox.KillAll()
	}
}

// validationShell is a fresh shell for one validation run.
func (w *workspace) validationShell() validate.Shell {
	return w.ownedShellIn(w.box(), w.ws.Dir(), "validate-", checkEnv()...)
}

// checkEnv is what a validation run's shell adds to the commands'
// environment: Go's test results are never taken from the build cache,
// which commands write (a command could plant an "ok" for a failing
// package's test).
func checkEnv() []string {
	return []string{"GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -count=1")}
}

// ownedShellIn starts a shell in dir, in b, that keeps its files in a
// directory of its own under b's temporary directory, removed with it;
// extra are variables it adds to the commands' environment.
func (w *workspace) ownedShellIn(b box, dir, prefix string, extra ...string) *ownedShell {
	own, err := os.MkdirTemp(b.tmp, prefix)
	if err != nil {
		own = "" // the session makes its own
	}
	return &ownedShell{Session: w.shellIn(b, dir, own, extra...), dir: own}
}

// ownedShell is a shell whose directory goes with it.
type ownedShell struct {
	*shell.Session
	dir string
}

func (s *ownedShell) Close() error {
	err := s.Session.Close()
	if s.dir != "" {
		hostfs.RemoveAll(s.dir)
	}
	return err
}

// route routes the file, patch and shell operations of mux to executors on
// ws and sh.
func (w *workspace) route(mux *tool.Mux, ws *fs.Workspace, sh *shell.Session) {
	fx := &fs.Executor{W: ws, Opts: fs.Options{History: w.undo}}
	mux.HandleAll(fs.Ops, fx)
	mux.HandleAll(shell.Ops, sh)
	mux.HandleAll(patch.Ops, patch.NewExecutor(fx))
}

// runner returns the validation runner of the workspace: the test command
// from the options or the configuration, else detected from the
// repository; nil when there is none or validation is off.
func (w *workspace) newRunner(v ValidationOptions) *validate.Runner {
	env, ok := checksOf(w.ws.Dir(), w.cfg, v)
	if !ok {
		return nil
	}
	return &validate.Runner{Env: env, NewShell: w.validationShell, Timeout: w.cfg.Validate.TimeoutValue()}
}

// checksOf is the project's checks in dir: the test command from the
// options or the configuration, else detected from the repository; false
// when there are none or validation is off. A session offers the validate
// tool exactly when there are (and truss tools shows it so).
func checksOf(dir string, cfg *config.Config, v ValidationOptions) (validate.Env, bool) {
	if v.Off {
		return validate.Env{}, false
	}
	env, ok := validate.Detect(dir)
	c := cfg.Validate
	switch {
	case v.TestCmd != "":
		env, ok = validate.Env{Test: v.TestCmd, Source: "--test-cmd"}, true
	case c.Test != "":
		env, ok = validate.Env{Test: c.Test, Source: config.Path}, true
	}
	if !ok {
		return validate.Env{}, false
	}
	env.Setup = append(append(env.Setup, c.Setup...), v.SetupCmds...)
	return env, true
}

// childEnv returns the executors of a sub-agent working in dir: the file
// tools on dir (the workspace itself, or an isolated copy), a shell of its
// own, and the session's memory, validation and MCP tools (validation
// runs in dir). A sub-agent in the workspace shares the session's
// sandbox; one in an isolated copy gets a sandbox of its own (childBox)
// whose commands write only the copy and a temporary directory of their
// own.
func (w *workspace) childEnv(dir string, compose func(*tool.Mux, string) tool.Executor) (*subagent.Env, error) {
	ws := w.ws
	var own *fs.Workspace
	b := w.box()
	closeBox := func() {}
	if dir != w.ws.Dir() {
		var err error
		if b, closeBox, err = w.childBox(dir); err != nil {
			return nil, err
		}
		if own, err = fs.OpenWith(dir, fs.WorkspaceOptions{Locks: w.locks, Aliases: w.aliases()}); err != nil {
			closeBox()
			return nil, err
		}
		ws = own
	}
	sh := w.ownedShellIn(b, dir, "agent-")
	mux := &tool.Mux{}
	w.route(mux, ws, sh.Session)
	for op, e := range w.shared {
		mux.Handle(op, e)
	}
	if w.runner != nil {
		r := *w.runner
		r.NewShell = func() validate.Shell { return w.ownedShellIn(b, dir, "validate-", checkEnv()...) }
		mux.Handle(tool.OpValidate, &r)
	}
	return &subagent.Env{Exec: compose(mux, dir), Close: func() {
		sh.Close()
		if own != nil {
			own.Close()
			w.closeChildEnv(dir)
		}
		closeBox()
	}}, nil
}

// childBox is the box of an isolated sub-agent working in the copy dir
// (which is in the session's private directory): the session's sandbox
// derived for the copy as its workspace and a temporary directory of the
// child's own beside it, so that the child's commands can write neither
// the parent's workspace nor anything Truss keeps, nor rename the copy
// itself; its processes count against the session's limits. In a task
// environment the copy has a container of its own instead (envShellIn)
// and the box is the session's.
func (w *workspace) childBox(dir string) (box, func(), error) {
	if w.envs != nil {
		return w.box(), func() {}, nil
	}
	tmp, err := os.MkdirTemp(w.priv, "agent-tmp-")
	if err != nil {
		return box{}, nil, err
	}
	p := w.sandbox.Plan().Policy
	// The parent's workspace is out of the child's reach: no writable root
	// of the session's that holds it (an --add-dir above it) carries over,
	// and what the session keeps read-only (the workspace's .git and
	// .truss, the trust store) stays so.
	var writable []string
	root := resolveExisting(w.root)
	for _, d := range p.Writable {
		if rd := resolveExisting(d); !within(root, rd) && !within(rd, root) {
			writable = append(writable, d)
		}
	}
	p.Workspace, p.TempDir, p.Writable = dir, tmp, writable
	// The copy is in the private directory, which the session's commands
	// do not see: the child's must see (and write) their copy.
	p.Hidden = slices.DeleteFunc(slices.Clone(p.Hidden), func(h string) bool { return h == w.priv })
	p.Protected = append(append(sandbox.GitPaths(dir), config.Protected(dir)...), p.Protected...)
	sb, err := w.sandbox.Derive(p)
	if err != nil {
		hostfs.RemoveAll(tmp)
		return box{}, nil, fmt.Errorf("the isolated sub-agent's sandbox: %w", err)
	}
	return box{sb, tmp}, func() {
		sb.Close()
		hostfs.RemoveAll(tmp)
	}, nil
}

// dataDir is Truss's data directory: $TRUSS_HOME, else
// $XDG_DATA_HOME/truss, else ~/.local/share/truss; "" without a home.
func dataDir() string {
	if base := os.Getenv("TRUSS_HOME"); base != "" {
		return base
	}
	d := os.Getenv("XDG_DATA_HOME")
	if d == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		d = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(d, "truss")
}

// defaultMemoryDir is the project's memory directory under the user's data
// directory: one per workspace, named after it.
func defaultMemoryDir(root string) (string, error) {
	base := dataDir()
	if base == "" {
		return "", errors.New("no memory directory: set --memory-dir or TRUSS_HOME (no home directory)")
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(base, "memories", filepath.Base(root)+"-"+hex.EncodeToString(sum[:4])), nil
}

// close releases everything the workspace opened.
func (w *workspace) close() {
	if w.shell != nil {
		w.shell.Close()
	}
	w.closeEnv()
	w.ws.Close()
	if w.memory != nil {
		w.memory.Close()
	}
	if w.sandbox != nil {
		w.sandbox.Close()
	}
	if w.tmp != "" {
		hostfs.RemoveAll(w.tmp)
	}
	if w.priv != "" {
		hostfs.RemoveAll(w.priv)
	}
}

// enforced describes the sandbox actually enforced.
func (w *workspace) enforced() string {
	if w.envs != nil {
		return w.envEnforced()
	}
	return w.sandbox.Plan().Enforced()
}

// PlanSandbox decides the sandbox a session on the workspace root would
// get on this host, with tmp as its temporary directory (truss sandbox
// check): the plan (nil when the host cannot enforce it, with the reason)
// and the commands' caches. The mode and network the plan resolved are in
// its Policy.
func PlanSandbox(root, tmp string, so SandboxOptions) (*sandbox.Plan, *toolcache.Caches, error) {
	cfg, err := config.Load(root)
	if err != nil {
		return nil, nil, err
	}
	s := &Session{opts: Options{Sandbox: so}}
	return s.plan(root, tmp, cfg)
}

// CheckAgents parses the agent definitions of a loaded configuration (the
// bytes its trust decision was made on): a definition that does not parse,
// or two agents with one name, are an error.
func CheckAgents(cfg *config.Config) error {
	files := make([]subagent.Source, len(cfg.Agents))
	for i, f := range cfg.Agents {
		files[i] = subagent.Source{Path: f.Path, Data: f.Data}
	}
	_, err := subagent.ParseDefinitions(files)
	return err
}

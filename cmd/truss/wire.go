package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trussdev/truss/examples"
	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	anthropicprov "github.com/trussdev/truss/internal/provider/anthropic"
	"github.com/trussdev/truss/internal/provider/chatcompat"
	"github.com/trussdev/truss/internal/provider/ollama"
	openaiprov "github.com/trussdev/truss/internal/provider/openai"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/subagent"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/anthropic"
	"github.com/trussdev/truss/internal/surface/codex"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/surface/openai"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/memory"
	"github.com/trussdev/truss/internal/tool/patch"
	"github.com/trussdev/truss/internal/tool/shell"
	"github.com/trussdev/truss/internal/toolcache"
	"github.com/trussdev/truss/internal/trust"
	"github.com/trussdev/truss/internal/validate"
)

// registry lists the surfaces this build offers.
func registry() surface.Registry {
	return surface.Registry{
		generic.Name: func(surface.Profile) []surface.Binding {
			return append(generic.Bindings(), anthropic.MemoryFunction{})
		},
		anthropic.Name: anthropic.Bindings,
		openai.Name:    openai.Bindings,
		codex.Name:     codex.Bindings,
	}
}

// typedSurfaces maps each typed surface to the only API dialect that can
// carry its tools.
var typedSurfaces = map[string]string{anthropic.Name: "anthropic", openai.Name: openaiprov.Dialect, codex.Name: openaiprov.Dialect}

// providerFlags select a provider and a model.
type providerFlags struct {
	provider    string
	model       string
	surface     string
	script      string // sim: the script file, or demoScript
	simDialect  string // sim: which dialect the in-process server speaks
	serverTools multi
	simRoot     string // sim: the workspace the simulated model names files in
	stateful    bool   // responses: chain turns with previous_response_id
	// settings are the session's model settings, given to the adapter;
	// an Ollama adapter fills in the context the server reports.
	settings provider.Settings
}

func (p *providerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.provider, "provider", "", "model provider: anthropic, ollama, chat, openai or sim (default: from the environment)")
	fs.StringVar(&p.model, "model", "", "model name (default: $TRUSS_MODEL)")
	fs.StringVar(&p.surface, "surface", "auto", "tool surface: auto picks the model's trained surface; generic forces Truss's function tools")
	fs.StringVar(&p.script, "script", "", "with --provider sim: the script the simulated model plays (docs/simulator.md)")
	fs.StringVar(&p.simDialect, "sim-dialect", "anthropic", "with --provider sim: the dialect it speaks (anthropic, responses, chat or ollama)")
	fs.BoolVar(&p.stateful, "stateful", false, "with the Responses API: chain turns with previous_response_id (the server stores them) instead of replaying the conversation")
	fs.Var(&p.serverTools, "server-tool", "enable a provider-executed tool (anthropic: web_search, web_fetch, code_execution); recorded as unverified (repeatable)")
}

// demoScript names the bundled demo fix as a sim script (a script file's
// path is absolute once resolved, so the two cannot be confused).
const demoScript = "demo"

// scriptPath is the sim script as a session records it: demoScript, or
// the file's absolute path.
func (p *providerFlags) scriptPath() string {
	if p.script == "" || p.script == demoScript {
		return p.script
	}
	abs, err := filepath.Abs(p.script)
	if err != nil {
		return p.script
	}
	return abs
}

// resolve fills in the provider and model from the environment.
func (p *providerFlags) resolve() error {
	if p.provider == "sim" && p.script == "" {
		return usagef("--provider sim needs --script FILE, the steps the simulated model plays (docs/simulator.md); `truss demo` plays the bundled fix")
	}
	if p.provider == "" {
		switch {
		case os.Getenv("OPENAI_BASE_URL") != "":
			p.provider = "chat"
		case os.Getenv("OPENAI_API_KEY") != "":
			p.provider = "openai"
		case os.Getenv("OLLAMA_HOST") != "":
			p.provider = "ollama"
		case os.Getenv("ANTHROPIC_API_KEY") != "":
			p.provider = "anthropic"
		default:
			return usagef("no model provider configured: set OPENAI_BASE_URL (an OpenAI-compatible server), OPENAI_API_KEY (OpenAI), OLLAMA_HOST (Ollama) or ANTHROPIC_API_KEY (Anthropic; ANTHROPIC_BASE_URL optional), and TRUSS_MODEL or --model; or pass --provider; `truss demo` needs none")
		}
	}
	if p.model == "" {
		p.model = os.Getenv("TRUSS_MODEL")
	}
	if p.model == "" {
		switch p.provider {
		case "sim":
			switch p.simDialect {
			case "anthropic":
				p.model = "sim-claude"
			case "responses":
				p.model = "sim-gpt"
			default:
				p.model = "sim-coder"
			}
		case "anthropic":
			p.model = "claude-sonnet-4-5"
		case "openai":
			p.model = "gpt-5.2"
		default:
			return usagef("no model given for provider %s: pass --model or set TRUSS_MODEL", p.provider)
		}
	}
	return nil
}

// newProvider builds the adapter. For "sim" it starts the simulated model on
// a loopback port for the life of ctx.
func (p *providerFlags) newProvider(ctx context.Context, retry provider.RetryPolicy) (provider.Provider, error) {
	switch p.provider {
	case "ollama":
		return p.ollama(ctx, ollama.HostURL(os.Getenv("OLLAMA_HOST")), retry), nil
	case "chat", "openai-compatible":
		base := os.Getenv("OPENAI_BASE_URL")
		if base == "" {
			return nil, usagef("provider chat needs OPENAI_BASE_URL, the server's /v1 URL (for example http://127.0.0.1:8000/v1)")
		}
		return chatcompat.New(chatcompat.Config{BaseURL: base, APIKey: os.Getenv("OPENAI_API_KEY"), Retry: retry, ReasoningEffort: p.settings.ReasoningEffort}), nil
	case "openai":
		key := os.Getenv("OPENAI_API_KEY")
		if key == "" {
			return nil, usagef("provider openai needs OPENAI_API_KEY")
		}
		return openaiprov.New(p.responsesConfig(os.Getenv("OPENAI_BASE_URL"), key, retry)), nil
	case "anthropic":
		key := os.Getenv("ANTHROPIC_API_KEY")
		if key == "" {
			return nil, usagef("provider anthropic needs ANTHROPIC_API_KEY")
		}
		return anthropicprov.New(anthropicprov.Config{BaseURL: os.Getenv("ANTHROPIC_BASE_URL"), APIKey: key, Retry: retry, ServerTools: p.serverTools,
			ThinkingBudget: int64(p.settings.ThinkingTokens)}), nil
	case "sim":
		script := examples.DemoScript
		if p.script != demoScript {
			b, err := os.ReadFile(p.script)
			if err != nil {
				return nil, usagef("--script: %v", err)
			}
			script = b
		}
		s, err := sim.ParseScript(script)
		if err != nil {
			return nil, usagef("%v", err)
		}
		srv := sim.New(s)
		srv.Root = p.simRoot
		base, err := srv.Listen(ctx)
		if err != nil {
			return nil, err
		}
		switch p.simDialect {
		case "anthropic":
			return anthropicprov.New(anthropicprov.Config{BaseURL: base, APIKey: "sim", Retry: retry, ServerTools: p.serverTools,
				ThinkingBudget: int64(p.settings.ThinkingTokens)}), nil
		case "responses":
			return openaiprov.New(p.responsesConfig(base+"/v1", "sim", retry)), nil
		case "chat":
			return chatcompat.New(chatcompat.Config{BaseURL: base + "/v1", Retry: retry, ReasoningEffort: p.settings.ReasoningEffort}), nil
		case "ollama":
			return p.ollama(ctx, base, retry), nil
		}
		return nil, usagef("--sim-dialect must be anthropic, responses, chat or ollama, not %q", p.simDialect)
	}
	return nil, usagef("unknown provider %q: choose ollama, chat, openai or sim", p.provider)
}

// responsesConfig configures the Responses adapter with the settings.
func (p *providerFlags) responsesConfig(base, key string, retry provider.RetryPolicy) openaiprov.Config {
	return openaiprov.Config{BaseURL: base, APIKey: key, Retry: retry, Stateful: p.stateful,
		ReasoningEffort: p.settings.ReasoningEffort, ReasoningSummary: p.settings.ReasoningSummary, CacheKey: p.settings.CacheKey}
}

// ollama returns the Ollama adapter. Without a context from the flags or
// the profile it asks the server what the model supports (at most
// surface.MaxNumCtx), so that the first request is not cut to Ollama's
// small default.
func (p *providerFlags) ollama(ctx context.Context, host string, retry provider.RetryPolicy) *ollama.Client {
	c := &ollama.Client{Host: host, Retry: retry}
	if p.settings.ContextTokens == 0 {
		if n, err := c.ContextLength(ctx, p.model); err == nil {
			p.settings.ContextTokens = min(n, surface.MaxNumCtx)
		}
	}
	c.NumCtx = p.settings.ContextTokens
	return c
}

// contextLimit is the context window the server gives a request: the one
// sent (num_ctx), Ollama's own default when none is, else the model's.
func (p *providerFlags) contextLimit(prof surface.Profile) int64 {
	switch {
	case p.settings.ContextTokens > 0:
		return int64(p.settings.ContextTokens)
	case p.dialect() == "ollama":
		return ollama.DefaultNumCtx
	}
	return int64(prof.ContextWindow)
}

// dialect is the API dialect the provider speaks.
func (p *providerFlags) dialect() string {
	switch p.provider {
	case "sim":
		return p.simDialect
	case "openai":
		return openaiprov.Dialect
	}
	return p.provider
}

// pickSurface resolves --surface for the provider and model.
func (p *providerFlags) pickSurface() (*surface.Set, surface.Profile, error) {
	dialect := p.dialect()
	prof := surface.DefaultProfiles().Lookup(dialect, p.model)
	if d, typed := typedSurfaces[prof.Surface]; typed && d != dialect {
		prof.Surface = generic.Name // a typed surface's tools exist only in its own API
	}
	reg := registry()
	name, err := reg.Choose(p.surface, prof)
	if err != nil {
		return nil, prof, usageError{err.Error()}
	}
	if d, typed := typedSurfaces[name]; typed && d != dialect {
		api := map[string]string{"anthropic": "the Anthropic Messages API", openaiprov.Dialect: "OpenAI's Responses API"}[d]
		return nil, prof, usagef("the %s surface needs %s; provider %s takes --surface generic", name, api, p.provider)
	}
	set, err := reg.Build(name, prof)
	return set, prof, err
}

// workspaceFlags configure the workspace and its tools.
type workspaceFlags struct {
	root      string
	ro, rw    multi
	timeout   time.Duration
	allowEnv  multi
	memoryDir string
	sandbox   string // --sandbox
	network   string // --network
	fallback  string // --sandbox-fallback
	memory    string // --memory
	disk      string // --disk-budget
	// cache is where the sandboxed commands keep their build and package
	// caches, as plan decided (nil with --sandbox full); cacheName, when
	// set, names the workspace's caches instead of its path.
	cache     *toolcache.Caches
	cacheName string
}

func (w *workspaceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&w.root, "root", ".", "workspace root")
	fs.Var(&w.ro, "add-dir-ro", "an extra read-only root (repeatable)")
	fs.Var(&w.rw, "add-dir", "an extra read-write root (repeatable)")
	fs.DurationVar(&w.timeout, "timeout", shell.DefaultTimeout, "per-command timeout of the shell")
	fs.Var(&w.allowEnv, "allow-env", "pass this variable to commands although Truss withholds it (ANTHROPIC_*, OPENAI_*, OLLAMA_*, TRUSS_*, or a name containing KEY, SECRET or TOKEN) (repeatable)")
	fs.StringVar(&w.memoryDir, "memory-dir", "", "the memory tool's directory (default: one per project under the user's data directory)")
	w.registerSandbox(fs)
}

// registerSandbox registers the sandbox flags.
func (w *workspaceFlags) registerSandbox(fs *flag.FlagSet) {
	fs.StringVar(&w.sandbox, "sandbox", "", "what commands may write: read-only, workspace-write (the workspace, --add-dir roots, build caches; the default) or full")
	fs.StringVar(&w.network, "network", "", "network access for commands: off (Unix sockets only; the default) or on")
	fs.StringVar(&w.fallback, "sandbox-fallback", "", "accept a weaker mode when this host cannot enforce the sandbox: landlock-only or none")
	fs.StringVar(&w.memory, "memory", "", "memory limit of the session's commands together, e.g. 2G (default 4G or half the RAM; none for no limit)")
	fs.StringVar(&w.disk, "disk-budget", "", "bytes the session's commands may write to disk, e.g. 10G (default half the free space, at most 64G; none for no budget)")
}

// plan decides the sandbox of a workspace on this host: the flags, else
// the project's configuration, else workspace-write with the network off.
func (w *workspaceFlags) plan(root, tmp string, cfg *config.Config) (*sandbox.Plan, error) {
	if w.sandbox == "" {
		w.sandbox = cmp.Or(cfg.Sandbox.Mode, string(sandbox.WorkspaceWrite))
	}
	if w.network == "" {
		w.network = "off"
		if cfg.Sandbox.Network != nil && *cfg.Sandbox.Network {
			w.network = "on"
		}
	}
	mode, err := sandbox.ParseMode(w.sandbox)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	fb, err := sandbox.ParseFallback(w.fallback)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	var network bool
	switch w.network {
	case "on":
		network = true
	case "off":
	default:
		return nil, usagef("--network must be on or off, not %q", w.network)
	}
	p := sandbox.DefaultPolicy(root, tmp)
	p.Mode, p.Network = mode, network
	for _, f := range []struct {
		flag, v string
		to      *int64
	}{{"--memory", w.memory, &p.Limits.Memory}, {"--disk-budget", w.disk, &p.Limits.DiskBudget}} {
		if f.v != "" {
			n, err := sandbox.ParseSize(f.v)
			if err != nil {
				return nil, usagef("%s: %v", f.flag, err)
			}
			*f.to = n
		}
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
	// Commands write caches of their own, never the host's.
	w.cache = nil
	if mode != sandbox.FullAccess {
		dir := filepath.Join(tmp, "caches") // read-only: the session's own
		if d, err := toolcache.DirFor(cmp.Or(w.cacheName, root)); err == nil && mode == sandbox.WorkspaceWrite {
			dir = d
		}
		w.cache = toolcache.For(dir, network)
		p.Writable = append([]string(nil), w.cache.Writable...)
	}
	// The signing key (a command that read it could forge a ledger) and
	// the saved sessions are hidden from every sandboxed process.
	if dir, err := ledger.KeyDir(); err == nil {
		p.Hidden = append(p.Hidden, filepath.Join(dir, "ledger.key"))
	}
	if dir, err := session.DefaultDir(); err == nil && !within(root, dir) {
		p.Hidden = append(p.Hidden, dir)
	}
	p.Writable = append(p.Writable, cfg.Sandbox.Writable...)
	for _, d := range w.rw {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		p.Writable = append(p.Writable, abs)
	}
	return sandbox.MakePlan(p, sandbox.Probe(), fb)
}

// tools is the executors of one session.
type tools struct {
	ws      *fs.Workspace
	shell   *shell.Session
	memory  *memory.Store
	sandbox *sandbox.Sandbox
	tmp     string // the session's temporary directory
	mux     tool.Mux

	cfg      *config.Config // the project's .truss/config.toml
	cacheEnv []string       // the sandboxed commands' cache variables
	timeout  time.Duration
	allowEnv []string
	undo     bool // the editor keeps an edit history

	// shared are the routes sub-agents share with the top agent (memory,
	// MCP); runner is the validation runner, if any.
	shared map[tool.Op]tool.Executor
	runner *validate.Runner
}

// handleShared routes op to e for the top agent and every sub-agent.
func (t *tools) handleShared(op tool.Op, e tool.Executor) {
	if t.shared == nil {
		t.shared = map[tool.Op]tool.Executor{}
	}
	t.shared[op] = e
	t.mux.Handle(op, e)
}

// newShell starts a shell session in the workspace, in the sandbox, keeping
// its own files in own. The model's shell is one; each validation run gets
// a fresh one.
func (t *tools) newShell(own string) *shell.Session { return t.newShellIn(t.ws.Dir(), own) }

// newShellIn starts a shell session in dir (a sub-agent's workspace).
func (t *tools) newShellIn(dir, own string) *shell.Session {
	return shell.New(shell.Config{Dir: dir, Timeout: t.timeout, AllowEnv: t.allowEnv,
		Env: os.Environ(), SetEnv: append(append([]string{"TMPDIR=" + t.tmp}, t.cacheEnv...), t.cfg.Validate.EnvList()...),
		TmpDir: own, Launcher: t.sandbox, Guard: t.sandbox.Guard})
}

// validationShell is a fresh shell for one validation run.
func (t *tools) validationShell() validate.Shell { return t.validationShellIn(t.ws.Dir()) }

// validationShellIn is a fresh shell for one validation run in dir.
func (t *tools) validationShellIn(dir string) validate.Shell { return t.ownedShellIn(dir, "validate-") }

// ownedShellIn starts a shell in dir that keeps its files in a directory
// of its own under the session's, removed with it.
func (t *tools) ownedShellIn(dir, prefix string) *ownedShell {
	own, err := os.MkdirTemp(t.tmp, prefix)
	if err != nil {
		own = "" // the session makes its own
	}
	return &ownedShell{Session: t.newShellIn(dir, own), dir: own}
}

// ownedShell is a shell whose directory goes with it.
type ownedShell struct {
	*shell.Session
	dir string
}

func (s *ownedShell) Close() error {
	err := s.Session.Close()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
	return err
}

// open opens the workspace and its executors; the memory store only when
// the tool set has a memory tool, and edit history when it can undo.
func (w *workspaceFlags) open(set *surface.Set) (*tools, error) {
	var extra []fs.RootSpec
	for _, d := range w.ro {
		extra = append(extra, fs.RootSpec{Path: d, ReadOnly: true})
	}
	for _, d := range w.rw {
		extra = append(extra, fs.RootSpec{Path: d})
	}
	ws, err := fs.Open(w.root, extra...)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "truss-session-")
	if err != nil {
		ws.Close()
		return nil, err
	}
	root, _ := filepath.Abs(ws.Dir())
	cfg, err := config.Load(root)
	var pl *sandbox.Plan
	if err == nil {
		pl, err = w.plan(root, tmp, cfg)
	}
	if err == nil && w.cache != nil {
		err = w.cache.Make()
	}
	var sb *sandbox.Sandbox
	if err == nil {
		sb, err = sandbox.New(pl)
	}
	if err != nil {
		ws.Close()
		os.RemoveAll(tmp)
		return nil, err
	}
	t, err := w.finish(set, ws, tmp, sb, cfg)
	if err != nil {
		sb.Close()
	}
	return t, err
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// finish builds the executors on an open workspace, with the session's
// temporary directory and sandbox.
func (w *workspaceFlags) finish(set *surface.Set, ws *fs.Workspace, tmp string, sb *sandbox.Sandbox, cfg *config.Config) (*tools, error) {
	var err error
	t := &tools{ws: ws, tmp: tmp, sandbox: sb, cfg: cfg, timeout: w.timeout, allowEnv: w.allowEnv}
	if w.cache != nil {
		t.cacheEnv = w.cache.Env
	}
	t.shell = t.newShell(t.tmp)
	_, t.undo = set.Lookup("str_replace_editor")
	t.route(&t.mux, ws, t.shell)
	if _, ok := set.Lookup("memory"); ok {
		dir := w.memoryDir
		if dir == "" {
			if dir, err = defaultMemoryDir(ws.Dir()); err != nil {
				t.Close()
				return nil, err
			}
		}
		if t.memory, err = memory.Open(dir); err != nil {
			t.Close()
			return nil, err
		}
		for _, op := range memory.Ops {
			t.handleShared(op, t.memory)
		}
	}
	return t, nil
}

// route routes the file, patch and shell operations of mux to executors on
// ws and sh.
func (t *tools) route(mux *tool.Mux, ws *fs.Workspace, sh *shell.Session) {
	fx := &fs.Executor{W: ws, Opts: fs.Options{History: t.undo}}
	mux.HandleAll(fs.Ops, fx)
	mux.HandleAll(shell.Ops, sh)
	mux.HandleAll(patch.Ops, patch.NewExecutor(fx))
}

// childEnv returns the executors of a sub-agent working in dir: the file
// tools on dir (the workspace itself, or an isolated copy), a shell of its
// own in the same sandbox, and the session's memory, validation and MCP
// tools (validation runs in dir).
func (t *tools) childEnv(dir string) (*subagent.Env, error) {
	ws := t.ws
	var own *fs.Workspace
	if dir != t.ws.Dir() {
		var err error
		if own, err = fs.Open(dir); err != nil {
			return nil, err
		}
		ws = own
	}
	sh := t.ownedShellIn(dir, "agent-")
	mux := &tool.Mux{}
	t.route(mux, ws, sh.Session)
	for op, e := range t.shared {
		mux.Handle(op, e)
	}
	if t.runner != nil {
		r := *t.runner
		r.NewShell = func() validate.Shell { return t.validationShellIn(dir) }
		mux.Handle(tool.OpValidate, &r)
	}
	return &subagent.Env{Exec: mux, Close: func() {
		sh.Close()
		if own != nil {
			own.Close()
		}
	}}, nil
}

// defaultMemoryDir is the project's memory directory under the user's data
// directory: one per workspace, named after it.
func defaultMemoryDir(root string) (string, error) {
	base := os.Getenv("TRUSS_HOME")
	if base == "" {
		d := os.Getenv("XDG_DATA_HOME")
		if d == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("no memory directory: set --memory-dir or TRUSS_HOME: %w", err)
			}
			d = filepath.Join(home, ".local", "share")
		}
		base = filepath.Join(d, "truss")
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(base, "memories", filepath.Base(root)+"-"+hex.EncodeToString(sum[:4])), nil
}

func (t *tools) Close() {
	t.shell.Close()
	t.ws.Close()
	if t.memory != nil {
		t.memory.Close()
	}
	if t.sandbox != nil {
		t.sandbox.Close()
	}
	os.RemoveAll(t.tmp)
}

// enforced describes the sandbox actually enforced.
func (t *tools) enforced() string { return t.sandbox.Plan().Enforced() }

// declarer is a provider that can show its wire form of tool declarations.
type declarer interface {
	DeclareTools([]model.ToolSpec) (json.RawMessage, error)
}

func cmdTools(args []string, stdout, stderr io.Writer) error {
	fset := newFlagSet("tools", stderr)
	var p providerFlags
	p.register(fset)
	var mf mcpFlags
	mf.register(fset)
	var sf spawnFlags
	sf.register(fset)
	if err := parse(fset, args); err != nil {
		return err
	}
	if err := p.resolve(); err != nil {
		return err
	}
	set, prof, err := p.pickSurface()
	if err != nil {
		return err
	}
	// The tools a run in this directory adds: its MCP servers' and spawn.
	cfg, err := config.Load(".")
	if err != nil {
		return err
	}
	warnTrust(stderr, cfg)
	if err := mf.addTools(set, cfg, p.dialect(), stderr); err != nil {
		return err
	}
	if _, err := sf.offer(set, cfg); err != nil {
		return err
	}
	var d declarer
	switch p.dialect() {
	case "anthropic":
		d = anthropicprov.New(anthropicprov.Config{ServerTools: p.serverTools})
	case "ollama":
		d = &ollama.Client{}
	case openaiprov.Dialect:
		d = openaiprov.New(openaiprov.Config{})
	case "chat", "openai-compatible":
		d = chatcompat.New(chatcompat.Config{BaseURL: "http://127.0.0.1/v1"})
	default:
		return usagef("provider %s is not in this build", p.provider)
	}
	raw, err := d.DeclareTools(set.Specs())
	if err != nil {
		return err
	}
	// The declarations are printed as the request carries them, key order
	// included; only indentation is added.
	out, err := json.Marshal(struct {
		Provider     string          `json:"provider"`
		Model        string          `json:"model"`
		Surface      string          `json:"surface"`
		ProfileGuess bool            `json:"profile_guess"`
		Tools        json.RawMessage `json:"tools"`
	}{p.provider, p.model, set.Surface, prof.Guess, raw})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err = stdout.Write(buf.Bytes())
	return err
}

// warnTrust tells the user, once, which settings of an untrusted project
// configuration are not obeyed.
func warnTrust(w io.Writer, cfg *config.Config) {
	if msg := cfg.Trust.Warning(); msg != "" {
		fmt.Fprintf(w, "truss: %s\n", msg)
	}
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ") }

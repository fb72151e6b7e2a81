package harness

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/mcp/client"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
)

// MCPConfigs returns the MCP servers of a loaded configuration and the
// options, sorted by name; a server of the options replaces a configured
// one of the same name.
func MCPConfigs(cfg *config.Config, o MCPOptions) ([]client.ServerConfig, error) {
	if o.Off {
		return nil, nil
	}
	byName := map[string]client.ServerConfig{}
	var user *config.User // read when a server wants a token
	for name, s := range cfg.MCP.Servers {
		if s.Enabled != nil && !*s.Enabled {
			continue
		}
		sc := client.ServerConfig{Name: name, Command: s.Command, Args: s.Args, Dir: s.Cwd, URL: s.URL,
			StartupTimeout: s.StartupTimeoutValue(), ToolTimeout: s.ToolTimeoutValue(), Enabled: s.EnabledTools, Disabled: s.DisabledTools}
		for k, v := range s.Env {
			sc.Env = append(sc.Env, k+"="+v)
		}
		sort.Strings(sc.Env)
		if len(s.Headers) > 0 || s.BearerTokenEnv != "" {
			sc.Headers = map[string]string{}
			for k, v := range s.Headers {
				sc.Headers[k] = v
			}
			if s.BearerTokenEnv != "" {
				if err := tokenEnvAllowed(name, s.BearerTokenEnv, &user); err != nil {
					return nil, err
				}
				tok := os.Getenv(s.BearerTokenEnv)
				if tok == "" {
					return nil, fmt.Errorf("%s: [mcp.servers.%s] bearer_token_env names %s, which is not set", config.Path, name, s.BearerTokenEnv)
				}
				sc.Headers["Authorization"] = "Bearer " + tok
			}
		}
		byName[name] = sc
	}
	for _, sc := range o.Servers {
		byName[sc.Name] = sc
	}
	var out []client.ServerConfig
	for _, sc := range byName {
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// tokenEnvAllowed refuses a project's server the variable name as its
// bearer token unless the user's configuration lets it have it
// ([mcp] token_env), and always when it is a model provider's key: the
// project's configuration names the server's URL, so it could otherwise
// send any of Truss's variables anywhere. *user is the user's
// configuration, read on first use.
func tokenEnvAllowed(server, name string, user **config.User) error {
	if *user == nil {
		s := &Session{}
		if err := s.loadUser(); err != nil {
			return err
		}
		*user = cmp.Or(s.user, &config.User{})
	}
	if slices.ContainsFunc(withheldEnv(*user), func(g string) bool { ok, _ := path.Match(g, name); return ok || g == name }) {
		return &ConfigError{Msg: fmt.Sprintf("%s: [mcp.servers.%s] bearer_token_env names %s, a model provider's key, which Truss sends to its provider only", config.Path, server, name)}
	}
	if !(*user).MCPTokenAllowed(name) {
		return &ConfigError{Msg: fmt.Sprintf("%s: [mcp.servers.%s] bearer_token_env names %s, which the user's configuration does not let a project's server have: a project's configuration names the server's URL; to send it, add token_env = [%q] under [mcp] in %s in Truss's directory (~/.config/truss or $TRUSS_HOME)", config.Path, server, name, name, config.UserFile)}
	}
	return nil
}

// mcpSession is the MCP servers of one session.
type mcpSession struct {
	m     *client.Manager
	set   *surface.Set
	warn  func(string)
	boxes []*sandbox.Sandbox // the confined servers' sandboxes

	mu   sync.Mutex
	live bool // past the first turn's wait: ready servers add their tools at once
}

// warnWriter turns the lines written to it ("truss: mcp: ...") into
// warnings.
type warnWriter struct {
	mu   sync.Mutex
	buf  []byte
	warn func(string)
}

func (w *warnWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := strings.TrimPrefix(string(w.buf[:i]), "truss: ")
		w.buf = w.buf[i+1:]
		w.warn(line)
	}
}

// startMCP starts the configured servers (at once, each on its own
// goroutine) and routes MCP calls to them; nil when none is configured.
func (s *Session) startMCP(ctx context.Context, w *workspace, set *surface.Set) (*mcpSession, error) {
	cfgs, err := MCPConfigs(w.cfg, s.opts.MCP)
	if err != nil || len(cfgs) == 0 {
		return nil, err
	}
	ms := &mcpSession{set: set, warn: s.warn}
	if err := ms.confine(w, cfgs, s.opts.MCP); err != nil {
		ms.closeBoxes()
		return nil, err
	}
	ms.m = client.Start(ctx, cfgs, client.Options{Client: "truss", Version: s.opts.Version, Dialect: s.dialect,
		Log: &warnWriter{warn: s.warn}, OnReady: ms.ready, Path: w.hostPath})
	w.handleShared(tool.OpMCP, ms.m)
	return ms, nil
}

// confine makes each stdio server of the project's configuration run in a
// sandbox derived from the session's: its program, and what it loads from
// the workspace (a script, node_modules, a Python module), are the
// commands' to write, so it may do what a command may and no more. It
// has the network when its table says network = true, else when the
// session's commands do. A server given with --mcp is the user's own
// choice for one session and runs as Truss does, as does every server
// when the session has no sandbox.
func (ms *mcpSession) confine(w *workspace, cfgs []client.ServerConfig, o MCPOptions) error {
	boxes, err := confineServers(w.sandbox, w.cfg, cfgs, o, append([]string{"TMPDIR=" + w.tmp}, w.cacheEnv...))
	ms.boxes = boxes
	return err
}

// confineServers derives from sb a sandbox for each stdio server of cfg
// in cfgs (not for those of o: --mcp) and sets it as the server's
// Launcher; env (the sandbox's TMPDIR and caches, which the server may
// write where Truss's own may not be) goes before the server's configured
// environment. It returns the sandboxes to close once the servers ended.
func confineServers(sb *sandbox.Sandbox, cfg *config.Config, cfgs []client.ServerConfig, o MCPOptions, env []string) ([]*sandbox.Sandbox, error) {
	if sb == nil || !sb.Plan().Active() {
		return nil, nil
	}
	var boxes []*sandbox.Sandbox
	for i := range cfgs {
		c := &cfgs[i]
		if c.Command == "" || slices.ContainsFunc(o.Servers, func(f client.ServerConfig) bool { return f.Name == c.Name }) {
			continue
		}
		p := sb.Plan().Policy
		if n := cfg.MCP.Servers[c.Name].Network; n != nil {
			p.Network = *n
		}
		d, err := sb.Derive(p)
		if err != nil {
			return boxes, fmt.Errorf("mcp: server %s: its sandbox: %w", c.Name, err)
		}
		boxes = append(boxes, d)
		c.Launcher = d
		c.Env = append(slices.Clone(env), c.Env...)
	}
	return boxes, nil
}

// confineAlone confines the project's stdio servers of cfgs (setting
// their Launcher, as confineServers does) for servers started without a
// session (truss tools, truss mcp list and call): in the sandbox a session
// in root would have, with the PATH their programs are found in. done
// releases the sandboxes once the servers ended; it is never nil.
func (s *Session) confineAlone(root string, cfg *config.Config, cfgs []client.ServerConfig, o MCPOptions) (path string, done func(), err error) {
	done = func() {}
	if !slices.ContainsFunc(cfgs, func(c client.ServerConfig) bool { _, ok := cfg.MCP.Servers[c.Name]; return ok && c.Command != "" }) {
		return "", done, nil
	}
	if s.user == nil {
		if err := s.loadUser(); err != nil {
			return "", done, err
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", done, err
	}
	// As a session would: a workspace that holds Truss's own state is
	// refused, since the servers write it.
	if err := s.stateOutside(abs, nil); err != nil {
		return "", done, err
	}
	tmp, err := os.MkdirTemp("", "truss-mcp-")
	if err != nil {
		return "", done, err
	}
	var sb *sandbox.Sandbox
	pl, caches, err := s.plan(abs, tmp, cfg)
	if err == nil && caches != nil {
		err = caches.Make()
	}
	if err == nil {
		sb, err = sandbox.New(pl)
	}
	if err != nil {
		hostfs.RemoveAll(tmp)
		return "", done, fmt.Errorf("mcp: the servers' sandbox: %w", err)
	}
	env := []string{"TMPDIR=" + tmp}
	if caches != nil {
		env = append(env, caches.Env...)
	}
	boxes, err := confineServers(sb, cfg, cfgs, o, env)
	done = func() {
		for _, b := range boxes {
			b.Close()
		}
		sb.Close()
		hostfs.RemoveAll(tmp)
	}
	if err != nil {
		done()
		return "", func() {}, err
	}
	return hostfs.SafePath(os.Getenv("PATH"), append([]string{pl.Policy.Workspace, pl.Policy.TempDir}, pl.Policy.Writable...)), done, nil
}

// closeBoxes releases the servers' sandboxes, once their servers ended.
func (ms *mcpSession) closeBoxes() {
	for _, b := range ms.boxes {
		b.Close()
	}
	ms.boxes = nil
}

// ready adds a server's tools once the session is live.
func (ms *mcpSession) ready(srv *client.Server) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if !ms.live {
		return
	}
	if n := ms.add(srv); n > 0 {
		ms.warn(fmt.Sprintf("mcp: server %s is ready; %d tools of it are offered from the next turn", srv.Name(), n))
	}
}

// add offers the server's tools that are not offered yet (a tool it no
// longer lists stays declared; a call of it gets the server's error).
func (ms *mcpSession) add(srv *client.Server) int {
	n := 0
	for _, b := range ms.m.Bindings(srv) {
		if _, have := ms.set.Lookup(b.Spec().Name); have {
			continue
		}
		if err := ms.set.Add(b); err != nil {
			ms.warn(fmt.Sprintf("mcp: server %s: %s; the tool is not offered", srv.Name(), termsafe.String(err.Error())))
			continue
		}
		n++
	}
	return n
}

// wait waits for the servers up to d, then offers the tools of those that
// are ready, in configuration order, and says which are still starting.
func (ms *mcpSession) wait(ctx context.Context, d time.Duration) {
	if ms == nil {
		return
	}
	pending := ms.m.Wait(ctx, d)
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, srv := range ms.m.Servers() {
		if st, _ := srv.State(); st == client.Ready {
			ms.add(srv)
		}
	}
	for _, srv := range pending {
		ms.warn(fmt.Sprintf("mcp: server %s is still starting after %s; its tools will be offered once it is ready", srv.Name(), d))
	}
	ms.live = true
}

// notes tells the model which configured servers are not offering tools
// at the start, and why (for the system prompt, which stays the same for
// the whole session).
func (ms *mcpSession) notes() string {
	if ms == nil {
		return ""
	}
	var lines []string
	for _, srv := range ms.m.Servers() {
		switch st, err := srv.State(); st {
		case client.Starting:
			lines = append(lines, fmt.Sprintf("- The MCP server %s is still starting; its tools (mcp__%s__*) will be offered once it is ready.", srv.Name(), srv.Name()))
		case client.Failed:
			lines = append(lines, fmt.Sprintf("- The MCP server %s failed to start (%v); its tools are not available.", srv.Name(), err))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "\n\n# MCP servers\n\n" + strings.Join(lines, "\n")
}

// summary describes the servers for the ledger: name, state, tool count.
func (ms *mcpSession) summary() string {
	if ms == nil {
		return ""
	}
	var parts []string
	for _, srv := range ms.m.Servers() {
		st, _ := srv.State()
		parts = append(parts, fmt.Sprintf("%s:%s:%d", srv.Name(), st, len(srv.Tools())))
	}
	return strings.Join(parts, ",")
}

func (ms *mcpSession) close() {
	if ms != nil {
		ms.m.Close()
		ms.closeBoxes()
	}
}

// mcpWait returns the first turn's wait: the option, else the
// configuration, else the default.
func mcpWait(o MCPOptions, cfg *config.Config) time.Duration {
	if o.Wait != nil {
		return *o.Wait
	}
	if d, ok := cfg.MCP.StartupWaitValue(); ok {
		return d
	}
	return DefaultMCPWait
}

// MCPServerInfo is one configured MCP server as truss mcp list shows it.
type MCPServerInfo struct {
	Name     string
	State    string
	Err      error
	Protocol string
	Tools    []MCPToolInfo
}

// MCPToolInfo is one tool of an MCP server.
type MCPToolInfo struct {
	Name        string
	OfferedAs   string
	Description string
	InputSchema any
}

// MCPServers are MCP servers started to be looked at or called by hand
// (truss mcp list, truss mcp call), through the client a session uses.
type MCPServers struct {
	// Servers are the servers in configuration order, each started or
	// failed.
	Servers []MCPServerInfo
	mgr     *client.Manager
	done    func() // releases the servers' sandboxes
}

// StartMCP starts the MCP servers the configuration of root and the
// options name (only those in names, when given) and waits until each has
// started or failed. onWarning, when set, gets their diagnostics and an
// untrusted configuration's warning. Close stops them.
func StartMCP(ctx context.Context, root string, o MCPOptions, names []string, version string, onWarning func(string)) (*MCPServers, error) {
	cfg, err := config.Load(root)
	if err != nil {
		return nil, err
	}
	warn := func(string) {}
	if onWarning != nil {
		warn = onWarning
	}
	if msg := cfg.Trust.Warning(); msg != "" {
		warn(msg)
	}
	cfgs, err := MCPConfigs(cfg, o)
	if err != nil {
		return nil, err
	}
	if len(names) > 0 {
		var keep []client.ServerConfig
		for _, c := range cfgs {
			if slices.Contains(names, c.Name) {
				keep = append(keep, c)
			}
		}
		for _, n := range names {
			if !slices.ContainsFunc(keep, func(c client.ServerConfig) bool { return c.Name == n }) {
				return nil, configErrorf("no MCP server named %q is configured (in %s or by --mcp)", n, config.Path)
			}
		}
		cfgs = keep
	}
	if len(cfgs) == 0 {
		return nil, configErrorf("no MCP servers are configured (in %s or by --mcp)", config.Path)
	}
	s := &Session{opts: Options{MCP: o}}
	path, done, err := s.confineAlone(root, cfg, cfgs, o)
	if err != nil {
		return nil, err
	}
	m := &MCPServers{done: done}
	m.mgr = client.Start(ctx, cfgs, client.Options{Client: "truss", Version: version, Log: &warnWriter{warn: warn}, Path: path})
	m.mgr.Wait(ctx, -1)
	for _, srv := range m.mgr.Servers() {
		st, serr := srv.State()
		si := MCPServerInfo{Name: srv.Name(), State: string(st), Err: serr, Protocol: srv.Protocol()}
		for _, t := range srv.Tools() {
			si.Tools = append(si.Tools, MCPToolInfo{Name: t.Name, OfferedAs: client.ToolName(srv.Name(), t.Name), Description: t.Description, InputSchema: t.InputSchema})
		}
		m.Servers = append(m.Servers, si)
	}
	return m, nil
}

// Call calls a server's tool with the arguments object as JSON, as a
// session's mcp.call does.
func (m *MCPServers) Call(ctx context.Context, server, toolName string, args json.RawMessage) tool.Result {
	return m.mgr.Execute(ctx, tool.Call{ID: "cli", Op: tool.OpMCP, Args: &tool.MCPArgs{Server: server, Tool: toolName, Arguments: args}})
}

// Close stops the servers.
func (m *MCPServers) Close() error {
	err := m.mgr.Close()
	m.done()
	return err
}

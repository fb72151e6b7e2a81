package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/ledger"
	mcp "github.com/trussdev/truss/internal/mcp/client"
	mcpserver "github.com/trussdev/truss/internal/mcp/server"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
)

// mcpFlags configure the MCP servers whose tools the model is offered.
type mcpFlags struct {
	servers multi
	wait    optDuration
	noMCP   bool
}

func (m *mcpFlags) register(fs interface {
	Var(flag.Value, string, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.Var(&m.servers, "mcp", "an MCP server: NAME=COMMAND ARGS... (stdio) or NAME=URL (streamable HTTP); adds to .truss/config.toml's [mcp.servers] (repeatable)")
	fs.Var(&m.wait, "mcp-wait", "how long the first turn waits for MCP servers to start, a `duration` (default: [mcp] startup_wait, else 1s); later servers join from the next turn")
	fs.BoolVar(&m.noMCP, "no-mcp", false, "start no MCP servers")
}

// defaultMCPWait is how long the first turn waits for MCP servers.
const defaultMCPWait = time.Second

// configs returns the servers of the configuration and the flags, sorted
// by name; a flag replaces a configured server of the same name.
func (m *mcpFlags) configs(cfg *config.Config) ([]mcp.ServerConfig, error) {
	if m.noMCP {
		return nil, nil
	}
	byName := map[string]mcp.ServerConfig{}
	for name, s := range cfg.MCP.Servers {
		if s.Enabled != nil && !*s.Enabled {
			continue
		}
		sc := mcp.ServerConfig{Name: name, Command: s.Command, Args: s.Args, Dir: s.Cwd, URL: s.URL,
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
				tok := os.Getenv(s.BearerTokenEnv)
				if tok == "" {
					return nil, fmt.Errorf("%s: [mcp.servers.%s] bearer_token_env names %s, which is not set", config.Path, name, s.BearerTokenEnv)
				}
				sc.Headers["Authorization"] = "Bearer " + tok
			}
		}
		byName[name] = sc
	}
	for _, f := range m.servers {
		name, spec, ok := strings.Cut(f, "=")
		if !ok || name == "" || strings.TrimSpace(spec) == "" {
			return nil, usagef("--mcp %q: give NAME=COMMAND ARGS... or NAME=URL", f)
		}
		sc := mcp.ServerConfig{Name: name}
		if strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
			sc.URL = spec
		} else {
			words := strings.Fields(spec)
			sc.Command, sc.Args = words[0], words[1:]
		}
		byName[name] = sc
	}
	var out []mcp.ServerConfig
	for _, sc := range byName {
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// mcpSession is the MCP servers of one session.
type mcpSession struct {
	m   *mcp.Manager
	set *surface.Set
	log io.Writer

	mu   sync.Mutex
	live bool // past the first turn's wait: ready servers add their tools at once
}

// start starts the configured servers (at once, each on its own
// goroutine) and routes MCP calls to them; it returns nil when none is
// configured.
func (m *mcpFlags) start(ctx context.Context, tl *tools, set *surface.Set, dialect string, log io.Writer) (*mcpSession, error) {
	cfgs, err := m.configs(tl.cfg)
	if err != nil || len(cfgs) == 0 {
		return nil, err
	}
	s := &mcpSession{set: set, log: log}
	s.m = mcp.Start(ctx, cfgs, mcp.Options{Client: "truss", Version: version, Dialect: dialect, Log: log, OnReady: s.ready})
	tl.handleShared(tool.OpMCP, s.m)
	return s, nil
}

// ready adds a server's tools once the session is live.
func (s *mcpSession) ready(srv *mcp.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live {
		return
	}
	if n := s.add(srv); n > 0 {
		fmt.Fprintf(s.log, "truss: mcp: server %s is ready; %d tools of it are offered from the next turn\n", srv.Name(), n)
	}
}

// add offers the server's tools that are not offered yet (a tool it no
// longer lists stays declared; a call of it gets the server's error).
func (s *mcpSession) add(srv *mcp.Server) int {
	n := 0
	for _, b := range s.m.Bindings(srv) {
		if _, have := s.set.Lookup(b.Spec().Name); have {
			continue
		}
		if err := s.set.Add(b); err != nil {
			fmt.Fprintf(s.log, "truss: mcp: server %s: %s; the tool is not offered\n", srv.Name(), termsafe.String(err.Error()))
			continue
		}
		n++
	}
	return n
}

// wait waits for the servers up to d, then offers the tools of those that
// are ready, in configuration order, and says which are still starting.
func (s *mcpSession) wait(ctx context.Context, d time.Duration) {
	if s == nil {
		return
	}
	pending := s.m.Wait(ctx, d)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, srv := range s.m.Servers() {
		if st, _ := srv.State(); st == mcp.Ready {
			s.add(srv)
		}
	}
	for _, srv := range pending {
		fmt.Fprintf(s.log, "truss: mcp: server %s is still starting after %s; its tools will be offered once it is ready\n", srv.Name(), d)
	}
	s.live = true
}

// notes tells the model which configured servers are not offering tools
// at the start, and why (for the system prompt, which stays the same for
// the whole session).
func (s *mcpSession) notes() string {
	if s == nil {
		return ""
	}
	var lines []string
	for _, srv := range s.m.Servers() {
		switch st, err := srv.State(); st {
		case mcp.Starting:
			lines = append(lines, fmt.Sprintf("- The MCP server %s is still starting; its tools (mcp__%s__*) will be offered once it is ready.", srv.Name(), srv.Name()))
		case mcp.Failed:
			lines = append(lines, fmt.Sprintf("- The MCP server %s failed to start (%v); its tools are not available.", srv.Name(), err))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "\n\n# MCP servers\n\n" + strings.Join(lines, "\n")
}

// summary describes the servers for the ledger: name, state, tool count.
func (s *mcpSession) summary() string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, srv := range s.m.Servers() {
		st, _ := srv.State()
		parts = append(parts, fmt.Sprintf("%s:%s:%d", srv.Name(), st, len(srv.Tools())))
	}
	return strings.Join(parts, ",")
}

func (s *mcpSession) Close() {
	if s != nil {
		s.m.Close()
	}
}

// waitFor returns the first turn's wait: the flag, else the configuration,
// else the default.
func (m *mcpFlags) waitFor(cfg *config.Config) time.Duration {
	if m.wait.set {
		return m.wait.d
	}
	if d, ok := cfg.MCP.StartupWaitValue(); ok {
		return d
	}
	return defaultMCPWait
}

// cmdMCP runs truss mcp serve: Truss's own tools for any MCP client, on
// stdio or streamable HTTP, with the same executors, workspace confinement,
// sandbox and ledger as a session.
func cmdMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "list" || args[0] == "call") {
		return cmdMCPClient(args, stdout, stderr)
	}
	if len(args) == 0 || args[0] != "serve" {
		return usagef("usage: truss mcp serve [--http ADDR] [--root DIR] [flags] | truss mcp list [SERVER...] | truss mcp call SERVER TOOL [JSON]")
	}
	fset := newFlagSet("mcp serve", stderr)
	var w workspaceFlags
	w.register(fset)
	var v validateFlags
	v.registerChecks(fset)
	addr := fset.String("http", "", "serve streamable HTTP on this address (host:port; port 0 picks a free one, printed at start) instead of stdio")
	stateless := fset.Bool("stateless", false, "with --http: serve statelessly (protocol 2026-07-28 and later; no sessions)")
	tokenEnv := fset.String("token-env", "", "with --http: require this environment variable's value as a bearer token (needed to serve on a non-loopback address)")
	noLedger := fset.Bool("no-ledger", false, "do not record the calls in a signed ledger")
	if err := parse(fset, args[1:]); err != nil {
		return err
	}
	// The file tools' executors serve the calls; no memory store is opened.
	set, err := surface.NewSet(generic.Name, generic.Bindings()...)
	if err != nil {
		return err
	}
	if *tokenEnv != "" && *addr == "" {
		return usagef("--token-env protects --http; a stdio server has no other client than the process that started it")
	}
	tl, err := w.open(set)
	if err != nil {
		return err
	}
	defer tl.Close()
	runner := v.runner(tl)
	if runner != nil {
		tl.mux.Handle(tool.OpValidate, runner)
	}
	ctx, cancel := signalContext(stderr)
	defer cancel()

	exec := tool.Executor(&tl.mux)
	var obs agent.Observer
	var rec *ledger.Recorder
	var lw *ledger.Writer
	var sess *session.Session
	abs, _ := filepath.Abs(tl.ws.Dir())
	if !*noLedger {
		dir, err := session.DefaultDir()
		if err != nil {
			return err
		}
		sess, err = session.Store{Dir: dir}.Create(session.Meta{Workspace: abs, Provider: "mcp", Model: "-", Surface: mcpserver.Surface, Task: "truss mcp serve"})
		if err != nil {
			return err
		}
		defer sess.Close()
		signer, _, err := installationKey()
		if err != nil {
			return err
		}
		if lw, err = ledger.Create(filepath.Join(sess.Dir(), "ledger"), sess.Meta.ID, signer); err != nil {
			return err
		}
		var decls []ledger.ToolDecl
		for _, n := range mcpserver.Tools(runner != nil) {
			decls = append(decls, ledger.ToolDecl{Name: n, Kind: "mcp"})
		}
		transport := "stdio"
		if *addr != "" {
			transport = "http " + *addr
		}
		rec, err = ledger.NewRecorder(lw, ledger.Start{Truss: version, Provider: "mcp", Model: "-", Surface: mcpserver.Surface, Tools: decls,
			Sandbox: tl.enforced(), Workspace: abs, Repo: repoState(abs), Config: map[string]string{"transport": transport}})
		if err != nil {
			return err
		}
		obs = rec
	}
	var served atomic.Int64
	counting := agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type == agent.EventCallCompleted {
			served.Add(1)
		}
		if obs != nil {
			obs.Observe(ev)
		}
	})
	srv := mcpserver.New(mcpserver.Config{Name: "truss", Version: version, Exec: exec, Observer: counting, Validate: runner != nil,
		Instructions: "Truss's verified tools over the workspace " + abs + ": every call runs locally, inside Truss's sandbox, and is recorded in a signed ledger."})
	var ln net.Listener
	var token string
	where := "stdio"
	if *tokenEnv != "" {
		if token = os.Getenv(*tokenEnv); token == "" {
			return usagef("--token-env names %s, which is not set", *tokenEnv)
		}
	}
	if *addr != "" {
		if !loopback(*addr) && token == "" {
			return usagef("--http %s is not a loopback address: anyone who reaches it could run commands in this workspace; give --token-env VAR to require a bearer token", *addr)
		}
		if ln, err = net.Listen("tcp", *addr); err != nil {
			return err
		}
		where = "http://" + ln.Addr().String() + "/mcp"
	}
	fmt.Fprintf(stderr, "truss %s · mcp server on %s · workspace %s\nsandbox: %s\n", version, where, abs, tl.enforced())
	if lw != nil {
		fmt.Fprintf(stderr, "ledger: %s\n", lw.Dir())
	}
	if ln != nil {
		err = serveHTTP(ctx, ln, srv, *stateless, token)
	} else {
		err = srv.Run(ctx, &sdkmcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	}
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		err = nil
	}
	if rec != nil {
		n := int(served.Load())
		rec.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted, Turns: n, Calls: n}})
		if cerr := rec.Close(); cerr != nil {
			fmt.Fprintf(stderr, "truss: the ledger missed an event: %v\n", cerr)
		}
		if cerr := lw.Close(); cerr != nil {
			fmt.Fprintf(stderr, "truss: the ledger could not be closed: %v\n", cerr)
		}
		fmt.Fprintf(stderr, "truss: served %d calls; ledger %s (%d entries; truss ledger verify %s)\n", n, lw.Dir(), lw.Size(), sess.Meta.ID)
	}
	return err
}

// serveHTTP serves srv as streamable HTTP on ln (any path) until ctx ends;
// with a token, only to requests that carry it as a bearer token.
func serveHTTP(ctx context.Context, ln net.Listener, srv *sdkmcp.Server, stateless bool, token string) error {
	var h http.Handler = sdkmcp.NewStreamableHTTPHandler(func(*http.Request) *sdkmcp.Server { return srv }, &sdkmcp.StreamableHTTPOptions{Stateless: stateless})
	if token != "" {
		next := h
		want := []byte("Bearer " + token)
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="truss"`)
				http.Error(w, "a bearer token is required", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loopback reports whether host:port names a loopback address (or
// localhost).
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// addTools starts the configured servers, waits until each has started or
// failed (within its startup timeout), and adds the tools of those that
// started (truss tools).
func (m *mcpFlags) addTools(set *surface.Set, cfg *config.Config, dialect string, log io.Writer) error {
	cfgs, err := m.configs(cfg)
	if err != nil || len(cfgs) == 0 {
		return err
	}
	mgr := mcp.Start(context.Background(), cfgs, mcp.Options{Client: "truss", Version: version, Dialect: dialect, Log: log})
	defer mgr.Close()
	mgr.Wait(context.Background(), -1)
	for _, srv := range mgr.Servers() {
		if st, _ := srv.State(); st != mcp.Ready {
			continue
		}
		for _, b := range mgr.Bindings(srv) {
			if err := set.Add(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// cmdMCPClient runs truss mcp list and truss mcp call: the configured
// servers (.truss/config.toml and --mcp) through the same client a run
// uses, to check a server's configuration or call one tool by hand.
func cmdMCPClient(args []string, stdout, stderr io.Writer) error {
	sub := args[0]
	fset := newFlagSet("mcp "+sub, stderr)
	var mf mcpFlags
	mf.register(fset)
	root := fset.String("root", ".", "the workspace whose .truss/config.toml names the servers")
	if err := parse(fset, args[1:]); err != nil {
		return err
	}
	cfg, err := config.Load(*root)
	if err != nil {
		return err
	}
	warnTrust(stderr, cfg)
	cfgs, err := mf.configs(cfg)
	if err != nil {
		return err
	}
	pick := fset.Args()
	if sub == "call" {
		if len(pick) < 2 || len(pick) > 3 {
			return usagef("usage: truss mcp call [--mcp NAME=CMD|URL] SERVER TOOL [JSON-ARGUMENTS]")
		}
		pick = pick[:1]
	}
	if len(pick) > 0 {
		var keep []mcp.ServerConfig
		for _, c := range cfgs {
			if slices.Contains(pick, c.Name) {
				keep = append(keep, c)
			}
		}
		for _, n := range pick {
			if !slices.ContainsFunc(keep, func(c mcp.ServerConfig) bool { return c.Name == n }) {
				return usagef("no MCP server named %q is configured (in %s or by --mcp)", n, config.Path)
			}
		}
		cfgs = keep
	}
	if len(cfgs) == 0 {
		return usagef("no MCP servers are configured (in %s or by --mcp)", config.Path)
	}
	ctx, cancel := signalContext(stderr)
	defer cancel()
	mgr := mcp.Start(ctx, cfgs, mcp.Options{Client: "truss", Version: version, Log: stderr})
	defer mgr.Close()
	mgr.Wait(ctx, -1)
	if sub == "call" {
		in := "{}"
		if len(fset.Args()) == 3 {
			in = fset.Arg(2)
		}
		if !json.Valid([]byte(in)) {
			return usagef("the arguments %q are not valid JSON", in)
		}
		r := mgr.Execute(ctx, tool.Call{ID: "cli", Op: tool.OpMCP, Args: &tool.MCPArgs{Server: fset.Arg(0), Tool: fset.Arg(1), Arguments: json.RawMessage(in)}})
		if r.Err != nil {
			fmt.Fprintf(stderr, "truss: %s\n", termsafe.String(r.Err.Message))
			return exitError{1}
		}
		fmt.Fprint(stdout, termsafe.String(r.Output))
		if !strings.HasSuffix(r.Output, "\n") {
			fmt.Fprintln(stdout)
		}
		return nil
	}
	type toolOut struct {
		Name        string          `json:"name"`
		OfferedAs   string          `json:"offered_as"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	type serverOut struct {
		Name     string    `json:"name"`
		State    string    `json:"state"`
		Error    string    `json:"error,omitempty"`
		Protocol string    `json:"protocol,omitempty"`
		Tools    []toolOut `json:"tools"`
	}
	var out []serverOut
	failed := false
	for _, srv := range mgr.Servers() {
		st, serr := srv.State()
		so := serverOut{Name: srv.Name(), State: string(st), Protocol: srv.Protocol(), Tools: []toolOut{}}
		if serr != nil {
			so.Error, failed = serr.Error(), true
		}
		for _, t := range srv.Tools() {
			schema, _ := json.Marshal(t.InputSchema)
			so.Tools = append(so.Tools, toolOut{Name: t.Name, OfferedAs: mcp.ToolName(srv.Name(), t.Name), Description: t.Description, InputSchema: schema})
		}
		out = append(out, so)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", b)
	if failed {
		return exitError{1}
	}
	return nil
}

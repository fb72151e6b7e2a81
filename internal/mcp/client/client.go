// Package client is Truss's Model Context Protocol client, on the official
// go-sdk: the executor of tool.OpMCP calls.
//
// The Manager starts the configured servers (stdio commands
// and streamable-HTTP URLs) concurrently, lists their tools and offers them
// to the model as namespaced function tools, "mcp__SERVER__TOOL", with
// their input schemas made portable (local $refs inlined, meta keywords
// dropped; for Ollama only the keywords it reads). A call of such a tool is
// a tool.OpMCP call, executed by the Manager like any built-in operation,
// so it is recorded, truncated and reported the same way. A server that is
// slow to start does not hold up the session: the caller waits for the
// servers at most a bounded time before the first turn, and a server ready
// later joins with its tools from the next turn on. A server that fails to
// start, dies or does not answer a call in time gives a precise error (to
// the user through Options.Log, to the model as the call's result), and the
// other servers and tools keep working.
//
// Truss's own MCP server is package mcp/server.
package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trussdev/truss/internal/hostfs"

	"github.com/trussdev/truss/internal/lazyre"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

// Defaults of the server timeouts.
const (
	DefaultStartupTimeout = 30 * time.Second
	DefaultToolTimeout    = 120 * time.Second
)

// ServerConfig configures one server: Command (with Args, Env and Dir) for
// a stdio server, or URL (with Headers) for a streamable-HTTP one.
type ServerConfig struct {
	Name    string
	Command string
	Args    []string
	// Env is added to the minimal environment a stdio server gets (HOME,
	// LOGNAME, PATH, SHELL, TERM, USER, LANG, TMPDIR): the harness's own
	// secrets are not passed on unless configured here.
	Env     []string
	Dir     string
	URL     string
	Headers map[string]string
	// StartupTimeout bounds connecting and listing tools; ToolTimeout each
	// call. Zero means the default.
	StartupTimeout time.Duration
	ToolTimeout    time.Duration
	// Enabled, when set, lists the only tools offered; Disabled tools are
	// never offered.
	Enabled, Disabled []string
	// Launcher, when set, rewrites a stdio server's command to run
	// confined (a sandbox's Prepare) before it starts; nil: the server
	// runs as Truss does.
	Launcher Launcher
}

// A Launcher rewrites a command to run confined.
type Launcher interface {
	Prepare(cmd *exec.Cmd) error
}

// State is where a server is in its life.
type State string

// The states.
const (
	Starting State = "starting"
	Ready    State = "ready"
	Failed   State = "failed"
	Closed   State = "closed"
)

// Options configure a Manager.
type Options struct {
	// Client is the name and version Truss gives in the handshake.
	Client, Version string
	// Dialect is the provider's API dialect; "ollama" narrows schemas to
	// the keywords Ollama reads.
	Dialect string
	// Log receives one line per server event a user should know of
	// (failures, late starts, exits); nil discards them.
	Log io.Writer
	// OnReady is called, on the server's goroutine, when a server is ready
	// with its tools, and again when it announces that its tool list
	// changed.
	OnReady func(*Server)
	// Path, when set, is the PATH a stdio server's command is found in and
	// given (hostfs.SafePath: none of the directories commands write);
	// otherwise Truss's own.
	Path string
}

// Server is one configured server.
type Server struct {
	cfg     ServerConfig
	m       *Manager
	ready   chan struct{} // closed when the server is ready or failed
	stderr  *tail
	mu      sync.Mutex
	state   State
	err     error
	session *sdk.ClientSession
	tools   []*sdk.Tool
	proto   string
}

// Name returns the server's configured name.
func (s *Server) Name() string { return s.cfg.Name }

// State returns the server's state and, when it failed, why.
func (s *Server) State() (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.err
}

// Tools returns the tools the server offers (after filtering).
func (s *Server) Tools() []*sdk.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// Protocol returns the protocol version negotiated with the server.
func (s *Server) Protocol() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proto
}

// Manager runs the configured servers. It is a tool.Executor for
// tool.OpMCP and is safe for concurrent use.
type Manager struct {
	opts    Options
	servers []*Server
	byName  map[string]*Server
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Start starts connecting to every server, each on its own goroutine, and
// returns at once.
func Start(ctx context.Context, cfgs []ServerConfig, opts Options) *Manager {
	if opts.Client == "" {
		opts.Client = "truss"
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &Manager{opts: opts, byName: map[string]*Server{}, cancel: cancel}
	for _, c := range cfgs {
		if c.StartupTimeout <= 0 {
			c.StartupTimeout = DefaultStartupTimeout
		}
		if c.ToolTimeout <= 0 {
			c.ToolTimeout = DefaultToolTimeout
		}
		s := &Server{cfg: c, m: m, ready: make(chan struct{}), state: Starting, stderr: &tail{max: 4096}}
		m.servers = append(m.servers, s)
		m.byName[c.Name] = s
		m.wg.Add(1)
		go func() { defer m.wg.Done(); s.run(ctx) }()
	}
	return m
}

// Servers returns the servers in configuration order.
func (m *Manager) Servers() []*Server { return m.servers }

// Wait waits until every server is ready or failed, or until d passes or
// ctx ends, and returns the servers still starting. A negative d waits
// until every server has settled, which its startup timeout bounds.
func (m *Manager) Wait(ctx context.Context, d time.Duration) []*Server {
	if d >= 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	for _, s := range m.servers {
		select {
		case <-s.ready:
		case <-ctx.Done():
		}
	}
	var pending []*Server
	for _, s := range m.servers {
		select {
		case <-s.ready:
		default:
			pending = append(pending, s)
		}
	}
	return pending
}

// Close disconnects every server (a stdio server's stdin is closed, then it
// is terminated) and waits for them.
func (m *Manager) Close() error {
	m.cancel()
	var errs []error
	for _, s := range m.servers {
		s.mu.Lock()
		cs := s.session
		s.state, s.session = Closed, nil
		s.mu.Unlock()
		if cs != nil {
			if err := cs.Close(); err != nil && !isClosedErr(err) {
				errs = append(errs, fmt.Errorf("mcp server %s: %w", s.cfg.Name, err))
			}
		}
	}
	m.wg.Wait()
	return errors.Join(errs...)
}

// isClosedErr reports whether a close error only says that the server was
// already gone (it exited, or its connection was closed).
func isClosedErr(err error) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit) || errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}

func (m *Manager) logf(format string, args ...any) {
	if m.opts.Log != nil {
		fmt.Fprintf(m.opts.Log, "truss: mcp: "+format+"\n", args...)
	}
}

// minimalEnv is what a stdio server inherits from Truss's environment.
var minimalEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "NODE_PATH",
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "TRUSS_HOME"}

// transport returns the server's transport and, for a stdio server, its
// command (to kill it when the handshake fails).
func (s *Server) transport() (sdk.Transport, *exec.Cmd, error) {
	c := s.cfg
	if c.URL != "" {
		client := &http.Client{Transport: headerTransport{headers: c.Headers, next: http.DefaultTransport}}
		return &sdk.StreamableClientTransport{Endpoint: c.URL, HTTPClient: client}, nil, nil
	}
	if c.Command == "" {
		return nil, nil, errors.New("neither a command nor a url is configured")
	}
	cmd := exec.Command(c.Command, c.Args...)
	path := os.Getenv("PATH")
	if s.m.opts.Path != "" {
		path = s.m.opts.Path
		cmd.Path, cmd.Err = c.Command, nil
		if exe, err := hostfs.LookPath(c.Command, path); err != nil {
			cmd.Err = err
		} else {
			cmd.Path = exe
		}
	}
	for _, k := range minimalEnv {
		if v, ok := os.LookupEnv(k); ok {
			if k == "PATH" {
				v = path
			}
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Env = append(cmd.Env, c.Env...)
	cmd.Dir = c.Dir
	cmd.Stderr = s.stderr
	if c.Launcher != nil && cmd.Err == nil {
		if err := c.Launcher.Prepare(cmd); err != nil {
			return nil, nil, fmt.Errorf("confine the server: %w", err)
		}
	}
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, cmd, nil
}

// headerTransport adds configured headers to every request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.next.RoundTrip(r)
}

func (s *Server) fail(err error) {
	s.mu.Lock()
	if s.state == Closed {
		s.mu.Unlock()
		return
	}
	s.state, s.err = Failed, err
	s.mu.Unlock()
}

// run connects, lists the tools, and then watches the connection.
func (s *Server) run(ctx context.Context) {
	err := s.connect(ctx)
	if err != nil && ctx.Err() == nil {
		s.fail(err) // before ready closes, so that waiters see the failure
	}
	close(s.ready)
	if err != nil {
		if ctx.Err() == nil {
			s.m.logf("server %s failed to start: %v", s.cfg.Name, err)
		}
		return
	}
	if s.m.opts.OnReady != nil {
		s.m.opts.OnReady(s)
	}
	s.mu.Lock()
	cs := s.session
	s.mu.Unlock()
	if cs == nil {
		return
	}
	werr := cs.Wait()
	if ctx.Err() != nil {
		return
	}
	msg := "the server closed the connection"
	if werr != nil && !errors.Is(werr, io.EOF) {
		msg = werr.Error()
	}
	if t := s.stderr.String(); t != "" {
		msg += "; its last output: " + t
	}
	s.fail(errors.New(msg))
	s.m.logf("server %s stopped: %s", s.cfg.Name, msg)
}

func (s *Server) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartupTimeout)
	defer cancel()
	tr, cmd, err := s.transport()
	if err != nil {
		return err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: s.m.opts.Client, Version: s.m.opts.Version}, &sdk.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, _ *sdk.ToolListChangedRequest) {
			if tools, err := s.list(ctx); err == nil {
				s.mu.Lock()
				s.tools = tools
				ready := s.state == Ready
				s.mu.Unlock()
				if ready && s.m.opts.OnReady != nil {
					s.m.opts.OnReady(s)
				}
			}
		},
	})
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		if cmd != nil && cmd.Process != nil {
			cmd.Process.Kill() // a server that never answered is not left running
		}
		return s.startErr(ctx, "connect", err)
	}
	s.mu.Lock()
	s.session = cs
	if ir := cs.InitializeResult(); ir != nil {
		s.proto = ir.ProtocolVersion
	}
	s.mu.Unlock()
	tools, err := s.list(ctx)
	if err != nil {
		cs.Close()
		s.mu.Lock()
		s.session = nil
		s.mu.Unlock()
		return s.startErr(ctx, "list tools", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == Closed {
		cs.Close()
		return errors.New("closed")
	}
	s.tools, s.state = tools, Ready
	return nil
}

func (s *Server) startErr(ctx context.Context, what string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within the startup timeout of %s", s.cfg.StartupTimeout)
	}
	if t := s.stderr.String(); t != "" {
		return fmt.Errorf("%s: %w; its last output: %s", what, err, t)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// list lists the server's tools, filtered by the configuration.
func (s *Server) list(ctx context.Context) ([]*sdk.Tool, error) {
	s.mu.Lock()
	cs := s.session
	s.mu.Unlock()
	if cs == nil {
		return nil, errors.New("not connected")
	}
	var tools []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if len(s.cfg.Enabled) > 0 && !slices.Contains(s.cfg.Enabled, t.Name) || slices.Contains(s.cfg.Disabled, t.Name) {
			continue
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// readOnly reports whether the call's tool is annotated read-only by its
// server (readOnlyHint): it does not change its environment.
func (m *Manager) readOnly(call tool.Call) bool {
	a, ok := call.Args.(*tool.MCPArgs)
	if !ok || a == nil {
		return false
	}
	s := m.byName[a.Server]
	if s == nil {
		return false
	}
	for _, t := range s.Tools() {
		if t.Name == a.Tool {
			return t.Annotations != nil && t.Annotations.ReadOnlyHint
		}
	}
	return false
}

// Concurrent implements tool.ConcurrentExecutor: a tool its server
// annotates read-only (readOnlyHint) runs at once with the turn's other
// concurrent calls.
func (m *Manager) Concurrent(call tool.Call) bool { return m.readOnly(call) }

// Mutates implements tool.MutatingExecutor: only a tool annotated
// read-only is known to change nothing.
func (m *Manager) Mutates(call tool.Call) bool { return !m.readOnly(call) }

// Execute implements tool.Executor for tool.OpMCP.
func (m *Manager) Execute(ctx context.Context, call tool.Call) tool.Result {
	a, ok := call.Args.(*tool.MCPArgs)
	if !ok || a == nil {
		return tool.Failed(call, tool.Errorf(tool.ErrInvalidInput, "mcp: no server and tool named"))
	}
	s := m.byName[a.Server]
	if s == nil {
		return tool.Failed(call, tool.Errorf(tool.ErrUnknownTool, "there is no MCP server named %q", a.Server))
	}
	s.mu.Lock()
	state, serr, cs, timeout := s.state, s.err, s.session, s.cfg.ToolTimeout
	s.mu.Unlock()
	switch {
	case state == Starting:
		return tool.Failed(call, tool.Errorf(tool.ErrUnavailable, "the MCP server %s is still starting; try again later or use other tools", a.Server))
	case state != Ready || cs == nil:
		reason := "it is not running"
		if serr != nil {
			reason = serr.Error()
		}
		return tool.Failed(call, tool.Errorf(tool.ErrUnavailable, "the MCP server %s is not available (%s); use other tools", a.Server, reason))
	}
	var args any = map[string]any{}
	if len(a.Arguments) > 0 {
		args = json.RawMessage(a.Arguments)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: a.Tool, Arguments: args})
	out := tool.Result{CallID: call.ID, Op: call.Op}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return tool.Failed(call, &tool.Error{Kind: tool.ErrCanceled, Message: fmt.Sprintf("the call of %s on the MCP server %s was canceled", a.Tool, a.Server), Err: ctx.Err()})
		case errors.Is(cctx.Err(), context.DeadlineExceeded):
			return tool.Failed(call, &tool.Error{Kind: tool.ErrTimeout, Message: fmt.Sprintf("the MCP server %s did not answer the call of %s within %s", a.Server, a.Tool, timeout), Err: err})
		}
		if st, _ := s.State(); st == Failed {
			return tool.Failed(call, tool.Errorf(tool.ErrUnavailable, "the MCP server %s stopped during the call of %s: %v", a.Server, a.Tool, err))
		}
		return tool.Failed(call, tool.Errorf(tool.ErrTool, "the MCP server %s refused the call of %s: %v", a.Server, a.Tool, err))
	}
	content, _ := json.Marshal(res.Content)
	out.MCP = &tool.MCPResult{Server: a.Server, Tool: a.Tool, Content: content}
	if res.StructuredContent != nil {
		out.MCP.Structured, _ = json.Marshal(res.StructuredContent)
	}
	out.Output = Text(res)
	if len(out.Output) > MaxResult || len(out.MCP.Content)+len(out.MCP.Structured) > MaxResult {
		// What the server returns is recorded and kept for the model as a
		// command's output is: at most MaxResult, head and tail.
		out.Output = headTail(out.Output, MaxResult)
		out.MCP.Content, _ = json.Marshal([]*sdk.TextContent{{Text: out.Output}})
		out.MCP.Structured = nil
		out.Truncated = true
	}
	if res.IsError {
		msg := strings.TrimSpace(out.Output)
		if msg == "" {
			msg = "the tool reported an error without a message"
		}
		out.Err = &tool.Error{Kind: tool.ErrTool, Message: msg}
	}
	return out
}

// MaxResult caps what a tool call's result keeps, in bytes: its text for
// the model, and its content and structured content together. A result
// past it keeps the head and tail of its text alone (as one text
// content), with the number of bytes left out between them.
const MaxResult = 1 << 20

// headTail returns s when it is at most n bytes, else its first and last
// n/2 bytes (cut at UTF-8 boundaries) around a note of what was left out.
func headTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	h, t := n/2, len(s)-n/2
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:h] + fmt.Sprintf("\n[... %d bytes omitted ...]\n", t-h) + s[t:]
}

// Text renders a tool result's content for the model: text as it is,
// other content described in one line, the structured content as JSON
// when there is no text.
func Text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.URI, c.Name))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil {
				if r.Text != "" {
					parts = append(parts, r.Text)
				} else {
					parts = append(parts, fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
				}
			}
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n")
}

// Bindings returns the bindings of a ready server's tools.
func (m *Manager) Bindings(s *Server) []surface.Binding {
	var bs []surface.Binding
	for _, t := range s.Tools() {
		bs = append(bs, NewBinding(s.cfg.Name, t, m.opts.Dialect))
	}
	return bs
}

// Binding binds one MCP tool as a function tool.
type Binding struct {
	Server, Tool string
	spec         model.ToolSpec
}

// Surface is the surface name of MCP calls.
const Surface = "mcp"

var unsafeName = lazyre.Regexp{Expr: `[^A-Za-z0-9_-]`}

// ToolName is the function name a server's tool is offered under:
// "mcp__SERVER__TOOL", characters other than letters, digits, '_' and '-'
// replaced by '_', and a name past 64 characters cut with a hash of the
// whole appended.
func ToolName(server, name string) string {
	n := "mcp__" + unsafeName.Get().ReplaceAllString(server, "_") + "__" + unsafeName.Get().ReplaceAllString(name, "_")
	if len(n) <= 64 {
		return n
	}
	sum := sha256.Sum256([]byte(server + "\x00" + name))
	return n[:55] + "_" + hex.EncodeToString(sum[:4])
}

// NewBinding returns the binding of a server's tool for a dialect.
func NewBinding(server string, t *sdk.Tool, dialect string) *Binding {
	raw, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil {
		raw = []byte(`{}`)
	}
	params := provider.PortableSchema(raw)
	if dialect == "ollama" {
		if p, err := provider.SubsetSchema(params); err == nil {
			params = p
		}
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	desc = strings.TrimSpace(desc + "\n\n(Tool " + t.Name + " of the MCP server " + server + ".)")
	return &Binding{Server: server, Tool: t.Name, spec: model.ToolSpec{Kind: model.ToolFunction, Name: ToolName(server, t.Name), Description: desc, Parameters: params}}
}

// Spec implements surface.Binding.
func (b *Binding) Spec() model.ToolSpec { return b.spec }

// Decode implements surface.Binding: the input must be a JSON object.
func (b *Binding) Decode(c model.ToolCall) ([]tool.Call, error) {
	in := bytes.TrimSpace([]byte(c.Input))
	if len(in) == 0 {
		in = []byte("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(in, &obj); err != nil {
		return nil, tool.Errorf(tool.ErrInvalidInput, "%s: the arguments are not a valid JSON object (%v); send the arguments as one JSON object", c.Name, err)
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Surface, Op: tool.OpMCP, Raw: tool.Raw(c.Input),
		Args: &tool.MCPArgs{Server: b.Server, Tool: b.Tool, Arguments: json.RawMessage(in)}}}, nil
}

// Encode implements surface.Binding.
func (b *Binding) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	text := r.Output
	if r.Err != nil {
		text = "Error: " + r.Err.Message
	}
	if text == "" {
		text = "(the tool returned no content)"
	}
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: text, IsError: r.Err != nil}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if i := strings.LastIndexByte(s, '\n'); len(s) > 600 && i >= 0 {
		s = s[max(i-600, 0):]
	}
	return strings.Join(strings.Fields(s), " ")
}

package trusscli

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trussdev/truss/internal/cli"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/termsafe"
)

// mcpFlags configure the MCP servers whose tools the model is offered.
type mcpFlags struct {
	servers cli.Multi
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

// options checks the MCP flags and sets the MCP options.
func (m *mcpFlags) options(o *harness.MCPOptions) error {
	o.Off = m.noMCP
	if m.wait.set {
		d := m.wait.d
		o.Wait = &d
	}
	for _, f := range m.servers {
		name, spec, ok := strings.Cut(f, "=")
		if !ok || name == "" || strings.TrimSpace(spec) == "" {
			return cli.Usagef("--mcp %q: give NAME=COMMAND ARGS... or NAME=URL", f)
		}
		sc := harness.MCPServer{Name: name}
		if strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
			sc.URL = spec
		} else {
			words := strings.Fields(spec)
			sc.Command, sc.Args = words[0], words[1:]
		}
		o.Servers = append(o.Servers, sc)
	}
	return nil
}

// cmdMCP runs truss mcp serve: Truss's own tools for any MCP client, on
// stdio or streamable HTTP, with the same executors, workspace confinement,
// sandbox and ledger as a session.
func cmdMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "list" || args[0] == "call") {
		return cmdMCPClient(args, stdout, stderr)
	}
	if len(args) == 0 || args[0] != "serve" {
		return cli.Usagef("usage: truss mcp serve [--http ADDR] [--root DIR] [flags] | truss mcp list [SERVER...] | truss mcp call SERVER TOOL [JSON]")
	}
	fset := cli.NewFlagSet("mcp serve", stderr)
	var w workspaceFlags
	w.register(fset)
	var v validateFlags
	v.registerChecks(fset)
	addr := fset.String("http", "", "serve streamable HTTP on this address (host:port; port 0 picks a free one, printed at start) instead of stdio")
	stateless := fset.Bool("stateless", false, "with --http: serve statelessly (protocol 2026-07-28 and later; no sessions)")
	tokenEnv := fset.String("token-env", "", "with --http: require this environment variable's value as a bearer token (default on loopback: a new random token, printed at start; required on a non-loopback address)")
	noToken := fset.Bool("no-token", false, "with --http on loopback: serve without a bearer token (any process of this machine can then run commands in the workspace)")
	noLedger := fset.Bool("no-ledger", false, "do not record the calls in a signed ledger")
	if err := cli.ParseNone(fset, args[1:]); err != nil {
		return err
	}
	token, made, err := serveToken(*addr, *tokenEnv, *noToken)
	if err != nil {
		return err
	}
	o := harness.Options{Version: version, NoLedger: *noLedger, NoSession: *noLedger, Validation: v.options(), OnWarning: warner(stderr), Serve: "stdio"}
	if err := w.options(&o); err != nil {
		return err
	}
	var ln net.Listener
	where := "stdio"
	if *addr != "" {
		o.Serve = "http " + *addr
		if ln, err = net.Listen("tcp", *addr); err != nil {
			return err
		}
		defer ln.Close()
		where = "http://" + ln.Addr().String() + "/mcp"
	}
	ctx, cancel := cli.SignalContext(stderr)
	defer cancel()
	s, err := harness.Open(ctx, o)
	if err != nil {
		return err
	}
	defer s.Close()
	info := s.Info()
	fmt.Fprintf(stderr, "truss %s · mcp server on %s · workspace %s\nsandbox: %s\n", version, where, termsafe.Name(info.Workspace), info.Sandbox)
	if made {
		fmt.Fprintf(stderr, "bearer token: %s (every request needs Authorization: Bearer and it; --token-env VAR chooses one)\n", token)
	}
	if info.LedgerDir != "" {
		fmt.Fprintf(stderr, "ledger: %s\n", info.LedgerDir)
	}
	out, err := s.ServeMCP(ctx, func(ctx context.Context, srv *sdkmcp.Server) error {
		if ln != nil {
			return serveHTTP(ctx, ln, srv, *stateless, token)
		}
		// A client that writes its requests and closes the pipe gets
		// every answer before the server ends.
		return srv.Run(ctx, harness.StdioTransport(stdin, nopWriteCloser{stdout}))
	})
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		err = nil
	}
	if info.LedgerDir != "" {
		s.Close()
		fmt.Fprintf(stderr, "truss: served %s; ledger %s (%s; truss ledger verify %s)\n", plural.Count(out.Agent.Calls, "call"), info.LedgerDir, plural.Count(out.LedgerSize, "entry"), info.SessionID)
	}
	return err
}

// serveToken is the bearer token an MCP server on addr ("" for stdio)
// wants: the value of the variable tokenEnv names or, without one, a new
// random token (made): any process of this machine can connect to a
// loopback port (a sandboxed command of another session with the network
// on, another user), so an HTTP server always wants one. A non-loopback
// address needs tokenEnv.
//
// noToken (--no-token) serves a loopback address without one, on the
// user's explicit word.
func serveToken(addr, tokenEnv string, noToken bool) (token string, made bool, err error) {
	if noToken && (tokenEnv != "" || addr == "" || !loopback(addr)) {
		return "", false, cli.Usagef("--no-token serves --http on a loopback address without --token-env only")
	}
	if noToken {
		return "", false, nil
	}
	if tokenEnv != "" && addr == "" {
		return "", false, cli.Usagef("--token-env protects --http; a stdio server has no other client than the process that started it")
	}
	if tokenEnv != "" {
		if token = os.Getenv(tokenEnv); token == "" {
			return "", false, cli.Usagef("--token-env names %s, which is not set", tokenEnv)
		}
		return token, false, nil
	}
	if addr == "" {
		return "", false, nil
	}
	if !loopback(addr) {
		return "", false, cli.Usagef("--http %s is not a loopback address: anyone who reaches it could run commands in this workspace; give --token-env VAR to require a bearer token", addr)
	}
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:]), true, nil
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

// cmdMCPClient runs truss mcp list and truss mcp call: the configured
// servers (.truss/config.toml and --mcp) through the same client a run
// uses, to check a server's configuration or call one tool by hand.
func cmdMCPClient(args []string, stdout, stderr io.Writer) error {
	sub := args[0]
	fset := cli.NewFlagSet("mcp "+sub, stderr)
	var mf mcpFlags
	mf.register(fset)
	root := fset.String("root", ".", "the workspace whose .truss/config.toml names the servers")
	if err := cli.ParseArgs(fset, args[1:]); err != nil {
		return err
	}
	var o harness.MCPOptions
	if err := mf.options(&o); err != nil {
		return err
	}
	pick := fset.Args()
	if sub == "call" {
		if len(pick) < 2 || len(pick) > 3 {
			return cli.Usagef("usage: truss mcp call [--mcp NAME=CMD|URL] SERVER TOOL [JSON-ARGUMENTS]")
		}
		pick = pick[:1]
	}
	ctx, cancel := cli.SignalContext(stderr)
	defer cancel()
	ms, err := harness.StartMCP(ctx, *root, o, pick, version, warner(stderr))
	if err != nil {
		return err
	}
	defer ms.Close()
	if sub == "call" {
		in := "{}"
		if len(fset.Args()) == 3 {
			in = fset.Arg(2)
		}
		if !json.Valid([]byte(in)) {
			return cli.Usagef("the arguments %q are not valid JSON", in)
		}
		r := ms.Call(ctx, fset.Arg(0), fset.Arg(1), json.RawMessage(in))
		if r.Err != nil {
			fmt.Fprintf(stderr, "truss: %s\n", termsafe.String(r.Err.Message))
			return cli.ExitError{Code: 1}
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
	for _, srv := range ms.Servers {
		so := serverOut{Name: srv.Name, State: srv.State, Protocol: srv.Protocol, Tools: []toolOut{}}
		if srv.Err != nil {
			so.Error, failed = srv.Err.Error(), true
		}
		for _, t := range srv.Tools {
			schema, _ := json.Marshal(t.InputSchema)
			so.Tools = append(so.Tools, toolOut{Name: t.Name, OfferedAs: t.OfferedAs, Description: t.Description, InputSchema: schema})
		}
		out = append(out, so)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", b)
	if failed {
		return cli.ExitError{Code: 1}
	}
	return nil
}

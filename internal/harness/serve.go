package harness

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/mcp/server"
)

// serveSurface is the surface of calls that arrive through Truss's MCP
// server; serveTools the tools it offers.
const serveSurface = server.Surface

func serveTools(validate bool) []string { return server.Tools(validate) }

// StdioTransport is the MCP transport of a server on a pipe: newline-
// delimited JSON read from r and written to w, whose input's end is
// reported only once every request read was answered (server.Draining),
// so a client that writes its requests and closes the pipe gets every
// answer.
func StdioTransport(r io.Reader, w io.WriteCloser) sdk.Transport {
	return server.Draining{Transport: &sdk.IOTransport{Reader: io.NopCloser(r), Writer: w}}
}

// ServeMCP serves Truss's tools (view, create, replace, insert, patch,
// shell and, when the project's checks are known, validate) on the
// session's executors to MCP clients: serve runs the given server on a
// transport until ctx ends or the client goes. Every call is recorded in
// the session's ledger as its own turn; when serve returns, the ledger
// gets the session's end. The outcome's Agent.Calls is the number of
// calls served. The session must have been opened with Options.Serve.
func (s *Session) ServeMCP(ctx context.Context, serve func(context.Context, *sdk.Server) error) (Outcome, error) {
	if s.isClosed() {
		return Outcome{}, ErrClosed
	}
	if s.opts.Serve == "" {
		return Outcome{}, errors.New("harness: the session was not opened to serve MCP (Options.Serve)")
	}
	var served atomic.Int64
	obs := append(agent.Observers{}, s.opts.Observers...)
	if s.rec != nil {
		obs = append(agent.Observers{s.rec}, obs...)
	}
	counting := agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type == agent.EventCallCompleted {
			served.Add(1)
		}
		obs.Observe(ev)
	})
	recorded := "is recorded in a signed ledger"
	if s.rec == nil {
		recorded = "is recorded nowhere (the server was started without a ledger)"
	}
	srv := server.New(server.Config{Name: "truss", Version: s.opts.Version, Exec: s.exec, Observer: counting, Validate: s.w.runner != nil,
		Instructions: "Truss's verified tools over the workspace " + s.w.root + ": every call runs locally, inside Truss's sandbox, and " + recorded + "."})
	err := serve(ctx, srv)
	n := int(served.Load())
	out := &agent.Outcome{Status: agent.StatusCompleted, Turns: n, Calls: n}
	obs.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: out})
	res := Outcome{Agent: *out, SessionID: s.sessionID}
	s.sealed(&res)
	return res, err
}

package server

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Draining is a Transport over another whose connection, when its input
// ends (a client that wrote its requests and closed the pipe:
// `printf '…' | truss mcp serve`), answers every request it has read
// before it reports the end: the SDK closes a connection whose Read
// fails, and a response written after that is lost, so without it a
// pipe's last requests — every one of them, when they all arrive before
// the first is answered — get no answer.
//
// The end is reported once every request read has been answered, or the
// connection is closed (a write failed: nobody reads the answers any
// more), or the context given to Read is done. A request the server
// never answers (one it is still waiting on the client for) therefore
// holds the end until one of those; Truss's server asks its clients
// nothing.
type Draining struct {
	sdk.Transport
}

// Connect implements sdk.Transport.
func (t Draining) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainingConn{Connection: c, pending: map[jsonrpc.ID]bool{}, closed: make(chan struct{})}, nil
}

// drainingConn counts the requests read and not yet answered.
type drainingConn struct {
	sdk.Connection

	mu      sync.Mutex
	pending map[jsonrpc.ID]bool
	idle    chan struct{} // closed when pending empties; nil while none waits
	closed  chan struct{}
	once    sync.Once
}

// Read implements sdk.Connection.
func (c *drainingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			c.mu.Lock()
			c.pending[r.ID] = true
			c.mu.Unlock()
		}
		return m, nil
	}
	if !errors.Is(err, io.EOF) {
		return nil, err
	}
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return nil, err
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
	case <-c.closed:
	case <-ctx.Done():
	}
	return nil, err
}

// Write implements sdk.Connection.
func (c *drainingConn) Write(ctx context.Context, m jsonrpc.Message) error {
	err := c.Connection.Write(ctx, m)
	if r, ok := m.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.pending, r.ID)
		if len(c.pending) == 0 && c.idle != nil {
			close(c.idle)
			c.idle = nil
		}
		c.mu.Unlock()
	}
	return err
}

// Close implements sdk.Connection.
func (c *drainingConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

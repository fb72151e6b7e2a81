package provider

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/model"
)

// Capture holds the exact bytes of one request's HTTP exchange, for whoever
// records the session. An adapter makes one per attempt and sends the
// request with the context Context returns; CaptureMiddleware, installed in
// the client, finds it in the request's context and records into it. The
// bytes of requests sent at the same time through one client (sub-agents
// share their parent's) so never mix: each turn returns its own.
type Capture struct {
	// SkipRequest leaves the request body out (an adapter that records its
	// request as parts).
	SkipRequest bool

	mu    sync.Mutex
	wire  model.Wire
	start time.Time
}

type captureKey struct{}

// Context returns ctx carrying c: the HTTP exchange of a request made with
// it is recorded in c.
func (c *Capture) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

// CaptureMiddleware records the request body and tees the response body
// into the Capture of the request's context; a request whose context
// carries none passes through untouched. It fits the official SDKs'
// middleware option (func(*http.Request, next) (*http.Response, error)).
// When one context is sent twice (a client's own retry), the last attempt's
// bytes are kept.
func CaptureMiddleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	c, _ := req.Context().Value(captureKey{}).(*Capture)
	if c == nil {
		return next(req)
	}
	var body []byte
	if req.GetBody != nil && !c.SkipRequest {
		if rc, err := req.GetBody(); err == nil {
			body, _ = io.ReadAll(rc)
			rc.Close()
		}
	}
	c.mu.Lock()
	c.wire, c.start = model.Wire{Request: body}, time.Now()
	c.mu.Unlock()
	resp, err := next(req)
	if err == nil && resp.Body != nil {
		resp.Body = &tee{ReadCloser: resp.Body, c: c}
	}
	return resp, err
}

// Wire returns a copy of the bytes captured so far, with the time since the
// request was sent; nil when no request was made with c.
func (c *Capture) Wire() *model.Wire {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.start.IsZero() {
		return nil
	}
	w := c.wire
	w.Request = bytes.Clone(w.Request)
	w.Response = bytes.Clone(w.Response)
	w.Duration = time.Since(c.start)
	return &w
}

type tee struct {
	io.ReadCloser
	c *Capture
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 {
		t.c.mu.Lock()
		t.c.wire.Response = append(t.c.wire.Response, p[:n]...)
		t.c.mu.Unlock()
	}
	return n, err
}

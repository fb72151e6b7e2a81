package provider

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/trussdev/truss/internal/model"
)

// Capture records the exact bytes of the last HTTP attempt, for whoever
// records the session. Its Middleware fits the official SDKs' middleware
// option (func(*http.Request, next) (*http.Response, error)).
type Capture struct {
	// SkipRequest leaves request bodies out (an adapter that records its
	// request as parts).
	SkipRequest bool

	mu    sync.Mutex
	wire  model.Wire
	start time.Time
}

// Middleware records the request body and tees the response body.
func (c *Capture) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
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

// Take returns a copy of the last attempt's bytes.
func (c *Capture) Take() *model.Wire {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.wire
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

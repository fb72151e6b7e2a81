package provider

import (
	"net/http"
	"sync"
)

// HeaderTransport adds Header to every request it sends through Base
// (http.DefaultTransport when nil), replacing what the request had under
// those names: the extra headers of a named provider. The credentials a
// request carries are recorded in Sent (when set), so that an error
// quoting them shows them masked, whichever credential chain gave them.
// A plain HTTP request answered as a TLS port answers one is a
// *TLSPortError.
type HeaderTransport struct {
	Base   http.RoundTripper
	Header http.Header
	Sent   *Sent
}

// RoundTrip implements http.RoundTripper. The request is cloned, as a
// RoundTripper must not change its argument.
func (t HeaderTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if len(t.Header) == 0 {
		t.Sent.note(r.Header)
		resp, err := base.RoundTrip(r)
		return tlsPort(r, resp, err)
	}
	r = r.Clone(r.Context())
	for k, vs := range t.Header {
		r.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	t.Sent.note(r.Header)
	resp, err := base.RoundTrip(r)
	return tlsPort(r, resp, err)
}

// HeaderClient is an HTTP client on NewTransport that adds h to every
// request and answers redirects (NoRedirect): the client every adapter
// is given, so that each reports a failed TLS handshake (HandshakeError)
// and a redirect alike.
func HeaderClient(h http.Header) *http.Client {
	return (*Predial)(nil).Client(h, 0, nil)
}

// DefaultClient is the client of an adapter given none: HeaderClient's
// without headers, one for the process (its connections are pooled), as
// the harness gives every adapter, so that one made without a client (a
// test, a tool) takes the same path. It is made on first use: no
// package's initialisation allocates.
func DefaultClient() *http.Client {
	defaultClient.once.Do(func() { defaultClient.c = HeaderClient(nil) })
	return defaultClient.c
}

var defaultClient struct {
	once sync.Once
	c    *http.Client
}

// NoRedirect is the CheckRedirect of the adapters' clients: a redirect is
// answered to the adapter, not followed. Go would follow a POST's 301 or
// 302 as a GET, and the page it lands on would be read as a stream; the
// adapter says where the server redirects instead (AnswerMiddleware).
func NoRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// CloseIdleConnections closes the idle connections of Base (of
// http.DefaultTransport when nil), so that http.Client.CloseIdleConnections
// reaches the transport underneath.
func (t HeaderTransport) CloseIdleConnections() {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if c, ok := base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

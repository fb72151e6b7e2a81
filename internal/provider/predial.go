package provider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// PredialMaxAge is how long a pre-dialed connection stays usable: one
// that waited longer (an interactive session whose user has not asked
// anything yet) is closed instead of handed over, since a server may
// have dropped it in the meantime, and the first request dials anew.
const PredialMaxAge = 30 * time.Second

// predialProtocols are the ALPN protocols a TLS pre-dial offers: what
// http.Transport offers when it makes its own TLS connections with HTTP/2
// enabled, so that the handed-over connection speaks what the transport
// would have negotiated.
var predialProtocols = []string{"h2", "http/1.1"}

// A Predial opens the connection to a provider's server in the background
// while the rest of a session is set up: DNS, TCP and, for an https
// address, the TLS handshake. The transport of Client and Transport hands
// that connection to its first dial of the same address, once, and dials
// normally after that. A Predial never sends anything over the
// connection itself; it only connects.
//
// A nil *Predial is valid: its Client is HeaderClient's and its Transport
// is nil.
type Predial struct {
	addr    string // host:port, as http.Transport names it to its dialer
	tls     bool
	roots   *x509.CertPool
	network net.Dialer
	cancel  context.CancelFunc
	done    chan struct{} // closed when the dial ends
	conn    net.Conn      // set before done closes, on success
	err     error         // set before done closes, on failure
	at      time.Time     // when the dial ended
	taken   atomic.Bool   // a dial (or Close) has claimed the connection
	closeMu sync.Once
}

// StartPredial starts connecting to the server of baseURL (an http or
// https URL; the port defaults to the scheme's) and returns once the
// dial is under way (its goroutine has run up to its first wait on the
// network), without waiting for the connection. It returns nil, and connects to nothing, when baseURL is not such a URL or
// when a proxy of the environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY)
// applies to it: the transport then connects to the proxy, not the
// server. The dial ends when ctx ends; Close releases a connection nobody
// took.
func StartPredial(ctx context.Context, baseURL string) *Predial {
	return startPredial(ctx, baseURL, http.ProxyFromEnvironment, nil)
}

// startPredial is StartPredial with the transport's proxy function and
// the TLS roots (nil: the system's) given.
func startPredial(ctx context.Context, baseURL string, proxyFor func(*http.Request) (*url.URL, error), roots *x509.CertPool) *Predial {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil
	}
	if proxy, err := proxyFor(&http.Request{URL: u}); err != nil || proxy != nil {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p := &Predial{
		addr:    net.JoinHostPort(u.Hostname(), port),
		tls:     u.Scheme == "https",
		roots:   roots,
		network: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		done:    make(chan struct{}),
	}
	ctx, p.cancel = context.WithCancel(ctx)
	// The caller goes on with CPU work (opening the workspace) and does
	// not block before its first request: a goroutine merely started
	// waits in this thread's run queue until then whenever no other
	// thread is free to take it (a busy machine, GOMAXPROCS=1). Waiting
	// until the dial's goroutine runs hands it this thread, and it keeps
	// it up to its first wait on the network (the connect in progress),
	// so the connection is made while the caller works.
	running := make(chan struct{})
	go func() {
		close(running)
		defer close(p.done)
		if p.tls {
			p.conn, p.err = p.dialTLS(ctx, "tcp", p.addr)
		} else {
			p.conn, p.err = p.network.DialContext(ctx, "tcp", p.addr)
		}
		p.at = time.Now()
	}()
	<-running
	return p
}

// dialTLS connects to addr and completes a TLS handshake as the
// transport of NewTransport does (a failed one is a *HandshakeError).
func (p *Predial) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	var base *tls.Config
	if p.roots != nil {
		base = &tls.Config{RootCAs: p.roots}
	}
	return dialTLS(ctx, &p.network, base, tlsHandshakeTimeout, network, addr)
}

// tlsHandshakeTimeout is http.DefaultTransport's TLSHandshakeTimeout.
const tlsHandshakeTimeout = 10 * time.Second

// take returns the pre-dialed connection when addr is its address, tls
// its kind, nobody took it before and it is not older than PredialMaxAge;
// it waits for a dial in progress. ok is false when the caller must dial
// itself; err is set only when ctx ended while waiting.
func (p *Predial) take(ctx context.Context, addr string, tls bool) (c net.Conn, ok bool, err error) {
	if addr != p.addr || tls != p.tls || !p.taken.CompareAndSwap(false, true) {
		return nil, false, nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		go p.release() // the dial's connection, when it comes, is nobody's
		return nil, false, ctx.Err()
	}
	if p.err != nil {
		return nil, false, nil // the caller's own dial reports what is wrong
	}
	if time.Since(p.at) > PredialMaxAge {
		p.conn.Close()
		return nil, false, nil
	}
	return p.conn, true, nil
}

// release waits for the dial and closes its connection.
func (p *Predial) release() {
	<-p.done
	if p.conn != nil {
		p.conn.Close()
	}
}

// Close stops a dial in progress and closes the connection if no dial
// took it. It is safe to call more than once, and on nil.
func (p *Predial) Close() error {
	if p == nil {
		return nil
	}
	p.closeMu.Do(func() {
		if p.taken.CompareAndSwap(false, true) {
			p.cancel()
			p.release()
			return
		}
		p.cancel() // after a take, the dial has ended: this releases the context
	})
	return nil
}

// Transport returns a transport of NewTransport whose first dial of the
// pre-dialed address (a plain dial for http, a TLS dial for https) is
// given the pre-dialed connection; nil for a nil Predial.
func (p *Predial) Transport() *http.Transport {
	if p == nil {
		return nil
	}
	t := NewTransport()
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if c, ok, err := p.take(ctx, addr, false); ok || err != nil {
			return c, err
		}
		return p.network.DialContext(ctx, network, addr)
	}
	if p.tls {
		t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if c, ok, err := p.take(ctx, addr, true); ok || err != nil {
				return c, err
			}
			return p.dialTLS(ctx, network, addr)
		}
	}
	return t
}

// Client returns an HTTP client on Transport (for a nil Predial, on
// NewTransport), with the transport's ResponseHeaderTimeout set to
// headerTimeout (0: none), that adds h to every request (HeaderTransport),
// records the credentials each carries in sent (nil: nowhere) and answers
// redirects (NoRedirect).
func (p *Predial) Client(h http.Header, headerTimeout time.Duration, sent *Sent) *http.Client {
	t := p.Transport()
	if t == nil {
		t = NewTransport()
	}
	t.ResponseHeaderTimeout = headerTimeout
	return &http.Client{Transport: HeaderTransport{Base: t, Header: h, Sent: sent}, CheckRedirect: NoRedirect}
}

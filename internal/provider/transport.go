package provider

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// HandshakeError is a TLS handshake that failed in the transport's dial
// step (NewTransport): a connection was made, but no TLS session over it.
// It is told apart from a connection that broke in the middle of a
// stream: no request was sent, and no retry mends an address that does
// not speak TLS (NoConnection).
type HandshakeError struct {
	Addr string // host:port
	// PlainHTTP is set when the server speaks plain HTTP on Addr: it
	// answered the handshake in HTTP, or closed it and answered a plain
	// HTTP request on a connection of its own.
	PlainHTTP bool
	Err       error
}

func (e *HandshakeError) Error() string {
	return "TLS handshake with " + e.Addr + " failed: " + e.Err.Error()
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// NewTransport returns a transport configured as http.DefaultTransport
// whose TLS connections are made by its own dial step: a failed handshake
// is a *HandshakeError (as a *url.Error's cause). Its TLSClientConfig,
// when set, is the handshake's configuration, and TLSHandshakeTimeout
// bounds the handshake.
func NewTransport() *http.Transport {
	nd := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	var t *http.Transport
	if def, ok := http.DefaultTransport.(*http.Transport); ok {
		t = def.Clone()
	} else {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second}
	}
	t.DialContext = nd.DialContext
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dialTLS(ctx, nd, t.TLSClientConfig, t.TLSHandshakeTimeout, network, addr)
	}
	return t
}

// dialTLS connects to addr and completes a TLS handshake with a copy of
// base (nil: the system's roots), offering predialProtocols unless base
// names its own, as http.Transport does for an https request. A failed
// connect is returned as the dialer reports it; a failed handshake as a
// *HandshakeError.
func dialTLS(ctx context.Context, nd *net.Dialer, base *tls.Config, timeout time.Duration, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	raw, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{}
	if base != nil {
		cfg = base.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if len(cfg.NextProtos) == 0 {
		cfg.NextProtos = predialProtocols
	}
	hctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c := tls.Client(raw, cfg)
	if err := c.HandshakeContext(hctx); err != nil {
		raw.Close()
		if ctx.Err() != nil {
			return nil, err
		}
		var rh tls.RecordHeaderError
		he := &HandshakeError{Addr: addr, Err: err, PlainHTTP: errors.As(err, &rh)}
		if !he.PlainHTTP && closedEarly(err) {
			he.PlainHTTP = answersHTTP(ctx, nd, addr, host)
		}
		return nil, he
	}
	return c, nil
}

// closedEarly reports whether a handshake's err is the server closing the
// connection without a word: what an HTTP server that cannot read the
// handshake as a request often does. A reset that comes while the request
// is still being written is a broken pipe, or, once Go's transport has
// closed the connection on the reset it read, a write to a closed
// connection.
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// probeTimeout bounds answersHTTP's connection and its wait for an answer.
const probeTimeout = 2 * time.Second

// answersHTTP reports whether the server at addr answers a plain HTTP
// request (HEAD /) with an HTTP status line, after it closed a TLS
// handshake: then it speaks plain HTTP there. A 400 does not count: a
// TLS server answers a plain request so ("The plain HTTP request was sent
// to HTTPS port").
func answersHTTP(ctx context.Context, nd *net.Dialer, addr, host string) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(probeTimeout))
	if _, err := io.WriteString(c, "HEAD / HTTP/1.0\r\nHost: "+host+"\r\n\r\n"); err != nil {
		return false
	}
	line, err := bufio.NewReader(io.LimitReader(c, 256)).ReadString('\n')
	if err != nil && line == "" {
		return false
	}
	f := strings.Fields(line)
	return len(f) >= 2 && strings.HasPrefix(f[0], "HTTP/1.") && len(f[1]) == 3 && f[1] != "400"
}

// TLSPortError is a plain HTTP request answered as a TLS port answers
// one: a 400 that says so (nginx's "The plain HTTP request was sent to
// HTTPS port", Go's and Apache's), or a connection closed at the request
// by a server that completes a TLS handshake. An http:// address of an
// https:// server, which no retry mends.
type TLSPortError struct {
	Addr string // host:port
	// Answer is what the server did: `answered 400 "…"`, or the
	// connection's error.
	Answer string
	Err    error
}

func (e *TLSPortError) Error() string {
	return "the server at " + e.Addr + " speaks TLS: it " + e.Answer + " to a plain HTTP request"
}

func (e *TLSPortError) Unwrap() error { return e.Err }

// speaksTLSHint is what the error of a TLSPortError says to do.
const speaksTLSHint = "use https:// in its address"

// tlsPortPhrases are what TLS servers answer a plain HTTP request with,
// in a 400's body, lowercased: nginx's, Go's (Caddy, Traefik), Apache's.
var tlsPortPhrases = [...]string{
	"plain http request was sent to https port",
	"client sent an http request to an https server",
	"speaking plain http to an ssl-enabled server port",
}

// tlsPort is the round trip of a plain HTTP request r, whose answer was
// resp or err, as a *TLSPortError when the server speaks TLS (see
// TLSPortError); else resp and err as they were, resp's body put back
// when it was read.
func tlsPort(r *http.Request, resp *http.Response, err error) (*http.Response, error) {
	if r.URL.Scheme != "http" || r.Context().Err() != nil {
		return resp, err
	}
	addr := canonicalAddr(r.URL)
	if err != nil {
		if closedEarly(err) && speaksTLS(r.Context(), addr, r.URL.Hostname()) {
			return nil, &TLSPortError{Addr: addr, Answer: "closed the connection (" + err.Error() + ")", Err: err}
		}
		return resp, err
	}
	if resp.StatusCode != http.StatusBadRequest {
		return resp, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	lower := strings.ToLower(string(b))
	for _, p := range tlsPortPhrases {
		if i := strings.Index(lower, p); i >= 0 {
			resp.Body.Close()
			return nil, &TLSPortError{Addr: addr, Answer: "answered 400 " + strconv.Quote(string(b[i:i+len(p)]))}
		}
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	return resp, nil
}

// canonicalAddr is u's host:port, the scheme's port when u names none.
func canonicalAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// speaksTLS reports whether the server at addr completes a TLS handshake
// (whatever its certificate: only whether it speaks TLS is asked, and
// nothing is sent over the session).
func speaksTLS(ctx context.Context, addr, host string) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{ServerName: host, InsecureSkipVerify: true}} //nolint:gosec // a probe: no data is sent
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// SpeaksTLS reports whether err is a plain HTTP request to a server that
// speaks TLS (TLSPortError).
func SpeaksTLS(err error) bool {
	var tp *TLSPortError
	return errors.As(err, &tp)
}

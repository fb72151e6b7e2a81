package provider

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// countingListener counts the connections it accepts and keeps them.
type countingListener struct {
	net.Listener
	n        atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
	accepted chan struct{} // one value per accepted connection
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
		select {
		case l.accepted <- struct{}{}:
		default:
		}
	}
	return c, err
}

// waitAccepted waits until the server has accepted a connection: a
// client's connect completes in the kernel before the server's Accept
// returns.
func (l *countingListener) waitAccepted(t *testing.T) {
	t.Helper()
	select {
	case <-l.accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("the server accepted no connection")
	}
}

func noProxy(*http.Request) (*url.URL, error) { return nil, nil }

// predialServer starts a server (TLS with HTTP/2 when tlsOn) whose
// listener counts connections.
func predialServer(t *testing.T, tlsOn bool) (*httptest.Server, *countingListener) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	l := &countingListener{Listener: srv.Listener, accepted: make(chan struct{}, 16)}
	srv.Listener = l
	if tlsOn {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, l
}

func roots(srv *httptest.Server) *x509.CertPool {
	if srv.TLS == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return pool
}

// get sends one request with c and returns the protocol the server saw.
func get(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPredialHandsOver: the first request goes over the pre-dialed
// connection (the server accepts no other), with the protocol the
// transport would have negotiated itself (HTTP/2 over TLS); a request
// after the connection is gone dials normally.
func TestPredialHandsOver(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tls   bool
		proto string
	}{
		{"http", false, "HTTP/1.1"},
		{"https", true, "HTTP/2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, l := predialServer(t, tc.tls)
			p := startPredial(context.Background(), srv.URL+"/v1", noProxy, roots(srv))
			if p == nil {
				t.Fatal("no pre-dial for", srv.URL)
			}
			defer p.Close()
			<-p.done
			if p.err != nil {
				t.Fatal(p.err)
			}
			l.waitAccepted(t)
			if n := l.n.Load(); n != 1 {
				t.Fatalf("%d connections accepted after the pre-dial, want 1", n)
			}
			c := p.Client(http.Header{"X-Test": {"1"}}, time.Minute, nil)
			if got := get(t, c, srv.URL+"/v1/models"); got != tc.proto {
				t.Errorf("the server saw %s, want %s", got, tc.proto)
			}
			if n := l.n.Load(); n != 1 {
				t.Errorf("%d connections for the first request, want the pre-dialed one", n)
			}
			c.CloseIdleConnections()
			if got := get(t, c, srv.URL+"/v1/models"); got != tc.proto {
				t.Errorf("the second connection's server saw %s, want %s", got, tc.proto)
			}
			if n := l.n.Load(); n != 2 {
				t.Errorf("%d connections after the first was closed, want 2", n)
			}
		})
	}
}

// TestPredialSendsNothing: the pre-dialed connection carries no byte
// until a request is made, and Close closes it when nobody took it.
func TestPredialSendsNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := startPredial(context.Background(), "http://"+ln.Addr().String(), noProxy, nil)
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var b [1]byte
	if n, err := conn.Read(b[:]); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes (%v) from a connection nothing was asked of", n, err)
	}
	p.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(b[:]); !errors.Is(err, io.EOF) {
		t.Errorf("after Close the connection reads %v, want EOF", err)
	}
	p.Close() // twice is fine
}

// TestPredialTooOld: a connection older than PredialMaxAge is closed, not
// handed over; the request dials anew.
func TestPredialTooOld(t *testing.T) {
	srv, l := predialServer(t, false)
	p := startPredial(context.Background(), srv.URL, noProxy, nil)
	defer p.Close()
	<-p.done
	p.at = p.at.Add(-PredialMaxAge - time.Second)
	get(t, p.Client(nil, 0, nil), srv.URL)
	if n := l.n.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the old one dropped, a new one dialed)", n)
	}
}

// TestPredialFailedDial: when the pre-dial fails, the request dials
// itself and reports its own error.
func TestPredialFailedDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := startPredial(context.Background(), "http://"+addr, noProxy, nil)
	defer p.Close()
	<-p.done
	if p.err == nil {
		t.Fatal("the pre-dial of a closed port succeeded")
	}
	_, err = p.Client(nil, 0, nil).Get("http://" + addr)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("the request's error is %v, want its own dial's", err)
	}
}

// TestPredialOnlyWhereItApplies: no pre-dial for what is not an http(s)
// URL or goes through a proxy; a nil Predial is the default client.
func TestPredialOnlyWhereItApplies(t *testing.T) {
	proxy := func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy:3128") }
	for _, tc := range []struct {
		name, url string
		proxy     func(*http.Request) (*url.URL, error)
	}{
		{"empty", "", noProxy},
		{"scheme", "ftp://example.com", noProxy},
		{"no host", "https:///v1", noProxy},
		{"unparsable", "http://[::1", noProxy},
		{"proxied", "https://api.example.com/v1", proxy},
	} {
		if p := startPredial(context.Background(), tc.url, tc.proxy, nil); p != nil {
			p.Close()
			t.Errorf("%s: a pre-dial for %q", tc.name, tc.url)
		}
	}
	var p *Predial
	if c := p.Client(nil, 0, nil); c == nil || p.Transport() != nil || p.Close() != nil {
		t.Error("a nil Predial is not HeaderClient's")
	}
}

// TestPredialCanceled: a request whose context ends while the pre-dial
// is still connecting returns the context's error, and the connection is
// released when it comes.
func TestPredialCanceled(t *testing.T) {
	p := &Predial{addr: "x:1", done: make(chan struct{}), cancel: func() {}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok, err := p.take(ctx, "x:1", false); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("take = %v, %v; want the context's error", ok, err)
	}
	a, b := net.Pipe()
	p.conn = a
	close(p.done)
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := b.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the abandoned connection reads %v, want EOF (closed)", err)
	}
}

// TestPredialConnectsWhileCallerWorks checks that the dial starts while
// the caller goes on working without blocking, with no other thread free
// to take the dial's goroutine (GOMAXPROCS=1): the listener has the
// connection pending before the caller waits for anything.
func TestPredialConnectsWhileCallerWorks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	// pending polls the listening socket without giving up the thread.
	pending := func() bool {
		ready := false
		if err := rc.Control(func(fd uintptr) {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, _ := unix.Poll(fds, 0)
			ready = n > 0 && fds[0].Revents&unix.POLLIN != 0
		}); err != nil {
			t.Fatal(err)
		}
		return ready
	}
	p := startPredial(context.Background(), "http://"+ln.Addr().String(), noProxy, nil)
	defer p.Close()
	// The caller's work: a few milliseconds of CPU, well under the
	// runtime's 10 ms preemption of a running goroutine.
	connected := false
	for start := time.Now(); time.Since(start) < 3*time.Millisecond && !connected; {
		connected = pending()
	}
	if !connected {
		t.Fatal("the pre-dial had not connected while the caller worked: its goroutine waited for the caller to block")
	}
}

package provider

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// rawServer serves every connection with serve, on a loopback port, and
// returns its host:port.
func rawServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); serve(c) }()
		}
	}()
	return l.Addr().String()
}

// readFirst reads what a client sent first: a TLS record whole, else
// a line.
func readFirst(c net.Conn) (hello bool) {
	var h [5]byte
	if _, err := io.ReadFull(c, h[:1]); err != nil {
		return false
	}
	if h[0] != 0x16 {
		b := make([]byte, 512)
		c.Read(b)
		return false
	}
	if _, err := io.ReadFull(c, h[1:]); err == nil {
		io.CopyN(io.Discard, c, int64(h[3])<<8|int64(h[4]))
	}
	return true
}

// TestHandshakeError: the transport's dial step tells a failed handshake
// (no connection to retry before the server ever answered) from a
// connection broken after it, and says plain HTTP only when the server
// speaks it.
func TestHandshakeError(t *testing.T) {
	for _, tc := range []struct {
		name            string
		serve           func(net.Conn)
		handshake, http bool
	}{
		{"answers the handshake in HTTP", func(c net.Conn) {
			readFirst(c)
			io.WriteString(c, "HTTP/1.0 400 Bad Request\r\n\r\n")
		}, true, true},
		{"closes the handshake, answers HTTP", func(c net.Conn) {
			if !readFirst(c) {
				io.WriteString(c, "HTTP/1.0 501 Unsupported method ('HEAD')\r\n\r\n")
			}
		}, true, true},
		{"closes the handshake, answers HTTP with 400 (a TLS port)", func(c net.Conn) {
			if !readFirst(c) {
				io.WriteString(c, "HTTP/1.1 400 Bad Request\r\n\r\nThe plain HTTP request was sent to HTTPS port")
			}
		}, true, false},
		{"closes everything", func(c net.Conn) { readFirst(c) }, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := rawServer(t, tc.serve)
			_, err := (&http.Client{Transport: NewTransport()}).Get("https://" + addr + "/")
			var hs *HandshakeError
			if got := errors.As(err, &hs); got != tc.handshake || !NoConnection(err) {
				t.Fatalf("error %v: a handshake error %v, want %v, and no connection", err, got, tc.handshake)
			}
			if got := PlainHTTP(err); got != tc.http {
				t.Errorf("error %v: PlainHTTP %v, want %v", err, got, tc.http)
			}
		})
	}
	t.Run("a TLS server is reached, and a stream it cuts is no handshake error", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "data: cut")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}))
		srv.EnableHTTP2 = true
		srv.StartTLS()
		defer srv.Close()
		tr := NewTransport()
		tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Errorf("protocol %s, want HTTP/2 as http.DefaultTransport negotiates", resp.Proto)
		}
		_, err = io.ReadAll(resp.Body)
		if err == nil || NoConnection(err) || PlainHTTP(err) {
			t.Errorf("the cut stream's error %v, want one that is retried as a broken stream", err)
		}
	})
	t.Run("a cancelled dial is the context's", func(t *testing.T) {
		addr := rawServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/", nil)
		_, err := (&http.Client{Transport: NewTransport()}).Do(req)
		var hs *HandshakeError
		if errors.As(err, &hs) || !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("error %v, want the context's", err)
		}
	})
}

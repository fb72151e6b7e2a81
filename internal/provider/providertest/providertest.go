// Package providertest holds what the model adapters' tests share: a
// one-message turn, an address nothing listens on, and the check that an
// adapter's errors name the provider the user chose.
package providertest

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
)

// ReachHint and KeyHint are what a named provider's errors say to check
// when its server cannot be reached and when it refuses the key.
const (
	ReachHint = "check base_url of [providers.corp] in /home/u/.config/truss/config.toml"
	KeyHint   = "check CORP_KEY (env_key of [providers.corp] in /home/u/.config/truss/config.toml)"
)

// ClosedURL is an http:// address of a local port nothing listens on.
func ClosedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// Retrying is a policy that would try a turn four times, quickly: a test
// of an error that must not be retried counts the requests under it.
var Retrying = provider.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}

// TokenEndpoint is the address of an OAuth token endpoint that answers
// every request with status, contentType and body.
func TokenEndpoint(t testing.TB, status int, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// ForeignServer is the address of a web server that is no model API: it
// answers every request with status and an HTML page, as a web server's
// error page or Python's http.server answering POST with 501 does. hits
// counts its requests.
func ForeignServer(t testing.TB, status int) (base string, hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		w.Write([]byte("<!DOCTYPE html>\n<html><head><title>Error response</title></head><body>" + http.StatusText(status) + "</body></html>\n"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

// CheckNotAPI fails t unless err says the server is not the API
// (provider.ErrNotAPI, so the model counts as unreached) after one
// request of the server's hits (no retry), and its text holds every
// string of want.
func CheckNotAPI(t testing.TB, err error, hits *atomic.Int32, want []string) {
	t.Helper()
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Kind != provider.ErrNotAPI {
		t.Fatalf("error %v, want an ErrNotAPI", err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("%d requests, want 1 (no retry)", n)
	}
	if !provider.Unreached(err) {
		t.Error("Unreached is false: the session would be kept")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not hold %q", err, w)
		}
	}
}

// OneTurn runs one turn of p, as modelName, on a one-message
// conversation and returns its error.
func OneTurn(p provider.Provider, modelName string) error {
	_, err := p.Turn(context.Background(), &model.Request{Model: modelName, MaxTokens: 100,
		Items: []model.Item{{Kind: model.KindUser, Text: "Hello."}}}, nil)
	return err
}

// LabelCase is a turn whose error must be a *provider.Error of Kind whose
// text starts with Want[0] ("NAME: ", once; its Provider is NAME) and
// holds each of Want[1:].
type LabelCase struct {
	Name string
	Turn func() error
	Kind provider.ErrorKind
	Want []string
}

// CheckErrorLabels runs each case as a subtest of t.
func CheckErrorLabels(t *testing.T, cases []LabelCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			err := tc.Turn()
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != tc.Kind {
				t.Fatalf("error %v, want a %s *provider.Error", err, tc.Kind)
			}
			if !strings.HasPrefix(err.Error(), tc.Want[0]) || strings.HasPrefix(err.Error()[len(tc.Want[0]):], tc.Want[0]) {
				t.Errorf("error %q does not start with %q once", err, tc.Want[0])
			}
			if pe.Provider != strings.TrimSuffix(tc.Want[0], ": ") {
				t.Errorf("Provider %q, want %q", pe.Provider, strings.TrimSuffix(tc.Want[0], ": "))
			}
			for _, w := range tc.Want[1:] {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not hold %q", err, w)
				}
			}
		})
	}
}

// JSONServer is the address of a server that answers every request with
// status and a JSON body (a router's {"detail":"Not Found"}, a local
// server's own error shape). hits counts its requests.
func JSONServer(t testing.TB, status int, body string) (base string, hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

// TypedServer is the address of a server that answers every request with
// status and body, of contentType (none when ""). hits counts its
// requests.
func TypedServer(t testing.TB, status int, contentType, body string) (base string, hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

// Router404s are the JSON 404s of routers that are not a model API: a
// FastAPI app's (vLLM, LiteLLM without /v1), llama.cpp's server's for an
// unknown route, a string error.
var Router404s = map[string]string{
	"fastapi":   `{"detail":"Not Found"}`,
	"llama.cpp": `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`,
	"string":    `{"error":"Unexpected endpoint or method. (POST /v1/messages)"}`,
}

// PlainHTTPServer is the host:port of a plain-HTTP server that closes,
// without a word, every connection whose first byte begins a TLS record
// (as Python's http.server does with a handshake it cannot read as a
// request line), and answers any other request with a small page: the
// address an https:// base URL of a local server reaches. hellos counts
// the handshakes it closed, pages the requests it answered.
func PlainHTTPServer(t testing.TB) (hostport string, hellos, pages *atomic.Int32) {
	t.Helper()
	hellos, pages = new(atomic.Int32), new(atomic.Int32)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pages.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotImplemented)
	}))
	srv.Listener = helloCloser{Listener: srv.Listener, hellos: hellos}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), hellos, pages
}

// helloCloser is a listener whose connections that begin with a TLS
// record (0x16, a handshake) are closed at once.
type helloCloser struct {
	net.Listener
	hellos *atomic.Int32
}

func (l helloCloser) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var b [1]byte
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, _ := c.Read(b[:]); n == 1 && b[0] != 0x16 {
			c.SetReadDeadline(time.Time{})
			return &prefixConn{Conn: c, first: b[0]}, nil
		}
		if b[0] == 0x16 {
			// The record is read whole before the close, so that the
			// client meets the end of the stream (EOF), not a reset.
			l.hellos.Add(1)
			var h [4]byte
			if _, err := io.ReadFull(c, h[:]); err == nil {
				io.CopyN(io.Discard, c, int64(h[2])<<8|int64(h[3]))
			}
		}
		c.Close()
	}
}

// prefixConn gives back the byte Accept read before the rest.
type prefixConn struct {
	net.Conn
	first byte
	given bool
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if !c.given && len(p) > 0 {
		c.given = true
		p[0] = c.first
		return 1, nil
	}
	return c.Conn.Read(p)
}

// CheckPlainHTTPS runs turn with the https:// address of a PlainHTTPServer
// (no path) and a retrying policy whose server was never answered, and
// fails t unless the turn's error is one unretried unreachable error that
// leaves the model unreached, says the server speaks plain HTTP, and
// holds every string of want. It is the check of every adapter: the
// handshake fails in the transport's dial step, before any request.
func CheckPlainHTTPS(t *testing.T, turn func(base string, retry provider.RetryPolicy) error, want ...string) {
	t.Helper()
	addr, hellos, pages := PlainHTTPServer(t)
	var retries int
	p := Retrying
	p.Contact = &provider.Contact{}
	p.OnRetry = func(int, time.Duration, error) { retries++ }
	err := turn("https://"+addr, p)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Kind != provider.ErrUnreachable {
		t.Fatalf("error %v, want an ErrUnreachable", err)
	}
	if retries != 0 || hellos.Load() != 1 {
		t.Errorf("%d retries, %d handshakes, want none and 1", retries, hellos.Load())
	}
	if pages.Load() != 1 {
		t.Errorf("%d plain requests, want the 1 that tells plain HTTP", pages.Load())
	}
	if !provider.Unreached(err) || !provider.NoConnection(err) {
		t.Error("the model counts as reached: the session would be kept")
	}
	for _, w := range append([]string{"cannot reach", "TLS handshake with " + addr + " failed: EOF", "the server speaks plain HTTP: use http:// in its address"}, want...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not hold %q", err, w)
		}
	}
}

// EchoKey is the key CheckListMasked sends: a server that echoes it in
// its error gives it back.
const EchoKey = "sk-echo-SECRET0123456789"

// CheckListMasked runs list against a server that answers every request
// with status and body, whose KEY is replaced by the credential the
// request carried (Authorization's token, x-api-key, x-goog-api-key), as
// gateways and self-hosted proxies echo a refused key; list sends
// EchoKey and is given it as the policy's secret. It fails t unless the
// error holds no trace of the key and says where it was hidden.
func CheckListMasked(t *testing.T, status int, body string, list func(base string, retry provider.RetryPolicy) error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := cmp.Or(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), r.Header.Get("X-Api-Key"), r.Header.Get("X-Goog-Api-Key"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, strings.ReplaceAll(body, "KEY", key))
	}))
	t.Cleanup(srv.Close)
	err := list(srv.URL, provider.RetryPolicy{MaxAttempts: 1, Secrets: []string{EchoKey}})
	if err == nil {
		t.Fatal("the listing succeeded")
	}
	if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "***") {
		t.Errorf("error %q shows the key, or not where it was hidden", err)
	}
}

// Answers of a server that ignores "stream": true, each adapter's whole
// answer as its API gives it unstreamed.
const (
	WholeChat      = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`
	WholeResponses = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hello.","annotations":[]}]}]}`
	WholeMessages  = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":2}}`
)

// CheckNotStream runs turn against servers that answer 200 with no event
// stream (whole, the adapter's whole answer given unstreamed, a health
// check's JSON, plain text, an empty body) and fails t unless each is one
// error without a retry: "answered without streaming" for whole, not the
// API (ErrNotAPI) for the others, with what the server answered.
func CheckNotStream(t *testing.T, whole string, turn func(base string) error) {
	t.Helper()
	for _, tc := range []struct {
		name, contentType, body string
		kind                    provider.ErrorKind
		want                    []string
	}{
		{"a whole answer", "application/json", whole, provider.ErrProtocol, []string{"answered without streaming", "ignores stream: true", "answered 200 OK"}},
		{"a health check's JSON", "application/json", `{"status":"ok"}`, provider.ErrNotAPI, []string{"does not look like", `answered 200 OK: "{\"status\":\"ok\"}"`}},
		{"plain text", "text/plain", "OK\n", provider.ErrNotAPI, []string{"does not look like", `answered 200 OK: "OK"`}},
		{"an empty body", "", "", provider.ErrNotAPI, []string{"does not look like", "answered 200 OK with an empty body"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, hits := TypedServer(t, http.StatusOK, tc.contentType, tc.body)
			err := turn(base)
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != tc.kind {
				t.Fatalf("error %v, want a %s", err, tc.kind)
			}
			if n := hits.Load(); n != 1 {
				t.Errorf("%d requests, want 1 (no retry)", n)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not hold %q", err, w)
				}
			}
		})
	}
}

// nginxTLSPort is nginx's answer to a plain HTTP request on its TLS port.
const nginxTLSPort = "HTTP/1.1 400 Bad Request\r\nServer: nginx\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n" +
	"<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n" +
	"<center>The plain HTTP request was sent to HTTPS port</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"

// TLSServer is the host:port of a server that speaks TLS (any handshake
// completes) and meets a plain HTTP request as plain does: "nginx"
// answers nginx's 400, "go" Go's own ("Client sent an HTTP request to an
// HTTPS server."), "reset" resets the connection, as Python's ssl
// module's server does. plain counts the plain requests.
func TLSServer(t testing.TB, plain string) (hostport string, plainHits *atomic.Int32) {
	t.Helper()
	plainHits = new(atomic.Int32)
	ts := httptest.NewUnstartedServer(http.NotFoundHandler())
	if plain == "go" {
		// Set before the server starts: its goroutines read it.
		ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				plainHits.Add(1)
			}
		}
	}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	if plain == "go" {
		return ts.Listener.Addr().String(), plainHits
	}
	cfg := ts.TLS.Clone()
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
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				var b [1]byte
				if n, _ := c.Read(b[:]); n != 1 {
					return
				}
				if b[0] == 0x16 {
					tls.Server(&prefixConn{Conn: c, first: b[0]}, cfg).Handshake()
					return
				}
				plainHits.Add(1)
				if plain == "reset" {
					if tc, ok := c.(*net.TCPConn); ok {
						tc.SetLinger(0)
					}
					return
				}
				http.ReadRequest(bufio.NewReader(&prefixConn{Conn: c, first: b[0]}))
				io.WriteString(c, nginxTLSPort)
			}()
		}
	}()
	return l.Addr().String(), plainHits
}

// CheckPlainToTLS runs turn with the http:// address (no path) of each
// kind of TLSServer and a retrying policy whose server was never
// answered, and fails t unless the turn's error is one unretried
// unreachable error that leaves the model unreached, says the server
// speaks TLS and to use https://, and holds every string of want.
func CheckPlainToTLS(t *testing.T, turn func(base string, retry provider.RetryPolicy) error, want ...string) {
	t.Helper()
	for _, plain := range []string{"nginx", "go", "reset"} {
		t.Run(plain, func(t *testing.T) {
			addr, hits := TLSServer(t, plain)
			var retries int
			p := Retrying
			p.Contact = &provider.Contact{}
			p.OnRetry = func(int, time.Duration, error) { retries++ }
			err := turn("http://"+addr, p)
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != provider.ErrUnreachable {
				t.Fatalf("error %v, want an ErrUnreachable", err)
			}
			if retries != 0 || hits.Load() != 1 {
				t.Errorf("%d retries, %d plain requests, want none and 1", retries, hits.Load())
			}
			if !provider.Unreached(err) {
				t.Error("the model counts as reached: the session would be kept")
			}
			for _, w := range append([]string{"the server at " + addr + " speaks TLS", "use https:// in its address"}, want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not hold %q", err, w)
				}
			}
		})
	}
}

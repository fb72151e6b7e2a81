package trusscli

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestServeHTTPToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := sdkmcp.NewServer(&sdkmcp.Implementation{Name: "t"}, nil)
	go serveHTTP(ctx, ln, srv, false, "s3cret")
	url := "http://" + ln.Addr().String() + "/mcp"
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, tc := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer wrong", 401}, {"Bearer s3cret", 200}} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Authorization %q: status %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:0": true, "[::1]:80": true, "localhost:8080": true, "0.0.0.0:1": false, "10.0.0.1:9": false, "example.com:1": false, "bad": false} {
		if loopback(addr) != want {
			t.Errorf("loopback(%q) = %v", addr, !want)
		}
	}
}

// TestServeToken: an HTTP server always wants a token: the variable's
// value, or a new random one on loopback; never none.
func TestServeToken(t *testing.T) {
	t.Setenv("TRUSS_TEST_MCP_TOKEN", "chosen")
	a, made, err := serveToken("127.0.0.1:0", "", false)
	b, _, _ := serveToken("127.0.0.1:0", "", false)
	if err != nil || !made || len(a) != 32 || a == b {
		t.Errorf("loopback without --token-env: %q %q made %v %v, want two different random tokens", a, b, made, err)
	}
	if tok, made, err := serveToken("127.0.0.1:0", "TRUSS_TEST_MCP_TOKEN", false); err != nil || made || tok != "chosen" {
		t.Errorf("--token-env: %q %v %v", tok, made, err)
	}
	if tok, _, err := serveToken("", "", false); err != nil || tok != "" {
		t.Errorf("stdio: %q %v", tok, err)
	}
	for _, c := range [][2]string{{"0.0.0.0:0", ""}, {"", "TRUSS_TEST_MCP_TOKEN"}, {"127.0.0.1:0", "TRUSS_TEST_NO_SUCH"}} {
		if _, _, err := serveToken(c[0], c[1], false); err == nil {
			t.Errorf("serveToken(%q, %q): no error", c[0], c[1])
		}
	}
	if tok, _, err := serveToken("127.0.0.1:0", "", true); err != nil || tok != "" {
		t.Errorf("--no-token on loopback: %q %v", tok, err)
	}
	if _, _, err := serveToken("0.0.0.0:0", "", true); err == nil {
		t.Errorf("--no-token on a non-loopback address: no error")
	}
}

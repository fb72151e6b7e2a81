package provider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestExplainAnsweringServer: a server that answered the handshake (in
// plain HTTP, or with a certificate this machine does not trust) is
// running, and the error says what it needs instead: http://, or
// SSL_CERT_FILE.
func TestExplainAnsweringServer(t *testing.T) {
	const hint = "check OPENAI_BASE_URL and that the server is running"
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	for _, tc := range []struct {
		name, url, want string
	}{
		{"untrusted", tlsSrv.URL, "; check OPENAI_BASE_URL; the server's certificate is signed by a certificate authority this machine does not trust: if it is your own (a company's CA, a self-signed certificate), set SSL_CERT_FILE"},
		{"plain HTTP", strings.Replace(plain.URL, "http:", "https:", 1), "; check OPENAI_BASE_URL; the server speaks plain HTTP: use http:// in its address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := &http.Client{Transport: NewTransport()}
			_, err := RetryPolicy{MaxAttempts: 1, Contact: &Contact{}}.Do(context.Background(), func(int) error {
				_, err := client.Post(tc.url+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
				return TransportError(context.Background(), "chat", hint, err)
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "server is running") {
				t.Errorf("%v\nwant %q", err, tc.want)
			}
		})
	}
}

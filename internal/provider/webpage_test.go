package provider

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestWebPageStatus: an error status answered with a web page says it is
// a proxy's or a firewall's page, by its title, without the markup and
// without the adapter's words about the key; a JSON refusal keeps them.
func TestWebPageStatus(t *testing.T) {
	cloudflare := "<!DOCTYPE html>\n<html>\n<head><title>Attention Required! |\n Cloudflare</title></head>\n<body>Sorry, you have been blocked</body>\n</html>"
	for _, tc := range []struct {
		name   string
		status int
		msg    string
		want   string
	}{
		{"a firewall's 403", 403, cloudflare + "; check OPENAI_API_KEY",
			`the answer is a web page ("Attention Required! | Cloudflare"), not the API's JSON: a proxy, firewall or CDN between here and the API refused the request, not the API the key is for; check the address and the network's proxy (HTTPS_PROXY)`},
		{"a first line only", 403, "<!DOCTYPE html>; check OPENAI_API_KEY",
			`the answer is a web page, not the API's JSON: a proxy, firewall or CDN between here and the API refused the request, not the API the key is for; check the address and the network's proxy (HTTPS_PROXY)`},
		{"a gateway's 502", 502, "<html><head><title>502 Bad Gateway</title></head><body><center>nginx</center></body></html>",
			`the answer is a web page ("502 Bad Gateway"), not the API's JSON: a proxy or gateway between here and the API answered`},
		{"the API's refusal", 403, "permission_error: no access; check ANTHROPIC_API_KEY", "permission_error: no access; check ANTHROPIC_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RetryPolicy{MaxAttempts: 1}.Do(context.Background(), func(int) error {
				return HTTPError("chat", tc.status, "", tc.msg, nil, nil)
			})
			var pe *Error
			if err == nil || !strings.Contains(err.Error(), "HTTP ") {
				t.Fatalf("%v", err)
			}
			if errors.As(err, &pe); pe.Message != tc.want {
				t.Errorf("%q\nwant %q", pe.Message, tc.want)
			}
		})
	}
}

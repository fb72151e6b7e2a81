package page_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/ledger/page"
	"github.com/trussdev/truss/internal/session"
)

// sampleStore is a session store holding one session, m.ID, whose ledger
// is sample's with turns turns: the store's and the session's
// directories and the verifier key.
func sampleStore(t *testing.T, turns int, m session.Meta) (store, sd, vkey string) {
	t.Helper()
	dir, vkey := sample(t, turns, true)
	store = t.TempDir()
	sd = filepath.Join(store, m.ID)
	if err := os.MkdirAll(sd, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, filepath.Join(sd, "ledger")); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(sd, "meta.json"), meta, 0o600); err != nil {
		t.Fatal(err)
	}
	return store, sd, vkey
}

func TestServer(t *testing.T) {
	store, sd, vkey := sampleStore(t, 2, session.Meta{ID: "S1", Updated: time.Now(), Model: "sim-claude", Provider: "sim", Task: "Fix the <b>bug</b>.", Status: "completed", Turns: 3})
	srv := httptest.NewServer(&page.Server{Store: session.Store{Dir: store}, VKey: vkey})
	defer srv.Close()
	get := func(method, path, host string, site ...string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for _, s := range site {
			req.Header.Add("Sec-Fetch-Site", s)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	code, h, body := get("GET", "/", "")
	if code != 200 || !strings.Contains(body, `href="/session/S1"`) || strings.Contains(body, "<b>bug") || !strings.Contains(body, "&lt;b&gt;bug") ||
		!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("listing: %d %v\n%s", code, h, body)
	}
	code, h, body = get("GET", "/session/S1", "localhost:80")
	if code != 200 || !strings.Contains(body, `id="truss-ledger"`) || h.Get("Content-Security-Policy") == "" {
		t.Errorf("session page: %d %v", code, h)
	}
	if res, err := page.Verify([]byte(body), vkey); err != nil || res.Runs[0].Report.Entries != 17 {
		t.Errorf("the served page: %v", err)
	}
	for _, tt := range []struct {
		method, path, host string
		code               int
	}{
		{"POST", "/", "", http.StatusMethodNotAllowed},
		{"DELETE", "/session/S1", "", http.StatusMethodNotAllowed},
		{"GET", "/", "attacker.example:80", http.StatusMisdirectedRequest},
		{"GET", "/session/S2", "", http.StatusNotFound},
		{"GET", "/session/..", "", http.StatusNotFound},
		{"GET", "/session/S1/../../x", "", http.StatusNotFound},
		{"GET", "/other", "", http.StatusNotFound},
	} {
		if code, _, _ := get(tt.method, tt.path, tt.host); code != tt.code {
			t.Errorf("%s %s (Host %q): %d, want %d", tt.method, tt.path, tt.host, code, tt.code)
		}
	}
	// What a browser says of a request's origin: its own pages and an
	// address the user opened are answered, another site's are not.
	for _, tt := range []struct {
		site []string
		code int
	}{
		{[]string{"same-origin"}, http.StatusOK},
		{[]string{"none"}, http.StatusOK},
		{[]string{"cross-site"}, http.StatusForbidden},
		{[]string{"same-site"}, http.StatusForbidden},
		{[]string{""}, http.StatusForbidden},
		{[]string{"Same-Origin"}, http.StatusForbidden},
		{[]string{"none", "cross-site"}, http.StatusForbidden},
	} {
		for _, path := range []string{"/", "/session/S1", "/session/S2"} {
			if code, _, _ := get("GET", path, "", tt.site...); code != tt.code && (tt.code != http.StatusOK || path != "/session/S2") {
				t.Errorf("GET %s with Sec-Fetch-Site %q: %d, want %d", path, tt.site, code, tt.code)
			}
		}
	}
	// A session whose ledger no longer verifies is refused, saying why.
	entries := filepath.Join(sd, "ledger", "entries.jsonl")
	b, _ := os.ReadFile(entries)
	os.WriteFile(entries, []byte(strings.Replace(string(b), `"sim-claude"`, `"sim-claudE"`, 1)), 0o600)
	if code, _, body := get("GET", "/session/S1", ""); code != http.StatusUnprocessableEntity || !strings.Contains(body, "NOT VERIFIED: ledger") {
		t.Errorf("a changed ledger: %d %s", code, body)
	}
}

// TestServerToken: with a token, a request without it (any process of the
// machine connecting to the port) reads nothing; the printed address
// sets a cookie and sends the browser on without the token, and the
// cookie alone then opens the listing and the pages.
func TestServerToken(t *testing.T) {
	store, _, vkey := sampleStore(t, 1, session.Meta{ID: "S1", Updated: time.Now(), Task: "secret-task", Status: "completed"})
	const token = "0123456789abcdef0123456789abcdef"
	srv := httptest.NewServer(&page.Server{Store: session.Store{Dir: store}, VKey: vkey, Token: token})
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, cookie *http.Cookie) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, tt := range []struct {
		path   string
		cookie *http.Cookie
	}{
		{"/", nil},
		{"/session/S1", nil},
		{"/?token=wrong", nil},
		{"/session/S1", &http.Cookie{Name: "truss-ledger-token", Value: "wrong"}},
		{"/", &http.Cookie{Name: "other", Value: token}},
	} {
		resp, body := get(tt.path, tt.cookie)
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "secret-task") || strings.Contains(body, "truss-ledger\"") {
			t.Errorf("GET %s with %v: %d, want 401 and nothing of the sessions: %.200s", tt.path, tt.cookie, resp.StatusCode, body)
		}
	}
	resp, _ := get("/session/S1?token="+token, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/session/S1" {
		t.Fatalf("the printed address: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "truss-ledger-token" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("the cookie: %+v", cookie)
	}
	if resp, body := get("/", cookie); resp.StatusCode != 200 || !strings.Contains(body, "secret-task") {
		t.Errorf("the listing with the cookie: %d", resp.StatusCode)
	}
	if resp, body := get("/session/S1", cookie); resp.StatusCode != 200 || !strings.Contains(body, `id="truss-ledger"`) {
		t.Errorf("the page with the cookie: %d", resp.StatusCode)
	}
}

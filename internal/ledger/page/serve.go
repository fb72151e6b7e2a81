package page

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"html"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/session"
)

// Server serves the saved sessions of a session store, read-only: "/"
// lists them, "/session/ID" is a session's page (every run's ledger,
// verified with VKey before the page is made; the page verifies itself
// again in the browser). It answers GET and HEAD only, and only requests
// whose Host is a loopback address or localhost, so that no other site's
// page can reach it through a name that resolves to this machine; and it
// refuses (403) a request whose Sec-Fetch-Site is present and neither
// same-origin nor none, so that a page of another site that a browser
// sends to it (by its loopback address) can neither load a session nor
// time its answer.
//
// When Token is set, every request must carry it, so that no other
// process of the machine (a sandboxed command with the network on, any
// other user) can read the sessions by connecting to the port: as the
// query parameter token (the address `truss ledger serve` prints), which
// the server answers with an HttpOnly, SameSite=Strict cookie and a
// redirect to the same address without it, or as that cookie. Anything
// else is refused (401) before the store is read.
type Server struct {
	Store session.Store
	VKey  string
	Token string
	// Options are the pages' (MaxPayload, Redact); VKey is the server's.
	Options Options
}

// listCSS is the listing's style sheet.
const listCSS = `body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:0 auto;padding:0 16px}` +
	`table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:4px 8px;border-bottom:1px solid #8884;vertical-align:top}` +
	`.mut{color:#888;font-size:12px}`

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	if !loopbackHost(r.Host) {
		http.Error(w, "this server answers requests for localhost only", http.StatusMisdirectedRequest)
		return
	}
	// A browser says where a request comes from: a page of another site
	// (or another port) must not load the sessions, nor time how long a
	// session id takes to answer.
	if site, ok := r.Header["Sec-Fetch-Site"]; ok && (len(site) != 1 || site[0] != "same-origin" && site[0] != "none") {
		http.Error(w, "this server answers its own pages and addresses typed or opened by the user only (Sec-Fetch-Site same-origin or none)", http.StatusForbidden)
		return
	}
	if s.Token != "" && !s.authorized(w, r) {
		return
	}
	switch {
	case r.URL.Path == "/":
		s.list(w)
	case strings.HasPrefix(r.URL.Path, "/session/"):
		s.session(w, strings.TrimPrefix(r.URL.Path, "/session/"))
	default:
		http.NotFound(w, r)
	}
}

// tokenCookie is the cookie that carries the server's token.
const tokenCookie = "truss-ledger-token"

// authorized reports whether r carries the server's token; when it does
// not, or carries it in the query (then the cookie is set and the
// browser sent to the address without it), it has answered already.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	same := func(t string) bool { return subtle.ConstantTimeCompare([]byte(t), []byte(s.Token)) == 1 }
	if q := r.URL.Query(); q.Has("token") {
		if !same(q.Get("token")) {
			http.Error(w, "wrong token: open the address truss ledger serve printed", http.StatusUnauthorized)
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: s.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	if c, err := r.Cookie(tokenCookie); err == nil && same(c.Value) {
		return true
	}
	http.Error(w, "this server needs its token: open the address truss ledger serve printed (with ?token=…)", http.StatusUnauthorized)
	return false
}

// loopbackHost reports whether a request's Host names this machine's
// loopback: localhost or a loopback address, with any port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) list(w http.ResponseWriter) {
	metas, err := s.Store.List()
	if err != nil {
		http.Error(w, "listing the sessions: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
	b.WriteString(`<meta name="color-scheme" content="light dark"><title>Truss sessions</title><style>` + listCSS + "</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>Truss sessions</h1><p class=\"mut\">%s — %d sessions. The model, status and task come from each session's metadata, which nothing signs; open a session to see it verified.</p>\n",
		html.EscapeString(s.Store.Dir), len(metas))
	b.WriteString("<table><thead><tr><th>session</th><th>updated</th><th>model</th><th>status</th><th>turns</th><th>task</th></tr></thead><tbody>\n")
	for _, m := range metas {
		if !validID(m.ID) {
			continue
		}
		task := m.Task
		if r := []rune(task); len(r) > 120 {
			task = string(r[:119]) + "…"
		}
		fmt.Fprintf(&b, "<tr><td><a href=\"/session/%s\">%s</a></td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td></tr>\n",
			html.EscapeString(m.ID), html.EscapeString(m.ID), m.Updated.UTC().Format(time.DateTime), html.EscapeString(m.Provider+":"+m.Model),
			html.EscapeString(m.Status), m.Turns, html.EscapeString(task))
	}
	b.WriteString("</tbody></table></body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src '"+hashSource(listCSS)+"'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	w.Write(b.Bytes())
}

// validID reports whether id can be a session's directory name.
func validID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, `/\`) && filepath.Base(id) == id
}

func (s *Server) session(w http.ResponseWriter, id string) {
	if !validID(id) {
		http.NotFound(w, nil)
		return
	}
	dirs, err := session.Ledgers(filepath.Join(s.Store.Dir, id))
	if err != nil || len(dirs) == 0 {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	opts := s.Options
	opts.VKey = s.VKey
	doc, err := Build(dirs, opts)
	if err != nil {
		http.Error(w, "NOT VERIFIED: "+err.Error(), http.StatusUnprocessableEntity)
		return
	}
	var b bytes.Buffer
	if err := Write(&b, doc); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", CSP()+"; frame-ancestors 'none'")
	w.Write(b.Bytes())
}

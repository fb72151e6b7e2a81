// Package provider defines the interface of a model API adapter, its typed
// errors, and the retry policy shared by the adapters.
//
// An adapter streams one turn: it translates a model.Request into its wire
// dialect, sends it, reports text deltas as they arrive, and returns the
// complete model.Response with usage and the provider's raw items. Tools run
// only after a turn is complete, so retrying a whole turn after a failure in
// the middle of its stream never runs a tool twice or loses a call.
package provider

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/trussdev/truss/internal/model"
)

// Provider is a model API adapter.
type Provider interface {
	// Name names the dialect ("ollama", "chat", "anthropic", "responses").
	Name() string
	// Turn streams one model turn. onDelta, when non-nil, is called with
	// streamed text as it arrives (from the adapter's goroutine).
	Turn(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error)
}

// ErrorKind classifies provider failures.
type ErrorKind string

// The error kinds.
const (
	ErrAuth        ErrorKind = "auth"        // 401/403: the key is missing or wrong
	ErrUnreachable ErrorKind = "unreachable" // no connection to the host
	ErrRateLimited ErrorKind = "rate_limited"
	ErrOverloaded  ErrorKind = "overloaded"
	ErrServer      ErrorKind = "server"      // 5xx
	ErrStream      ErrorKind = "stream"      // an error event or a cut in the middle of the stream
	ErrBadRequest  ErrorKind = "bad_request" // 4xx other than the above
	ErrNotFound    ErrorKind = "not_found"   // 404: the model or endpoint does not exist
	ErrProtocol    ErrorKind = "protocol"    // the response could not be understood
	// ErrNotAPI: a server answered, but not as the API does (an error
	// status without the API's error body, a body that is not its stream):
	// the address is another service's. It is not retried, and an answer
	// of this kind is no contact with the model (Contact, Unreached).
	ErrNotAPI ErrorKind = "not_api"
)

// Error is a failed turn.
type Error struct {
	Provider   string
	Kind       ErrorKind
	Status     int    // HTTP status, 0 when there was none
	Code       string // the provider's error code ("rate_limit_exceeded"), when it gave one
	Message    string
	RetryAfter time.Duration // what the server asked for, 0 when it did not
	// Final marks an error that must not be retried: the adapter (or its
	// SDK) already retried it, or the server said so (x-should-retry: false).
	Final bool
	// ForceRetry marks an error the server said to retry (x-should-retry:
	// true), whatever its status.
	ForceRetry bool
	Err        error
}

func (e *Error) Error() string {
	s := e.Provider + ": "
	if e.Status != 0 {
		s += fmt.Sprintf("HTTP %d: ", e.Status)
	}
	return s + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the turn may be tried again.
func (e *Error) Retryable() bool {
	if e.Final {
		return false
	}
	if e.ForceRetry {
		return true
	}
	if e.Status == http.StatusNotImplemented {
		// The server does not implement the request: it never will.
		return false
	}
	switch e.Kind {
	case ErrUnreachable, ErrRateLimited, ErrOverloaded, ErrServer, ErrStream:
		return true
	}
	return e.Status == http.StatusRequestTimeout || e.Status == http.StatusConflict
}

// KindForStatus classifies an HTTP status.
func KindForStatus(status int) ErrorKind {
	switch {
	case status == 401 || status == 403:
		return ErrAuth
	case status == 404:
		return ErrNotFound
	case status == 429:
		return ErrRateLimited
	case status == 529:
		return ErrOverloaded
	case status >= 500:
		return ErrServer
	case status == 408 || status == 409:
		return ErrServer
	}
	return ErrBadRequest
}

// HTTPError is the error of a failed HTTP response, as the official SDKs
// judge it: the kind from the status, the wait the server asks for
// (Retry-After-Ms, Retry-After), and the server's x-should-retry, which
// overrides the status either way. msg falls back to the status text.
func HTTPError(providerName string, status int, code, msg string, h http.Header, err error) *Error {
	if msg == "" {
		msg = http.StatusText(status)
	}
	pe := &Error{Provider: providerName, Kind: KindForStatus(status), Status: status, Code: code, Message: msg, Err: err}
	if code == "insufficient_quota" {
		// OpenAI's 429 for an account without credit: its billing, not
		// a rate, which no wait changes.
		pe.Final = true
		pe.Message += "; the account has no credit left: check its plan and billing (platform.openai.com/settings/organization/billing)"
		return pe
	}
	if h != nil {
		pe.RetryAfter = ParseRetryAfter(h, time.Now())
		switch h.Get("X-Should-Retry") {
		case "true":
			pe.ForceRetry = true
		case "false":
			pe.Final = true
		}
	}
	return pe
}

// TransportError classifies a failure that is not an HTTP error response:
// no connection (unreachable, with the hint that says what to check), a
// stream cut in the middle, or anything else as a protocol error. A
// cancelled context is returned as it is.
func TransportError(ctx context.Context, providerName, unreachableHint string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var tp *TLSPortError
	if errors.As(err, &tp) {
		// The server is there and answered, at another scheme: that it
		// runs is not in doubt.
		msg := tp.Error() + "; " + speaksTLSHint
		if h := strings.TrimSuffix(unreachableHint, " and that the server is running"); h != "" {
			msg += " (" + h + ")"
		}
		return &Error{Provider: providerName, Kind: ErrUnreachable, Final: true, Err: err, Message: msg}
	}
	var ue *url.Error
	var ne *net.OpError
	if errors.As(err, &ne) || (errors.As(err, &ue) && !errors.Is(err, context.Canceled)) {
		return &Error{Provider: providerName, Kind: ErrUnreachable, Err: err, Message: fmt.Sprintf("cannot reach the server (%v); %s", err, unreachableHint)}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Provider: providerName, Kind: ErrStream, Err: err, Message: "the stream broke off: " + err.Error()}
	}
	return &Error{Provider: providerName, Kind: ErrProtocol, Err: err, Message: err.Error()}
}

// NotAPI is the ErrNotAPI error of an answer to req that is not service's
// (the API's name, "Ollama"): its status and the first line of its body
// are said, and hint says what to check ("is OLLAMA_HOST the address of
// an Ollama server?").
func NotAPI(providerName, service string, req *http.Request, status int, body []byte, hint string) *Error {
	base := req.URL.Scheme + "://" + req.URL.Host
	return &Error{Provider: providerName, Kind: ErrNotAPI, Status: status, Final: true,
		Message: fmt.Sprintf("the server at %s does not look like %s: %s (%s)", base, service, Answered(req, status, body), hint)}
}

// NotAPIAnswer reports whether an error answer of a JSON API's route
// comes from a server that is not the API: its body is no JSON (a web
// page, plain text, nothing) and its status says the route does not exist
// there (404, 405, 501), which no API's passing trouble answers.
func NotAPIAnswer(status int, body []byte) bool {
	switch status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
	default:
		return false
	}
	b := bytes.TrimSpace(body)
	return len(b) == 0 || (b[0] != '{' && b[0] != '[') || !json.Valid(b)
}

// WebPage reports whether resp is a web page given as a success: a 2xx
// answer whose Content-Type is text/html, which no model API streams or
// answers with (a login page, a portal's front page, a proxy's notice).
func WebPage(resp *http.Response) bool {
	if resp == nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return false
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && mt == "text/html"
}

// PageError is the answer of a server that is not the API, found before
// any SDK reads it (PageMiddleware): a web page given as a success. An
// adapter reports it as NotAPI (NotAPIPage).
type PageError struct {
	Request *http.Request
	Status  int
	// Body is the page's beginning.
	Body []byte
}

func (e *PageError) Error() string { return Answered(e.Request, e.Status, e.Body) }

// PageMiddleware ends a request whose answer is a web page given as a
// success (WebPage) with a *PageError, the page's beginning read and the
// connection released: an SDK would otherwise read it as an empty stream
// and the turn would be retried as a broken one. It fits the official
// SDKs' middleware option; installed last, it sees the answer as it came
// from the network, on the request as it was sent.
func PageMiddleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	resp, err := next(req)
	if err != nil || !WebPage(resp) {
		return resp, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	return nil, &PageError{Request: SentRequest(req, resp), Status: resp.StatusCode, Body: b}
}

// NotAPIPage is the ErrNotAPI error of err when it is a *PageError, as
// NotAPI says it; false otherwise.
func NotAPIPage(err error, providerName, service, hint string) (*Error, bool) {
	var pg *PageError
	if !errors.As(err, &pg) {
		return nil, false
	}
	return NotAPI(providerName, service, pg.Request, pg.Status, pg.Body, hint), true
}

// ResponseBody is the body of an error response an SDK has read and put
// back (at most 1 MiB); it is put back again for whoever reads it next.
func ResponseBody(resp *http.Response) []byte {
	if resp == nil || resp.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

// SentRequest is the request resp answers as it went out, after every
// middleware's change of route, else req (an SDK's error's own).
func SentRequest(req *http.Request, resp *http.Response) *http.Request {
	if resp != nil && resp.Request != nil {
		return resp.Request
	}
	return req
}

// Answered says what the server answered to req, for an error message:
// `POST /api/chat answered 404 Not Found with an empty body`, or with the
// body's first line, quoted and cut to 120 characters.
func Answered(req *http.Request, status int, body []byte) string {
	s := fmt.Sprintf("%s %s answered %d %s", req.Method, req.URL.Path, status, http.StatusText(status))
	line := strings.TrimSpace(string(body))
	if line == "" {
		return s + " with an empty body"
	}
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i]) + " …"
	}
	if r := []rune(line); len(r) > 120 {
		line = string(r[:120]) + "…"
	}
	return s + ": " + strconv.Quote(line)
}

// ParseRetryAfter reads Retry-After-Ms, then Retry-After (seconds or an HTTP
// date); 0 when neither is usable.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// RetryPolicy retries failed turns with exponential backoff and jitter,
// honouring a server's Retry-After.
type RetryPolicy struct {
	// MaxAttempts is the number of tries in all; 0 means 4.
	MaxAttempts int
	// BaseDelay is the first backoff (0 means 500 ms); it doubles up to
	// MaxDelay (0 means 8 s). Each delay loses up to a quarter to jitter.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter is the longest server-requested wait honoured; a longer
	// one ends the retries with the error. 0 means 2 minutes.
	MaxRetryAfter time.Duration
	// OnRetry, when set, is told of each retry before its wait.
	OnRetry func(attempt int, wait time.Duration, err error)
	// Contact, when set, remembers whether the server has ever answered
	// through this policy. Until it has, an attempt that could not connect
	// at all (NoConnection: the name does not resolve, the connection is
	// refused) ends the turn at once: a wrong address or a stopped server
	// is reported, not retried. Once the server has answered, such a
	// failure is retried like any other.
	Contact *Contact
	// ModelHint is what a 404 about the model tells the user to check
	// ("check --model (truss models lists …)"); "" adds nothing.
	ModelHint string
	// Secrets are the values the requests carry as credentials (the key,
	// a token, header values), and Sent the session's record of those its
	// client sent and its credential chains hold: an attempt's error has
	// them (AllSecrets), and any credential field a server echoed, masked
	// (MaskError) before it is retried, said or returned.
	Secrets []string
	Sent    *Sent
}

// AllSecrets are Secrets and what Sent recorded.
func (p RetryPolicy) AllSecrets() []string {
	return append(slices.Clip(p.Secrets), p.Sent.Values()...)
}

// Contact records that a server answered. Its zero value is ready; it is
// safe for concurrent use.
type Contact struct{ answered atomic.Bool }

// Answered reports whether the server has answered at least once.
func (c *Contact) Answered() bool { return c != nil && c.answered.Load() }

// note records an attempt's outcome: any HTTP answer, even an error
// status, is contact, except one that is not the API's (ErrNotAPI).
func (c *Contact) note(err error) {
	if c == nil || c.answered.Load() {
		return
	}
	var pe *Error
	if err == nil || (errors.As(err, &pe) && pe.Status != 0 && pe.Kind != ErrNotAPI) {
		c.answered.Store(true)
	}
}

// NoConnection reports whether err is a failure to connect at all: the
// host name does not resolve, the host refused or could not be routed
// to, or no TLS session could be made over the connection
// (HandshakeError), or the server speaks TLS to a plain HTTP request
// (TLSPortError). A connection that broke after it was made is not one.
func NoConnection(err error) bool {
	var dns *net.DNSError
	var hs *HandshakeError
	return errors.As(err, &dns) || errors.As(err, &hs) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) || PlainHTTP(err) || SpeaksTLS(err)
}

// PlainHTTP reports whether err is a TLS handshake that a server speaking
// plain HTTP answered: an https:// address of an http:// server, which no
// retry mends.
func PlainHTTP(err error) bool {
	var rh tls.RecordHeaderError
	var hs *HandshakeError
	// net/http says it in words of its own when the answer began HTTP/.
	return errors.As(err, &rh) || errors.As(err, &hs) && hs.PlainHTTP || err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// VertexDeniedHint is what Vertex AI's PERMISSION_DENIED ("Permission
// 'aiplatform.endpoints.predict' denied on resource … (or it may not
// exist)") tells the user to check: the token was taken, and what it lacks
// is a role, the API, the model or the right project and region.
func VertexDeniedHint(project, region string) string {
	return fmt.Sprintf("the credentials were accepted but may not call the model there: their account needs the Vertex AI User role (roles/aiplatform.user) in project %s, the Vertex AI API enabled there (gcloud services enable aiplatform.googleapis.com --project %s), and the model enabled in Model Garden and served in %s; or check --project and --region",
		project, project, region)
}

// DeniedHint adds hint to a PERMISSION_DENIED refusal pe (Google's
// status), once, and reports whether it did.
func DeniedHint(pe *Error, hint string) bool {
	if hint == "" || pe.Kind != ErrAuth || pe.Code != "PERMISSION_DENIED" || strings.Contains(pe.Message, hint) {
		return false
	}
	pe.Message += "; " + hint
	return true
}

// serverRunning is the end of the adapters' hint of a server that could
// not be reached, which an answer of the server (in plain HTTP, with a
// certificate) makes beside the point.
const serverRunning = " and that the server is running"

// certHint is what a handshake that failed on the server's certificate
// adds to its message: a certificate of a CA this machine does not trust
// (a company's own CA, a self-signed certificate) names SSL_CERT_FILE,
// through which Go's TLS takes more CAs; one for another name says so.
// "" for any other error.
func certHint(err error) string {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	switch {
	case errors.As(err, &ua):
		return "the server's certificate is signed by a certificate authority this machine does not trust: if it is your own (a company's CA, a self-signed certificate), set SSL_CERT_FILE to its certificate's PEM file (or SSL_CERT_DIR to a directory of them)"
	case errors.As(err, &he):
		return "the server's certificate is not for this host name: use the name it was issued for in the address"
	}
	return ""
}

// plainHTTPHint is what an error of PlainHTTP adds to its message.
const plainHTTPHint = "the server speaks plain HTTP: use http:// in its address"

// explain adds to err's message what a failure's cause says to do, where
// the adapter's own words cannot know it (PlainHTTP, SpeaksTLS).
func explain(err error) error {
	var pe *Error
	if PlainHTTP(err) && errors.As(err, &pe) && !strings.Contains(pe.Message, plainHTTPHint) {
		// It answered: that the server runs is not in doubt.
		pe.Message = strings.Replace(pe.Message, serverRunning, "", 1) + "; " + plainHTTPHint
	}
	if hint := certHint(err); hint != "" && errors.As(err, &pe) && !strings.Contains(pe.Message, hint) {
		pe.Message = strings.Replace(pe.Message, serverRunning, "", 1) + "; " + hint
	}
	if SpeaksTLS(err) && errors.As(err, &pe) && !strings.Contains(pe.Message, speaksTLSHint) {
		pe.Message += "; the server speaks TLS: " + speaksTLSHint
	}
	return err
}

// webPage says what an error status answered with a web page is: no
// API's error (the APIs answer theirs in JSON) but a proxy's, a
// firewall's or a CDN's page, whose markup is cut to its title. A refusal
// (401, 403, 407) is then not the API's judgment of the key, and what the
// adapter added about the key is dropped with the page.
func webPage(err error) error {
	var pe *Error
	if !errors.As(err, &pe) || pe.Status < 400 || pe.Kind == ErrNotAPI {
		return err
	}
	msg := strings.TrimSpace(pe.Message)
	head := strings.ToLower(msg)
	if !strings.HasPrefix(head, "<!doctype html") && !strings.HasPrefix(head, "<html") && !strings.HasPrefix(head, "<head") {
		return err
	}
	page := "a web page"
	if i, j := strings.Index(head, "<title>"), strings.Index(head, "</title>"); len(head) == len(msg) && i >= 0 && j > i {
		if t := strings.Join(strings.Fields(msg[i+len("<title>"):j]), " "); t != "" {
			page = fmt.Sprintf("a web page (%q)", truncateRunes(t, 80))
		}
	}
	switch pe.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired:
		pe.Message = "the answer is " + page + ", not the API's JSON: a proxy, firewall or CDN between here and the API refused the request, not the API the key is for; check the address and the network's proxy (HTTPS_PROXY)"
	default:
		pe.Message = "the answer is " + page + ", not the API's JSON: a proxy or gateway between here and the API answered"
	}
	return err
}

// truncateRunes is s cut to n runes, with "…" when it was longer.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// modelHint adds the policy's ModelHint to a 404 that is about the model
// (its message names a model: "not_found_error: model: …", "The model …
// does not exist", "model 'x' not found"), once.
func (p RetryPolicy) modelHint(err error) error {
	var pe *Error
	if p.ModelHint == "" || !errors.As(err, &pe) || pe.Kind != ErrNotFound || pe.Code == "DeploymentNotFound" ||
		!strings.Contains(strings.ToLower(pe.Message), "model") || strings.Contains(pe.Message, p.ModelHint) {
		return err
	}
	pe.Message += "; " + p.ModelHint
	return err
}

// Unreached reports whether err says the model was not reached at all:
// no connection (NoConnection), or an answer from a server that is not
// the API (ErrNotAPI).
func Unreached(err error) bool {
	var pe *Error
	return NoConnection(err) || errors.As(err, &pe) && pe.Kind == ErrNotAPI
}

func (p RetryPolicy) norm() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 4
	}
	if p.BaseDelay == 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = 8 * time.Second
	}
	if p.MaxRetryAfter == 0 {
		p.MaxRetryAfter = 2 * time.Minute
	}
	return p
}

// Do calls fn until it succeeds, fails with an error that is not a retryable
// *Error, or the attempts are spent. It returns the number of attempts made.
func (p RetryPolicy) Do(ctx context.Context, fn func(attempt int) error) (int, error) {
	p = p.norm()
	for attempt := 1; ; attempt++ {
		err := MaskError(p.modelHint(webPage(explain(fn(attempt)))), p.AllSecrets())
		p.Contact.note(err)
		if err == nil {
			return attempt, nil
		}
		var pe *Error
		if !errors.As(err, &pe) || !pe.Retryable() || attempt >= p.MaxAttempts || ctx.Err() != nil || PlainHTTP(err) || SpeaksTLS(err) {
			return attempt, err
		}
		if p.Contact != nil && !p.Contact.Answered() && NoConnection(err) {
			return attempt, err
		}
		wait := p.backoff(attempt)
		if pe.RetryAfter > 0 {
			if pe.RetryAfter > p.MaxRetryAfter {
				pe.Message += fmt.Sprintf("; the server asks for a wait of %s before a retry, longer than Truss waits (%s): not retried",
					shortDuration(pe.RetryAfter), shortDuration(p.MaxRetryAfter))
				return attempt, err
			}
			wait = pe.RetryAfter
		}
		if p.OnRetry != nil {
			p.OnRetry(attempt, wait, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return attempt, err
		case <-t.C:
		}
	}
}

// shortDuration is d to the second without its zero parts: "1h", "2m",
// "1h30m", "45s".
func shortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Turn runs attempt until it succeeds or the policy gives up, and records
// on the response how many attempts the turn took.
func (p RetryPolicy) Turn(ctx context.Context, attempt func() (*model.Response, error)) (*model.Response, error) {
	var resp *model.Response
	n, err := p.Do(ctx, func(int) error {
		var err error
		resp, err = attempt()
		return err
	})
	if err != nil {
		return nil, err
	}
	resp.Attempts = n
	return resp, nil
}

func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.BaseDelay << (attempt - 1)
	if d > p.MaxDelay || d <= 0 {
		d = p.MaxDelay
	}
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

// Settings are a session's model settings, chosen once at its start (from
// the command line, else the model's profile) and given to the adapter
// that sends them: each adapter sends the ones its API has.
type Settings struct {
	// ReasoningEffort is OpenAI's reasoning.effort (Chat Completions:
	// reasoning_effort): "none", "minimal", "low", "medium", "high",
	// "xhigh"; "" sends none, leaving the model's default.
	ReasoningEffort string
	// ReasoningSummary is the Responses API's reasoning.summary ("auto",
	// "concise", "detailed"); "" sends none.
	ReasoningSummary string
	// ThinkingTokens enables Anthropic's extended thinking with this budget
	// (0 = off; the API needs at least 1,024).
	ThinkingTokens int
	// ContextTokens is the context window the server is given where the
	// request sets it (Ollama's options.num_ctx); 0 leaves the server's
	// default.
	ContextTokens int
	// CacheKey is the Responses API's prompt_cache_key (the session id keeps
	// a session's requests on one prompt cache); "" sends none.
	CacheKey string
}

// Fields returns the settings that are set, as configuration entries (the
// ledger's session start records them).
func (s Settings) Fields() map[string]string {
	m := map[string]string{}
	add := func(k, v string) {
		if v != "" && v != "0" {
			m[k] = v
		}
	}
	add("reasoning_effort", s.ReasoningEffort)
	add("reasoning_summary", s.ReasoningSummary)
	add("thinking_tokens", strconv.Itoa(s.ThinkingTokens))
	add("context_tokens", strconv.Itoa(s.ContextTokens))
	add("prompt_cache_key", s.CacheKey)
	return m
}

// NearContext reports whether a request whose prompt took prompt tokens
// came close to a context window of limit tokens (90% or more): the next
// turns will not fit, and a server that truncates silently (Ollama) may
// already have cut the prompt. It is false when limit is unknown (0).
func NearContext(prompt, limit int64) bool {
	return limit > 0 && prompt*10 >= limit*9
}

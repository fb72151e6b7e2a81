package provider

import (
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// MinSecret is the shortest value Mask hides: a shorter one would hide
// common words of the message it is in.
const MinSecret = 6

// credentialField is a header or JSON field that carries a credential,
// with its value, as a server may echo it in an error body:
// `Authorization: Bearer sk-…`, `"x-api-key":"…"`, `api_key=…`.
// It is compiled on first use: no package's initialisation allocates.
var credentialField = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(\b(?:authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key|api_key|apikey|access_token|key)\\?"?'?\s*[:=]\s*\\?"?'?\s*(?:(?:bearer|basic|token)\s+)?)([^\s"'\\,;}&]+)`)
})

// Mask hides credentials in s, a message that may carry a server's
// answer: each of secrets (the key and header values the request was
// sent with, a session's Sent credentials: RetryPolicy.AllSecrets) that
// is at least MinSecret long, and the value of any credential field
// (Authorization, x-api-key, api-key…) the server echoed, are replaced
// by ***.
func Mask(s string, secrets []string) string {
	for _, v := range secrets {
		v = strings.TrimSpace(v)
		if len(v) >= MinSecret {
			s = strings.ReplaceAll(s, v, "***")
		}
	}
	re := credentialField()
	return re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		if sub[2] == "***" || len(sub[2]) < MinSecret {
			return m
		}
		return sub[1] + "***"
	})
}

// maskedError is an error whose text had credentials in it: it says the
// text masked and unwraps to the error as it was, for errors.Is and
// errors.As.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// MaskError is err with the credentials in its text hidden (Mask): the
// Message of a *Error in it is masked in place, and an error whose text
// still shows one is wrapped so that its text does not.
func MaskError(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	var pe *Error
	if errors.As(err, &pe) {
		pe.Message = Mask(pe.Message, secrets)
		if pe.Err != nil {
			if s := pe.Err.Error(); Mask(s, secrets) != s {
				pe.Err = &maskedError{msg: Mask(s, secrets), err: pe.Err}
			}
		}
	}
	if s := err.Error(); Mask(s, secrets) != s {
		return &maskedError{msg: Mask(s, secrets), err: err}
	}
	return err
}

// credentialHeaders are the request headers whose values are credentials:
// a bearer token or a key, Google's, Azure's and Anthropic's key headers,
// an AWS session token.
var credentialHeaders = [...]string{"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "X-Amz-Security-Token"}

// maxSent bounds the credentials a Sent keeps: a long session renews its
// access tokens, and the oldest are let go.
const maxSent = 64

// Sent records the credentials a session's requests carried or its
// credential chains hold, for Mask to hide wherever a server's answer or
// a credential chain's error quotes them: the values of each request's
// credential headers (HeaderTransport records them as the adapters'
// clients send them), a credential file's secrets (Add). A nil *Sent
// records nothing. It is safe for concurrent use.
type Sent struct {
	mu   sync.Mutex
	vals []string // oldest first
}

// Add records vals; a value shorter than MinSecret is not kept.
func (s *Sent) Add(vals ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if len(v) < MinSecret || slices.Contains(s.vals, v) {
			continue
		}
		if len(s.vals) >= maxSent {
			s.vals = append(s.vals[:0], s.vals[1:]...)
		}
		s.vals = append(s.vals, v)
	}
}

// Values are the credentials recorded.
func (s *Sent) Values() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.vals)
}

// note records the credentials h carries (credentialHeaders): a token
// after its scheme ("Bearer", "Basic"), a key as it is. An AWS signature
// is not a secret and is left out; its session token is kept.
func (s *Sent) note(h http.Header) {
	if s == nil {
		return
	}
	for _, k := range credentialHeaders {
		for _, v := range h[k] {
			if scheme, rest, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				if strings.HasPrefix(scheme, "AWS4-") {
					continue
				}
				v = rest
			}
			s.Add(v)
		}
	}
}

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
// sent with) and of the credentials this process sent or holds (Sent)
// that is at least MinSecret long, and the value of any
// credential field (Authorization, x-api-key, api-key…) the server
// echoed, are replaced by ***.
func Mask(s string, secrets []string) string {
	for _, v := range append(secrets[:len(secrets):len(secrets)], Sent()...) {
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

// maxSent bounds the credentials AddSecrets keeps: a long session renews
// its access tokens, and the oldest are let go.
const maxSent = 64

// sent are the credentials AddSecrets recorded, oldest first.
var sent struct {
	mu   sync.Mutex
	vals []string
}

// AddSecrets records credentials this process holds or sent, for Mask to
// hide wherever a server's answer or a credential chain's error quotes
// them: the values of a request's credential headers (noteSent, as the
// adapters' clients send them), a credential file's secrets. A value
// shorter than MinSecret is not kept.
func AddSecrets(vals ...string) {
	sent.mu.Lock()
	defer sent.mu.Unlock()
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if len(v) < MinSecret {
			continue
		}
		if slices.Contains(sent.vals, v) {
			continue
		}
		if len(sent.vals) >= maxSent {
			sent.vals = append(sent.vals[:0], sent.vals[1:]...)
		}
		sent.vals = append(sent.vals, v)
	}
}

// Sent are the credentials AddSecrets recorded.
func Sent() []string {
	sent.mu.Lock()
	defer sent.mu.Unlock()
	return append([]string(nil), sent.vals...)
}

// noteSent records the credentials h carries (credentialHeaders): a
// token after its scheme ("Bearer", "Basic"), a key as it is. An AWS
// signature is not a secret and is left out; its session token is kept.
func noteSent(h http.Header) {
	for _, k := range credentialHeaders {
		for _, v := range h[k] {
			if scheme, rest, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				if strings.HasPrefix(scheme, "AWS4-") {
					continue
				}
				v = rest
			}
			AddSecrets(v)
		}
	}
}

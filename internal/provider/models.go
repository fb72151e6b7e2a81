package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ModelInfo describes one model a provider's server serves.
type ModelInfo struct {
	// ID is the name a request gives as its model ("claude-sonnet-4-5",
	// "gpt-5.2", "qwen3-coder:30b").
	ID string
	// DisplayName is the server's human-readable name, "" when it gives
	// none.
	DisplayName string
	// Created is when the model was released (Anthropic's created_at),
	// created (OpenAI's created) or last pulled (Ollama's modified_at); the
	// zero time when the server does not say (an epoch value included).
	Created time.Time
	// ContextWindow is the longest input the server takes for the model,
	// in tokens; 0 when it does not say.
	ContextWindow int64
}

// ModelLister is a Provider that can list the models its server serves.
// It is optional: callers detect it by type assertion.
type ModelLister interface {
	// Models lists the server's models in the order it gives them, at
	// most MaxModels of them (a longer list is cut there). It makes one
	// attempt per page, without retries: a person is waiting for it. A
	// failure is a *Error classified from the answer (its Kind and Status
	// say an unknown key, a rate limit, a server down); when the server
	// has no model list (it answers 404, 405 or 501), the error also
	// matches ErrNotSupported. The error's text has the credentials
	// masked, as a turn's (MaskError with the retry policy's Secrets).
	Models(ctx context.Context) ([]ModelInfo, error)
}

// ErrNotSupported is matched (errors.Is) by the error of an optional
// capability the provider, or the server behind it, does not have: a
// server without a model list.
var ErrNotSupported = errors.New("not supported")

// unsupported is an error that matches ErrNotSupported (and err) without
// saying "not supported": its message says what is missing.
type unsupported struct {
	msg string
	err error
}

func (e *unsupported) Error() string { return e.msg }

func (e *unsupported) Unwrap() []error {
	if e.err == nil {
		return []error{ErrNotSupported}
	}
	return []error{e.err, ErrNotSupported}
}

// Unsupported is an error whose text is msg, which says what is missing
// ("Amazon Bedrock's runtime has no model list"), and that matches
// ErrNotSupported and err (nil: none) for errors.Is and errors.As.
func Unsupported(msg string, err error) error { return &unsupported{msg: msg, err: err} }

// MaxModels is the most models a ModelLister returns.
const MaxModels = 1000

// ModelsError is the error of a failed model list: err as the adapter
// classified it, with what was asked (method and path) said in its
// message, and the wait the server asked for after a rate limit. When the
// status says the server has no model list (404, 405, 501), the result
// also matches ErrNotSupported, and errors.As still finds the *Error. An
// error that is not a *Error (a cancelled context) is returned as it is;
// one that says the server is not the API (ErrNotAPI) is not said twice,
// and the base URL it names to check comes before the missing list.
func ModelsError(method, path string, err error) error {
	var pe *Error
	if !errors.As(err, &pe) {
		return err
	}
	if pe.Kind == ErrNotAPI {
		// A server that is not the API's (a router's 404: a base URL
		// without /v1) said what was asked and what to check; the
		// address is the likelier cause, the missing list the other.
		e := *pe
		if NotAPIStatus(e.Status) {
			return Unsupported(e.Error()+", or the server has no model list", &e)
		}
		return &e
	}
	e := *pe
	e.Message = fmt.Sprintf("%s %s: %s", method, path, pe.Message)
	if e.Kind == ErrRateLimited && e.RetryAfter > 0 {
		e.Message += fmt.Sprintf(" (the server asks to wait %s)", e.RetryAfter.Round(time.Second))
	}
	switch e.Status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return Unsupported(e.Error()+"; the server has no model list", &e)
	}
	return &e
}

// ModelTime returns a model's creation time in UTC, or the zero time when
// t is at or before the Unix epoch: servers send the epoch (or 0) for a
// date they do not know.
func ModelTime(t time.Time) time.Time {
	if t.Unix() <= 0 {
		return time.Time{}
	}
	return t.UTC()
}

// EndpointPath is the path of the endpoint rel ("models") below a base URL
// ("https://api.openai.com/v1" gives "/v1/models"), for error messages.
func EndpointPath(base, rel string) string {
	p := ""
	if u, err := url.Parse(base); err == nil {
		p = strings.TrimSuffix(u.Path, "/")
	}
	return p + "/" + strings.TrimPrefix(rel, "/")
}

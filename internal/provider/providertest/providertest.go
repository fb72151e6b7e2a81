// Package providertest holds what the model adapters' tests share: a
// one-message turn, an address nothing listens on, and the check that an
// adapter's errors name the provider the user chose.
package providertest

import (
	"context"
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

// Router404s are the JSON 404s of routers that are not a model API: a
// FastAPI app's (vLLM, LiteLLM without /v1), llama.cpp's server's for an
// unknown route, a string error.
var Router404s = map[string]string{
	"fastapi":   `{"detail":"Not Found"}`,
	"llama.cpp": `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`,
	"string":    `{"error":"Unexpected endpoint or method. (POST /v1/messages)"}`,
}

package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestMask(t *testing.T) {
	key := "sk-proj-REALSECRET123456"
	for _, tc := range []struct {
		name, in string
		secrets  []string
		want     string
	}{
		{"the key echoed", "Invalid API key: " + key, []string{key}, "Invalid API key: ***"},
		{"every time", key + " " + key, []string{key}, "*** ***"},
		{"a header value", `bad X-Org-Id orgSECRET9`, []string{"", "orgSECRET9"}, `bad X-Org-Id ***`},
		{"a short value is left", "use a key", []string{"key"}, "use a key"},
		{"an Authorization header", `got Authorization: Bearer tok-abcdef123 from you`, nil, `got Authorization: Bearer *** from you`},
		{"a JSON field", `{"x-api-key":"sk-ant-api03-xyz","model":"m"}`, nil, `{"x-api-key":"***","model":"m"}`},
		{"a JSON field quoted in an error", `"{\"authorization\": \"Bearer abcdefgh\"}"`, nil, `"{\"authorization\": \"Bearer ***\"}"`},
		{"a query key", `GET /v1beta/models?key=AIzaSECRET123 failed`, nil, `GET /v1beta/models?key=*** failed`},
		{"no credential", `HTTP 401: Incorrect API key provided; check OPENAI_API_KEY`, nil, `HTTP 401: Incorrect API key provided; check OPENAI_API_KEY`},
		{"a word ending in key", `monkey: bananas`, nil, `monkey: bananas`},
	} {
		if got := Mask(tc.in, tc.secrets); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRetryPolicyMasks: the key a server echoes in its error is masked
// in the error that is retried (OnRetry) and in the one returned, whose
// kind is kept.
func TestRetryPolicyMasks(t *testing.T) {
	key := "sk-proj-REALSECRET123456"
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"a provider error", &Error{Provider: "openai", Kind: ErrServer, Status: 500, Message: "Invalid API key: " + key,
			Err: fmt.Errorf("POST: 500 %s", key)}},
		{"another error", fmt.Errorf("decoding %q: %w", key, errors.ErrUnsupported)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var retried []string
			p := RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, MaxAttempts: 2, Secrets: []string{key},
				OnRetry: func(_ int, _ time.Duration, err error) { retried = append(retried, err.Error()) }}
			_, err := p.Do(context.Background(), func(int) error { return tc.err })
			for _, s := range append(retried, err.Error()) {
				if strings.Contains(s, key) || !strings.Contains(s, "***") {
					t.Errorf("error %q", s)
				}
			}
			if pe := (*Error)(nil); errors.As(err, &pe) {
				if pe.Kind != ErrServer || strings.Contains(pe.Err.Error(), key) {
					t.Errorf("kind %s, cause %v", pe.Kind, pe.Err)
				}
			} else if !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("the masked error lost its cause: %v", err)
			}
		})
	}
}

// TestSentCredentialsMasked: a credential the client sent in a header,
// whichever chain gave it (a fetched access token, a session token from
// a file), is masked when the server's error quotes it, though no
// secret was given to Mask.
func TestSentCredentialsMasked(t *testing.T) {
	for _, tc := range []struct {
		name, header, value, secret string
	}{
		{"a Google access token", "Authorization", "Bearer ya29.FETCHED-TOKEN-abc", "ya29.FETCHED-TOKEN-abc"},
		{"an Entra token", "Authorization", "Bearer eyJENTRA.TOKEN.sig", "eyJENTRA.TOKEN.sig"},
		{"an AWS session token", "X-Amz-Security-Token", "FILESESSIONSECRET", "FILESESSIONSECRET"},
		{"an Azure key", "Api-Key", "azureKEY123456", "azureKEY123456"},
		{"a Gemini key", "X-Goog-Api-Key", "AIzaGEMINIKEY99", "AIzaGEMINIKEY99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, "UNAUTHENTICATED: you sent %s", r.Header.Get(tc.header))
			}))
			defer srv.Close()
			req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set(tc.header, tc.value)
			sent := &Sent{}
			resp, err := (*Predial)(nil).Client(nil, 0, sent).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			retry := RetryPolicy{Sent: sent}
			got := MaskError(&Error{Provider: "p", Kind: ErrAuth, Status: 401, Message: string(body)}, retry.AllSecrets()).Error()
			if strings.Contains(got, tc.secret) || !strings.Contains(got, "***") {
				t.Errorf("error %q shows the credential", got)
			}
		})
	}
}

// TestSentAdd: a credential a chain holds (a file's refresh token, in
// the form a token request's body quotes it) is masked; a short value is
// not kept; another session's record masks nothing of this one's.
func TestSentAdd(t *testing.T) {
	sent := &Sent{}
	sent.Add("1//REFRESHSECRET", url.QueryEscape("1//REFRESHSECRET"), "abc")
	if got := Mask("token 1//REFRESHSECRET revoked", (&Sent{}).Values()); got != "token 1//REFRESHSECRET revoked" {
		t.Errorf("another session's record masked %q", got)
	}
	for _, tc := range []struct{ in, want string }{
		{"bad request body: refresh_token=1%2F%2FREFRESHSECRET", "bad request body: refresh_token=***"},
		{"token 1//REFRESHSECRET revoked", "token *** revoked"},
		{"abc is left", "abc is left"},
	} {
		if got := Mask(tc.in, sent.Values()); got != tc.want {
			t.Errorf("Mask(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

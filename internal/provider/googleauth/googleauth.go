// Package googleauth finds Google's application-default credentials and
// makes OAuth 2 access tokens of them, for the adapters that reach Google
// Cloud (Anthropic's models on Vertex AI).
//
// It reads the credential files Google's client libraries read, in their
// order: the file GOOGLE_APPLICATION_CREDENTIALS names, else gcloud's
// (application_default_credentials.json in $CLOUDSDK_CONFIG, default
// ~/.config/gcloud), which `gcloud auth application-default login`
// writes. Two kinds of file are understood: authorized_user (a user's
// refresh token) and service_account (a service account's key, exchanged
// for a token with a signed JWT). Other kinds (external_account,
// impersonated_service_account) and the metadata server of Google's
// machines are refused with an error that says so.
//
// It is built on golang.org/x/oauth2 and its jwt package alone, which do
// no work at a program's start; golang.org/x/oauth2/google (whose
// externalaccount package compiles regular expressions at init) and
// google.golang.org/api/transport (gRPC and OpenCensus at init) are not
// imported.
package googleauth

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/jwt"
)

// Scope is the OAuth 2 scope of Google Cloud's APIs.
const Scope = "https://www.googleapis.com/auth/cloud-platform"

// DefaultTokenURL is Google's token endpoint, for a file that names none.
const DefaultTokenURL = "https://oauth2.googleapis.com/token"

// The kinds of credential file understood.
const (
	AuthorizedUser = "authorized_user"
	ServiceAccount = "service_account"
)

// ErrNoCredentials is returned (wrapped) by Find when no credential file
// is there.
var ErrNoCredentials = errors.New("no Google application-default credentials")

// File is a credential file's content.
type File struct {
	Type string `json:"type"`
	// An authorized_user's.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	RefreshToken string `json:"refresh_token"`
	// A service_account's.
	ClientEmail  string `json:"client_email"`
	PrivateKey   string `json:"private_key"`
	PrivateKeyID string `json:"private_key_id"`
	ProjectID    string `json:"project_id"`
	// QuotaProjectID is the project gcloud bills an authorized_user's
	// requests to.
	QuotaProjectID string `json:"quota_project_id"`
	// TokenURI is the token endpoint ("" for DefaultTokenURL).
	TokenURI string `json:"token_uri"`
}

// Parse reads a credential file's content and checks it has what its kind
// needs: the client and the refresh token of an authorized_user; the
// email and an RSA private key in PEM of a service_account; a token URI,
// when given, that is an absolute http(s) URL.
func Parse(b []byte) (*File, error) {
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("not a credential file (JSON): %w", err)
	}
	if f.TokenURI != "" {
		u, err := url.Parse(f.TokenURI)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return nil, fmt.Errorf("token_uri %q is not an http(s) URL", f.TokenURI)
		}
	}
	switch f.Type {
	case AuthorizedUser:
		if f.ClientID == "" || f.ClientSecret == "" || f.RefreshToken == "" {
			return nil, errors.New("an authorized_user file needs client_id, client_secret and refresh_token (run `gcloud auth application-default login` again)")
		}
	case ServiceAccount:
		if f.ClientEmail == "" || f.PrivateKey == "" {
			return nil, errors.New("a service_account file needs client_email and private_key")
		}
		if _, err := parseKey(f.PrivateKey); err != nil {
			return nil, fmt.Errorf("private_key: %w", err)
		}
	case "":
		return nil, errors.New("the file names no type (authorized_user or service_account)")
	default:
		return nil, fmt.Errorf("credentials of type %q are not supported (only authorized_user and service_account)", f.Type)
	}
	return &f, nil
}

// parseKey reads an RSA private key in PEM, PKCS #8 or PKCS #1.
func parseKey(s string) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("not a PEM block")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, errors.New("not an RSA key")
		}
		return rk, nil
	}
	k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("neither a PKCS #8 nor a PKCS #1 RSA key")
	}
	return k, nil
}

// Project is the project the file names: a service account's, else the
// quota project of a user's.
func (f *File) Project() string {
	if f.ProjectID != "" {
		return f.ProjectID
	}
	return f.QuotaProjectID
}

func (f *File) tokenURL() string {
	if f.TokenURI != "" {
		return f.TokenURI
	}
	return DefaultTokenURL
}

// TokenSource returns the file's source of access tokens for scope
// (Scope when ""): tokens are fetched when first asked for and again
// before they expire, with hc (nil: a client with a 30-second timeout).
// ctx bounds every fetch, for the life of the source.
func (f *File) TokenSource(ctx context.Context, hc *http.Client, scope string) oauth2.TokenSource {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	if scope == "" {
		scope = Scope
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, hc)
	if f.Type == ServiceAccount {
		c := &jwt.Config{Email: f.ClientEmail, PrivateKey: []byte(f.PrivateKey), PrivateKeyID: f.PrivateKeyID,
			Scopes: []string{scope}, TokenURL: f.tokenURL()}
		return c.TokenSource(ctx)
	}
	c := &oauth2.Config{ClientID: f.ClientID, ClientSecret: f.ClientSecret, Scopes: []string{scope},
		Endpoint: oauth2.Endpoint{TokenURL: f.tokenURL(), AuthStyle: oauth2.AuthStyleInParams}}
	return c.TokenSource(ctx, &oauth2.Token{RefreshToken: f.RefreshToken})
}

// Credentials are application-default credentials found.
type Credentials struct {
	// Path is the file they were read from.
	Path string
	File *File
}

// Paths are the files Find looks at, in order: GOOGLE_APPLICATION_CREDENTIALS's
// when set (then only it), else gcloud's below $CLOUDSDK_CONFIG or
// home/.config/gcloud.
func Paths(getenv func(string) string, home string) []string {
	if p := getenv("GOOGLE_APPLICATION_CREDENTIALS"); p != "" {
		return []string{p}
	}
	dir := getenv("CLOUDSDK_CONFIG")
	if dir == "" {
		if home == "" {
			return nil
		}
		dir = filepath.Join(home, ".config", "gcloud")
	}
	return []string{filepath.Join(dir, "application_default_credentials.json")}
}

// Find reads the application-default credentials: the first of Paths
// that exists. A file GOOGLE_APPLICATION_CREDENTIALS names must exist; no
// file at all is ErrNoCredentials.
func Find(getenv func(string) string, home string) (*Credentials, error) {
	paths := Paths(getenv, home)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) && getenv("GOOGLE_APPLICATION_CREDENTIALS") == "" {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("GOOGLE_APPLICATION_CREDENTIALS: %w", err)
		}
		f, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		return &Credentials{Path: p, File: f}, nil
	}
	return nil, fmt.Errorf("%w: set GOOGLE_APPLICATION_CREDENTIALS to a credential file, or run `gcloud auth application-default login` (looked at %v)", ErrNoCredentials, paths)
}

// TokenFailure says why the credentials gave no access token, for an
// error of an adapter: "cannot get a Google access token from the
// application-default credentials: …". The token endpoint's refusal is said
// by its OAuth error code and description, or by its status and the first
// line of its answer, not by the whole page oauth2 quotes; a refusal (an
// OAuth error, a 400 or a 401) says how the credentials are renewed.
func TokenFailure(err error) string {
	msg := err.Error()
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		switch {
		case re.ErrorCode != "":
			msg = "the token endpoint refused them: " + re.ErrorCode
			if re.ErrorDescription != "" {
				msg += " (" + re.ErrorDescription + ")"
			}
		case re.Response != nil:
			msg = "the token endpoint answered " + re.Response.Status
			if line := firstLine(re.Body); line != "" {
				if r := []rune(line); len(r) > 120 {
					line = string(r[:120]) + "…"
				}
				msg += ": " + strconv.Quote(line)
			}
		}
		if refused := re.ErrorCode != "" || re.Response != nil && (re.Response.StatusCode == http.StatusBadRequest || re.Response.StatusCode == http.StatusUnauthorized); refused {
			msg += "; renew them (gcloud auth application-default login, or a key file of a service account in GOOGLE_APPLICATION_CREDENTIALS)"
		}
	}
	return "cannot get a Google access token from the application-default credentials: " + msg
}

// firstLine is the first line of b with text, trimmed.
func firstLine(b []byte) string {
	for line := range strings.Lines(string(b)) {
		if l := strings.TrimSpace(line); l != "" {
			return l
		}
	}
	return ""
}

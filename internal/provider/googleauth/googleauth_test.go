package googleauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trussdev/truss/internal/sim/simtest"
)

var (
	keyOnce sync.Once
	keyPEM  string
)

// testKey is a throwaway service account key in PEM (PKCS #8), made once.
func testKey(t testing.TB) string {
	t.Helper()
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			panic(err)
		}
		keyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	})
	return keyPEM
}

func userFile(tokenURI string) string {
	b, _ := json.Marshal(map[string]string{"type": AuthorizedUser, "client_id": "cid.apps.googleusercontent.com", "client_secret": "cs",
		"refresh_token": "1//rt", "quota_project_id": "quota-proj", "token_uri": tokenURI})
	return string(b)
}

func serviceFile(t testing.TB, tokenURI string) string {
	b, _ := json.Marshal(map[string]string{"type": ServiceAccount, "client_email": "bot@proj.iam.gserviceaccount.com", "private_key": testKey(t),
		"private_key_id": "k1", "project_id": "sa-proj", "token_uri": tokenURI})
	return string(b)
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, file, err, project string
	}{
		{name: "user", file: userFile(""), project: "quota-proj"},
		{name: "service account", file: serviceFile(t, "https://oauth2.googleapis.com/token"), project: "sa-proj"},
		{name: "not json", file: "nope", err: "not a credential file"},
		{name: "no type", file: `{"client_id":"a"}`, err: "names no type"},
		{name: "external", file: `{"type":"external_account","audience":"x"}`, err: `"external_account" are not supported`},
		{name: "user without refresh token", file: `{"type":"authorized_user","client_id":"a","client_secret":"b"}`, err: "needs client_id, client_secret and refresh_token"},
		{name: "service account without key", file: `{"type":"service_account","client_email":"a@b"}`, err: "needs client_email and private_key"},
		{name: "service account with a bad key", file: `{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}`, err: "private_key: neither"},
		{name: "bad token uri", file: `{"type":"authorized_user","client_id":"a","client_secret":"b","refresh_token":"c","token_uri":"file:///etc/passwd"}`, err: "not an http(s) URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.file))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Project() != tc.project {
				t.Errorf("project %q", f.Project())
			}
		})
	}
}

// TestFind: GOOGLE_APPLICATION_CREDENTIALS first (and then only it), else
// gcloud's file in CLOUDSDK_CONFIG or ~/.config/gcloud.
func TestFind(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if _, err := Find(getenv, home); !errors.Is(err, ErrNoCredentials) {
		t.Fatalf("no file: %v", err)
	}
	gcloud := filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")
	os.MkdirAll(filepath.Dir(gcloud), 0o700)
	os.WriteFile(gcloud, []byte(userFile("")), 0o600)
	c, err := Find(getenv, home)
	if err != nil || c.Path != gcloud || c.File.Type != AuthorizedUser {
		t.Fatalf("gcloud's file: %+v, %v", c, err)
	}
	other := t.TempDir()
	env["CLOUDSDK_CONFIG"] = other
	if _, err := Find(getenv, home); !errors.Is(err, ErrNoCredentials) {
		t.Fatalf("CLOUDSDK_CONFIG without the file: %v", err)
	}
	sa := filepath.Join(other, "sa.json")
	os.WriteFile(sa, []byte(serviceFile(t, "")), 0o600)
	env["GOOGLE_APPLICATION_CREDENTIALS"] = sa
	if c, err = Find(getenv, home); err != nil || c.Path != sa || c.File.Type != ServiceAccount {
		t.Fatalf("GOOGLE_APPLICATION_CREDENTIALS: %+v, %v", c, err)
	}
	env["GOOGLE_APPLICATION_CREDENTIALS"] = filepath.Join(other, "missing.json")
	if _, err = Find(getenv, home); err == nil || errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Fatalf("a missing named file: %v", err)
	}
	os.WriteFile(sa, []byte(`{"type":"impersonated_service_account"}`), 0o600)
	env["GOOGLE_APPLICATION_CREDENTIALS"] = sa
	if _, err = Find(getenv, home); err == nil || !strings.Contains(err.Error(), sa) {
		t.Fatalf("an unsupported file: %v", err)
	}
}

// TestTokenSource: both kinds of file get an access token from their
// token endpoint (the simulated model's, which checks a refresh grant's
// fields and a JWT grant's assertion); the endpoint's refusal is the
// source's error.
func TestTokenSource(t *testing.T) {
	_, base := simtest.Serve(t, `{"steps": [{"say": "x"}]}`, "")
	for _, tc := range []struct{ name, file, want string }{
		{"user", userFile(base + "/token"), "ya29.sim-"},
		{"service account", serviceFile(t, base+"/token"), "ya29.sim-"},
		// The assertion's audience is the file's token URI: another path
		// of the same server is not it.
		{"wrong audience", serviceFile(t, base+"/token?x=1"), "invalid_grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			tok, err := f.TokenSource(context.Background(), nil, "").Token()
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = tok.AccessToken
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzParse: any bytes are a credential file or an error; a file
// accepted is one of the two kinds with what it needs.
func FuzzParse(f *testing.F) {
	f.Add([]byte(userFile("")))
	f.Add([]byte(serviceFile(f, "https://oauth2.googleapis.com/token")))
	f.Add([]byte(`{"type":"external_account"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		switch c.Type {
		case AuthorizedUser:
			if c.ClientID == "" || c.ClientSecret == "" || c.RefreshToken == "" {
				t.Fatalf("accepted %+v", c)
			}
		case ServiceAccount:
			if _, err := parseKey(c.PrivateKey); err != nil || c.ClientEmail == "" {
				t.Fatalf("accepted %+v", c)
			}
		default:
			t.Fatalf("accepted type %q", c.Type)
		}
		if c.tokenURL() == "" {
			t.Fatal("no token URL")
		}
	})
}

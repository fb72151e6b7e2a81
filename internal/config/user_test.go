package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadUser(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, UserFile)
	if u, err := LoadUser(file); err != nil || u.Approval != "" {
		t.Fatalf("missing file: %+v, %v", u, err)
	}
	good := "provider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\napproval = \"on-request\"\napproval_edits = \"ask\"\n[shell_environment]\ninclude = [\"DATABASE_URL\", \"AWS_*\"]\nexclude = [\"CORP_*\"]\n[sandbox]\nhidden = [\"~/secrets\"]\nrelease = [\"~/.npmrc\"]\n"
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := LoadUser(file)
	if err != nil {
		t.Fatal(err)
	}
	if u.Provider != "anthropic" || u.Model != "claude-sonnet-4-5" || u.Approval != "on-request" || u.ApprovalEdits != "ask" || len(u.ShellEnvironment.Include) != 2 || u.ShellEnvironment.Exclude[0] != "CORP_*" ||
		u.Sandbox.Hidden[0] != "~/secrets" || u.Sandbox.Release[0] != "~/.npmrc" {
		t.Fatalf("%+v", u)
	}
	for body, want := range map[string]string{
		"approval = \"sometimes\"\n":               "approval \"sometimes\"",
		"approval_edits = \"always\"\n":            "approval_edits \"always\": use ask",
		"[shell_environment]\ninclud = [\"X\"]\n":  "unknown setting \"shell_environment.includ\"",
		"[shell_environment]\ninclude = [\"[\"]\n": "bad pattern",
		"approval = \n":                            "line 1",
	} {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadUser(file); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), file) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	if got := ExpandHome("~/x/y", "/h"); got != "/h/x/y" {
		t.Errorf("ExpandHome: %s", got)
	}
}

// A project cannot set what belongs to the user, trusted or not.
func TestProjectCannotSetUserSettings(t *testing.T) {
	for _, body := range []string{
		"approval = \"never\"\n",
		"approval_edits = \"accept\"\n",
		"provider = \"openai\"\n",
		"model = \"gpt-5.2\"\n",
		"[shell_environment]\ninclude = [\"*\"]\n",
		"[sandbox]\nrelease = [\"~/.ssh\"]\n",
		"[sandbox]\nhidden = []\n",
		"[mcp]\ntoken_env = [\"*\"]\n",
	} {
		_, err := Parse(t.TempDir(), []byte(body))
		if err == nil || !strings.Contains(err.Error(), "user's configuration") || !strings.Contains(err.Error(), "a project cannot set") {
			t.Errorf("%q: %v", body, err)
		}
		// The file is the user's to fix: exit status 2 (cli.ExitCode).
		var us interface{ UsageError() bool }
		if !errors.As(err, &us) || !us.UsageError() {
			t.Errorf("%q: %T is not a usage error", body, err)
		}
	}
}

// TestNamedProviders: [providers.NAME] is read with its settings, and a
// key's value in the file, a bad URL, wire, variable or header is refused.
func TestNamedProviders(t *testing.T) {
	const good = `
[providers.openrouter]
base_url = "https://openrouter.ai/api/v1"
wire = "chat"
env_key = "OPENROUTER_API_KEY"
model = "anthropic/claude-sonnet-4.5"
headers = { "HTTP-Referer" = "https://example.org", "X-Title" = "truss" }
env_headers = { "X-Org-Token" = "ORG_TOKEN" }
context_window = 200000
max_output = 64000

[providers.local]
base_url = "http://127.0.0.1:8080/v1"
wire = "chat"
`
	u, err := ParseUser("config.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	or := u.Providers["openrouter"]
	if or.Wire != "chat" || or.EnvKey != "OPENROUTER_API_KEY" || or.Model != "anthropic/claude-sonnet-4.5" || or.Headers["X-Title"] != "truss" || or.EnvHeaders["X-Org-Token"] != "ORG_TOKEN" {
		t.Errorf("openrouter: %+v", or)
	}
	if w, o := or.Limits(); w != 200000 || o != 64000 {
		t.Errorf("openrouter's limits: %d / %d", w, o)
	}
	if w, o := u.Providers["local"].Limits(); w != 0 || o != 0 {
		t.Errorf("local's limits: %d / %d, want none", w, o)
	}
	if got := strings.Join(or.Vars(), " "); got != "OPENROUTER_API_KEY ORG_TOKEN" {
		t.Errorf("Vars: %q", got)
	}
	if l := u.Providers["local"]; l.EnvKey != "" || len(l.Vars()) != 0 {
		t.Errorf("local: %+v", l)
	}
	for _, tc := range []struct{ body, want string }{
		{"[providers.x]\nbase_url = \"https://h/v1\"\nwire = \"chat\"\napi_key = \"sk-abc\"\n", "providers.x.api_key: a key's value does not belong in a file; set env_key"},
		{"[providers.x]\nbase_url = \"https://h/v1\"\nwire = \"chat\"\ntoken = \"abc\"\n", "providers.x.token: a key's value"},
		{"[providers.x]\nbase_url = \"https://h/v1\"\nwire = \"chat\"\nenv_key = \"sk-or-v1-abcdef\"\n", "providers.x: env_key does not hold a variable's name (it looks like a key)"},
		{"[providers.x]\nbase_url = \"https://h/v1\"\nwire = \"chat\"\nenv_key = \"gsk_abcDEF123456\"\n", "providers.x: env_key does not hold a variable's name (it looks like a key)"},
		{"[providers.x]\nbase_url = \"https://h/v1\"\nwire = \"chat\"\nenv_key = \"sk-proj-abc123\"\n", "env_key does not hold a variable's name"},
		{"[gemini]\napi_key = \"AIzaSyA-1234\"\n", "gemini.api_key: a key's value does not belong in a file"},
		{"anthropic_api_key = \"sk-ant-1\"\n", "anthropic_api_key: a key's value does not belong in a file"},
		{"[providers.x]\nbase_url = \"https://user:pw@h/v1\"\nwire = \"chat\"\n", "base_url holds a user or password"},
		{"[providers.x]\nwire = \"chat\"\n", "base_url is missing"},
		{"[providers.x]\nbase_url = \"ftp://h\"\nwire = \"chat\"\n", "is not an http or https URL"},
		{"[providers.x]\nbase_url = \"https://h\"\nwire = \"chat\"\nheaders = { Authorization = \"Bearer sk\" }\n", "headers: Authorization carries a credential"},
		{"[providers.x]\nbase_url = \"https://h\"\nwire = \"chat\"\nheaders = { \"X-Api-Key\" = \"k\" }\n", "headers: X-Api-Key carries a credential"},
		{"[providers.x]\nbase_url = \"https://h\"\nwire = \"chat\"\nheaders = { \"a b\" = \"v\" }\n", "headers: \"a b\" is not a header"},
		{"[providers.x]\nbase_url = \"https://h\"\nwire = \"chat\"\nheaders = { \"X-A\" = \"v\\r\\nX-B: w\" }\n", "headers: \"X-A\" is not a header"},
		{"[providers.x]\nbase_url = \"https://h\"\nwire = \"chat\"\nenv_headers = { Authorization = \"Bearer x\" }\n", "env_headers: Authorization: \"Bearer x\" is not a variable's name"},
		{"[providers.\"a/b\"]\nbase_url = \"https://h\"\nwire = \"chat\"\n", "providers.a/b: a provider's name is"},
		{"[providers.x]\nbase_url = \"https://h\"\nwire = \"chat\"\nmodle = \"m\"\n", "unknown setting \"providers.x.modle\""},
		{"[providers.x]\nbase_url = \"https://h\"\nwire = \"chat\"\ncontext_window = -1\n", "providers.x: context_window must be a number of tokens above 0, not -1"},
		{"[providers.x]\nbase_url = \"https://h\"\nwire = \"chat\"\nmax_output = 0\n", "providers.x: max_output must be a number of tokens above 0, not 0"},
		{"[providers.x]\nbase_url = \"https://h\"\nwire = \"chat\"\ncontext_window = 8192\nmax_output = 16384\n", "providers.x: max_output (16384) is more than context_window (8192)"},
		{"[providers.x]\nbase_url = \"https://h\"\nwire = \"chat\"\ncontext_window = \"200K\"\n", "providers.x.context_window must be a whole number of tokens (such as 200000), not \"200K\""},
	} {
		_, err := ParseUser("config.toml", []byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "config.toml: ") {
			t.Errorf("%q: %v, want %q", tc.body, err, tc.want)
		}
		for _, secret := range []string{"abcdef", "abcDEF123456", "abc123", "1234", "sk-ant-1"} {
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("%q: %v echoes the key", tc.body, err)
			}
		}
	}
	// A project's configuration never names a provider, trusted or not:
	// base_url and env_key would send the user's key to its server.
	// A project's [providers] is ignored, and said so, naming the file;
	// the rest of the file applies.
	root := t.TempDir()
	c, err := Parse(root, []byte(good+"\n[sandbox]\nnetwork = false\n"))
	if err != nil || c.Providers != nil || c.Trust.ProvidersIn != filepath.Join(root, Path) {
		t.Fatalf("a project's providers: %+v, %v", c, err)
	}
	if w := c.Trust.Warning(); !strings.HasPrefix(w, filepath.Join(root, Path)+": [providers] is ignored: named providers belong in the user's configuration") {
		t.Errorf("warning %q", w)
	}
}

func FuzzParseUser(f *testing.F) {
	f.Add([]byte("[providers.x]\nbase_url = \"https://h/v1\"\nwire = \"chat\"\nenv_key = \"K\"\nheaders = { A = \"b\" }\n"))
	f.Add([]byte("approval = \"never\"\n[sandbox]\nhidden = [\"~/x\"]\n"))
	f.Add([]byte("[providers.x]\napi_key = 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := ParseUser("f", b)
		if err != nil {
			return
		}
		for name, p := range u.Providers {
			if p.check(name) != nil {
				t.Fatalf("accepted a provider that fails its check: %s %+v", name, p)
			}
			for h, v := range p.Headers {
				if credentialName(h) || strings.ContainsAny(v, "\r\n") {
					t.Fatalf("accepted header %q: %q", h, v)
				}
			}
		}
	})
}

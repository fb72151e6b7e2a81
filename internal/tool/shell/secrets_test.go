package shell

import (
	"strings"
	"testing"
)

// TestSecretValues: a value holding a credential of a known form is
// withheld whatever the variable's name, and ordinary values that look a
// little like one are not. The credentials are made up, of the right
// form.
func TestSecretValues(t *testing.T) {
	a := func(n int) string { return strings.Repeat("aB3", n)[:n] }
	h := func(n int) string { return strings.Repeat("0f9e", n)[:n] }
	withheld := map[string]string{
		"anthropic":         "sk-ant-api03-" + a(40),
		"openai project":    "sk-proj-" + a(48),
		"openai legacy":     "sk-" + a(48),
		"openrouter":        "sk-or-v1-" + h(64),
		"stripe":            "sk_live_" + a(24),
		"stripe restricted": "rk_live_" + a(24),
		"github classic":    "ghp_" + a(36),
		"github fine":       "github_pat_11ABCDEFG0" + a(60),
		"gitlab":            "glpat-" + a(20),
		"hugging face":      "hf_" + a(34),
		"slack bot":         "xoxb-1234567890-1234567890123-" + a(24),
		"slack app":         "xapp-1-A0" + a(30),
		"aws key id":        "AKIAIOSFODNN7EXAMPLE",
		"aws sts id":        "ASIA" + strings.ToUpper(h(16)),
		"google api":        "AIza" + a(35),
		"google oauth":      "ya29." + a(60),
		"sendgrid":          "SG." + a(22) + "." + a(43),
		"shopify":           "shpat_" + h(32),
		"databricks":        "dapi" + h(32),
		"digitalocean":      "dop_v1_" + h(64),
		"pypi":              "pypi-AgEIcHlwaS5vcmc" + a(60),
		"npm":               "npm_" + a(36),
		"groq":              "gsk_" + a(52),
		"age identity":      "AGE-SECRET-KEY-1" + strings.ToUpper(h(58)),
		"jwt":               "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + a(43),
		"pem":               "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
		"pgp":               "-----BEGIN PGP PRIVATE KEY BLOCK-----\n...",
		"azure":             "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + a(86) + "==;EndpointSuffix=core.windows.net",
		"azure sas":         "https://x.blob.core.windows.net/c?sv=2022-11-02&se=2026-12-31&sp=r&sig=" + a(43) + "%3D",
		"in a header":       "Authorization: Bearer ghp_" + a(36),
		"in a url query":    "https://api.example.com/v1?key=AIza" + a(35),
		"slack webhook":     "https://hooks.slack.com/services/T0000000/B0000000/" + a(24),
		"discord webhook":   "https://discord.com/api/webhooks/123456789012345678/" + a(68),
		"basic auth":        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
		"telegram":          "123456789:" + a(35),
		"twilio":            "SK" + h(32),
		"mailgun":           "key-" + h(32),
		"do spaces":         "DO00" + strings.ToUpper(h(60)),
		"heroku":            "HRKU-" + a(60),
		"atlassian":         "ATATT3xFfGF0" + a(180),
	}
	for name, v := range withheld {
		if !WithheldValue(v) {
			t.Errorf("%s: %q is not withheld", name, v)
		}
	}
	passed := []string{
		"/usr/local/bin:/usr/bin:/bin", "/home/u/go", "sk-learn", "scikit-learn==1.5.0", "sk-", "task-runner",
		"4b825dc642cb6eb9a060e54bf8d69288fbad87f1", // a git object name
		"123e4567-e89b-12d3-a456-426614174000",     // a UUID
		"di=01;34:ln=01;36:so=01;35", "-mod=mod -trimpath", `\u@\h:\w\$ `, "en_US.UTF-8", "xterm-256color",
		"aGVsbG8gd29ybGQ=", "AKIA", "akia" + strings.ToLower(h(16)), "MASKIAIOSFODNN7EXAMPLE9",
		"eyJhbGciOiJIUzI1NiJ9", // a JWT header alone is no token
		"ghp_short", "xoxb-", "hf_hub_offline", "npm_config_cache", "https://github.com/org/repo.git",
		"postgres://localhost:5432/db", "dapi-gateway", "secret_santa", "12:30:45", "SKIP_TESTS", "key-value", "Basic",
		"https://hooks.slack.com/", "localhost:8080", "2026-12-05T12:30:45Z",
	}
	for _, v := range passed {
		if WithheldValue(v) {
			t.Errorf("%q is withheld", v)
		}
	}
}

// TestSecretNames: the new words withhold, and the usual look-alikes do
// not.
func TestSecretNames(t *testing.T) {
	for _, n := range []string{"AUTHORIZATION", "HTTP_AUTHORIZATION", "BEARER", "API_BEARER", "WALLET_MNEMONIC", "MNEMONIC", "GITHUB_OTP", "TOTP_SEED", "MFA_CODE"} {
		if !Withheld(n) {
			t.Errorf("%s is not withheld", n)
		}
	}
	for _, n := range []string{"PATH", "PYTHONHASHSEED", "RANDOM_SEED", "OTEL_SERVICE_NAME", "GOPATH", "HOTPLUG", "COMPASS"} {
		if Withheld(n) {
			t.Errorf("%s is withheld", n)
		}
	}
}

// FuzzWithheldValue: the value parsers neither panic nor let a password
// through because of what precedes it: a URL with a password or a
// password parameter appended to any value withholds it, and a value
// with neither ":", "=" nor "@" is withheld only for its form.
func FuzzWithheldValue(f *testing.F) {
	for _, v := range []string{
		"postgres://app:pa#ss@db/x", "redis://:s3cr%t@h", "u:p@proxy:3128", "https://x/a https://u:p@y/b",
		"?next_token=a&token=s", "Password = x;", `{"password": "x"}`, "http://localhost:5173/@vite",
		"nginx:1.25@sha256:9f86d081", "/usr/bin:/bin", "git@github.com:o/r.git", "a://", "://@", ":@", "=",
		"h:8443/x?m=a@b", "x:1/@", "sk-ant-api03-", "eyJ.eyJ.", "",
	} {
		f.Add(v, "")
	}
	f.Fuzz(func(t *testing.T, v, name string) {
		Withheld(name)
		WithheldValue(v)
		if !WithheldValue(v + " postgres://u:p@h/db") {
			t.Errorf("%q followed by a URL with a password passes", v)
		}
		if !WithheldValue(v + "&password=x") {
			t.Errorf("%q followed by a password parameter passes", v)
		}
		if !strings.ContainsAny(v, ":=@") && WithheldValue(v) != secretForm(v) {
			t.Errorf("%q: withheld %v, of a secret's form %v", v, WithheldValue(v), secretForm(v))
		}
	})
}

// BenchmarkWithheldValue measures the value check on a developer's
// usual variables and on 1 MiB values built to make a parser go back
// over what it has read (many URLs, keys and separators, one long word).
func BenchmarkWithheldValue(b *testing.B) {
	const mib = 1 << 20
	for _, bc := range []struct {
		name string
		vals []string
	}{
		{"usual", []string{
			"/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin:/home/u/go/bin", "/home/u", "en_US.UTF-8", "xterm-256color",
			"postgres://app:hunter2@db.internal:5432/prod", "https://x/simple https://y/simple", "-mod=mod -trimpath",
			"di=01;34:ln=01;36:so=01;35:pi=40;33:ex=01;32", "http://localhost:5173/@vite/client", "unix:path=/run/user/1000/bus",
		}},
		{"urls", []string{strings.Repeat("a://", mib/4)}},
		{"keys", []string{strings.Repeat("k=v&", mib/4)}},
		{"colons", []string{strings.Repeat("a:", mib/2)}},
		{"word", []string{strings.Repeat("P", mib-2) + "D=x"}},
		{"at", []string{strings.Repeat("a:b@", mib/4)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := 0
			for _, v := range bc.vals {
				n += len(v)
			}
			b.SetBytes(int64(n))
			for b.Loop() {
				for _, v := range bc.vals {
					WithheldValue(v)
				}
			}
		})
	}
}

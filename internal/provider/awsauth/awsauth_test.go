package awsauth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// env is a fake environment.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestResolve(t *testing.T) {
	home := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(home, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write(".aws/credentials", "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = sdefault\n\n[half]\naws_access_key_id = AKIAHALF\n")
	write(".aws/config", "[default]\nregion = eu-central-1\n\n[profile dev]\nregion = us-west-2\naws_access_key_id = AKIADEV\naws_secret_access_key = sdev\naws_session_token = tdev\n\n"+
		"[profile sso]\nsso_session = corp\nregion = us-east-1\n\n[profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = default\n\n"+
		"[profile proc]\ncredential_process = printf '{\"Version\":1,\"AccessKeyId\":\"AKIAPROC\",\"SecretAccessKey\":\"sp\"}'\n\n[profile empty]\nregion = ap-south-1\n")
	other := write("elsewhere/creds", "[default]\naws_access_key_id = AKIAOTHER\naws_secret_access_key = so\n")
	bad := write("elsewhere/bad", "nonsense\n")

	for _, tc := range []struct {
		name                string
		env                 map[string]string
		home                string
		region, source, key string
		token               string
		err                 string
		noCredentials       bool
	}{
		{name: "the API key first", env: map[string]string{"AWS_BEARER_TOKEN_BEDROCK": "ABSK-x", "AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "s"},
			region: "eu-central-1", source: "AWS_BEARER_TOKEN_BEDROCK", token: "ABSK-x"},
		{name: "the environment's keys before the files", env: map[string]string{"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-2", "AWS_DEFAULT_REGION": "nope"},
			region: "us-east-2", source: "AWS_ACCESS_KEY_ID", key: "AKIAENV"},
		{name: "AWS_DEFAULT_REGION before the profile's", env: map[string]string{"AWS_DEFAULT_REGION": "ca-central-1"},
			region: "ca-central-1", source: "profile default in " + filepath.Join(home, ".aws", "credentials"), key: "AKIADEFAULT"},
		{name: "half a pair in the environment", env: map[string]string{"AWS_ACCESS_KEY_ID": "AKIAENV"}, err: "AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY"},
		{name: "a profile of the config file", env: map[string]string{"AWS_PROFILE": "dev"},
			region: "us-west-2", source: "profile dev in " + filepath.Join(home, ".aws", "config"), key: "AKIADEV"},
		{name: "credential_process", env: map[string]string{"AWS_PROFILE": "proc"},
			source: "profile proc in " + filepath.Join(home, ".aws", "config") + " (credential_process)", key: "AKIAPROC"},
		{name: "SSO is refused with the way round", env: map[string]string{"AWS_PROFILE": "sso"},
			err: "uses sso_session, whose keys come from AWS's services, which Truss does not call: add credential_process = aws configure export-credentials --profile sso --format process"},
		{name: "a role is refused", env: map[string]string{"AWS_PROFILE": "role"}, err: "uses role_arn"},
		{name: "half a pair in a file", env: map[string]string{"AWS_PROFILE": "half"}, err: "has only half of aws_access_key_id and aws_secret_access_key"},
		{name: "a profile without credentials", env: map[string]string{"AWS_PROFILE": "empty"}, err: "has neither aws_access_key_id nor credential_process", noCredentials: true},
		{name: "an unknown profile", env: map[string]string{"AWS_PROFILE": "nope"}, err: "profile nope (AWS_PROFILE) is in neither"},
		{name: "the files' variables", env: map[string]string{"AWS_SHARED_CREDENTIALS_FILE": other, "AWS_CONFIG_FILE": filepath.Join(home, "none")},
			source: "profile default in " + other, key: "AKIAOTHER"},
		{name: "a malformed file", env: map[string]string{"AWS_CONFIG_FILE": bad}, err: bad + ": line 1: neither a [section] nor key = value"},
		{name: "nothing at all", env: map[string]string{}, home: t.TempDir(), err: "no AWS credentials: set AWS_BEARER_TOKEN_BEDROCK", noCredentials: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := home
			if tc.home != "" {
				h = tc.home
			}
			r, err := Resolve(env(tc.env), h)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if errors.Is(err, ErrNoCredentials) != tc.noCredentials {
					t.Errorf("errors.Is(%v, ErrNoCredentials) = %v", err, !tc.noCredentials)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Region != tc.region || r.Source != tc.source || r.BearerToken != tc.token {
				t.Errorf("got region %q source %q token %q, want %q %q %q", r.Region, r.Source, r.BearerToken, tc.region, tc.source, tc.token)
			}
			if tc.token != "" {
				if r.Credentials != nil {
					t.Error("an API key and credentials")
				}
				return
			}
			c, err := r.Credentials.Retrieve(context.Background())
			if err != nil || c.AccessKeyID != tc.key {
				t.Errorf("credentials %+v, %v; want %s", c, err, tc.key)
			}
		})
	}
}

// TestProcessCached: a credential_process runs once while its keys are
// valid, and again once they are about to expire.
func TestProcessCached(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	conf := filepath.Join(dir, "config")
	run := func(exp time.Time) {
		cmd := `echo run >> ` + count + `; printf '{"Version":1,"AccessKeyId":"AKIAPROC","SecretAccessKey":"s","SessionToken":"t","Expiration":"` + exp.Format(time.RFC3339) + `"}'`
		if err := os.WriteFile(conf, []byte("[default]\ncredential_process = "+cmd+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	runs := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "run")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		exp  time.Time
		want int
	}{
		{"valid for an hour: one run", time.Now().Add(time.Hour), 1},
		{"expiring within the window: a run each time", time.Now().Add(30 * time.Second), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(count)
			run(tc.exp)
			r, err := Resolve(env(map[string]string{"AWS_CONFIG_FILE": conf, "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none")}), "")
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				c, err := r.Credentials.Retrieve(ctx)
				if err != nil || c.SessionToken != "t" || !c.CanExpire {
					t.Fatalf("%+v, %v", c, err)
				}
			}
			if got := runs(); got != tc.want {
				t.Errorf("the command ran %d times, want %d", got, tc.want)
			}
		})
	}
}

func TestProcessErrors(t *testing.T) {
	for _, tc := range []struct{ cmd, err string }{
		{"echo denied >&2; exit 3", "exit status 3: denied"},
		{"echo not json", "its output is not the JSON of credentials"},
		{`printf '{"Version":2,"AccessKeyId":"a","SecretAccessKey":"s"}'`, "Version is 2, not 1"},
		{`printf '{"Version":1,"AccessKeyId":"a"}'`, "lacks AccessKeyId or SecretAccessKey"},
	} {
		_, err := (&Process{Command: tc.cmd}).Retrieve(context.Background())
		var pe *ProcessError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want a *ProcessError with %q", tc.cmd, err, tc.err)
		}
	}
}

// FuzzParseProcessOutput: any output parses or fails without panicking;
// what parses has both keys.
func FuzzParseProcessOutput(f *testing.F) {
	f.Add([]byte(`{"Version":1,"AccessKeyId":"AKIA","SecretAccessKey":"s","SessionToken":"t","Expiration":"2030-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"Version":1,"AccessKeyId":"AKIA","SecretAccessKey":"s"}`))
	f.Add([]byte(`{"Version":1,"Expiration":"yesterday"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseProcessOutput(b)
		if err != nil {
			return
		}
		if c.AccessKeyID == "" || c.SecretAccessKey == "" || (c.CanExpire && c.Expires.IsZero()) {
			t.Fatalf("%+v from %q", c, b)
		}
	})
}

// TestProcessPath: a credential_process runs with the PATH Resolve's
// getenv gives (a session's, without the directories its commands write):
// an aws a command put in the workspace's activated .venv/bin, first on
// the process's PATH, is not the one run; the user's, in the given PATH,
// is.
func TestProcessPath(t *testing.T) {
	dir := t.TempDir()
	planted, trusted := filepath.Join(dir, "venv", "bin"), filepath.Join(dir, "usr", "bin")
	for d, key := range map[string]string{planted: "AKIAPLANTED", trusted: "AKIAUSER"} {
		os.MkdirAll(d, 0o755)
		script := "#!/bin/sh\nprintf '{\"Version\":1,\"AccessKeyId\":\"" + key + "\",\"SecretAccessKey\":\"s\"}'\n"
		if err := os.WriteFile(filepath.Join(d, "fakeaws"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "config")
	if err := os.WriteFile(conf, []byte("[default]\ncredential_process = fakeaws export\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", planted+string(os.PathListSeparator)+os.Getenv("PATH"))
	r, err := Resolve(env(map[string]string{"AWS_CONFIG_FILE": conf, "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"PATH": trusted + string(os.PathListSeparator) + "/usr/bin:/bin"}), "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Credentials.Retrieve(context.Background())
	if err != nil || c.AccessKeyID != "AKIAUSER" {
		t.Fatalf("%+v, %v: want the user's aws, found in the given PATH", c, err)
	}
}

package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/sim"
)

// bedrockVars are the variables the Bedrock provider reads, cleared by
// the tests before they set theirs.
var bedrockVars = []string{"AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "ANTHROPIC_BEDROCK_BASE_URL"}

// TestBedrockProvider runs sessions with --provider bedrock against the
// simulated Bedrock runtime, which verifies each request's SigV4
// signature: the keys from the environment, from a profile's static keys
// or from its credential_process, or a Bedrock API key; the region from
// the flag, the variable or the profile; the model in Bedrock's form with
// Anthropic's typed tools and Claude's profile; and no AWS variable
// reaching a command.
func TestBedrockProvider(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "config")
	if err := os.WriteFile(conf, []byte("[profile static]\nregion = eu-west-3\naws_access_key_id = "+sim.BedrockAccessKeyID+"\naws_secret_access_key = "+sim.BedrockSecretAccessKey+"\n\n"+
		"[profile sso]\nregion = ap-northeast-1\ncredential_process = printf '{\"Version\":1,\"AccessKeyId\":\""+sim.BedrockAccessKeyID+"\",\"SecretAccessKey\":\""+sim.BedrockSecretAccessKey+"\",\"SessionToken\":\"tok\",\"Expiration\":\"2099-01-01T00:00:00Z\"}'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const modelID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	for _, tc := range []struct {
		name       string
		env        map[string]string
		flagRegion string
		auth       string
	}{
		{name: "the environment's keys, the region's variable", env: map[string]string{"AWS_ACCESS_KEY_ID": sim.BedrockAccessKeyID, "AWS_SECRET_ACCESS_KEY": sim.BedrockSecretAccessKey, "AWS_REGION": "us-west-2"},
			auth: "AWS4-HMAC-SHA256 Credential=" + sim.BedrockAccessKeyID + "/"},
		{name: "a profile's keys and region", env: map[string]string{"AWS_PROFILE": "static"}, auth: "AWS4-HMAC-SHA256 Credential="},
		{name: "credential_process, the flag's region", env: map[string]string{"AWS_PROFILE": "sso", "AWS_DEFAULT_REGION": "us-east-2"}, flagRegion: "ca-central-1", auth: "AWS4-HMAC-SHA256 Credential="},
		{name: "a Bedrock API key", env: map[string]string{"AWS_BEARER_TOKEN_BEDROCK": "ABSK-sim", "AWS_REGION": "us-east-1"}, auth: "Bearer ABSK-sim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, vertexScript)
			o.Validation.Off = true
			sc, err := sim.ParseScript([]byte(vertexScript))
			if err != nil {
				t.Fatal(err)
			}
			srv := sim.New(sc)
			srv.APIKey = "ABSK-sim"
			srv.Spec = simSpec()
			base, err := srv.Listen(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range bedrockVars {
				t.Setenv(k, "")
			}
			t.Setenv("AWS_CONFIG_FILE", conf)
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
			t.Setenv("ANTHROPIC_BEDROCK_BASE_URL", base)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o.Provider, o.Script, o.SimDialect, o.Model, o.Surface, o.Region = "bedrock", "", "", "", "", tc.flagRegion
			rs := shellResults(&o)
			s, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if i := s.Info(); i.Surface != "anthropic" || i.Model != modelID || i.Dialect != "anthropic" {
				t.Errorf("info %+v", i)
			}
			if _, err := s.Run(context.Background(), "env"); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i, r := range reqs {
				if r.Dialect != "bedrock" || r.Path != "/model/"+modelID+"/invoke-with-response-stream" || r.Status != 200 || !strings.HasPrefix(r.Header.Get("Authorization"), tc.auth) {
					t.Errorf("request %d: %s %s answered %d (%s)", i, r.Dialect, r.Path, r.Status, r.Header.Get("Authorization"))
				}
			}
			if tc.name == "credential_process, the flag's region" && !strings.Contains(reqs[0].Header.Get("Authorization"), "/ca-central-1/bedrock/") {
				t.Errorf("not signed for the flag's region: %s", reqs[0].Header.Get("Authorization"))
			}
			if !strings.Contains(string(reqs[0].Body), `"type":"bash_20250124"`) {
				t.Errorf("no typed bash tool: %s", reqs[0].Body)
			}
			if len(*rs) != 1 {
				t.Fatalf("%d commands ran", len(*rs))
			}
			if out := (*rs)[0].Stdout; strings.Contains(out, "AWS_") || strings.Contains(out, "BEDROCK") {
				t.Errorf("an AWS variable reached the command:\n%s", out)
			}
		})
	}
}

// TestBedrockProviderErrors: what --provider bedrock needs is said before
// anything runs.
func TestBedrockProviderErrors(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "config")
	if err := os.WriteFile(conf, []byte("[profile sso]\nsso_session = corp\nregion = us-east-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		project string
		want    string
	}{
		{"no credentials", map[string]string{"AWS_REGION": "us-east-1"}, "", "provider bedrock: no AWS credentials: set AWS_BEARER_TOKEN_BEDROCK"},
		{"no region", map[string]string{"AWS_BEARER_TOKEN_BEDROCK": "ABSK-x"}, "", "provider bedrock needs a region: --region, AWS_REGION"},
		{"an SSO profile", map[string]string{"AWS_PROFILE": "sso"}, "", "credential_process = aws configure export-credentials --profile sso --format process"},
		{"a project", map[string]string{"AWS_BEARER_TOKEN_BEDROCK": "ABSK-x", "AWS_REGION": "us-east-1"}, "p", "--project is for provider vertex or vertex-gemini, not bedrock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, vertexScript)
			for _, k := range bedrockVars {
				t.Setenv(k, "")
			}
			t.Setenv("AWS_CONFIG_FILE", conf)
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o.Provider, o.Script, o.SimDialect, o.Surface, o.Project = "bedrock", "", "", "", tc.project
			_, err := Open(context.Background(), o)
			var ce *ConfigError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ce) {
				t.Fatalf("error %v, want a *ConfigError with %q", err, tc.want)
			}
		})
	}
}

// TestBedrockModel: Bedrock's model ids name the models the profiles know.
func TestBedrockModel(t *testing.T) {
	for id, want := range map[string]string{
		"anthropic.claude-sonnet-4-5-20250929-v1:0":       "claude-sonnet-4-5-20250929",
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0":    "claude-sonnet-4-5-20250929",
		"global.anthropic.claude-haiku-4-5-20251001-v1:0": "claude-haiku-4-5-20251001",
		"anthropic.claude-3-7-sonnet-20250219-v1:0":       "claude-3-7-sonnet-20250219",
		"anthropic.claude-v2":                             "claude",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0": "claude-sonnet-4-5-20250929",
		"claude-sonnet-4-5":             "claude-sonnet-4-5",
		"meta.llama3-70b-instruct-v1:0": "meta.llama3-70b-instruct-v1:0",
	} {
		if got := bedrockModel(id); got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	for _, tc := range []struct{ model, editor string }{
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "text_editor_20250728"},
		{"anthropic.claude-opus-4-5-20251101-v1:0", "text_editor_20250728"},
		{"anthropic.claude-3-7-sonnet-20250219-v1:0", "text_editor_20250124"},
	} {
		set, prof, err := pickSurface("auto", wire("bedrock"), "bedrock", tc.model, false)
		if err != nil || set.Surface != "anthropic" || prof.Guess || prof.Editor != tc.editor || prof.Prices.Input == 0 {
			t.Errorf("%s: %v, %+v, %v", tc.model, set, prof, err)
		}
	}
}

// TestBedrockCredentialFiles: AWS's directory is hidden from commands and
// its variables withheld.
func TestBedrockCredentialFiles(t *testing.T) {
	if got := CredentialFiles("/home/u"); !slices.Contains(got, filepath.Join("/home/u", ".aws")) {
		t.Errorf("credential files %v lack ~/.aws", got)
	}
	if !slices.Contains(WithheldEnv(), "AWS_*") {
		t.Errorf("withheld %v lack AWS_*", WithheldEnv())
	}
}

package harness

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/sim"
)

// vertexScript runs env through the bash tool, then ends.
const vertexScript = `{"steps": [{"actions": [{"kind": "run", "command": "env"}]}, {"say": "Done."}]}`

// adcFile writes a credential file of kind ("authorized_user" or
// "service_account") whose token URI is tokenURI, and returns its path.
func adcFile(t *testing.T, kind, tokenURI, project string) string {
	t.Helper()
	f := map[string]string{"type": kind, "token_uri": tokenURI}
	switch kind {
	case "authorized_user":
		f["client_id"], f["client_secret"], f["refresh_token"], f["quota_project_id"] = "cid", "cs-4711", "1//rt-4711", project
	case "service_account":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalPKCS8PrivateKey(k)
		f["client_email"], f["private_key"], f["project_id"] = "bot@p.iam.gserviceaccount.com", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), project
	}
	b, _ := json.Marshal(f)
	p := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVertexProvider runs sessions with --provider vertex against the
// simulated Vertex AI: the application-default credentials (a user's
// refresh token or a service account's key) exchanged at the simulated
// token endpoint for the access token the routes require, the region and
// project from the flags, the variables or the file, the model in
// Vertex's form with Anthropic's typed tools and Claude's profile, and no
// Google variable reaching a command.
func TestVertexProvider(t *testing.T) {
	for _, tc := range []struct {
		name, kind, flagProject, envProject, fileProject string
		project                                          string
	}{
		{name: "a user's credentials, the project's variable", kind: "authorized_user", envProject: "env-proj", fileProject: "file-proj", project: "env-proj"},
		{name: "a service account, the project of its file", kind: "service_account", fileProject: "file-proj", project: "file-proj"},
		{name: "the flag first", kind: "authorized_user", flagProject: "flag-proj", envProject: "env-proj", project: "flag-proj"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, vertexScript)
			o.Validation.Off = true
			sc, err := sim.ParseScript([]byte(vertexScript))
			if err != nil {
				t.Fatal(err)
			}
			srv := sim.New(sc)
			srv.APIKey = "only-issued-tokens"
			srv.Spec = simSpec()
			srv.VertexProject = tc.project
			srv.VertexModels = []string{"claude-sonnet-4-5@20250929"}
			base, err := srv.Listen(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("ANTHROPIC_VERTEX_BASE_URL", base)
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adcFile(t, tc.kind, base+"/token", tc.fileProject))
			t.Setenv("CLOUD_ML_REGION", "europe-west1")
			t.Setenv("ANTHROPIC_VERTEX_PROJECT_ID", tc.envProject)
			t.Setenv("GOOGLE_CLOUD_PROJECT", "")
			t.Setenv("GCLOUD_PROJECT", "")
			var warnings []string
			o.OnWarning = func(msg string) { warnings = append(warnings, msg) }
			o.Provider, o.Script, o.SimDialect, o.Model, o.Surface, o.Project = "vertex", "", "", "", "", tc.flagProject
			rs := shellResults(&o)
			s, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if i := s.Info(); i.Surface != "anthropic" || i.Model != "claude-sonnet-4-5@20250929" || i.Dialect != "anthropic" {
				t.Errorf("info %+v", i)
			}
			if _, err := s.Run(context.Background(), "env"); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			want := "/v1/projects/" + tc.project + "/locations/europe-west1/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
			for i, r := range reqs {
				if r.Dialect != "vertex" || r.Path != want || r.Status != 200 || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ya29.sim-") {
					t.Errorf("request %d: %s %s answered %d (%s), want vertex %s 200", i, r.Dialect, r.Path, r.Status, r.Header.Get("Authorization"), want)
				}
			}
			if !strings.Contains(string(reqs[0].Body), `"type":"bash_20250124"`) {
				t.Errorf("no typed bash tool: %s", reqs[0].Body)
			}
			if len(*rs) != 1 {
				t.Fatalf("%d commands ran", len(*rs))
			}
			if out := (*rs)[0].Stdout; strings.Contains(out, "GOOGLE_") || strings.Contains(out, "CLOUD_ML") || strings.Contains(out, "VERTEX") {
				t.Errorf("a Google variable reached the command:\n%s", out)
			}
			if len(warnings) != 0 {
				t.Errorf("warnings %q", warnings)
			}
		})
	}
}

// TestVertexProviderErrors: what --provider vertex needs is said before
// any request, and the platform's flags are refused by other providers.
func TestVertexProviderErrors(t *testing.T) {
	user := adcFile(t, "authorized_user", "https://oauth2.googleapis.com/token", "")
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"type":"external_account"}`), 0o600)
	for _, tc := range []struct {
		name     string
		env      map[string]string
		provider string
		region   string
		want     string
	}{
		{"no region", map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": user, "ANTHROPIC_VERTEX_PROJECT_ID": "p"}, "vertex", "",
			"provider vertex needs a region: --region or CLOUD_ML_REGION"},
		{"no credentials", map[string]string{"CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "p"}, "vertex", "",
			"no Google application-default credentials: set GOOGLE_APPLICATION_CREDENTIALS"},
		{"no project", map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": user}, "vertex", "us-east5",
			"provider vertex needs a project: --project, ANTHROPIC_VERTEX_PROJECT_ID or GOOGLE_CLOUD_PROJECT"},
		{"an unsupported file", map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": bad, "CLOUD_ML_REGION": "us-east5"}, "vertex", "",
			`credentials of type "external_account" are not supported`},
		{"--region elsewhere", map[string]string{"ANTHROPIC_API_KEY": "k"}, "anthropic", "us-east5",
			"--region and --project are for provider vertex, vertex-gemini or bedrock, not anthropic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, vertexScript)
			t.Setenv("HOME", t.TempDir())
			for _, k := range []string{"GOOGLE_APPLICATION_CREDENTIALS", "CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CONFIG", "ANTHROPIC_API_KEY"} {
				t.Setenv(k, tc.env[k])
			}
			o.Provider, o.Script, o.SimDialect, o.Model, o.Surface, o.Region = tc.provider, "", "", "", "", tc.region
			_, err := Open(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !IsConfigError(err) {
				t.Fatalf("error %v, want a configuration error with %q", err, tc.want)
			}
		})
	}
}

// TestPlatformSimDialects: the simulated model speaks each cloud
// platform's routes to its adapter, with the surface its model is trained
// on: Anthropic's typed tools for Claude on Vertex AI (the region and
// project flags name the route) and on Bedrock (its Claude named in
// Bedrock's form), the generic tools for Gemini on Vertex AI.
func TestPlatformSimDialects(t *testing.T) {
	for _, tc := range []struct{ dialect, region, project, model, surface, wire string }{
		{"vertex", "global", "my-proj", "sim-claude", "anthropic", "anthropic"},
		{"bedrock", "", "", "anthropic.sim-claude-v1:0", "anthropic", "anthropic"},
		{"vertex-gemini", "us-central1", "my-proj", "sim-gemini", "generic", "gemini"},
	} {
		t.Run(tc.dialect, func(t *testing.T) {
			o := fixture(t, vertexScript)
			o.Validation.Off = true
			o.SimDialect, o.Surface, o.Region, o.Project = tc.dialect, "", tc.region, tc.project
			rs := shellResults(&o)
			s, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if i := s.Info(); i.Model != tc.model || i.Surface != tc.surface || i.Dialect != tc.wire {
				t.Errorf("info %+v", i)
			}
			if _, err := s.Run(context.Background(), "env"); err != nil {
				t.Fatal(err)
			}
			if len(*rs) != 1 {
				t.Fatalf("%d commands ran", len(*rs))
			}
		})
	}
}

// TestVertexModelProfiles: Vertex's model ids (name@version) find
// Claude's profiles, tools and prices.
func TestVertexModelProfiles(t *testing.T) {
	for _, tc := range []struct{ model, editor string }{
		{"claude-sonnet-4-5@20250929", "text_editor_20250728"},
		{"claude-opus-4-5@20251101", "text_editor_20250728"},
		{"claude-haiku-4-5@20251001", "text_editor_20250728"},
		{"claude-3-7-sonnet@20250219", "text_editor_20250124"},
	} {
		set, prof, err := pickSurface("auto", wire("vertex"), "vertex", tc.model, false)
		if err != nil || set.Surface != "anthropic" || prof.Guess || prof.Editor != tc.editor || prof.Prices.Input == 0 {
			t.Errorf("%s: %v, %+v, %v", tc.model, set, prof, err)
		}
	}
}

// TestVertexCredentialFiles: gcloud's directory is hidden from commands
// and Google's variables withheld.
func TestVertexCredentialFiles(t *testing.T) {
	if got := CredentialFiles("/home/u"); !slices.Contains(got, filepath.Join("/home/u", ".config", "gcloud")) {
		t.Errorf("credential files %v lack ~/.config/gcloud", got)
	}
	for _, v := range []string{"GOOGLE_APPLICATION_CREDENTIALS", "CLOUD_ML_REGION", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_*", "ANTHROPIC_*"} {
		if !slices.Contains(WithheldEnv(), v) {
			t.Errorf("withheld %v lack %s", WithheldEnv(), v)
		}
	}
}

// TestVertexGeminiQuotaProject: vertex-gemini's requests carry the quota
// project in X-Goog-User-Project, as Google's SDK picks it:
// GOOGLE_CLOUD_QUOTA_PROJECT, else the credential file's
// quota_project_id; none without either.
func TestVertexGeminiQuotaProject(t *testing.T) {
	for _, tc := range []struct {
		name, kind, fileQuota, envQuota string
		want                            []string
	}{
		{name: "the file's", kind: "authorized_user", fileQuota: "file-quota", want: []string{"file-quota"}},
		{name: "the variable first", kind: "authorized_user", fileQuota: "file-quota", envQuota: "env-quota", want: []string{"env-quota"}},
		{name: "none", kind: "service_account", fileQuota: "sa-project"},
		{name: "the variable without the file's", kind: "service_account", fileQuota: "sa-project", envQuota: "env-quota", want: []string{"env-quota"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adcFile(t, tc.kind, "https://oauth2.googleapis.com/token", tc.fileQuota))
			t.Setenv("GOOGLE_CLOUD_QUOTA_PROJECT", tc.envQuota)
			c, err := vertexGeminiConfig(context.Background(), Endpoint{Region: "us-central1", Project: "p"})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Header.Values("X-Goog-User-Project"); !slices.Equal(got, tc.want) {
				t.Errorf("X-Goog-User-Project %q, want %q", got, tc.want)
			}
			// A PERMISSION_DENIED says what the project's account lacks.
			if !strings.Contains(c.DeniedHint, "roles/aiplatform.user) in project p,") || !strings.Contains(c.DeniedHint, "served in us-central1") {
				t.Errorf("DeniedHint %q", c.DeniedHint)
			}
		})
	}
}

// TestPlatformPlace: a cloud platform's constructor says where its
// requests go, for the session's header: Vertex AI's project (the
// credential file's when none is given) and region, Bedrock's region;
// other providers and the simulated model say nothing.
func TestPlatformPlace(t *testing.T) {
	for _, tc := range []struct {
		name, dialect   string
		region, project string
		sim             bool
		want            string
	}{
		{name: "vertex", dialect: "vertex", region: "us-east5", project: "flag-proj", want: "project flag-proj, us-east5"},
		{name: "vertex, the file's project", dialect: "vertex", region: "europe-west1", want: "project file-proj, europe-west1"},
		{name: "vertex-gemini", dialect: "vertex-gemini", region: "us-central1", project: "p", want: "project p, us-central1"},
		{name: "bedrock", dialect: "bedrock", region: "eu-west-1", want: "eu-west-1"},
		{name: "the simulated model's", dialect: "vertex", sim: true},
		{name: "no platform", dialect: "anthropic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adcFile(t, "authorized_user", "https://oauth2.googleapis.com/token", "file-proj"))
			for _, k := range bedrockVars {
				t.Setenv(k, "")
			}
			t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSK-x")
			d, ok := dialect(tc.dialect)
			if !ok {
				t.Fatalf("no dialect %s", tc.dialect)
			}
			var place string
			d.New(context.Background(), Endpoint{BaseURL: "http://127.0.0.1:9", APIKey: "k", Region: tc.region, Project: tc.project, Sim: tc.sim, Place: &place})
			if place != tc.want {
				t.Errorf("place %q, want %q", place, tc.want)
			}
		})
	}
}

// TestVertexTokenRefusalMasked: a token endpoint whose refusal quotes the
// request it was sent (the file's client secret and refresh token, form
// encoded) is shown with those masked, on either Vertex AI route.
func TestVertexTokenRefusalMasked(t *testing.T) {
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "bad request body: " + string(b)})
	}))
	defer tokens.Close()
	for _, name := range []string{"vertex", "vertex-gemini"} {
		t.Run(name, func(t *testing.T) {
			o := fixture(t, vertexScript)
			t.Setenv("HOME", t.TempDir())
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adcFile(t, "authorized_user", tokens.URL+"/token", "p1"))
			t.Setenv("ANTHROPIC_VERTEX_BASE_URL", tokens.URL)
			t.Setenv("GOOGLE_VERTEX_BASE_URL", tokens.URL)
			o.Provider, o.Script, o.SimDialect, o.Model, o.Surface, o.Region = name, "", "", "", "", "us-east5"
			s, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			out, err := s.Run(context.Background(), "hi")
			if err == nil {
				err = out.Agent.Err
			}
			if err == nil || !strings.Contains(err.Error(), "invalid_client") {
				t.Fatalf("error %v, want the token endpoint's refusal", err)
			}
			for _, secret := range []string{"cs-4711", "rt-4711"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows %s: %v", secret, err)
				}
			}
		})
	}
}

package harness

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/provider"
	anthropicprov "github.com/trussdev/truss/internal/provider/anthropic"
	"github.com/trussdev/truss/internal/provider/gemini"
	"github.com/trussdev/truss/internal/provider/googleauth"
)

// googleCloud is where a Vertex AI endpoint's requests go and with what
// credentials: its region and project, the project of the credential file
// when none is given, and a source of access tokens from Google's
// application-default credentials (GOOGLE_APPLICATION_CREDENTIALS, else
// gcloud's file). The simulated model gets a token of its own and a
// project and region when none is given. Every refusal is a *ConfigError
// naming what to set: setRegion and setProject say how the provider's
// are set. quota is the project billed for the requests, as Google's
// client libraries pick it: GOOGLE_CLOUD_QUOTA_PROJECT, else the
// credential file's quota_project_id ("" for none).
func googleCloud(ctx context.Context, e Endpoint, name, setRegion, setProject string) (region, project, quota string, ts oauth2.TokenSource, err error) {
	region, project = e.Region, e.Project
	if e.Sim {
		return cmpOr(region, "us-east5"), cmpOr(project, "sim-project"), "", oauth2.StaticTokenSource(&oauth2.Token{AccessToken: e.APIKey, TokenType: "Bearer"}), nil
	}
	if region == "" {
		return "", "", "", nil, configErrorf("provider %s needs a region: %s (us-east5, europe-west1, global, …)", name, setRegion)
	}
	if err := regionError(name, region, e.RegionFrom); err != nil {
		return "", "", "", nil, err
	}
	home, _ := os.UserHomeDir()
	creds, err := googleauth.Find(os.Getenv, home)
	if err != nil {
		if errors.Is(err, googleauth.ErrNoCredentials) {
			return "", "", "", nil, configErrorf("provider %s: %v", name, err)
		}
		return "", "", "", nil, configErrorf("provider %s: the application-default credentials: %v", name, err)
	}
	// A token endpoint's refusal may quote the request that carried them,
	// its form encoded: masked wherever an error shows it.
	for _, v := range []string{creds.File.ClientSecret, creds.File.RefreshToken} {
		e.Retry.Sent.Add(v, url.QueryEscape(v))
	}
	project = cmpOr(project, creds.File.Project())
	if project == "" {
		return "", "", "", nil, configErrorf("provider %s needs a project: %s (%s names none)", name, setProject, creds.Path)
	}
	for _, v := range []string{region, project} {
		if v == "." || v == ".." || strings.ContainsAny(v, "/?#%\\ ") {
			return "", "", "", nil, configErrorf("provider %s: %q cannot be part of a path", name, v)
		}
	}
	// The source outlives the call that made it: every turn may refresh
	// its token.
	quota = cmpOr(os.Getenv("GOOGLE_CLOUD_QUOTA_PROJECT"), creds.File.QuotaProjectID)
	return region, project, quota, creds.File.TokenSource(context.WithoutCancel(ctx), nil, ""), nil
}

// vertexConfig is the Messages adapter's configuration of an endpoint
// through Google Vertex AI (googleCloud).
func vertexConfig(ctx context.Context, e Endpoint) (anthropicprov.Config, error) {
	c := anthropicprov.Config{BaseURL: e.BaseURL, HTTP: e.HTTP, Retry: e.Retry, ServerTools: e.ServerTools,
		ThinkingBudget: int64(settings(e).ThinkingTokens), ContextManagement: e.ContextManagement}
	region, project, _, ts, err := googleCloud(ctx, e, "vertex", "--region or CLOUD_ML_REGION (or GOOGLE_CLOUD_LOCATION)", "--project, ANTHROPIC_VERTEX_PROJECT_ID or GOOGLE_CLOUD_PROJECT")
	if err != nil {
		return c, err
	}
	c.Vertex = &anthropicprov.Vertex{Region: region, Project: project, Token: ts, RegionFrom: e.RegionFrom}
	return c, nil
}

// vertexGeminiConfig is the Gemini adapter's configuration of an endpoint
// through Google Vertex AI (googleCloud): Google's publisher models on
// the API version Google's SDK uses for Vertex AI, at the region's
// address unless a base URL is given.
func vertexGeminiConfig(ctx context.Context, e Endpoint) (gemini.Config, error) {
	s := settings(e)
	c := gemini.Config{BaseURL: e.BaseURL, HTTP: e.HTTP, Retry: e.Retry, ThinkingTokens: s.ThinkingTokens, Effort: geminiEffort(e)}
	region, project, quota, ts, err := googleCloud(ctx, e, "vertex-gemini", "--region, GOOGLE_CLOUD_LOCATION or CLOUD_ML_REGION", "--project or GOOGLE_CLOUD_PROJECT")
	if err != nil {
		return c, err
	}
	setPlace(e, region, project)
	c.BaseURL = cmpOr(c.BaseURL, anthropicprov.VertexBaseURL(region))
	c.Path = "/" + gemini.VertexAPIVersion + "/projects/" + url.PathEscape(project) + "/locations/" + url.PathEscape(region) + "/publishers/google/models/%s"
	c.Token = ts
	c.DeniedHint = provider.VertexDeniedHint(project, region)
	if quota != "" {
		// As Google's SDK does: the quota project is billed and its quota
		// used, not the credentials' own project's.
		c.Header = http.Header{"X-Goog-User-Project": {quota}}
	}
	return c, nil
}

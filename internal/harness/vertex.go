package harness

import (
	"context"
	"errors"
	"os"

	"golang.org/x/oauth2"

	anthropicprov "github.com/trussdev/truss/internal/provider/anthropic"
	"github.com/trussdev/truss/internal/provider/googleauth"
)

// vertexConfig is the Messages adapter's configuration of an endpoint
// through Google Vertex AI: the region and project of the endpoint, the
// project of the credential file when none is given, and a source of
// access tokens from Google's application-default credentials
// (GOOGLE_APPLICATION_CREDENTIALS, else gcloud's file). The simulated
// model gets a token of its own and a project and region when none is
// given. Every refusal is a *ConfigError naming what to set.
func vertexConfig(ctx context.Context, e Endpoint) (anthropicprov.Config, error) {
	c := anthropicprov.Config{BaseURL: e.BaseURL, HTTP: e.HTTP, Retry: e.Retry, ServerTools: e.ServerTools,
		ThinkingBudget: int64(settings(e).ThinkingTokens), ContextManagement: e.ContextManagement}
	v := &anthropicprov.Vertex{Region: e.Region, Project: e.Project}
	if e.Sim {
		v.Region, v.Project = cmpOr(v.Region, "us-east5"), cmpOr(v.Project, "sim-project")
		v.Token = oauth2.StaticTokenSource(&oauth2.Token{AccessToken: e.APIKey, TokenType: "Bearer"})
		c.Vertex = v
		return c, nil
	}
	if v.Region == "" {
		return c, configErrorf("provider vertex needs a region: --region or CLOUD_ML_REGION (us-east5, europe-west1, global, …)")
	}
	home, _ := os.UserHomeDir()
	creds, err := googleauth.Find(os.Getenv, home)
	if err != nil {
		if errors.Is(err, googleauth.ErrNoCredentials) {
			return c, configErrorf("provider vertex: %v", err)
		}
		return c, configErrorf("provider vertex: the application-default credentials: %v", err)
	}
	v.Project = cmpOr(v.Project, creds.File.Project())
	if v.Project == "" {
		return c, configErrorf("provider vertex needs a project: --project, ANTHROPIC_VERTEX_PROJECT_ID or GOOGLE_CLOUD_PROJECT (%s names none)", creds.Path)
	}
	// The source outlives the call that made it: every turn may refresh
	// its token.
	v.Token = creds.File.TokenSource(context.WithoutCancel(ctx), nil, "")
	c.Vertex = v
	return c, nil
}

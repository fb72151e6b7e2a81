package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/config"
)

// TestMCPBearerTokenNeedsTheUser: a project's configuration names an MCP
// server's URL and the variable sent to it as a bearer token; the
// variable is sent only when the user's configuration allows it, and a
// model provider's key never.
func TestMCPBearerTokenNeedsTheUser(t *testing.T) {
	home := t.TempDir()
	t.Setenv("TRUSS_HOME", home)
	t.Setenv("DOCS_TOKEN", "docs-secret")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-user")
	project := func(env string) *config.Config {
		return &config.Config{MCP: config.MCP{Servers: map[string]config.MCPServer{
			"docs": {URL: "http://127.0.0.1:1/mcp", BearerTokenEnv: env}}}}
	}
	user := func(toml string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, config.UserFile), []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name, user, env, want string // want: the Authorization header, or the error's words
	}{
		{"no user configuration", "", "DOCS_TOKEN", "does not let a project's server have"},
		{"another variable allowed", "[mcp]\ntoken_env = [\"OTHER\"]\n", "DOCS_TOKEN", "does not let a project's server have"},
		{"allowed by name", "[mcp]\ntoken_env = [\"DOCS_TOKEN\"]\n", "DOCS_TOKEN", "Bearer docs-secret"},
		{"allowed by glob", "[mcp]\ntoken_env = [\"DOCS_*\"]\n", "DOCS_TOKEN", "Bearer docs-secret"},
		{"a provider's key", "[mcp]\ntoken_env = [\"*\"]\n", "ANTHROPIC_API_KEY", "a model provider's key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			user(tt.user)
			cfgs, err := MCPConfigs(project(tt.env), MCPOptions{})
			got := ""
			if err != nil {
				got = err.Error()
			} else if len(cfgs) == 1 {
				got = cfgs[0].Headers["Authorization"]
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if tt.want[0] != 'B' && strings.Contains(got, "secret") || strings.Contains(got, "sk-ant") {
				t.Errorf("the value leaked: %q", got)
			}
		})
	}
}

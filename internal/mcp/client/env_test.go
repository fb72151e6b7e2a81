package client

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// envFixture serves one tool, env, that answers with the server's
// environment, one variable a line.
func envFixture() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "env", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "The environment."}, func(ctx context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
	})
	return s
}

// A stdio server started by the client never inherits the harness's
// provider configuration; its configuration may give it variables on
// purpose.
func TestServerEnvironment(t *testing.T) {
	for _, kv := range []string{"OPENAI_BASE_URL=http://leak", "ANTHROPIC_BASE_URL=http://leak", "OLLAMA_HOST=leak", "OPENAI_API_KEY=sk-leak", "TRUSS_MODEL=leak", "GITHUB_TOKEN=leak"} {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	exe, _ := os.Executable()
	cfg := ServerConfig{Name: "env", Command: exe, Env: []string{"TRUSS_MCP_FIXTURE=env", "OLLAMA_HOST=given"}, StartupTimeout: 20 * time.Second}
	m := Start(context.Background(), []ServerConfig{cfg}, Options{})
	defer m.Close()
	if p := m.Wait(context.Background(), 20*time.Second); len(p) != 0 {
		t.Fatal("the server did not start")
	}
	r := m.Execute(context.Background(), call("env", "env", `{}`))
	if r.Err != nil {
		t.Fatalf("env: %v", r.Err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(r.Output, "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	for _, k := range []string{"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "TRUSS_MODEL", "GITHUB_TOKEN"} {
		if v, ok := got[k]; ok {
			t.Errorf("the server sees %s=%s", k, v)
		}
	}
	if got["OLLAMA_HOST"] != "given" {
		t.Errorf("OLLAMA_HOST = %q, want the configured value", got["OLLAMA_HOST"])
	}
	if got["PATH"] == "" {
		t.Error("the server has no PATH")
	}
}

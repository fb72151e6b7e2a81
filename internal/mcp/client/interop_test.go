package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/tool"
)

// The interoperability tests run Truss's MCP client against the reference
// servers from npm. TRUSS_MCP_NPM names a node_modules directory holding
// @modelcontextprotocol/server-filesystem and server-everything (.ci/mcp
// installs them); without it they are skipped.
func npmServer(t *testing.T, pkg string) string {
	t.Helper()
	dir := os.Getenv("TRUSS_MCP_NPM")
	if dir == "" {
		t.Skip("TRUSS_MCP_NPM is not set (see .ci/mcp/interop.sh)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node")
	}
	p := filepath.Join(dir, "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("TRUSS_MCP_NPM=%s: %v", dir, err)
	}
	return p
}

func mustReady(t *testing.T, m *Manager, name string) *Server {
	t.Helper()
	m.Wait(context.Background(), 60*time.Second)
	s := m.byName[name]
	if st, err := s.State(); st != Ready {
		t.Fatalf("server %s: %s %v", name, st, err)
	}
	return s
}

func exec1(t *testing.T, m *Manager, server, name, args string) tool.Result {
	t.Helper()
	return m.Execute(context.Background(), tool.Call{ID: "c", Op: tool.OpMCP, Args: &tool.MCPArgs{Server: server, Tool: name, Arguments: json.RawMessage(args)}})
}

// checkBindings checks that every tool of a server binds to a schema each
// provider takes: an object schema, portable (no $ref), and for Ollama only
// the keywords it reads.
func checkBindings(t *testing.T, s *Server) {
	t.Helper()
	for _, tl := range s.Tools() {
		for _, dialect := range []string{"anthropic", "responses", "ollama"} {
			b := NewBinding(s.Name(), tl, dialect)
			spec := b.Spec()
			var schema map[string]any
			if err := json.Unmarshal(spec.Parameters, &schema); err != nil || schema["type"] != "object" {
				t.Errorf("%s/%s (%s): parameters %s", s.Name(), tl.Name, dialect, spec.Parameters)
			}
			if strings.Contains(string(spec.Parameters), `"$ref"`) || strings.Contains(string(spec.Parameters), `"$schema"`) {
				t.Errorf("%s/%s (%s): not portable: %s", s.Name(), tl.Name, dialect, spec.Parameters)
			}
			if _, err := provider.StrictSchema(spec.Parameters); err != nil {
				t.Errorf("%s/%s: strict: %v", s.Name(), tl.Name, err)
			}
			if len(spec.Name) > 64 || spec.Kind != model.ToolFunction {
				t.Errorf("%s/%s: spec %+v", s.Name(), tl.Name, spec)
			}
		}
	}
}

func TestInteropServerFilesystem(t *testing.T) {
	js := npmServer(t, "server-filesystem")
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o644)
	m := Start(context.Background(), []ServerConfig{{Name: "fs", Command: "node", Args: []string{js, root}}}, Options{})
	defer m.Close()
	s := mustReady(t, m, "fs")
	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"read_text_file", "write_file", "list_directory", "edit_file"} {
		if !strings.Contains(","+strings.Join(names, ",")+",", ","+want+",") {
			t.Errorf("no %s among %v", want, names)
		}
	}
	checkBindings(t, s)
	if r := exec1(t, m, "fs", "read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "a.txt"))); r.Err != nil || r.Output != "alpha\n" {
		t.Errorf("read: %+v %q", r.Err, r.Output)
	}
	if r := exec1(t, m, "fs", "write_file", fmt.Sprintf(`{"path":%q,"content":"beta"}`, filepath.Join(root, "b.txt"))); r.Err != nil {
		t.Errorf("write: %+v", r.Err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "b.txt")); string(b) != "beta" {
		t.Errorf("b.txt = %q", b)
	}
	if r := exec1(t, m, "fs", "list_directory", fmt.Sprintf(`{"path":%q}`, root)); r.Err != nil || !strings.Contains(r.Output, "[FILE] a.txt") {
		t.Errorf("list: %+v %q", r.Err, r.Output)
	}
	if r := exec1(t, m, "fs", "read_text_file", `{"path":"/etc/passwd"}`); r.Err == nil || r.Err.Kind != tool.ErrTool || !strings.Contains(r.Err.Message, "Access denied") {
		t.Errorf("outside: %+v", r.Err)
	}
	if r := exec1(t, m, "fs", "read_text_file", `{}`); r.Err == nil {
		t.Errorf("missing argument accepted: %q", r.Output)
	}
}

func TestInteropServerEverythingStdio(t *testing.T) {
	js := npmServer(t, "server-everything")
	m := Start(context.Background(), []ServerConfig{{Name: "ev", Command: "node", Args: []string{js}}}, Options{})
	defer m.Close()
	s := mustReady(t, m, "ev")
	checkBindings(t, s)
	everything(t, m, "ev")
}

func everything(t *testing.T, m *Manager, name string) {
	t.Helper()
	if r := exec1(t, m, name, "echo", `{"message":"hi there"}`); r.Err != nil || r.Output != "Echo: hi there" {
		t.Errorf("echo: %+v %q", r.Err, r.Output)
	}
	if r := exec1(t, m, name, "get-sum", `{"a":3,"b":4}`); r.Err != nil || !strings.Contains(r.Output, "7") {
		t.Errorf("get-sum: %+v %q", r.Err, r.Output)
	}
	if r := exec1(t, m, name, "get-tiny-image", `{}`); r.Err != nil || !strings.Contains(r.Output, "[image: image/png, ") {
		t.Errorf("get-tiny-image: %+v %q", r.Err, r.Output)
	}
	if r := exec1(t, m, name, "get-structured-content", `{"location":"New York"}`); r.Err != nil || r.MCP == nil || len(r.MCP.Structured) == 0 {
		t.Errorf("get-structured-content: %+v %+v", r.Err, r.MCP)
	}
	if r := exec1(t, m, name, "get-sum", `{"a":"x"}`); r.Err == nil {
		t.Errorf("bad arguments accepted: %q", r.Output)
	}
}

func TestInteropServerEverythingHTTP(t *testing.T) {
	js := npmServer(t, "server-everything")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("node", js, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen: %s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	m := Start(context.Background(), []ServerConfig{{Name: "evh", URL: url}}, Options{})
	defer m.Close()
	mustReady(t, m, "evh")
	everything(t, m, "evh")
}

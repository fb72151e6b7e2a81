package server

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/mcp/client"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/patch"
	"github.com/trussdev/truss/internal/tool/shell"
)

// TestServer drives Truss's MCP server with the SDK's client over an
// in-memory transport.
func TestServer(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o644)
	ws, err := fs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	sh := shell.New(shell.Config{Dir: ws.Dir()})
	defer sh.Close()
	var mux tool.Mux
	fx := &fs.Executor{W: ws}
	mux.HandleAll(fs.Ops, fx)
	mux.HandleAll(shell.Ops, sh)
	mux.HandleAll(patch.Ops, patch.NewExecutor(fx))
	var mu sync.Mutex
	var evs []agent.Event
	ctx := context.Background()
	cs := serveInMemory(t, Config{Exec: &mux, Observer: agent.ObserverFunc(func(ev agent.Event) { mu.Lock(); evs = append(evs, ev); mu.Unlock() })})
	var toolNames []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		toolNames = append(toolNames, tl.Name)
	}
	served := Tools(false)
	slices.Sort(served)
	if strings.Join(toolNames, ",") != "create,insert,patch,replace,shell,view" || !slices.Equal(toolNames, served) {
		t.Errorf("tools: %v, Tools: %v", toolNames, served)
	}
	for _, tc := range []struct {
		tool   string
		args   map[string]any
		isErr  bool
		text   string
		verify func() string
	}{
		{"view", map[string]any{"path": "a.txt"}, false, "     1\tone\n     2\ttwo", nil},
		{"replace", map[string]any{"path": "a.txt", "old_str": "two", "new_str": "TWO"}, false, "update a.txt", func() string { b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); return string(b) }},
		{"create", map[string]any{"path": "sub/b.txt", "content": "bee\n"}, false, "add sub/b.txt", nil},
		{"insert", map[string]any{"path": "sub/b.txt", "line": 0, "text": "first"}, false, "update sub/b.txt", nil},
		{"patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: c.txt\n+sea\n*** End Patch\n"}, false, "add c.txt", nil},
		{"shell", map[string]any{"command": "cat c.txt; false"}, true, "sea\n[exit code: 1]", nil},
		{"view", map[string]any{"path": "../../etc/passwd"}, true, "outside", nil},
		{"replace", map[string]any{"path": "a.txt", "old_str": "zzz", "new_str": "y"}, true, "Error: ", nil},
	} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		text := client.Text(res)
		if res.IsError != tc.isErr || !strings.Contains(text, tc.text) {
			t.Errorf("%s %v: isError %v text %q", tc.tool, tc.args, res.IsError, text)
		}
		if tc.verify != nil && tc.verify() != "one\nTWO\n" {
			t.Errorf("%s: file is %q", tc.tool, tc.verify())
		}
	}
	// A schema violation is the SDK's input validation, before any executor.
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "view", Arguments: map[string]any{"path": 5}})
	if err == nil && !res.IsError {
		t.Errorf("a bad argument type was accepted")
	}
	mu.Lock()
	defer mu.Unlock()
	var completed int
	for _, ev := range evs {
		if ev.Type == agent.EventCallCompleted {
			completed++
			if ev.Ops[0].Surface != Surface || ev.Result == nil || len(ev.Results) != 1 {
				t.Errorf("event: %+v", ev)
			}
		}
	}
	if completed != 8 {
		t.Errorf("%d calls reported, want 8", completed)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub/b.txt")); string(b) != "first\nbee\n" {
		t.Errorf("b.txt = %q", b)
	}
}

// BenchmarkServe measures one call of Truss's server (view of a small
// file) from the SDK's client over an in-memory transport.
func BenchmarkServe(b *testing.B) {
	mux := fileTools(b)
	ctx := context.Background()
	cs := serveInMemory(b, Config{Exec: mux})
	params := &sdk.CallToolParams{Name: "view", Arguments: map[string]any{"path": "a.txt"}}
	for b.Loop() {
		if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
			b.Fatal(err)
		}
	}
}

// fileTools returns the file tools' executors over a new workspace
// holding a.txt ("one\ntwo\n"), closed with the test.
func fileTools(t testing.TB) *tool.Mux {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := fs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	var mux tool.Mux
	mux.HandleAll(fs.Ops, &fs.Executor{W: ws})
	return &mux
}

// serveInMemory serves cfg over in-memory transports and returns the
// connected client's session; both ends are closed with the test.
func serveInMemory(t testing.TB, cfg Config) *sdk.ClientSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := New(cfg).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

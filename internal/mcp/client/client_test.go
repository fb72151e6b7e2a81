package client

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/testenv"
	"github.com/trussdev/truss/internal/tool"
)

// The test binary doubles as a stdio MCP server (the fixture) when
// TRUSS_MCP_FIXTURE is set: "ok" serves at once, "slow" once the file
// named by TRUSS_MCP_GATE exists, "exit" writes to stderr and exits before
// answering.
func TestMain(m *testing.M) {
	switch os.Getenv("TRUSS_MCP_FIXTURE") {
	case "":
		os.Exit(testenv.Run(m))
	case "exit":
		fmt.Fprintln(os.Stderr, "fixture: missing API token")
		os.Exit(3)
	case "slow":
		for {
			if _, err := os.Stat(os.Getenv("TRUSS_MCP_GATE")); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	case "hang":
		fmt.Fprintln(os.Stderr, "fixture: waiting for a database")
		time.Sleep(time.Hour)
	case "env":
		if err := envFixture().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if err := fixture().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fixture:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type echoIn struct {
	Text string `json:"text"`
}
type addIn struct{ A, B int }
type addOut struct {
	Sum int `json:"sum"`
}
type bigIn struct {
	N int `json:"n"`
}

type sleepIn struct {
	MS int `json:"ms"`
}

func fixture() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "fixture", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text."}, func(ctx context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "look", Description: "Echo the text, changing nothing.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(ctx context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add."}, func(ctx context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
		return nil, addOut{Sum: in.A + in.B}, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fail."}, func(ctx context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("the disk is full")
	})
	sdk.AddTool(s, &sdk.Tool{Name: "sleep", Description: "Sleep."}, func(ctx context.Context, _ *sdk.CallToolRequest, in sleepIn) (*sdk.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
		case <-ctx.Done():
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "slept"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exit."}, func(ctx context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "fixture: crashing on purpose")
		os.Exit(4)
		return nil, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "big", Description: "A long text."}, func(ctx context.Context, _ *sdk.CallToolRequest, in bigIn) (*sdk.CallToolResult, any, error) {
		text := "start " + strings.Repeat("é", in.N/2) + " end"
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, map[string]string{"copy": text}, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "A picture."}, func(ctx context.Context, _ *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{MIMEType: "image/png", Data: []byte("PNGDATA")}, &sdk.TextContent{Text: "a dot"}}}, nil, nil
	})
	s.AddTool(&sdk.Tool{Name: "refs.tool", Description: "A schema with refs.", InputSchema: json.RawMessage(`{
		"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
		"$defs":{"point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":["null","number"]}},"required":["x"]}},
		"properties":{"from":{"$ref":"#/$defs/point"},"tags":{"type":["null","array"],"items":{"type":"string"}},
		"mode":{"anyOf":[{"type":"null"},{"type":"string","enum":["a","b"]}],"description":"the mode"}},"required":["from"]}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	return s
}

func fixtureServer(name, mode string) ServerConfig {
	exe, _ := os.Executable()
	return ServerConfig{Name: name, Command: exe, Env: []string{"TRUSS_MCP_FIXTURE=" + mode}, StartupTimeout: 20 * time.Second}
}

func call(server, tool_ string, args string) tool.Call {
	return tool.Call{ID: "c1", Op: tool.OpMCP, Args: &tool.MCPArgs{Server: server, Tool: tool_, Arguments: json.RawMessage(args)}}
}

func TestManager(t *testing.T) {
	var mu sync.Mutex
	var log strings.Builder
	readyCh := make(chan string, 4)
	ok := fixtureServer("ok", "ok")
	ok.ToolTimeout = time.Second
	ok.Disabled = []string{"image"}
	gate := filepath.Join(t.TempDir(), "gate")
	slow := fixtureServer("slow", "slow")
	slow.Env = append(slow.Env, "TRUSS_MCP_GATE="+gate)
	m := Start(context.Background(), []ServerConfig{ok, slow, fixtureServer("broken", "exit")},
		Options{Log: writerFunc(func(p []byte) { mu.Lock(); log.Write(p); mu.Unlock() }), OnReady: func(s *Server) { readyCh <- s.Name() }})
	defer m.Close()

	// The ok server becomes ready and the broken one fails; the slow one
	// waits for its gate, so a bounded Wait reports it, and only it.
	select {
	case n := <-readyCh:
		if n != "ok" {
			t.Fatalf("ready first: %s", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the ok server never became ready")
	}
	select {
	case <-m.byName["broken"].ready:
	case <-time.After(20 * time.Second):
		t.Fatal("the broken server never settled")
	}
	pending := m.Wait(context.Background(), 50*time.Millisecond)
	if len(pending) != 1 || pending[0].Name() != "slow" {
		t.Fatalf("pending after the wait: %v", names(pending))
	}
	st, err := m.byName["broken"].State()
	if st != Failed || err == nil || !strings.Contains(err.Error(), "fixture: missing API token") {
		t.Errorf("broken: %s %v", st, err)
	}
	mu.Lock()
	if !strings.Contains(log.String(), "truss: mcp: server broken failed to start: ") {
		t.Errorf("log: %q", log.String())
	}
	mu.Unlock()

	srv := m.byName["ok"]
	var got []string
	for _, b := range m.Bindings(srv) {
		got = append(got, b.Spec().Name)
	}
	if strings.Join(got, ",") != "mcp__ok__add,mcp__ok__big,mcp__ok__crash,mcp__ok__echo,mcp__ok__fail,mcp__ok__look,mcp__ok__refs_tool,mcp__ok__sleep" {
		t.Errorf("bindings: %v", got)
	}
	if p := srv.Protocol(); p == "" {
		t.Error("no protocol version")
	}

	ctx := context.Background()
	for _, tc := range []struct {
		server, tool, args string
		kind               tool.ErrorKind
		text               string
	}{
		{"ok", "echo", `{"text":"hello"}`, "", "hello"},
		{"ok", "add", `{"A":2,"B":40}`, "", `{"sum":42}`},
		{"ok", "fail", `{}`, tool.ErrTool, "the disk is full"},
		{"ok", "echo", `{"text":5}`, tool.ErrTool, "validating"},
		{"ok", "nope", `{}`, tool.ErrTool, "refused the call of nope"},
		{"ok", "sleep", `{"ms":60000}`, tool.ErrTimeout, "did not answer the call of sleep within 1s"},
		{"ok", "echo", `{"text":"still here"}`, "", "still here"},
		{"slow", "echo", `{"text":"x"}`, tool.ErrUnavailable, "still starting"},
		{"broken", "echo", `{}`, tool.ErrUnavailable, "is not available (connect: "},
		{"ghost", "echo", `{}`, tool.ErrUnknownTool, `no MCP server named "ghost"`},
	} {
		r := m.Execute(ctx, call(tc.server, tc.tool, tc.args))
		text := r.Output
		if r.Err != nil {
			text = r.Err.Message
		}
		if (r.Err == nil) != (tc.kind == "") || (r.Err != nil && r.Err.Kind != tc.kind) || !strings.Contains(text, tc.text) {
			t.Errorf("%s/%s %s: err %+v output %q", tc.server, tc.tool, tc.args, r.Err, r.Output)
		}
	}

	// The slow server joins when it is ready.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-readyCh:
		for n == "ok" {
			n = <-readyCh
		}
		if n != "slow" {
			t.Fatalf("ready: %s", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the slow server never became ready")
	}
	if r := m.Execute(ctx, call("slow", "echo", `{"text":"late"}`)); r.Err != nil || r.Output != "late" {
		t.Errorf("slow after ready: %+v", r)
	}

	// A server that dies mid-call gives a precise error; the others go on.
	r := m.Execute(ctx, call("ok", "crash", `{}`))
	if r.Err == nil || r.Err.Kind != tool.ErrUnavailable && r.Err.Kind != tool.ErrTool {
		t.Fatalf("crash: %+v", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := srv.State()
		if st == Failed {
			if !strings.Contains(err.Error(), "crashing on purpose") {
				t.Errorf("after the crash: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the crashed server is still %s", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := m.Execute(ctx, call("ok", "echo", `{"text":"x"}`)); r.Err == nil || r.Err.Kind != tool.ErrUnavailable || !strings.Contains(r.Err.Message, "crashing on purpose") {
		t.Errorf("call after the crash: %+v", r.Err)
	}
	if r := m.Execute(ctx, call("slow", "echo", `{"text":"other"}`)); r.Err != nil {
		t.Errorf("the other server: %+v", r.Err)
	}
	// A result past MaxResult (1.2 MB of text, and its copy as structured
	// content) keeps its head and tail, as a command's
	// output does, in what the model gets and what is recorded.
	r = m.Execute(ctx, call("slow", "big", `{"n":1200000}`))
	if r.Err != nil || !r.Truncated || len(r.Output) > MaxResult+64 || !strings.HasPrefix(r.Output, "start é") ||
		!strings.HasSuffix(r.Output, "é end") || !strings.Contains(r.Output, " bytes omitted ...]") || !utf8.ValidString(r.Output) {
		t.Errorf("a 1.2 MB result: %d bytes, truncated %v, error %v", len(r.Output), r.Truncated, r.Err)
	}
	if r.MCP == nil || len(r.MCP.Content)+len(r.MCP.Structured) > MaxResult+256 || r.MCP.Structured != nil {
		t.Errorf("a 1.2 MB result recorded whole")
	}
	if r := m.Execute(ctx, call("slow", "big", `{"n":1000}`)); r.Truncated || r.MCP == nil || r.MCP.Structured == nil || !strings.HasSuffix(r.Output, " end") {
		t.Errorf("a short result was cut: %+v", r)
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

func names(ss []*Server) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name())
	}
	return out
}

func TestBindingSchemas(t *testing.T) {
	m := Start(context.Background(), []ServerConfig{fixtureServer("fx", "ok")}, Options{})
	defer m.Close()
	if p := m.Wait(context.Background(), 20*time.Second); len(p) != 0 {
		t.Fatal("not ready")
	}
	var refs *sdk.Tool
	for _, tl := range m.byName["fx"].Tools() {
		if tl.Name == "refs.tool" {
			refs = tl
		}
	}
	if refs == nil {
		t.Fatal("no refs.tool")
	}
	portable := string(NewBinding("fx", refs, "anthropic").Spec().Parameters)
	for _, bad := range []string{"$ref", "$defs", "$schema"} {
		if strings.Contains(portable, bad) {
			t.Errorf("portable schema keeps %s: %s", bad, portable)
		}
	}
	if !strings.Contains(portable, `"from":{"properties":{"x":{"type":"number"}`) {
		t.Errorf("the $ref was not inlined: %s", portable)
	}
	sub := string(NewBinding("fx", refs, "ollama").Spec().Parameters)
	want := `{"properties":{"from":{"properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x"],"type":"object"},"mode":{"description":"the mode","enum":["a","b"],"type":"string"},"tags":{"items":{"type":"string"},"type":"array"}},"required":["from"],"type":"object"}`
	if sub != want {
		t.Errorf("ollama schema:\n%s\nwant\n%s", sub, want)
	}
	b := NewBinding("fx", refs, "anthropic")
	calls, err := b.Decode(model.ToolCall{ID: "c", Name: b.Spec().Name, Input: `{"from":{"x":1}}`})
	if err != nil || calls[0].Op != tool.OpMCP || calls[0].Args.(*tool.MCPArgs).Tool != "refs.tool" {
		t.Fatalf("decode: %v %+v", err, calls)
	}
	if _, err := b.Decode(model.ToolCall{Name: "x", Input: `[1]`}); err == nil || !strings.Contains(err.Error(), "not a valid JSON object") {
		t.Errorf("decode of an array: %v", err)
	}
	r := m.Execute(context.Background(), call("fx", "image", `{}`))
	if r.Output != "[image: image/png, 7 bytes]\na dot" {
		t.Errorf("image: %q", r.Output)
	}
}

func TestToolName(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"fs", "read_file", "mcp__fs__read_file"},
		{"my server", "a.b/c", "mcp__my_server__a_b_c"},
	} {
		if got := ToolName(tc.server, tc.tool); got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q", tc.server, tc.tool, got)
		}
	}
	long := ToolName("server", strings.Repeat("x", 80))
	if len(long) != 64 || long == ToolName("server", strings.Repeat("x", 81)) {
		t.Errorf("long names: %q", long)
	}
}

// TestStartupTimeout: a server that never answers fails at its startup
// timeout, with its last output, and is not left running.
func TestStartupTimeout(t *testing.T) {
	hang := fixtureServer("hang", "hang")
	hang.StartupTimeout = 300 * time.Millisecond
	start := time.Now()
	m := Start(context.Background(), []ServerConfig{hang}, Options{})
	defer m.Close()
	m.Wait(context.Background(), 20*time.Second)
	st, err := m.byName["hang"].State()
	if st != Failed || err == nil || !strings.Contains(err.Error(), "no answer within the startup timeout of 300ms") || !strings.Contains(err.Error(), "waiting for a database") {
		t.Fatalf("%s %v", st, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failing took %s", d)
	}
	// The fixture's mode is in its environment, not its command line.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := exec.Command("sh", "-c", "grep -l TRUSS_MCP_FIXTURE=hang /proc/[0-9]*/environ 2>/dev/null").Output()
		if len(strings.TrimSpace(string(b))) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hung server is still running: %s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// BenchmarkCall measures one tool call through the client to a stdio
// server (the fixture's echo): JSON-RPC over pipes, both ways.
func BenchmarkCall(b *testing.B) {
	m := Start(context.Background(), []ServerConfig{fixtureServer("fx", "ok")}, Options{})
	defer m.Close()
	if p := m.Wait(context.Background(), 20*time.Second); len(p) != 0 {
		b.Fatal("not ready")
	}
	c := call("fx", "echo", `{"text":"hi"}`)
	for b.Loop() {
		if r := m.Execute(context.Background(), c); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

// TestReadOnlyToolsAreConcurrent checks that a tool its server annotates
// read-only is a concurrent, non-mutating call, and every other one is not.
func TestReadOnlyToolsAreConcurrent(t *testing.T) {
	m := Start(context.Background(), []ServerConfig{fixtureServer("fx", "ok")}, Options{})
	defer m.Close()
	if p := m.Wait(context.Background(), 20*time.Second); len(p) != 0 {
		t.Fatal("the fixture is not ready")
	}
	var mux tool.Mux
	mux.Handle(tool.OpMCP, m)
	for _, tc := range []struct {
		server, tool string
		concurrent   bool
	}{{"fx", "look", true}, {"fx", "echo", false}, {"fx", "missing", false}, {"nope", "look", false}} {
		c := call(tc.server, tc.tool, `{"text":"hi"}`)
		if got := tool.IsConcurrent(&mux, c); got != tc.concurrent {
			t.Errorf("%s/%s: concurrent %v, want %v", tc.server, tc.tool, got, tc.concurrent)
		}
		if got := tool.Mutates(&mux, c); got == tc.concurrent {
			t.Errorf("%s/%s: mutates %v, want %v", tc.server, tc.tool, got, !tc.concurrent)
		}
	}
}

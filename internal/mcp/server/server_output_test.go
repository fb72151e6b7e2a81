package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/trussdev/truss/internal/mcp/client"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/patch"
	"github.com/trussdev/truss/internal/tool/shell"
	"github.com/trussdev/truss/internal/validate"
)

// connect serves Truss's tools over dir (validate running test) and returns
// a go-sdk client session.
func connect(t *testing.T, dir, test string) *sdk.ClientSession {
	t.Helper()
	ws, err := fs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	sh := shell.New(shell.Config{Dir: ws.Dir()})
	t.Cleanup(func() { sh.Close() })
	var mux tool.Mux
	fx := &fs.Executor{W: ws}
	mux.HandleAll(fs.Ops, fx)
	mux.HandleAll(shell.Ops, sh)
	mux.HandleAll(patch.Ops, patch.NewExecutor(fx))
	mux.Handle(tool.OpValidate, &validate.Runner{Env: validate.Env{Test: test},
		NewShell: func() validate.Shell { return shell.New(shell.Config{Dir: ws.Dir()}) }})
	return serveInMemory(t, Config{Exec: &mux, Validate: true})
}

// Every tool Truss serves declares an outputSchema; every result carries
// structured content that validates against it (checked with a validator
// of its own, not the SDK's) and holds the output, and the text block
// carries the same information, for the clients that read only one of
// them.
func TestServedStructuredContent(t *testing.T) {
	dir := t.TempDir()
	random := make([]byte, 4096)
	rnd := rand.New(rand.NewPCG(5, 6))
	for i := range random {
		random[i] = byte(rnd.UintN(256))
	}
	random[9] = 0
	var long strings.Builder
	for i := 1; i <= 2100; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	for name, data := range map[string]string{
		"a.txt":      "one\ntwo\nthree\n",
		"random.bin": string(random),
		"dot.png":    "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89",
		"umlaut.txt": "grüße, 世界\n",
		"empty.txt":  "",
		"long.txt":   long.String(),
		"d/e.txt":    "e\n",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs := connect(t, dir, "echo 3 passed, 0 failed")
	ctx := context.Background()

	schemas := map[string]*jsonschema.Schema{}
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tl.OutputSchema == nil {
			t.Errorf("%s declares no outputSchema", tl.Name)
			continue
		}
		b, _ := json.Marshal(tl.OutputSchema)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := doc.(map[string]any); m["type"] != "object" {
			t.Errorf("%s: outputSchema type %v, want object", tl.Name, m["type"])
		}
		c := jsonschema.NewCompiler()
		url := "mem://" + tl.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		if schemas[tl.Name], err = c.Compile(url); err != nil {
			t.Fatalf("%s: outputSchema does not compile: %v", tl.Name, err)
		}
	}
	if len(schemas) != len(Tools(true)) {
		t.Fatalf("schemas for %d tools, want %d", len(schemas), len(Tools(true)))
	}

	tests := []struct {
		tool  string
		args  map[string]any
		isErr bool
		// want holds fields the structured content must have, as JSON.
		want string
	}{
		{"view", map[string]any{"path": "a.txt"}, false, `{"content":"one\ntwo\nthree","start_line":1,"end_line":3,"total_lines":3}`},
		{"view", map[string]any{"path": "a.txt", "start_line": 2, "end_line": 2}, false, `{"content":"two","start_line":2,"end_line":2,"total_lines":3}`},
		{"view", map[string]any{"path": "long.txt"}, false, `{"start_line":1,"end_line":2000,"total_lines":2100}`},
		{"view", map[string]any{"path": "umlaut.txt"}, false, `{"content":"grüße, 世界"}`},
		{"view", map[string]any{"path": "empty.txt"}, false, `{}`},
		{"view", map[string]any{"path": "random.bin"}, true, `{"binary":{"size":4096,"media_type":"application/octet-stream","reason":"nul_byte"}}`},
		{"view", map[string]any{"path": "dot.png"}, true, `{"binary":{"size":33,"media_type":"image/png","reason":"nul_byte"}}`},
		{"view", map[string]any{"path": "d"}, false, `{"entries":[{"path":"e.txt"}]}`},
		{"view", map[string]any{"path": "nope.txt"}, true, `{"error":{"kind":"not_found"}}`},
		{"view", map[string]any{"path": "../../etc/passwd"}, true, `{"error":{"kind":"outside_workspace"}}`},
		{"replace", map[string]any{"path": "a.txt", "old_str": "two", "new_str": "TWO\nTWO and a half"}, false,
			`{"output":"Replaced 1 occurrence in a.txt","snippet":{"start_line":1,"text":"one\nTWO\nTWO and a half\nthree"},"changes":[{"path":"a.txt","kind":"update"}]}`},
		{"replace", map[string]any{"path": "a.txt", "old_str": "zzz", "new_str": "y"}, true, `{"error":{"kind":"no_match"}}`},
		{"insert", map[string]any{"path": "a.txt", "line": 0, "text": "zero"}, false, `{"snippet":{"start_line":1},"changes":[{"path":"a.txt","kind":"update"}]}`},
		{"create", map[string]any{"path": "sub/b.txt", "content": "bee\n"}, false, `{"changes":[{"path":"sub/b.txt","kind":"add"}]}`},
		{"patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: c.txt\n+sea\n*** End Patch\n"}, false, `{"changes":[{"path":"c.txt","kind":"add"}]}`},
		{"patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: nope.txt\n@@\n-x\n+y\n*** End Patch\n"}, true, `{}`},
		{"shell", map[string]any{"command": "echo out; echo err >&2"}, false, `{"stdout":"out\n","stderr":"err\n","exit_code":0,"timed_out":false}`},
		{"shell", map[string]any{"command": "printf partial; (exit 3)"}, true, `{"stdout":"partial","stderr":"","exit_code":3,"timed_out":false}`},
		{"shell", map[string]any{"command": "true"}, false, `{"stdout":"","stderr":"","exit_code":0}`},
		{"shell", map[string]any{"command": "echo started; sleep 5", "timeout_ms": 300}, true, `{"stdout":"started\n","timed_out":true,"error":{"kind":"timeout"}}`},
		{"validate", map[string]any{}, false, `{"passed":true}`},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%s %v", tc.tool, tc.args)
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := client.Text(res)
		if res.IsError != tc.isErr {
			t.Errorf("%s: isError %v, text %q", name, res.IsError, short(text))
		}
		if res.StructuredContent == nil {
			t.Errorf("%s: no structured content", name)
			continue
		}
		b, _ := json.Marshal(res.StructuredContent)
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err := schemas[tc.tool].Validate(inst); err != nil {
			t.Errorf("%s: structured content %s does not validate against the outputSchema: %v", name, short(string(b)), err)
		}
		var got, want map[string]any
		json.Unmarshal(b, &got)
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatal(err)
		}
		if msg := subset(want, got, ""); msg != "" {
			t.Errorf("%s: structured content %s: %s", name, short(string(b)), msg)
		}
		if strings.HasPrefix(strings.TrimSpace(text), "{") {
			t.Errorf("%s: the text block is JSON, not the rendering a model reads: %q", name, short(text))
		}
		if msg := inText(got, text, ""); msg != "" {
			t.Errorf("%s: the text block %q lacks what the structured content %s holds: %s", name, short(text), short(string(b)), msg)
		}
	}
	// The validate tool on failing checks.
	cs = connect(t, dir, "echo 1 passed, 2 failed; exit 1")
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "validate", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := json.Marshal(res.StructuredContent)
	var v validateOut
	json.Unmarshal(st, &v)
	if !res.IsError || v.Passed || !strings.Contains(client.Text(res), v.Summary) || !strings.Contains(v.Summary, "1 passed, 2 failed") {
		t.Errorf("failing checks: isError %v, %s, text %q", res.IsError, st, client.Text(res))
	}
}

// subset reports the first member of want that got lacks or holds
// differently.
func subset(want, got any, at string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return at + ": not an object"
		}
		for k, v := range w {
			if msg := subset(v, g[k], at+"."+k); msg != "" {
				return msg
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: %v, want %d items", at, got, len(w))
		}
		for i := range w {
			if msg := subset(w[i], g[i], fmt.Sprintf("%s[%d]", at, i)); msg != "" {
				return msg
			}
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Sprintf("%s = %v, want %v", at, got, want)
		}
	}
	return ""
}

// inText reports the first fact of the structured content v the text does
// not show: every line of every string (bar the machine-readable kinds and
// reasons), the exit code, a binary file's size, the shown line numbers.
func inText(v any, text, key string) string {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if msg := inText(e, text, k); msg != "" {
				return msg
			}
		}
	case []any:
		for _, e := range x {
			if msg := inText(e, text, key); msg != "" {
				return msg
			}
		}
	case string:
		if key == "kind" && !strings.Contains(text, x) && (x == "add" || x == "update" || x == "delete") {
			return "change kind " + x
		}
		if key == "kind" || key == "reason" {
			return ""
		}
		for _, line := range strings.Split(x, "\n") {
			if !strings.Contains(text, line) {
				return fmt.Sprintf("%s line %q", key, line)
			}
		}
	case float64:
		n := strconv.Itoa(int(x))
		switch key {
		case "exit_code":
			if !strings.Contains(text, "exit code: "+n) {
				return "exit code " + n
			}
		case "size", "start_line", "end_line":
			if !strings.Contains(text, n) {
				return key + " " + n
			}
		}
	}
	return ""
}

// short cuts s for a test message.
func short(s string) string {
	if len(s) > 300 {
		return s[:150] + " … " + s[len(s)-150:]
	}
	return s
}

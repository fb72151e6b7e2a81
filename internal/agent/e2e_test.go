package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/oauth2"

	"github.com/trussdev/truss/examples"
	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	anthropicprov "github.com/trussdev/truss/internal/provider/anthropic"
	"github.com/trussdev/truss/internal/provider/chatcompat"
	"github.com/trussdev/truss/internal/provider/gemini"
	"github.com/trussdev/truss/internal/provider/ollama"
	openaiprov "github.com/trussdev/truss/internal/provider/openai"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
	"github.com/trussdev/truss/internal/surface"
	anthropicsurf "github.com/trussdev/truss/internal/surface/anthropic"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/memory"
	"github.com/trussdev/truss/internal/tool/patch"
	"github.com/trussdev/truss/internal/tool/shell"
)

var fastRetry = provider.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

type dialect struct {
	name string
	new  func(base string) provider.Provider
}

var dialects = []dialect{
	{"ollama", func(u string) provider.Provider { return &ollama.Client{Host: u, Retry: fastRetry} }},
	{"chat", func(u string) provider.Provider {
		return chatcompat.New(chatcompat.Config{BaseURL: u + "/v1", APIKey: "sk-test", Retry: fastRetry})
	}},
	{"anthropic", func(u string) provider.Provider {
		return anthropicprov.New(anthropicprov.Config{BaseURL: u, APIKey: "sk-test", Retry: fastRetry})
	}},
	{"responses", func(u string) provider.Provider {
		return openaiprov.New(openaiprov.Config{BaseURL: u + "/v1", APIKey: "sk-test", Retry: fastRetry})
	}},
	// The Messages API through Google Vertex AI: the model in the URL,
	// Vertex's version in the body, an access token (the simulated model
	// records the request as the API's, which checkSpec validates); the
	// server's key is the access token it takes.
	{"vertex", func(u string) provider.Provider {
		return anthropicprov.New(anthropicprov.Config{BaseURL: u, Retry: fastRetry,
			Vertex: &anthropicprov.Vertex{Region: "us-east5", Project: "sim-project", Token: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "sk-test"})}})
	}},
	// The Messages API through Amazon Bedrock's runtime: the model in the
	// URL, Bedrock's version and the betas in the body, a SigV4 signature
	// the simulated runtime verifies, the stream in AWS's event-stream
	// framing (recorded as the API's request, which checkSpec validates).
	{"bedrock", func(u string) provider.Provider {
		return anthropicprov.New(anthropicprov.Config{BaseURL: u, Retry: fastRetry,
			Bedrock: &anthropicprov.Bedrock{Region: "us-east-1", Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: sim.BedrockAccessKeyID, SecretAccessKey: sim.BedrockSecretAccessKey}, nil
			})}})
	}},
	// Google's Gemini API: the key in x-goog-api-key, calls as whole
	// functionCall parts (a Gemini 2.5 model: no ids, made ones).
	{"gemini", func(u string) provider.Provider {
		return gemini.New(gemini.Config{BaseURL: u, APIKey: "sk-test", Retry: fastRetry})
	}},
	// Gemini through Google Vertex AI: the publisher model's route on
	// Vertex's API version, an access token for the key.
	{"vertex-gemini", func(u string) provider.Provider {
		return gemini.New(gemini.Config{BaseURL: u, Retry: fastRetry, Path: "/" + gemini.VertexAPIVersion + "/projects/sim-project/locations/us-east5/publishers/google/models/%s",
			Token: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "sk-test"})})
	}},
	{"azure", func(u string) provider.Provider {
		c, err := openaiprov.NewAzure(openaiprov.AzureConfig{Endpoint: u, APIKey: "sk-test", Config: openaiprov.Config{Retry: fastRetry}})
		if err != nil {
			panic(err)
		}
		return c
	}},
}

type env struct {
	dir     string
	srv     *sim.Server
	agent   *agent.Agent
	execs   atomic.Int64
	events  []agent.Event
	outcome *agent.Outcome
}

// runScript runs a script through a dialect on a copy of the demo repository.
func runScript(t *testing.T, d dialect, script string, cfg func(*agent.Config)) *env {
	t.Helper()
	return resumeScript(t, d, script, cfg, nil)
}

// resumeScript runs a script as runScript does, continuing a session whose
// transcript so far is history.
func resumeScript(t *testing.T, d dialect, script string, cfg func(*agent.Config), history []model.Item) *env {
	t.Helper()
	s, err := sim.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{dir: t.TempDir(), srv: simtest.New(s)}
	e.srv.APIKey = "sk-test"
	if err := examples.Unpack(examples.DemoRepo, e.dir); err != nil {
		t.Fatal(err)
	}
	e.dir, _ = filepath.EvalSymlinks(e.dir)
	e.srv.Root = e.dir
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	base, err := e.srv.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := fs.Open(e.dir)
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
	mem, err := memory.Open(filepath.Join(t.TempDir(), "memories"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	mux.HandleAll(memory.Ops, mem)
	set, err := surface.NewSet(generic.Name, generic.Bindings()...)
	if err != nil {
		t.Fatal(err)
	}
	c := agent.Config{
		Provider: d.new(base), Tools: set, Model: "sim-coder",
		Exec: tool.ExecutorFunc(func(ctx context.Context, call tool.Call) tool.Result {
			e.execs.Add(1)
			return mux.Execute(ctx, call)
		}),
		System:   agent.SystemPrompt(e.dir, agent.DefaultSystem),
		Observer: agent.ObserverFunc(func(ev agent.Event) { e.events = append(e.events, ev) }),
	}
	if cfg != nil {
		cfg(&c)
	}
	e.agent = agent.New(c, history)
	e.outcome = e.agent.Run(ctx, "Fix the failing test.")
	checkPairing(t, d, e)
	return e
}

// checkPairing asserts that every call got exactly one result, in the
// transcript and in every request Truss sent.
func checkPairing(t *testing.T, d dialect, e *env) {
	t.Helper()
	counts := map[string]int{}
	var order []string
	for _, it := range e.agent.Transcript() {
		switch it.Kind {
		case model.KindToolCall:
			counts[it.Call.ID] += 0
			order = append(order, it.Call.ID)
		case model.KindToolResult:
			counts[it.Result.CallID]++
		}
	}
	for _, id := range order {
		if counts[id] != 1 {
			t.Errorf("call %s has %d results in the transcript", id, counts[id])
		}
	}
	for i, r := range e.srv.Requests() {
		checkSpec(t, d.name, i, r.Body)
		if err := r.CheckPairing(); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
}

// checkSpec validates a request body against its provider's API description.
func checkSpec(t *testing.T, dialect string, i int, body []byte) {
	t.Helper()
	var doc *apispec.Doc
	var err error
	path := ""
	switch dialect {
	case "chat":
		doc, err = apispec.OpenAI()
		path = "/chat/completions"
	case "anthropic", "vertex", "bedrock": // the platforms' requests are the API's once the route is read
		doc, err = apispec.Anthropic()
		path = "/v1/messages"
	case "responses", "azure": // Azure's body is OpenAI's
		doc, err = apispec.OpenAI()
		path = "/responses"
	default:
		return // Ollama publishes no API description
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.RequestBody(path, "POST", body); err != nil {
		t.Errorf("request %d does not match the API description: %v", i, err)
	}
}

func readFile(t *testing.T, dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDemoFixEveryDialect(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			e := runScript(t, d, string(examples.DemoScript), nil)
			if e.outcome.Status != agent.StatusCompleted {
				t.Fatalf("outcome %+v", e.outcome)
			}
			if got := readFile(t, e.dir, "stats.go"); !strings.Contains(got, "return (s[n/2-1] + s[n/2]) / 2\n") {
				t.Fatalf("stats.go not fixed:\n%s", got)
			}
			reqs := e.srv.Requests()
			if len(reqs) != 6 || e.outcome.Turns != 6 || e.execs.Load() != 5 {
				t.Fatalf("requests %d turns %d execs %d", len(reqs), e.outcome.Turns, e.execs.Load())
			}
			// The first test run failed, the second passed; the model saw both.
			var outputs []string
			for _, ev := range e.events {
				if ev.Type == agent.EventCallCompleted && ev.Call.Name == "bash" {
					outputs = append(outputs, ev.Result.Text)
				}
			}
			if len(outputs) != 2 || !strings.Contains(outputs[0], "FAIL") || !strings.Contains(outputs[1], "ok ") {
				t.Fatalf("test outputs: %q", outputs)
			}
			// AGENTS.md reached the system prompt of every request.
			for i, r := range reqs {
				if !strings.Contains(string(r.Body), "Run `go test ./...` before you finish") {
					t.Errorf("request %d lacks AGENTS.md", i)
				}
				if d.name == "chat" && r.Header.Get("Authorization") != "Bearer sk-test" {
					t.Errorf("request %d: auth header %q", i, r.Header.Get("Authorization"))
				}
			}
			u := e.outcome.Usage
			if u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens == 0 || u.OutputTokens == 0 {
				t.Errorf("usage not accounted: %+v", e.outcome.Usage)
			}
		})
	}
}

const faultTail = `,
 {"actions": [{"kind": "replace", "path": "stats.go", "old": "s[n/2] + s[n/2+1]", "new": "s[n/2-1] + s[n/2]"}]},
 {"say": "done"}]}`

func TestFaults(t *testing.T) {
	tests := []struct {
		name   string
		step   string
		checks func(t *testing.T, e *env)
	}{
		{"429 with retry-after", `{"steps": [{"faults": [{"kind": "status", "status": 429, "retry_after_ms": 20}], "actions": [{"kind": "view", "path": "stats.go"}]}`,
			func(t *testing.T, e *env) {
				r := e.srv.Requests()
				if r[0].Status != 429 || r[1].Status != 200 || r[0].Step != r[1].Step || string(r[0].Body) != string(r[1].Body) {
					t.Fatalf("retry not identical: %d %d", r[0].Status, r[1].Status)
				}
			}},
		{"500 twice", `{"steps": [{"faults": [{"kind": "status", "status": 500, "retry_after_ms": 1}, {"kind": "status", "status": 503, "retry_after_ms": 1}], "actions": [{"kind": "view", "path": "stats.go"}]}`,
			func(t *testing.T, e *env) {
				if n := len(e.srv.Requests()); n != 5 {
					t.Fatalf("%d requests, want 5", n)
				}
			}},
		{"error in the middle of the stream", `{"steps": [{"say": "Looking.", "faults": [{"kind": "mid_stream_error"}], "actions": [{"kind": "view", "path": "stats.go"}]}`,
			func(t *testing.T, e *env) {
				if n := len(e.srv.Requests()); n != 4 {
					t.Fatalf("%d requests, want 4", n)
				}
			}},
		{"truncated stream", `{"steps": [{"say": "Looking.", "faults": [{"kind": "truncate"}], "actions": [{"kind": "view", "path": "stats.go"}]}`,
			func(t *testing.T, e *env) {
				if n := len(e.srv.Requests()); n != 4 {
					t.Fatalf("%d requests, want 4", n)
				}
			}},
		{"malformed arguments", `{"steps": [{"actions": [{"kind": "view", "path": "stats.go", "raw_input": "{\"path\": \"stats.go\""}]}`,
			func(t *testing.T, e *env) {
				// Every dialect hands the model's bytes to the binding, which
				// says they are not JSON (never that an argument is missing).
				r := callResult(e, 0)
				if !r.IsError || !strings.Contains(r.Text, "not a valid JSON object") {
					t.Fatalf("result %+v", r)
				}
			}},
		{"missing argument", `{"steps": [{"actions": [{"kind": "view", "path": "stats.go", "raw_input": "{\"file\": \"stats.go\"}"}]}`,
			func(t *testing.T, e *env) {
				if r := callResult(e, 0); !r.IsError || !strings.Contains(r.Text, `missing required parameter "path"`) {
					t.Fatalf("result %+v", r)
				}
			}},
		{"unknown tool", `{"steps": [{"actions": [{"kind": "view", "path": "stats.go", "tool": "open_file"}]}`,
			func(t *testing.T, e *env) {
				if r := callResult(e, 0); !r.IsError || !strings.Contains(r.Text, `no tool named "open_file"`) || !strings.Contains(r.Text, "read_file") {
					t.Fatalf("result %+v", r)
				}
			}},
		{"huge output", `{"steps": [{"actions": [{"kind": "run", "command": "seq 1 300000"}]}`,
			func(t *testing.T, e *env) {
				r := callResult(e, 0)
				full := ""
				for _, ev := range e.events {
					if ev.Type == agent.EventCallCompleted {
						full = ev.Results[0].Stdout
						break
					}
				}
				if len(r.Text) > 31000 || !strings.Contains(r.Text, "characters") || !strings.HasSuffix(strings.TrimSuffix(r.Text, "[exit code: 0]"), "300000\n") {
					t.Fatalf("model text not cut: %d bytes", len(r.Text))
				}
				if !strings.HasSuffix(full, "299999\n300000\n") || len(full) < 1000000 {
					t.Fatalf("the record lost output: %d bytes", len(full))
				}
			}},
		{"parallel reads", `{"steps": [{"actions": [{"kind": "view", "path": "stats.go"}, {"kind": "view", "path": "stats_test.go"}, {"kind": "list"}]}`,
			func(t *testing.T, e *env) {
				if r := callResult(e, 1); r.IsError || !strings.Contains(r.Text, "TestMedian") {
					t.Fatalf("result %+v", r)
				}
			}},
	}
	for _, d := range dialects {
		for _, tt := range tests {
			t.Run(d.name+"/"+tt.name, func(t *testing.T) {
				if (d.name == "gemini" || d.name == "vertex-gemini") && tt.name == "malformed arguments" {
					// Gemini sends no call it could not parse: the turn ends
					// with MALFORMED_FUNCTION_CALL, which is retried as a
					// stream error, and fails when every attempt does.
					e := runScript(t, d, tt.step+faultTail, nil)
					var pe *provider.Error
					if e.outcome.Status != agent.StatusFailed || !errorsAs(e.outcome.Err, &pe) || pe.Code != "MALFORMED_FUNCTION_CALL" || len(e.srv.Requests()) != 4 || e.execs.Load() != 0 {
						t.Fatalf("outcome %+v, %d requests", e.outcome, len(e.srv.Requests()))
					}
					return
				}
				e := runScript(t, d, tt.step+faultTail, nil)
				if e.outcome.Status != agent.StatusCompleted {
					t.Fatalf("outcome %+v", e.outcome)
				}
				if !strings.Contains(readFile(t, e.dir, "stats.go"), "s[n/2-1] + s[n/2]") {
					t.Fatal("the fix after the fault was not applied")
				}
				if got := e.execs.Load(); tt.name != "malformed arguments" && tt.name != "unknown tool" && tt.name != "missing argument" && got < 2 {
					t.Fatalf("%d executions", got)
				}
				tt.checks(t, e)
			})
		}
	}
}

func callResult(e *env, n int) model.ToolResult {
	i := 0
	for _, it := range e.agent.Transcript() {
		if it.Kind == model.KindToolResult {
			if i == n {
				return *it.Result
			}
			i++
		}
	}
	return model.ToolResult{}
}

func TestBudgetsAndLoops(t *testing.T) {
	d := dialects[0]
	loop := `{"steps": [` + strings.Repeat(`{"actions": [{"kind": "run", "command": "echo same"}]},`, 8) + `{"say": "done"}]}`
	e := runScript(t, d, loop, nil)
	if e.outcome.Status != agent.StatusLoop || e.outcome.Turns != 5 {
		t.Fatalf("loop: %+v", e.outcome)
	}
	e = runScript(t, d, loop, func(c *agent.Config) { c.Budget.MaxTurns = 3 })
	if e.outcome.Status != agent.StatusMaxTurns || e.outcome.Turns != 3 {
		t.Fatalf("max turns: %+v", e.outcome)
	}
	e = runScript(t, d, loop, func(c *agent.Config) { c.Budget.MaxTokens = 1 })
	if e.outcome.Status != agent.StatusBudget || e.outcome.Turns != 1 {
		t.Fatalf("tokens: %+v", e.outcome)
	}
	e = runScript(t, d, loop, func(c *agent.Config) { c.Budget.MaxCost = 0.0001; c.Prices = surface.Prices{Input: 1000} })
	if e.outcome.Status != agent.StatusBudget || e.outcome.Usage.CostUSD <= 0 {
		t.Fatalf("cost: %+v", e.outcome)
	}
	slow := `{"steps": [{"actions": [{"kind": "run", "command": "sleep 20"}]}, {"say": "done"}]}`
	e = runScript(t, d, slow, func(c *agent.Config) { c.Budget.MaxWall = 300 * time.Millisecond })
	if e.outcome.Status != agent.StatusBudget {
		t.Fatalf("wall: %+v", e.outcome)
	}
}

func TestProviderErrors(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			e := runScript(t, d, `{"steps": [{"faults": [{"kind": "status", "status": 400, "message": "bad thing"}]}, {"say": "x"}]}`, nil)
			var pe *provider.Error
			if e.outcome.Status != agent.StatusFailed || !errorsAs(e.outcome.Err, &pe) || pe.Status != 400 || !strings.Contains(pe.Error(), "bad thing") {
				t.Fatalf("outcome %+v", e.outcome)
			}
			if len(e.srv.Requests()) != 1 {
				t.Fatal("a 400 was retried")
			}
		})
	}
}

func errorsAs(err error, target **provider.Error) bool {
	for err != nil {
		if pe, ok := err.(*provider.Error); ok {
			*target = pe
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// TestCancel cancels a run while a command runs (as Ctrl-C does): the
// command is killed, its call still gets exactly one result, the run ends
// as canceled, and no further request is sent.
func TestCancel(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			s, _ := sim.ParseScript([]byte(`{"steps": [{"actions": [{"kind": "run", "command": "sleep 30"}, {"kind": "run", "command": "echo never"}]}, {"say": "x"}]}`))
			srv := simtest.New(s)
			srv.APIKey = "sk-test"
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			base, _ := srv.Listen(ctx)
			dir := t.TempDir()
			ws, _ := fs.Open(dir)
			defer ws.Close()
			sh := shell.New(shell.Config{Dir: dir})
			defer sh.Close()
			var mux tool.Mux
			mux.Handle(tool.OpExec, sh)
			set, _ := surface.NewSet(generic.Name, generic.Bindings()...)
			runCtx, stop := context.WithCancel(ctx)
			a := agent.New(agent.Config{Provider: d.new(base), Tools: set, Exec: &mux, Model: "m",
				Observer: agent.ObserverFunc(func(ev agent.Event) {
					if ev.Type == agent.EventCallStarted {
						go func() { time.Sleep(150 * time.Millisecond); stop() }()
					}
				})}, nil)
			start := time.Now()
			out := a.Run(runCtx, "go")
			if out.Status != agent.StatusCanceled || time.Since(start) > 10*time.Second {
				t.Fatalf("outcome %+v after %s", out, time.Since(start))
			}
			var results []model.ToolResult
			for _, it := range a.Transcript() {
				if it.Kind == model.KindToolResult {
					results = append(results, *it.Result)
				}
			}
			if len(results) != 2 || !results[0].IsError || !strings.Contains(results[0].Text, "canceled") || !strings.Contains(results[1].Text, "canceled") {
				t.Fatalf("results %+v", results)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Fatalf("%d requests after cancel", n)
			}
		})
	}
}

// typed puts the Anthropic surface of a current Claude model in place of the
// generic tools.
func typed(c *agent.Config) {
	set, err := surface.NewSet(anthropicsurf.Name, anthropicsurf.Bindings(surface.DefaultProfiles().Lookup("anthropic", "claude-sonnet-4-5"))...)
	if err != nil {
		panic(err)
	}
	c.Tools = set
}

func TestAnthropicTypedSurface(t *testing.T) {
	d := dialects[2]
	typedRun := runScript(t, d, string(examples.DemoScript), typed)
	genericRun := runScript(t, d, string(examples.DemoScript), nil)
	for _, e := range []*env{typedRun, genericRun} {
		if e.outcome.Status != agent.StatusCompleted || e.outcome.Turns != 6 {
			t.Fatalf("outcome %+v", e.outcome)
		}
	}
	// Both surfaces reach the same final files.
	for _, name := range []string{"stats.go", "stats_test.go", "go.mod"} {
		if a, b := readFile(t, typedRun.dir, name), readFile(t, genericRun.dir, name); a != b {
			t.Errorf("%s differs between the typed and the generic surface", name)
		}
	}
	reqs := typedRun.srv.Requests()
	first := string(reqs[0].Body)
	for _, want := range []string{`"type":"text_editor_20250728"`, `"type":"bash_20250124"`, `"type":"memory_20250818"`, `"cache_control":{"type":"ephemeral"}`} {
		if !strings.Contains(first, want) {
			t.Errorf("the request lacks %s", want)
		}
	}
	if !strings.Contains(string(reqs[2].Body), `Here's the result of running `+"`cat -n`"+` on `+typedRun.dir+`/stats.go:\n     1\t// Package stats`) {
		t.Errorf("the typed view result is not in the reference format:\n%.600s", reqs[2].Body)
	}
	if got := reqs[0].Header.Get("Authorization") + reqs[0].Header.Get("X-Api-Key"); !strings.Contains(got, "sk-test") {
		t.Errorf("no key sent: %v", reqs[0].Header)
	}
	for i, r := range reqs {
		if r.Header.Get("Anthropic-Version") == "" {
			t.Errorf("request %d has no anthropic-version", i)
		}
	}
}

func TestAnthropicThinkingPauseOverload(t *testing.T) {
	d := dialects[2]
	script := `{"steps": [
	  {"think": "The median is wrong for even counts.", "say": "Reading.", "actions": [{"kind": "view", "path": "stats.go"}]},
	  {"say": "Searching the web first.", "stop": "pause_turn"},
	  {"say": "Fixing.", "faults": [{"kind": "mid_stream_error", "message": "Overloaded"}],
	   "actions": [{"kind": "replace", "path": "stats.go", "old": "s[n/2] + s[n/2+1]", "new": "s[n/2-1] + s[n/2]"}, {"kind": "run", "command": "go test ./... 2>&1"}]},
	  {"say": "Done."}]}`
	e := runScript(t, d, script, typed)
	if e.outcome.Status != agent.StatusCompleted || e.outcome.Turns != 4 {
		t.Fatalf("outcome %+v", e.outcome)
	}
	if !strings.Contains(readFile(t, e.dir, "stats.go"), "s[n/2-1] + s[n/2]") {
		t.Fatal("not fixed")
	}
	reqs := e.srv.Requests()
	// The thinking block goes back with its signature, before the text.
	second := string(reqs[1].Body)
	if !strings.Contains(second, `{"signature":"sig_`) && !strings.Contains(second, `"signature":"sig_`) || !strings.Contains(second, `"thinking":"The median is wrong for even counts."`) {
		t.Errorf("thinking not replayed:\n%.800s", second)
	}
	// After pause_turn the conversation is sent back with the paused turn last.
	var body struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	json.Unmarshal(reqs[2].Body, &body)
	if n := len(body.Messages); n == 0 || body.Messages[n-1].Role != "assistant" {
		t.Errorf("after pause_turn the last message is not the paused assistant turn: %+v", body.Messages)
	}
	// The overloaded stream was retried whole: the fix ran once.
	if reqs[3].Attempt != 2 || e.execs.Load() != 3 {
		t.Errorf("attempt %d, %d executions", reqs[3].Attempt, e.execs.Load())
	}
	if e.outcome.Usage.CacheReadTokens == 0 {
		t.Errorf("no cache reads accounted: %+v", e.outcome.Usage)
	}
}

// TestAnthropicFaults runs the typed Anthropic surface through every fault
// the simulator injects, in one session over the strict Messages dialect:
// a 429 with Retry-After, an error event in the middle of a stream, a cut
// connection, input that is not JSON, an unknown tool and a command without
// output. Every call is answered exactly once, nothing runs twice, the
// Retry-After wait is kept, the malformed input is reported as such with
// its exact bytes kept, and the run finishes.
func TestAnthropicFaults(t *testing.T) {
	const malformed = `{"command": "go vet ./...", "restart": tru`
	script := `{"steps": [
	  {"say": "Looking.", "faults": [{"kind": "status", "status": 429, "retry_after_ms": 150}],
	   "actions": [{"kind": "view", "path": "stats.go"}, {"kind": "run", "command": "x", "raw_input": ` + strconv.Quote(malformed) + `},
	               {"kind": "view", "path": "stats.go", "tool": "open_file"}]},
	  {"say": "Fixing.", "faults": [{"kind": "mid_stream_error", "message": "Overloaded"}],
	   "actions": [{"kind": "replace", "path": "stats.go", "old": "s[n/2] + s[n/2+1]", "new": "s[n/2-1] + s[n/2]"}, {"kind": "run", "command": "mkdir -p build"}]},
	  {"say": "Testing.", "faults": [{"kind": "truncate"}], "actions": [{"kind": "run", "command": "go test ./... 2>&1"}]},
	  {"say": "Done."}]}`
	e := runScript(t, dialects[2], script, typed)
	if e.outcome.Status != agent.StatusCompleted || e.outcome.Turns != 4 {
		t.Fatalf("outcome %+v", e.outcome)
	}
	reqs := e.srv.Requests()
	var statuses []int
	for _, r := range reqs {
		statuses = append(statuses, r.Status)
	}
	// Each fault failed one attempt and the turn was sent again.
	if len(reqs) != 7 || reqs[0].Status != 429 || reqs[1].Status != 200 || reqs[2].Attempt != 1 || reqs[3].Attempt != 2 || reqs[4].Attempt != 1 || reqs[5].Attempt != 2 {
		t.Fatalf("requests: statuses %v", statuses)
	}
	if wait := reqs[1].Received.Sub(reqs[0].Received); wait < 150*time.Millisecond {
		t.Errorf("the retry came %v after the 429, before its Retry-After", wait)
	}
	// Nothing ran twice: the view, the replace, mkdir and go test, once each.
	if n := e.execs.Load(); n != 4 {
		t.Errorf("%d executions, want 4", n)
	}
	if strings.Count(readFile(t, e.dir, "stats.go"), "s[n/2-1] + s[n/2]") != 1 {
		t.Error("the fix is not applied exactly once")
	}
	var calls []model.ToolCall
	for _, it := range e.agent.Transcript() {
		if it.Kind == model.KindToolCall {
			calls = append(calls, *it.Call)
		}
	}
	if len(calls) != 6 || calls[1].Input != malformed {
		t.Fatalf("the malformed input was not kept byte for byte: %+v", calls)
	}
	if r := callResult(e, 1); !r.IsError || !strings.Contains(r.Text, "the input is not valid JSON") || !strings.Contains(r.Text, "restart") {
		t.Errorf("malformed input: %+v", r)
	}
	if r := callResult(e, 2); !r.IsError || !strings.Contains(r.Text, `no tool named "open_file"`) {
		t.Errorf("unknown tool: %+v", r)
	}
	if r := callResult(e, 4); r.IsError || r.Text != anthropicsurf.NoOutput {
		t.Errorf("a command without output: %+v", r)
	}
	if r := callResult(e, 5); r.IsError || !strings.Contains(r.Text, "ok ") {
		t.Errorf("tests: %+v", r)
	}
}

// TestAnthropicBlankText: a response whose text is only whitespace, and a
// session recorded with a blank tool result, go on over the strict
// Messages dialect (which refuses blank text blocks as the API does).
func TestAnthropicBlankText(t *testing.T) {
	script := `{"steps": [
	  {"say": " \n\n", "actions": [{"kind": "run", "command": "true"}]},
	  {"say": "\n"},
	  {"say": "Done."}]}`
	e := runScript(t, dialects[2], script, typed)
	if e.outcome.Status != agent.StatusCompleted {
		t.Fatalf("outcome %+v", e.outcome)
	}
	// The blank text stays in the transcript as the model sent it.
	if it := e.agent.Transcript()[1]; it.Kind != model.KindAssistant || it.Text != " \n\n" {
		t.Errorf("transcript item %+v", it)
	}

	// A session saved by a version that sent the empty block, resumed.
	history := []model.Item{
		{Kind: model.KindUser, Text: "Make a build directory."},
		{Kind: model.KindAssistant, Provider: "anthropic", Response: "msg_old", Raw: json.RawMessage(`{"type":"text","text":"\n"}`), Text: "\n"},
		{Kind: model.KindToolCall, Provider: "anthropic", Response: "msg_old", Raw: json.RawMessage(`{"type":"tool_use","id":"toolu_old","name":"bash","input":{"command":"mkdir -p build"}}`),
			Call: &model.ToolCall{ID: "toolu_old", Name: "bash", Kind: model.ToolTyped, Type: "tool_use", Input: `{"command":"mkdir -p build"}`}},
		{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: "toolu_old", Name: "bash", Text: ""}},
	}
	e = resumeScript(t, dialects[2], `{"steps": [{"say": "unused"}, {"say": "Done."}]}`, typed, history)
	if e.outcome.Status != agent.StatusCompleted || e.srv.Requests()[0].Status != 200 {
		t.Fatalf("resumed: %+v", e.outcome)
	}
}

package agent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/examples"
	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/provider"
	openaiprov "github.com/trussdev/truss/internal/provider/openai"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/codex"
	openaisurf "github.com/trussdev/truss/internal/surface/openai"
)

// responsesDialect is the Responses API in the dialect table.
func responsesDialect(t *testing.T) dialect {
	for _, d := range dialects {
		if d.name == "responses" {
			return d
		}
	}
	t.Fatal("no responses dialect")
	return dialect{}
}

// responsesWires are the dialects that speak the Responses API: OpenAI's
// and Azure OpenAI's routes.
func responsesWires() []dialect {
	var out []dialect
	for _, d := range dialects {
		if d.name == "responses" || d.name == "azure" {
			out = append(out, d)
		}
	}
	return out
}

// withSurface puts a surface's bindings for a model in place of the generic
// tools.
func withSurface(name, modelName string, bindings func(surface.Profile) []surface.Binding) func(*agent.Config) {
	return func(c *agent.Config) {
		set, err := surface.NewSet(name, bindings(surface.DefaultProfiles().Lookup("responses", modelName))...)
		if err != nil {
			panic(err)
		}
		c.Tools, c.Model = set, modelName
	}
}

// requestItems decodes a recorded Responses request's input items.
func requestItems(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var req struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return req.Input
}

// TestOpenAISurfacesReachTheSameFiles runs the demo fix through the
// Responses API on the typed surface (shell, apply_patch), the codex surface
// (freeform apply_patch, shell_command) and the generic surface.
func TestOpenAISurfacesReachTheSameFiles(t *testing.T) {
	d := responsesDialect(t)
	runs := map[string]*env{
		"openai":  runScript(t, d, string(examples.DemoScript), withSurface(openaisurf.Name, "gpt-5.2", openaisurf.Bindings)),
		"codex":   runScript(t, d, string(examples.DemoScript), withSurface(codex.Name, "gpt-5.2-codex", codex.Bindings)),
		"generic": runScript(t, d, string(examples.DemoScript), nil),
	}
	for name, e := range runs {
		if e.outcome.Status != agent.StatusCompleted || e.outcome.Turns != 6 || e.execs.Load() != 5 {
			t.Fatalf("%s: outcome %+v, %d executions", name, e.outcome, e.execs.Load())
		}
		for _, f := range []string{"stats.go", "stats_test.go", "go.mod", "AGENTS.md"} {
			if a, b := readFile(t, e.dir, f), readFile(t, runs["generic"].dir, f); a != b {
				t.Errorf("%s: %s differs from the generic surface's", name, f)
			}
		}
		if !strings.Contains(readFile(t, e.dir, "stats.go"), "return (s[n/2-1] + s[n/2]) / 2\n") {
			t.Errorf("%s: not fixed", name)
		}
	}
	// Prompts past 1024 tokens are read from the cache, and accounted so.
	if u := runs["openai"].outcome.Usage; u.CacheReadTokens == 0 || u.InputTokens == 0 {
		t.Errorf("usage %+v", u)
	}
	// The typed surface: declarations, and results in the typed output items.
	reqs := runs["openai"].srv.Requests()
	first := string(reqs[0].Body)
	for _, want := range []string{`{"environment":{"type":"local"},"type":"shell"}`, `{"type":"apply_patch"}`, `"store":false`,
		`"include":["reasoning.encrypted_content"]`, `"parallel_tool_calls":true`} {
		if !strings.Contains(first, want) {
			t.Errorf("the typed request lacks %s", want)
		}
	}
	last := requestItems(t, reqs[5].Body)
	var shellOut, patchOut map[string]any
	for _, it := range last {
		switch it["type"] {
		case "shell_call_output":
			if shellOut == nil {
				shellOut = it
			}
		case "apply_patch_call_output":
			patchOut = it
		}
	}
	if shellOut == nil || patchOut == nil {
		t.Fatalf("typed outputs missing: %v", last)
	}
	entries, _ := shellOut["output"].([]any)
	if len(entries) != 1 || entries[0].(map[string]any)["outcome"].(map[string]any)["type"] != "exit" {
		t.Errorf("shell_call_output entries %v", entries)
	}
	if patchOut["status"] != "completed" || !strings.Contains(patchOut["output"].(string), "M stats.go") {
		t.Errorf("apply_patch_call_output %v", patchOut)
	}
	// The codex surface: the freeform patch and shell_command's rendering.
	creqs := runs["codex"].srv.Requests()
	cfirst := string(creqs[0].Body)
	for _, want := range []string{`"name":"apply_patch"`, `"type":"custom"`, `"syntax":"lark"`, `"name":"shell_command"`, `"strict":false`} {
		if !strings.Contains(cfirst, want) {
			t.Errorf("the codex request lacks %s", want)
		}
	}
	clast := string(creqs[5].Body)
	for _, want := range []string{`"type":"custom_tool_call_output"`, `Exit code: 0\nWall time: `, `seconds\nOutput:\nSuccess. Updated the following files:\nM stats.go`, `Exit code: 1\nWall time: `} {
		if !strings.Contains(clast, want) {
			t.Errorf("the codex conversation lacks %s", want)
		}
	}
}

// TestCodexFailingMultiFilePatch: a patch whose last hunk fails changes no
// file, and the model is told which hunk failed and why.
func TestCodexFailingMultiFilePatch(t *testing.T) {
	d := responsesDialect(t)
	patchText := "*** Begin Patch\n*** Add File: NOTES.md\n+notes\n*** Update File: stats.go\n@@\n-\treturn (s[n/2] + s[n/2+1]) / 2\n+\treturn (s[n/2-1] + s[n/2]) / 2\n" +
		"*** Update File: README.md\n@@\n-this line is not there\n+x\n*** End Patch"
	script, _ := json.Marshal(map[string]any{"steps": []any{
		map[string]any{"say": "Patching.", "actions": []any{map[string]any{"kind": "patch", "content": patchText}}},
		map[string]any{"say": "It failed."},
	}})
	e := runScript(t, d, string(script), withSurface(codex.Name, "gpt-5.2-codex", codex.Bindings))
	if e.outcome.Status != agent.StatusCompleted {
		t.Fatalf("outcome %+v", e.outcome)
	}
	fresh := t.TempDir()
	if err := examples.Unpack(examples.DemoRepo, fresh); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"stats.go", "README.md"} {
		if readFile(t, e.dir, f) != readFile(t, fresh, f) {
			t.Errorf("%s changed by a failing patch", f)
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "NOTES.md")); !os.IsNotExist(err) {
		t.Errorf("NOTES.md was created by a failing patch: %v", err)
	}
	r := callResult(e, 0)
	if !r.IsError || !strings.Contains(r.Text, "README.md") || !strings.Contains(r.Text, "this line is not there") {
		t.Errorf("the failure does not name the hunk: %+v", r)
	}
}

// TestResponsesShellCall: one shell_call with several commands, a timeout
// and max_output_length, answered by one output entry per command.
func TestResponsesShellCall(t *testing.T) {
	d := responsesDialect(t)
	action := `{"commands":["echo one","echo 0123456789abcdef; exit 3","sleep 5"],"timeout_ms":300,"max_output_length":8}`
	script, _ := json.Marshal(map[string]any{"steps": []any{
		map[string]any{"actions": []any{map[string]any{"kind": "run", "command": "x", "raw_input": action}}},
		map[string]any{"say": "done"},
	}})
	e := runScript(t, d, string(script), withSurface(openaisurf.Name, "gpt-5.2", openaisurf.Bindings))
	if e.outcome.Status != agent.StatusCompleted {
		t.Fatalf("outcome %+v", e.outcome)
	}
	var out map[string]any
	for _, it := range requestItems(t, e.srv.Requests()[1].Body) {
		if it["type"] == "shell_call_output" {
			out = it
		}
	}
	if out == nil || out["max_output_length"] != float64(8) {
		t.Fatalf("shell_call_output %v", out)
	}
	entries := out["output"].([]any)
	if len(entries) != 3 {
		t.Fatalf("%d entries, want one per command", len(entries))
	}
	outcome := func(i int) map[string]any { return entries[i].(map[string]any)["outcome"].(map[string]any) }
	if entries[0].(map[string]any)["stdout"] != "one\n" || outcome(0)["exit_code"] != float64(0) {
		t.Errorf("entry 0 %v", entries[0])
	}
	if outcome(1)["exit_code"] != float64(3) || len(entries[1].(map[string]any)["stdout"].(string)) > 8+40 {
		t.Errorf("entry 1 %v", entries[1])
	}
	if outcome(2)["type"] != "timeout" {
		t.Errorf("entry 2 %v", entries[2])
	}
	if e.execs.Load() != 3 {
		t.Errorf("%d executions, want 3", e.execs.Load())
	}
}

// TestResponsesReasoningFailuresAndUsage: encrypted reasoning and the
// assistant phase go back unchanged; response.failed with a rate limit is
// retried after the wait its message names, an error event is retried, and
// a non-transient failure ends the run; usage counts cached and reasoning
// tokens.
func TestResponsesReasoningFailuresAndUsage(t *testing.T) {
	d := responsesDialect(t)
	script := `{"steps": [
	  {"think": "The median is wrong for even counts.", "say": "Reading.", "actions": [{"kind": "view", "path": "stats.go"}],
	   "faults": [{"kind": "response_failed", "code": "rate_limit_exceeded", "message": "Rate limit reached. Please try again in 5ms."},
	     {"kind": "mid_stream_error"}]},
	  {"say": "Fixing.", "actions": [{"kind": "replace", "path": "stats.go", "old": "s[n/2] + s[n/2+1]", "new": "s[n/2-1] + s[n/2]"}]},
	  {"say": "Done."}]}`
	e := runScript(t, d, script, withSurface(openaisurf.Name, "gpt-5.2", openaisurf.Bindings))
	if e.outcome.Status != agent.StatusCompleted || e.outcome.Turns != 3 {
		t.Fatalf("outcome %+v", e.outcome)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 5 || reqs[2].Attempt != 3 || e.execs.Load() != 2 {
		t.Fatalf("%d requests, attempt %d, %d executions", len(reqs), reqs[2].Attempt, e.execs.Load())
	}
	var reasoning, message map[string]any
	for _, it := range requestItems(t, reqs[3].Body) {
		switch it["type"] {
		case "reasoning":
			reasoning = it
		case "message":
			if it["role"] == "assistant" {
				message = it
			}
		}
	}
	if reasoning == nil || !strings.HasPrefix(reasoning["encrypted_content"].(string), "enc_") {
		t.Errorf("reasoning not replayed: %v", reasoning)
	}
	if message == nil || message["phase"] != "commentary" {
		t.Errorf("assistant phase not replayed: %v", message)
	}
	u := e.outcome.Usage
	if u.ReasoningTokens == 0 || u.InputTokens == 0 {
		t.Errorf("usage %+v", u)
	}

	// A failure that trying again cannot mend ends the run at once.
	bad := `{"steps": [{"say": "x", "faults": [{"kind": "response_failed", "code": "invalid_prompt", "message": "Invalid prompt."}]}]}`
	e = runScript(t, d, bad, nil)
	if e.outcome.Status != agent.StatusFailed || len(e.srv.Requests()) != 1 || !strings.Contains(e.outcome.Reason, "invalid_prompt") {
		t.Errorf("outcome %+v after %d requests", e.outcome, len(e.srv.Requests()))
	}
}

// TestResponsesStateful chains turns with previous_response_id: each
// request after the first sends only the new items.
func TestResponsesStateful(t *testing.T) {
	d := dialect{"responses", func(u string) provider.Provider {
		return openaiprov.New(openaiprov.Config{BaseURL: u + "/v1", APIKey: "sk-test", Retry: fastRetry, Stateful: true})
	}}
	e := runScript(t, d, string(examples.DemoScript), withSurface(openaisurf.Name, "gpt-5.2", openaisurf.Bindings))
	if e.outcome.Status != agent.StatusCompleted || e.outcome.Turns != 6 {
		t.Fatalf("outcome %+v", e.outcome)
	}
	reqs := e.srv.Requests()
	for i, r := range reqs {
		var body struct {
			Store    bool             `json:"store"`
			Previous string           `json:"previous_response_id"`
			Input    []map[string]any `json:"input"`
		}
		json.Unmarshal(r.Body, &body)
		if !body.Store {
			t.Errorf("request %d: store is not true", i)
		}
		if i == 0 {
			continue
		}
		if body.Previous != "resp_sim"+pad(i)+"01" {
			t.Errorf("request %d chains to %q", i, body.Previous)
		}
		if len(body.Input) != 1 || !strings.HasSuffix(body.Input[0]["type"].(string), "_output") {
			t.Errorf("request %d sends %d items: %v", i, len(body.Input), body.Input)
		}
	}
	if !strings.Contains(readFile(t, e.dir, "stats.go"), "s[n/2-1] + s[n/2]") {
		t.Error("not fixed")
	}
}

func pad(i int) string { return fmt.Sprintf("%02d", i) }

// TestResponsesIncompleteCallsAreNotRun: a response cut off by
// max_output_tokens holds calls, the last one incomplete; none of them
// runs, each is answered once as cut off, and the model goes on — on the
// typed, codex and generic surfaces.
func TestResponsesIncompleteCallsAreNotRun(t *testing.T) {
	for _, d := range responsesWires() {
		t.Run(d.name, func(t *testing.T) { incompleteCallsAreNotRun(t, d) })
	}
}

func incompleteCallsAreNotRun(t *testing.T, d dialect) {
	script := `{"steps": [
	  {"say": "Cleaning.", "stop": "max_tokens", "actions": [{"kind": "run", "command": "touch ran-1.txt"}, {"kind": "run", "command": "touch ran-2.txt"}]},
	  {"say": "Shorter then."}]}`
	for name, cfg := range map[string]func(*agent.Config){
		"openai":  withSurface(openaisurf.Name, "gpt-5.2", openaisurf.Bindings),
		"codex":   withSurface(codex.Name, "gpt-5.2-codex", codex.Bindings),
		"generic": nil,
	} {
		t.Run(name, func(t *testing.T) {
			e := runScript(t, d, script, cfg)
			if e.outcome.Status != agent.StatusCompleted || e.outcome.Turns != 2 {
				t.Fatalf("outcome %+v", e.outcome)
			}
			if n := e.execs.Load(); n != 0 {
				t.Errorf("%d calls of a cut-off response ran", n)
			}
			for _, f := range []string{"ran-1.txt", "ran-2.txt"} {
				if _, err := os.Stat(filepath.Join(e.dir, f)); !os.IsNotExist(err) {
					t.Errorf("%s exists: a cut-off call ran", f)
				}
			}
			for i := range 2 {
				if r := callResult(e, i); !r.IsError || !strings.Contains(r.Text, "cut off") {
					t.Errorf("call %d answered %+v", i, r)
				}
			}
			reqs := e.srv.Requests()
			if err := reqs[len(reqs)-1].CheckPairing(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestResponsesFaults holds the loop's invariants on the Responses dialect
// under injected faults, on the typed, codex and generic surfaces: an HTTP
// 429 with Retry-After (honoured), an error event in the middle of the
// stream, a cut connection, response.failed with a rate limit, malformed
// arguments (reported as such, not run), a response cut off by
// max_output_tokens (its call not run). Every call is answered exactly
// once, no command runs twice, every request passes the strict simulator,
// and the run finishes.
func TestResponsesFaults(t *testing.T) {
	for _, d := range responsesWires() {
		t.Run(d.name, func(t *testing.T) { responsesFaults(t, d) })
	}
}

func responsesFaults(t *testing.T, d dialect) {
	run := func(cmd string) map[string]any { return map[string]any{"kind": "run", "command": cmd} }
	for name, cfg := range map[string]func(*agent.Config){
		"openai":  withSurface(openaisurf.Name, "gpt-5.2", openaisurf.Bindings),
		"codex":   withSurface(codex.Name, "gpt-5.2-codex", codex.Bindings),
		"generic": nil,
	} {
		t.Run(name, func(t *testing.T) {
			malformed := run("echo two >> runs.txt")
			if name == "openai" {
				// The typed shell's action is the server's to parse; a call
				// of a tool that was not offered stands in for bad input.
				malformed["tool"], malformed["raw_input"] = "bash", `{"command": "echo two >> runs.txt`
			} else {
				malformed["raw_input"] = `{"command": "echo two >> runs.txt`
			}
			steps := []any{
				map[string]any{"say": "One.", "actions": []any{run("echo one >> runs.txt")}, "faults": []any{
					map[string]any{"kind": "status", "status": 429, "retry_after_ms": 300},
					map[string]any{"kind": "mid_stream_error"},
					map[string]any{"kind": "truncate"}}},
				map[string]any{"say": "Two.", "actions": []any{malformed}},
				map[string]any{"say": "Three.", "stop": "max_tokens", "actions": []any{run("echo three >> runs.txt")}},
				map[string]any{"say": "Four.", "actions": []any{run("echo four >> runs.txt")}, "faults": []any{
					map[string]any{"kind": "response_failed", "code": "rate_limit_exceeded", "message": "Rate limit reached. Please try again in 20ms."}}},
				map[string]any{"say": "Done."},
			}
			script, _ := json.Marshal(map[string]any{"steps": steps})
			e := runScript(t, d, string(script), cfg)
			if e.outcome.Status != agent.StatusCompleted || e.outcome.Turns != 5 {
				t.Fatalf("outcome %+v", e.outcome)
			}
			if got := readFile(t, e.dir, "runs.txt"); got != "one\nfour\n" {
				t.Errorf("runs.txt %q: a command ran twice, or one that must not ran", got)
			}
			if n := e.execs.Load(); n != 2 {
				t.Errorf("%d executions, want 2", n)
			}
			reqs := e.srv.Requests()
			if len(reqs) != 9 {
				t.Fatalf("%d requests, want 9 (5 turns, 4 failed attempts)", len(reqs))
			}
			// Retry-After: the attempt after the 429 waited for it.
			if reqs[0].Status != 429 || reqs[1].Received.Sub(reqs[0].Received) < 300*time.Millisecond {
				t.Errorf("the retry after a 429 with Retry-After 300 ms came after %v", reqs[1].Received.Sub(reqs[0].Received))
			}
			for i, r := range reqs {
				if r.Status != 200 && !(r.Step == 0 && r.Attempt <= 3) && !(r.Step == 3 && r.Attempt == 1) {
					t.Errorf("request %d (step %d attempt %d) answered %d", i, r.Step, r.Attempt, r.Status)
				}
				if err := r.CheckPairing(); err != nil {
					t.Errorf("request %d: %v", i, err)
				}
			}
			calls, results, err := reqs[len(reqs)-1].ToolCalls()
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, id := range results {
				seen[id]++
			}
			if len(calls) != 4 {
				t.Errorf("%d calls in the conversation, want 4", len(calls))
			}
			for _, id := range calls {
				if seen[id] != 1 {
					t.Errorf("call %s answered %d times", id, seen[id])
				}
			}
			// Malformed input is reported as such; the cut-off call as cut off.
			if r := callResult(e, 1); !r.IsError || !(strings.Contains(r.Text, "not a valid JSON object") || strings.Contains(r.Text, "there is no tool named")) {
				t.Errorf("malformed call answered %+v", r)
			}
			if r := callResult(e, 2); !r.IsError || !strings.Contains(r.Text, "cut off") {
				t.Errorf("cut-off call answered %+v", r)
			}
		})
	}
}

package subagent_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	anthropicprov "github.com/trussdev/truss/internal/provider/anthropic"
	"github.com/trussdev/truss/internal/provider/chatcompat"
	"github.com/trussdev/truss/internal/provider/ollama"
	openaiprov "github.com/trussdev/truss/internal/provider/openai"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
	"github.com/trussdev/truss/internal/subagent"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/shell"
)

// harness runs a top agent with the spawn tool on the simulated model.
type harness struct {
	dir      string
	srv      *sim.Server
	ctx      context.Context
	cancel   context.CancelFunc
	cfg      subagent.Config
	execHook func(ctx context.Context, run string, c tool.Call)

	mu            sync.Mutex
	events        []agent.Event // the top agent's
	children      map[string][]agent.Event
	live, maxLive int
}

// dialects are the API dialects the simulated model speaks; the harness
// runs on one of them.
var dialects = map[string]func(base string) provider.Provider{
	"anthropic": func(base string) provider.Provider {
		return anthropicprov.New(anthropicprov.Config{BaseURL: base, APIKey: "sim", Retry: fastRetry})
	},
	"responses": func(base string) provider.Provider {
		return openaiprov.New(openaiprov.Config{BaseURL: base + "/v1", APIKey: "sim", Retry: fastRetry})
	},
	"chat": func(base string) provider.Provider {
		return chatcompat.New(chatcompat.Config{BaseURL: base + "/v1", Retry: fastRetry})
	},
	"ollama": func(base string) provider.Provider { return &ollama.Client{Host: base, Retry: fastRetry} },
}

var fastRetry = provider.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}

func newHarness(t *testing.T, script string, limits subagent.Limits) *harness {
	return newHarnessOn(t, "anthropic", script, limits)
}

func newHarnessOn(t *testing.T, dialect, script string, limits subagent.Limits) *harness {
	t.Helper()
	s, err := sim.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{dir: t.TempDir(), srv: simtest.New(s), children: map[string][]agent.Event{}}
	h.dir, _ = filepath.EvalSymlinks(h.dir)
	if err := os.WriteFile(filepath.Join(h.dir, "notes.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	t.Cleanup(h.cancel)
	base, err := h.srv.Listen(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	prov := dialects[dialect](base)
	set, err := surface.NewSet(generic.Name, generic.Bindings()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Add(generic.Spawn{}); err != nil {
		t.Fatal(err)
	}
	h.cfg = subagent.Config{
		Provider: prov, Tools: set, Model: "sim-coder", Limits: limits,
		Prices:    func(string) surface.Prices { return surface.Prices{Input: 3, Output: 15} },
		Workspace: h.dir, WorkDir: t.TempDir(), Session: "top",
		NewEnv: func(ctx context.Context, run *subagent.Run) (*subagent.Env, error) {
			mux, closeFn, err := executors(run.Dir)
			if err != nil {
				return nil, err
			}
			h.mu.Lock()
			h.live++
			h.maxLive = max(h.maxLive, h.live)
			h.mu.Unlock()
			session := run.Session
			return &subagent.Env{Exec: tool.ExecutorFunc(func(ctx context.Context, c tool.Call) tool.Result {
				if h.execHook != nil {
					h.execHook(ctx, session, c)
				}
				return mux.Execute(ctx, c)
			}), Close: func() {
				h.mu.Lock()
				h.live--
				h.mu.Unlock()
				closeFn()
			}}, nil
		},
		Observe: func(run *subagent.Run) agent.Observer {
			return agent.ObserverFunc(func(ev agent.Event) {
				h.mu.Lock()
				h.children[run.Session] = append(h.children[run.Session], ev)
				h.mu.Unlock()
			})
		},
	}
	return h
}

// executors are the file tools and a shell on dir.
func executors(dir string) (*tool.Mux, func(), error) {
	ws, err := fs.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	sh := shell.New(shell.Config{Dir: dir})
	mux := &tool.Mux{}
	fx := &fs.Executor{W: ws}
	mux.HandleAll(fs.Ops, fx)
	mux.HandleAll(shell.Ops, sh)
	return mux, func() { sh.Close(); ws.Close() }, nil
}

// run runs the top agent on task.
func (h *harness) run(t *testing.T, task string) *agent.Outcome {
	t.Helper()
	mux, closeFn, err := executors(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	sp := subagent.New(h.cfg)
	mux.Handle(tool.OpSpawn, sp)
	a := agent.New(agent.Config{Provider: h.cfg.Provider, Tools: h.cfg.Tools, Exec: mux, Model: "sim-coder",
		Prices: h.cfg.Prices("sim-coder"),
		Observer: agent.ObserverFunc(func(ev agent.Event) {
			h.mu.Lock()
			h.events = append(h.events, ev)
			h.mu.Unlock()
		})}, nil)
	return a.Run(h.ctx, task)
}

// spawnResults returns the top agent's spawn results, in call order.
func (h *harness) spawnResults() []tool.Result {
	var out []tool.Result
	for _, ev := range h.events {
		if ev.Type == agent.EventCallCompleted {
			for _, r := range ev.Results {
				if r.Op == tool.OpSpawn {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// ownUsage sums the usage of the top agent's own model turns.
func ownUsage(evs []agent.Event) model.Usage {
	var u model.Usage
	for _, ev := range evs {
		if ev.Type == agent.EventResponse {
			u.Add(ev.Response.Usage)
		}
	}
	return u
}

func spawnRaw(in map[string]any) string {
	b, _ := json.Marshal(in)
	return string(b)
}

// TestParallelChildrenOneFails runs on every dialect: a parent spawns two
// children in one turn; they run at once; one completes, one runs out of
// turns; usage adds up.
func TestParallelChildrenOneFails(t *testing.T) {
	for _, d := range []string{"anthropic", "responses", "chat", "ollama"} {
		t.Run(d, func(t *testing.T) { parallelChildren(t, d) })
	}
}

func parallelChildren(t *testing.T, dialect string) {
	script := `{"steps":[
	  {"say":"Two sub-tasks.","actions":[
	    {"kind":"spawn","content":"CHILD-A: write hello.txt"},
	    {"kind":"spawn","raw_input":` + jsonString(spawnRaw(map[string]any{"task": "CHILD-B: keep running", "max_turns": 1})) + `}]},
	  {"say":"A wrote hello.txt; B ran out of turns."}],
	 "agents":{
	  "CHILD-A":{"steps":[
	    {"actions":[{"kind":"run","command":"echo a"}]},
	    {"actions":[{"kind":"create","path":"hello.txt","content":"hi\n"}]},
	    {"say":"Created hello.txt."}]},
	  "CHILD-B":{"steps":[
	    {"actions":[{"kind":"run","command":"echo b"}]},
	    {"say":"never reached"}]}}}`
	h := newHarnessOn(t, dialect, script, subagent.Limits{})
	// Both children's first commands must be running at the same time: each
	// waits (up to a bound) for the other.
	var arrived sync.WaitGroup
	arrived.Add(2)
	var once sync.Map
	concurrent := make(chan bool, 2)
	h.execHook = func(ctx context.Context, run string, c tool.Call) {
		if c.Op != tool.OpExec {
			return
		}
		if _, dup := once.LoadOrStore(run, true); dup {
			return
		}
		arrived.Done()
		done := make(chan struct{})
		go func() { arrived.Wait(); close(done) }()
		select {
		case <-done:
			concurrent <- true
		case <-time.After(20 * time.Second):
			concurrent <- false
		}
	}
	out := h.run(t, "Do two things.")
	if out.Status != agent.StatusCompleted {
		t.Fatalf("top agent: %s (%s)", out.Status, out.Reason)
	}
	if c1, c2 := <-concurrent, <-concurrent; !c1 || !c2 {
		t.Error("the two spawn calls did not run at the same time")
	}
	rs := h.spawnResults()
	if len(rs) != 2 {
		t.Fatalf("%d spawn results, want 2", len(rs))
	}
	a, b := rs[0], rs[1]
	if a.Err != nil || a.Agent.Status != "completed" || a.Agent.Text != "Created hello.txt." {
		t.Errorf("child A: err %v, agent %+v", a.Err, a.Agent)
	}
	if len(a.Changes) != 1 || a.Changes[0].Path != "hello.txt" || a.Changes[0].Kind != tool.ChangeAdd || a.Changes[0].After != tool.Digest([]byte("hi\n")) {
		t.Errorf("child A changes: %+v", a.Changes)
	}
	if b.Err == nil || b.Err.Kind != tool.ErrAgent || b.Agent.Status != "max_turns" {
		t.Errorf("child B: err %v, agent %+v", b.Err, b.Agent)
	}
	if a.Agent.Session != "top.call_1_1" || b.Agent.Session != "top.call_1_2" || a.Agent.Depth != 1 {
		t.Errorf("sessions %q %q depth %d", a.Agent.Session, b.Agent.Session, a.Agent.Depth)
	}
	if got, _ := os.ReadFile(filepath.Join(h.dir, "hello.txt")); string(got) != "hi\n" {
		t.Errorf("hello.txt = %q", got)
	}
	// Usage adds up: the top agent's total is its own turns plus each
	// child's, and each child's is its own turns.
	want := ownUsage(h.events)
	for _, r := range rs {
		cu := ownUsage(h.children[r.Agent.Session])
		if cu != r.Agent.Usage {
			t.Errorf("child %s reports usage %+v, its turns used %+v", r.Agent.Session, r.Agent.Usage, cu)
		}
		want.Add(r.Agent.Usage)
	}
	if !sameUsage(out.Usage, want) || out.Usage.CostUSD <= ownUsage(h.events).CostUSD {
		t.Errorf("top usage %+v, want %+v", out.Usage, want)
	}
	// The model saw both outcomes.
	var texts []string
	for _, ev := range h.events {
		if ev.Type == agent.EventCallCompleted {
			texts = append(texts, ev.Result.Text)
		}
	}
	if len(texts) != 2 || !strings.Contains(texts[0], "Created hello.txt.") || !strings.Contains(texts[0], "add hello.txt") ||
		!strings.Contains(texts[1], "did not finish its task: stopped after the maximum of 1 turn") {
		t.Errorf("results the model saw:\n%s", strings.Join(texts, "\n---\n"))
	}
}

func sameUsage(a, b model.Usage) bool {
	d := a.CostUSD - b.CostUSD
	a.CostUSD, b.CostUSD = 0, 0
	return a == b && d < 1e-9 && d > -1e-9
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestDepthLimit(t *testing.T) {
	script := `{"steps":[
	  {"actions":[{"kind":"spawn","content":"LEVEL-1 task"}]},
	  {"say":"done"}],
	 "agents":{
	  "LEVEL-1":{"steps":[{"actions":[{"kind":"spawn","tool":"spawn","content":"LEVEL-2 task"}]},{"say":"level 1 done"}]},
	  "LEVEL-2":{"steps":[{"actions":[{"kind":"spawn","tool":"spawn","content":"LEVEL-3 task"}]},{"say":"level 2 done"}]},
	  "LEVEL-3":{"steps":[{"say":"level 3 must not run"}]}}}`
	for _, tc := range []struct {
		depth  int
		levels int // how many levels of children run
	}{{1, 1}, {2, 2}} {
		h := newHarness(t, script, subagent.Limits{MaxDepth: tc.depth})
		out := h.run(t, "Go deep.")
		if out.Status != agent.StatusCompleted {
			t.Fatalf("depth %d: %s %s", tc.depth, out.Status, out.Reason)
		}
		ran := map[string]bool{}
		for _, rq := range h.srv.Requests() {
			ran[rq.Agent] = true
			var body struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			json.Unmarshal(rq.Body, &body)
			hasSpawn := false
			for _, tl := range body.Tools {
				hasSpawn = hasSpawn || tl.Name == "spawn"
			}
			level := map[string]int{"": 0, "LEVEL-1": 1, "LEVEL-2": 2, "LEVEL-3": 3}[rq.Agent]
			if hasSpawn != (level < tc.depth) {
				t.Errorf("depth %d: a level-%d request offers spawn: %v", tc.depth, level, hasSpawn)
			}
		}
		for lv, key := range []string{"LEVEL-1", "LEVEL-2", "LEVEL-3"} {
			if ran[key] != (lv < tc.levels) {
				t.Errorf("depth %d: %s ran: %v", tc.depth, key, ran[key])
			}
		}
		// The deepest child's spawn call was refused as an unknown tool.
		deepest := "top.call_1_1"
		if tc.depth == 2 {
			deepest += ".call_1_1"
		}
		found := false
		for _, ev := range h.children[deepest] {
			if ev.Type == agent.EventCallCompleted && ev.Call.Name == "spawn" {
				found = true
				if !ev.Result.IsError || !strings.Contains(ev.Result.Text, `no tool named "spawn"`) {
					t.Errorf("depth %d: the spawn call at the limit got %q", tc.depth, ev.Result.Text)
				}
			}
		}
		if !found {
			t.Errorf("depth %d: no spawn call at the limit in %s (children: %v)", tc.depth, deepest, keys(h.children))
		}
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestCancelParentCancelsChild(t *testing.T) {
	script := `{"steps":[
	  {"actions":[{"kind":"spawn","content":"SLOW child"}]},
	  {"say":"not reached"}],
	 "agents":{"SLOW":{"steps":[{"actions":[{"kind":"run","command":"sleep 60"}]},{"say":"slept"}]}}}`
	h := newHarness(t, script, subagent.Limits{})
	h.execHook = func(ctx context.Context, run string, c tool.Call) {
		if c.Op == tool.OpExec {
			go func() { time.Sleep(100 * time.Millisecond); h.cancel() }()
		}
	}
	start := time.Now()
	out := h.run(t, "Start a slow child.")
	if out.Status != agent.StatusCanceled {
		t.Fatalf("top agent: %s (%s)", out.Status, out.Reason)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("canceling took %s", d)
	}
	rs := h.spawnResults()
	if len(rs) != 1 || rs[0].Err == nil || rs[0].Err.Kind != tool.ErrCanceled || rs[0].Agent.Status != "canceled" {
		t.Fatalf("spawn result: %+v", rs)
	}
	if h.live != 0 {
		t.Errorf("%d child environments left open", h.live)
	}
}

func TestBudgetFromDefinition(t *testing.T) {
	script := `{"steps":[
	  {"actions":[{"kind":"spawn","content":"SPENDER","agent":"spender"}]},
	  {"say":"done"}],
	 "agents":{"SPENDER":{"steps":[
	   {"actions":[{"kind":"view","path":"notes.txt"}]},
	   {"actions":[{"kind":"view","path":"notes.txt"}]},
	   {"actions":[{"kind":"view","path":"notes.txt"}]},
	   {"say":"spent"}]}}}`
	h := newHarness(t, script, subagent.Limits{})
	def, err := subagent.ParseDefinition("spender.md", []byte("---\ndescription: Spends tokens.\ntools: read_file, list_dir\nbudget:\n  max_tokens: 10\n---\nRead things.\n"))
	if err != nil {
		t.Fatal(err)
	}
	h.cfg.Agents = []*subagent.Definition{def}
	h.cfg.Tools, _ = surface.NewSet(generic.Name, append(generic.Bindings(), generic.Spawn{Agents: []generic.AgentInfo{{Name: "spender", Description: "Spends tokens."}}})...)
	out := h.run(t, "Spend.")
	if out.Status != agent.StatusCompleted {
		t.Fatalf("top: %s %s", out.Status, out.Reason)
	}
	rs := h.spawnResults()
	if len(rs) != 1 || rs[0].Agent.Status != "budget" || rs[0].Agent.Turns != 1 || rs[0].Agent.Agent != "spender" {
		t.Fatalf("spawn result: err %v agent %+v", rs[0].Err, rs[0].Agent)
	}
	// The child was offered only the definition's tools, and its prompt.
	for _, rq := range h.srv.Requests() {
		if rq.Agent != "SPENDER" {
			continue
		}
		var body struct {
			System []struct {
				Text string `json:"text"`
			} `json:"system"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(rq.Body, &body); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range body.Tools {
			names = append(names, tl.Name)
		}
		if strings.Join(names, ",") != "read_file,list_dir" {
			t.Errorf("child tools: %v", names)
		}
		if len(body.System) == 0 || !strings.Contains(body.System[0].Text, "# Agent: spender\n\nRead things.") {
			t.Errorf("child system prompt: %+v", body.System)
		}
	}
}

// isolatedScript spawns an isolated sub-agent that changes notes.txt.
func isolatedScript() string {
	return `{"steps":[
	  {"actions":[{"kind":"spawn","raw_input":` + jsonString(spawnRaw(map[string]any{"task": "ISO change notes", "isolated": true})) + `}]},
	  {"say":"done"}],
	 "agents":{"ISO":{"steps":[
	   {"actions":[{"kind":"replace","path":"notes.txt","old":"two","new":"TWO"}]},
	   {"say":"changed"}]}}}`
}

func TestIsolatedWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	h := newHarness(t, isolatedScript(), subagent.Limits{})
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", h.dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	// An uncommitted change is part of the copy.
	os.WriteFile(filepath.Join(h.dir, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	out := h.run(t, "Change it in a copy.")
	if out.Status != agent.StatusCompleted {
		t.Fatalf("top: %s %s", out.Status, out.Reason)
	}
	rs := h.spawnResults()
	if len(rs) != 1 || rs[0].Err != nil {
		t.Fatalf("spawn: %+v", rs)
	}
	a := rs[0].Agent
	if !strings.Contains(a.Diff, "-two\n+TWO\n three\n") || len(rs[0].Changes) != 0 {
		t.Errorf("diff:\n%s\nchanges %+v", a.Diff, rs[0].Changes)
	}
	if got, _ := os.ReadFile(filepath.Join(h.dir, "notes.txt")); string(got) != "one\ntwo\nthree\n" {
		t.Errorf("the workspace changed: %q", got)
	}
	if _, err := os.Stat(a.Worktree); !os.IsNotExist(err) {
		t.Errorf("the worktree %s is still there", a.Worktree)
	}
	// The diff applies to the workspace.
	cmd := exec.Command("git", "-C", h.dir, "apply")
	cmd.Stdin = strings.NewReader(a.Diff)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("git apply: %v %s", err, b)
	}
	if got, _ := os.ReadFile(filepath.Join(h.dir, "notes.txt")); string(got) != "one\nTWO\nthree\n" {
		t.Errorf("after applying the diff: %q", got)
	}
}

func TestIsolatedCopyWithoutGit(t *testing.T) {
	h := newHarness(t, isolatedScript(), subagent.Limits{})
	out := h.run(t, "Change it in a copy.")
	if out.Status != agent.StatusCompleted {
		t.Fatalf("top: %s %s", out.Status, out.Reason)
	}
	a := h.spawnResults()[0].Agent
	if !strings.Contains(a.Diff, "--- a/notes.txt\n+++ b/notes.txt\n") || !strings.Contains(a.Diff, "-two\n+TWO\n") {
		t.Errorf("diff:\n%s", a.Diff)
	}
	if got, _ := os.ReadFile(filepath.Join(h.dir, "notes.txt")); string(got) != "one\ntwo\n" {
		t.Errorf("the workspace changed: %q", got)
	}
}

// BenchmarkSpawn measures a spawn call whose child answers at once: the
// child's tools and executors set up, one model turn (on the instant
// simulated model) and the outcome.
func BenchmarkSpawn(b *testing.B) {
	script := `{"steps":[{"say":"top"}],"agents":{"QUICK":{"steps":[{"say":"done"}]}}}`
	s, err := sim.ParseScript([]byte(script))
	if err != nil {
		b.Fatal(err)
	}
	srv := simtest.New(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, err := srv.Listen(ctx)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	set, _ := surface.NewSet(generic.Name, append(generic.Bindings(), generic.Spawn{})...)
	sp := subagent.New(subagent.Config{Provider: dialects["anthropic"](base), Tools: set, Model: "sim-coder", Workspace: dir, Session: "top",
		NewEnv: func(ctx context.Context, run *subagent.Run) (*subagent.Env, error) {
			mux, closeFn, err := executors(run.Dir)
			if err != nil {
				return nil, err
			}
			return &subagent.Env{Exec: mux, Close: closeFn}, nil
		}})
	call := tool.Call{ID: "c1", Op: tool.OpSpawn, Args: &tool.SpawnArgs{Task: "QUICK task"}}
	for b.Loop() {
		if r := sp.Execute(ctx, call); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

// TestSpawnBadInput: a spawn call that cannot run gets a precise error, and
// no child starts.
func TestSpawnBadInput(t *testing.T) {
	h := newHarness(t, `{"steps":[{"say":"unused"}]}`, subagent.Limits{MaxDepth: 1})
	h.cfg.Tools, _ = surface.NewSet(generic.Name, generic.Bindings()...)
	sp := subagent.New(h.cfg)
	for _, tc := range []struct {
		args *tool.SpawnArgs
		kind tool.ErrorKind
		want string
	}{
		{&tool.SpawnArgs{Task: "x", Tools: []string{"read_file", "cat"}}, tool.ErrInvalidInput, `no tool named "cat" to give the sub-agent; the tools are: bash, edit_file`},
		{&tool.SpawnArgs{Task: "x", Agent: "ghost"}, tool.ErrInvalidInput, `there is no agent named "ghost"`},
		{nil, tool.ErrInvalidInput, "spawn: no task"},
	} {
		r := sp.Execute(context.Background(), tool.Call{ID: "c", Op: tool.OpSpawn, Args: tc.args})
		if r.Err == nil || r.Err.Kind != tc.kind || !strings.Contains(r.Err.Message, tc.want) || r.Agent != nil {
			t.Errorf("%+v: %+v", tc.args, r.Err)
		}
	}
	if h.maxLive != 0 || len(h.srv.Requests()) != 0 {
		t.Errorf("a child started: %d environments, %d requests", h.maxLive, len(h.srv.Requests()))
	}

	// The binding refuses what it can tell is wrong.
	b := generic.Spawn{Agents: []generic.AgentInfo{{Name: "reviewer", Description: "Reviews."}}}
	for input, want := range map[string]string{
		`{}`:                               `missing required parameter "task"`,
		`{"task":"  "}`:                    "the task is empty",
		`{"task":"x","max_turns":-1}`:      "must not be negative",
		`{"task":"x","agent":"ghost"}`:     `no agent named "ghost"; the defined agents are: reviewer`,
		`{"task":"x","tools":"read_file"}`: `parameter "tools" must be of type array`,
	} {
		if _, err := b.Decode(model.ToolCall{Name: "spawn", Input: input}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", input, err, want)
		}
	}
}

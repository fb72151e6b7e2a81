package harnessagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/testenv"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper() // the sandbox re-executes this binary as its helper
	}
	os.Exit(testenv.Run(m))
}

// hides reports whether this host's sandbox hides paths (with namespaces).
func hides() bool {
	host := sandbox.Probe()
	pl, err := sandbox.MakePlan(sandbox.DefaultPolicy(os.TempDir(), os.TempDir()), host, sandbox.NoFallback)
	if err != nil {
		return false
	}
	for _, p := range pl.Protections(host) {
		if p.Name == "namespaces" {
			return p.Enforced
		}
	}
	return false
}

func TestSimDialect(t *testing.T) {
	for _, tc := range []struct{ model, surface, want string }{
		{"sim-claude", "anthropic", "anthropic"},
		{"sim-claude", "generic", "anthropic"},
		{"sim-claude", "", "anthropic"},
		{"sim-gpt", "", "responses"},
		{"sim-gpt", "generic", "responses"},
		{"sim-coder", "openai", "responses"},
		{"sim-gpt-codex", "codex", "responses"},
		{"sim-coder", "auto", "anthropic"},
		{"sim-gemini", "", "gemini"},
		{"sim-gemini-3-pro", "generic", "gemini"},
		{"anthropic.sim-claude-v1:0", "anthropic", "bedrock"},
		{"us.anthropic.sim-claude-v1:0", "", "bedrock"},
		{"sim-claude@20250929", "anthropic", "vertex"},
	} {
		if got := SimDialect(tc.model, tc.surface); got != tc.want {
			t.Errorf("SimDialect(%q, %q) = %q, want %q", tc.model, tc.surface, got, tc.want)
		}
	}
}

// recordingLimit is a RateLimit that records what it was told.
type recordingLimit struct {
	mu       sync.Mutex
	waits    int
	backoffs []time.Duration
}

func (r *recordingLimit) Wait(ctx context.Context) error {
	r.mu.Lock()
	r.waits++
	r.mu.Unlock()
	return ctx.Err()
}

func (r *recordingLimit) Backoff(d time.Duration) {
	r.mu.Lock()
	r.backoffs = append(r.backoffs, d)
	r.mu.Unlock()
}

// A run records its session into the runner's ledger and leaves it open
// for the verdict; it waits on the rate limit before each request and
// reports a 429's Retry-After to it; a hidden path stays hidden.
func TestRun(t *testing.T) {
	home := t.TempDir()
	t.Setenv("TRUSS_HOME", home)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.MkdirAll(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(secret, "answer.txt"), []byte("FORTY-TWO\n"), 0o644)

	signer, vkey, err := ledger.LoadOrCreateKey(filepath.Join(home, "key"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ledger")
	lw, err := ledger.Create(dir, "bench.x.a.r1", signer)
	if err != nil {
		t.Fatal(err)
	}
	script := &sim.Script{Steps: []sim.Step{
		{Say: "Reading.", Faults: []sim.Fault{{Kind: sim.FaultStatus, Status: 429, RetryAfterMS: 20}},
			Actions: []sim.Action{{Kind: sim.ActRun, Command: "cat " + filepath.Join(secret, "answer.txt") + "; echo done"}}},
		{Say: "Editing.", Actions: []sim.Action{{Kind: sim.ActReplace, Path: "notes.txt", Old: "one", New: "two"}},
			OnResult: map[string]*sim.Step{"FORTY-TWO": {Say: "Leaked.", Actions: []sim.Action{{Kind: sim.ActCreate, Path: "LEAKED", Content: "x\n"}}}}},
		{Say: "Done."},
	}}
	rl := &recordingLimit{}
	a := &Agent{Fallback: sandbox.FallbackNone, KeyDir: filepath.Join(home, "key")}
	spec := runner.RunSpec{InstanceID: "x", Repeat: 1, Arm: bench.Arm{Name: "a", Provider: "sim", Model: "sim-claude", Surface: "anthropic"},
		Workspace: ws, Task: "Change one to two.", Budgets: runner.Budgets{MaxTurns: 10}, Hidden: []string{secret},
		Ledger: lw, Session: "bench.x.a.r1", Script: script, RateLimit: rl}
	out, err := a.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if out.Turns != 3 || out.StopReason != "completed" || out.ModelTime <= 0 {
		t.Errorf("outcome %+v", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "two\n" {
		t.Errorf("notes.txt: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "LEAKED")); err == nil && hides() {
		t.Error("the hidden file was read")
	}
	rl.mu.Lock()
	if rl.waits != 3 || len(rl.backoffs) != 1 || rl.backoffs[0] < 20*time.Millisecond {
		t.Errorf("rate limit: %d waits, backoffs %v", rl.waits, rl.backoffs)
	}
	rl.mu.Unlock()
	// The ledger is still open: the runner appends its verdict.
	if _, err := lw.Append("bench.verdict", map[string]any{"resolved": true}, nil); err != nil {
		t.Fatalf("the ledger was closed: %v", err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	_, entries, err := ledger.Verify(dir, vkey)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range entries {
		types = append(types, e.Type)
	}
	for _, want := range []string{"session.start", "session.end", "bench.verdict"} {
		if !slices.Contains(types, want) {
			t.Errorf("ledger entries %v: no %s", types, want)
		}
	}
	if types[len(types)-1] != "bench.verdict" {
		t.Errorf("ledger entries %v: the verdict is not last", types)
	}
}

// A session that cannot be opened is the run's error.
func TestRunOpenError(t *testing.T) {
	t.Setenv("TRUSS_HOME", t.TempDir())
	lw, err := ledger.Create(filepath.Join(t.TempDir(), "l"), "s", mustSigner(t))
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	spec := runner.RunSpec{Arm: bench.Arm{Name: "a", Provider: "sim", Model: "sim-claude", Surface: "openai"},
		Workspace: t.TempDir(), Task: "x", Ledger: lw, Script: runner.DefaultScript()}
	spec.Arm.Surface = "nonesuch"
	if _, err := (&Agent{Fallback: sandbox.FallbackNone}).Run(context.Background(), spec); err == nil {
		t.Fatal("an unknown surface opened a session")
	}
}

func mustSigner(t *testing.T) interface {
	Name() string
	KeyHash() uint32
	Sign([]byte) ([]byte, error)
} {
	s, _, err := ledger.LoadOrCreateKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Env "task" runs each task in its own image, and refuses a task without
// one before anything starts.
func TestEnvTask(t *testing.T) {
	a := &Agent{Env: "task"}
	spec := runner.RunSpec{InstanceID: "x-1", Image: "example.com/x:1", Workspace: t.TempDir()}
	if o := a.Options(&spec, t.TempDir()); o.Env != "image:example.com/x:1" {
		t.Errorf("env %q", o.Env)
	}
	spec.Image = ""
	if _, err := a.Run(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "x-1 has no image") {
		t.Errorf("%v", err)
	}
}

// ensurer records the images asked for and fails them all.
type ensurer struct {
	mu    sync.Mutex
	asked []string
}

func (e *ensurer) Ensure(_ context.Context, ref string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, ref)
	return "", errors.New("image " + ref + ": not found locally and the pull failed: manifest unknown")
}

// A run's image is made sure of before its session opens: the run's own
// with Env "task", the one image with "image:REF", none on the host; the
// Ensurer's error is the run's, nothing having started.
func TestEnsuresImage(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"task", "example.com/x:1"},
		{"image:localhost/other:2", "localhost/other:2"},
	} {
		e := &ensurer{}
		a := &Agent{Env: tc.env, Images: e}
		spec := runner.RunSpec{InstanceID: "x-1", Image: "example.com/x:1", Workspace: t.TempDir()}
		_, err := a.Run(context.Background(), spec)
		if err == nil || err.Error() != "image "+tc.want+": not found locally and the pull failed: manifest unknown" {
			t.Errorf("%s: %v", tc.env, err)
		}
		if !slices.Equal(e.asked, []string{tc.want}) {
			t.Errorf("%s: asked for %q", tc.env, e.asked)
		}
	}
}

// An agent sees its own workspace and no other run's: the directory of
// every run's workspace (a --work on a disk, outside /tmp) is covered, its
// own workspace bound back writable.
func TestRunSeesOnlyItsOwnWorkspace(t *testing.T) {
	if !hides() {
		t.Skip("this host cannot hide paths (no namespaces)")
	}
	home := t.TempDir()
	t.Setenv("TRUSS_HOME", home)
	work := diskWork(t)
	ws := filepath.Join(work, "truss-bench-run-1", "repo")
	other := filepath.Join(work, "truss-bench-run-2", "repo", "fix.go")
	for p, data := range map[string]string{filepath.Join(ws, "notes.txt"): "one\n", other: "FORTY-TWO\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lw, err := ledger.Create(filepath.Join(t.TempDir(), "ledger"), "bench.x.a.r1", mustSigner(t))
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	script := &sim.Script{Steps: []sim.Step{
		{Say: "Reading.", Actions: []sim.Action{{Kind: sim.ActRun, Command: "cat " + other + "; ls " + filepath.Dir(other) + "; echo done"}}},
		{Say: "Editing.", Actions: []sim.Action{{Kind: sim.ActReplace, Path: "notes.txt", Old: "one", New: "two"}},
			OnResult: map[string]*sim.Step{"FORTY-TWO": {Say: "Leaked.", Actions: []sim.Action{{Kind: sim.ActCreate, Path: "LEAKED", Content: "x\n"}}}}},
		{Say: "Done."},
	}}
	a := &Agent{KeyDir: filepath.Join(home, "key")}
	spec := runner.RunSpec{InstanceID: "x", Repeat: 1, Arm: bench.Arm{Name: "a", Provider: "sim", Model: "sim-claude", Surface: "anthropic"},
		Workspace: ws, Task: "Change one to two.", Budgets: runner.Budgets{MaxTurns: 10}, Covered: []string{work},
		Ledger: lw, Session: "bench.x.a.r1", Script: script}
	if _, err := a.Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "two\n" {
		t.Errorf("notes.txt: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "LEAKED")); err == nil {
		t.Error("the agent read another run's workspace")
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "FORTY-TWO\n" {
		t.Errorf("the other workspace: %q, %v", b, err)
	}
}

// A run's commands cannot read the agent's own hidden paths (a worker's
// queue credentials), which are outside every run's spec.Hidden.
func TestRunHidesAgentHidden(t *testing.T) {
	if !hides() {
		t.Skip("this host cannot hide paths (no namespaces)")
	}
	home := t.TempDir()
	t.Setenv("TRUSS_HOME", home)
	work := diskWork(t)
	ws := filepath.Join(work, "run", "repo")
	creds := filepath.Join(work, "worker.creds")
	for p, data := range map[string]string{filepath.Join(ws, "notes.txt"): "one\n", creds: "SUAFAKE-SEED-OF-THE-WORKER\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lw, err := ledger.Create(filepath.Join(t.TempDir(), "ledger"), "bench.x.a.r1", mustSigner(t))
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	script := &sim.Script{Steps: []sim.Step{
		{Say: "Reading.", Actions: []sim.Action{{Kind: sim.ActRun, Command: "cat " + creds + "; echo done"}},
			OnResult: map[string]*sim.Step{"SUAFAKE-SEED": {Say: "Leaked.", Actions: []sim.Action{{Kind: sim.ActCreate, Path: "LEAKED", Content: "x\n"}}}}},
		{Say: "Done."},
	}}
	a := &Agent{KeyDir: filepath.Join(home, "key"), Hidden: []string{creds}}
	spec := runner.RunSpec{InstanceID: "x", Repeat: 1, Arm: bench.Arm{Name: "a", Provider: "sim", Model: "sim-claude", Surface: "anthropic"},
		Workspace: ws, Task: "Read.", Budgets: runner.Budgets{MaxTurns: 10}, Ledger: lw, Session: "bench.x.a.r1", Script: script}
	if o := a.Options(&spec, t.TempDir()); !slices.Contains(o.Sandbox.Hidden, creds) {
		t.Errorf("the session's hidden paths %q lack the agent's", o.Sandbox.Hidden)
	}
	if _, err := a.Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "LEAKED")); err == nil {
		t.Error("the run's commands read the agent's hidden credentials")
	}
}

// diskWork is a directory for runs' workspaces outside /tmp (as a --work
// on a disk is), which the sandbox's private /tmp would hide anyway;
// removed when the test ends.
func diskWork(t *testing.T) string {
	t.Helper()
	work, err := os.MkdirTemp(".", ".work-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	abs, err := filepath.Abs(work)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

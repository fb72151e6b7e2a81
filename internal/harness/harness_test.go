package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/testenv"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper() // the sandbox re-executes this binary as its helper
	}
	os.Exit(testenv.Run(m))
}

// verified verifies the ledger in dir with the installation key in
// keyDir, failing the test when it does not verify.
func verified(t *testing.T, keyDir, dir string) (*ledger.Report, []ledger.Entry) {
	t.Helper()
	_, vkey, err := ledger.LoadOrCreateKey(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	r, entries, err := ledger.Verify(dir, vkey)
	if err != nil {
		t.Fatalf("the ledger %s does not verify: %v", dir, err)
	}
	return r, entries
}

// twoRuns is a script for two tasks: the first views a file, the second
// edits it through the editor and creates another.
const twoRuns = `{"steps": [
 {"actions": [{"kind": "view", "path": "a.txt"}]},
 {"say": "It says one."},
 {"actions": [{"kind": "replace", "path": "a.txt", "old": "one", "new": "two"}, {"kind": "create", "path": "b.txt", "content": "bee\n"}]},
 {"say": "Changed."}
]}`

// fixture returns options for a session on a new workspace that plays
// script on the simulated model, with its session store, key and memory
// in the test's directories.
func fixture(t *testing.T, script string) Options {
	t.Helper()
	root, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := filepath.Join(home, "script.json")
	if err := os.WriteFile(sc, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRUSS_HOME", home)
	t.Setenv("TMPDIR", t.TempDir())
	return Options{Version: "test", Provider: "sim", Script: sc, SimDialect: "chat", Surface: "generic", Root: root, SimRoot: root,
		SessionDir: filepath.Join(home, "sessions"), KeyDir: filepath.Join(home, "key"), MemoryDir: filepath.Join(home, "memories"),
		Sandbox:    SandboxOptions{Fallback: sandbox.FallbackNone},
		Validation: ValidationOptions{TestCmd: "grep -q . a.txt"},
		MCP:        MCPOptions{Off: true},
		OnWarning:  func(msg string) { t.Log("warning:", msg) }}
}

// TestRunTwiceContinuesTheSession runs two tasks on one session: the
// second continues the first's transcript, session and ledger, each ends
// with the verification boundary, and the one ledger verifies, workspace
// included.
func TestRunTwiceContinuesTheSession(t *testing.T) {
	o := fixture(t, twoRuns)
	// The observer keeps every event with its form when reported: events
	// are immutable once reported, so both must still agree at the end.
	var seen []agent.EventType
	var kept []agent.Event
	var forms [][]byte
	o.Observers = []agent.Observer{agent.ObserverFunc(func(ev agent.Event) {
		seen = append(seen, ev.Type)
		b, err := json.Marshal(ev)
		if err != nil {
			t.Errorf("%s: %v", ev.Type, err)
		}
		kept, forms = append(kept, ev), append(forms, b)
	})}
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.Run(ctx, "Look at a.txt.")
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Run(ctx, "Now change it.")
	if err != nil {
		t.Fatal(err)
	}
	for i, out := range []Outcome{first, second} {
		if out.Agent.Status != agent.StatusCompleted || out.Agent.Turns != 2 {
			t.Errorf("run %d: %s after %d turns (%s)", i+1, out.Agent.Status, out.Agent.Turns, out.Agent.Reason)
		}
		if out.Verdict == nil || !out.Verdict.OK {
			t.Errorf("run %d: verdict %+v", i+1, out.Verdict)
		}
		if out.SessionID == "" || out.LedgerDir == "" || len(out.LedgerRoot) != 32 {
			t.Errorf("run %d: session %q, ledger %q, root %x", i+1, out.SessionID, out.LedgerDir, out.LedgerRoot)
		}
	}
	if second.LedgerDir != first.LedgerDir || second.LedgerSize <= first.LedgerSize || second.SessionID != first.SessionID {
		t.Errorf("the second run did not continue the first's ledger: %s (%d) then %s (%d)", first.LedgerDir, first.LedgerSize, second.LedgerDir, second.LedgerSize)
	}
	for i, ev := range kept {
		if b, _ := json.Marshal(ev); !bytes.Equal(b, forms[i]) {
			t.Errorf("event %d (%s) changed after it was reported:\n%s\n%s", i, ev.Type, forms[i], b)
		}
	}
	if got := countOf(seen, agent.EventRunCompleted); got != 2 {
		t.Errorf("the observer saw %d run ends, want 2", got)
	}
	if b, _ := os.ReadFile(filepath.Join(o.Root, "a.txt")); string(b) != "two\n" {
		t.Errorf("a.txt holds %q", b)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(ctx, "more"); !errors.Is(err, ErrClosed) {
		t.Errorf("a run after Close: %v, want ErrClosed", err)
	}

	r, entries := verified(t, o.KeyDir, second.LedgerDir)
	if r.Sealed != second.LedgerSize || string(r.Root) != string(second.LedgerRoot) {
		t.Errorf("the ledger's last checkpoint signs %d entries, the outcome says %d", r.Sealed, second.LedgerSize)
	}
	if err := ledger.VerifyWorkspace(second.LedgerDir, entries, o.Root); err != nil {
		t.Error(err)
	}
	var users, validations int
	for _, e := range entries {
		switch e.Type {
		case "user":
			users++
		case "validation":
			validations++
		}
	}
	if users != 2 || validations != 2 {
		t.Errorf("the ledger has %d user entries and %d validations, want 2 and 2", users, validations)
	}
	// The session store holds both tasks in one transcript.
	_, items, err := session.Store{Dir: o.SessionDir}.Open(second.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, it := range items {
		if it.Kind == "user" {
			tasks = append(tasks, it.Text)
		}
	}
	if strings.Join(tasks, "|") != "Look at a.txt.|Now change it." {
		t.Errorf("the transcript's user messages: %q", tasks)
	}
}

func countOf(evs []agent.EventType, t agent.EventType) int {
	n := 0
	for _, e := range evs {
		if e == t {
			n++
		}
	}
	return n
}

// TestValidationOnDemand runs no boundary at the end of a run; Validate
// runs it.
func TestValidationOnDemand(t *testing.T) {
	o := fixture(t, twoRuns)
	o.Validation.OnDemand = true
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Run(ctx, "Look at a.txt.")
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != nil {
		t.Errorf("a verdict without asking: %+v", out.Verdict)
	}
	v, err := s.Validate(ctx)
	if err != nil || v == nil || !v.OK {
		t.Fatalf("Validate: %+v, %v", v, err)
	}
}

// TestEveryPathReleasesWhatItOpened fails Open at each of its steps, and
// runs a whole session, and checks that nothing is left running or open:
// no goroutine (the ledger's writer and recorder, the simulated model's
// server, the shell's), no file, no temporary directory, and no session
// that never reached the model. The ledger is prepared while the first
// request is on its way: a failure there is Run's error, the run cancelled
// and the session removed as when Open fails; with a sequential start it
// is Open's, as before.
func TestEveryPathReleasesWhatItOpened(t *testing.T) {
	for _, tc := range []struct {
		step       string
		sequential bool
		atRun      bool // the failure is Run's, not Open's
	}{
		{step: "resolve"}, {step: "workspace"}, {step: "session"}, {step: "provider"},
		{step: "ledger", atRun: true}, {step: "recorder", atRun: true},
		{step: "ledger", sequential: true}, {step: "recorder", sequential: true},
		{step: "agent"}, {step: ""}, {step: "", sequential: true},
	} {
		name := tc.step
		if name == "" {
			name = "none"
		}
		if tc.sequential {
			name += "/sequential"
		}
		t.Run(name, func(t *testing.T) {
			script := twoRuns
			if tc.atRun {
				// The model's first answer writes a file: the call
				// must not run.
				script = `{"steps": [{"actions": [{"kind": "create", "path": "c.txt", "content": "c\n"}]}, {"say": "Done."}]}`
			}
			o := fixture(t, script)
			o.failAt, o.sequentialStart = tc.step, tc.sequential
			tmp := os.Getenv("TMPDIR")
			goroutines, fds := settle(t, 0, 0)
			ctx := context.Background()
			s, err := Open(ctx, o)
			switch {
			case tc.step != "" && !tc.atRun:
				if err == nil || !strings.Contains(err.Error(), "injected failure at "+tc.step) {
					t.Fatalf("Open: %v, want the injected failure", err)
				}
			case tc.atRun:
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Run(ctx, "Look at a.txt."); err == nil || !strings.Contains(err.Error(), "injected failure at "+tc.step) {
					t.Fatalf("Run: %v, want the injected failure", err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(o.Root, "c.txt")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the cancelled run's call ran: %v", err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Run(ctx, "Look at a.txt."); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			settle(t, goroutines, fds)
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("left in the temporary directory: %v", ents)
			}
			ms, _ := session.Store{Dir: o.SessionDir}.List()
			if want := map[bool]int{true: 0, false: 1}[tc.step != ""]; len(ms) != want {
				t.Errorf("%d sessions kept, want %d", len(ms), want)
			}
		})
	}
}

// settle waits until the goroutines and open files are back to at most
// goroutines and fds (when set) and returns their numbers.
func settle(t *testing.T, goroutines, fds int) (int, int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		g, f := runtime.NumGoroutine(), openFiles()
		if goroutines == 0 || g <= goroutines && f <= fds {
			return g, f
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines and %d open files remain, were %d and %d:\n%s", g, f, goroutines, fds, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openFiles counts the process's open file descriptors.
func openFiles() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

// TestLedgerWithoutSessionStore writes no session but a ledger in a given
// directory, as a benchmark runner does.
func TestLedgerWithoutSessionStore(t *testing.T) {
	o := fixture(t, twoRuns)
	o.NoSession, o.LedgerDir = true, filepath.Join(t.TempDir(), "run-1", "ledger")
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(ctx, "Look at a.txt.")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if out.SessionID != "" || out.LedgerDir != o.LedgerDir {
		t.Errorf("session %q, ledger %q; want none and %s", out.SessionID, out.LedgerDir, o.LedgerDir)
	}
	if _, err := os.Stat(o.SessionDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a session store was made: %v", err)
	}
	r, _ := verified(t, o.KeyDir, o.LedgerDir)
	if r.Sealed != out.LedgerSize || string(r.Root) != string(out.LedgerRoot) {
		t.Errorf("the ledger's last checkpoint signs %d entries, the outcome says %d", r.Sealed, out.LedgerSize)
	}
}

// TestPipelinedStartLedger runs the same two tasks in a git repository
// with the ledger prepared while the first request is on its way and with
// it prepared before Open returns: both ledgers verify and hold the same
// entries in the same order — session.start with the repository's state
// first, then every user message, response, call and validation — the
// same but for what differs from one session to another (ids, times,
// paths, durations).
func TestPipelinedStartLedger(t *testing.T) {
	run := func(sequential bool) []ledger.Entry {
		o := fixture(t, twoRuns)
		gitRepo(t, o.Root)
		o.sequentialStart = sequential
		ctx := context.Background()
		s, err := Open(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		var out Outcome
		for _, task := range []string{"Look at a.txt.", "Now change it."} {
			if out, err = s.Run(ctx, task); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		_, entries := verified(t, o.KeyDir, out.LedgerDir)
		for i := range entries {
			entries[i].Data = normalized(t, entries[i].Data, o.Root, out.SessionID)
		}
		return entries
	}
	seq, pipe := run(true), run(false)
	if len(seq) != len(pipe) {
		t.Fatalf("%d entries pipelined, %d sequential", len(pipe), len(seq))
	}
	for i := range seq {
		a, b := seq[i], pipe[i]
		ja, _ := json.Marshal(a.Data)
		jb, _ := json.Marshal(b.Data)
		if a.Type != b.Type || !bytes.Equal(ja, jb) || !slices.Equal(slices.Sorted(maps.Keys(a.Payloads)), slices.Sorted(maps.Keys(b.Payloads))) {
			t.Errorf("entry %d:\nsequential %s %s %v\npipelined  %s %s %v", i, a.Type, ja, a.Payloads, b.Type, jb, b.Payloads)
		}
	}
	if start := seq[0]; start.Type != "session.start" || !strings.Contains(fmt.Sprint(start.Data), "head") {
		t.Errorf("the first entry is %s %v, want session.start with the repository's state", start.Type, start.Data)
	}
}

// gitRepo makes dir a git repository with one commit.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// volatile are the fields of ledger entries that differ from one session
// to another of the same script.
var volatile = map[string]bool{"duration_ns": true, "id": true, "head": true}

// normalized is an entry's data as JSON values with the workspace's root
// and the session's id replaced and the volatile fields left out.
func normalized(t *testing.T, data any, root, id string) any {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte(root), []byte("ROOT")), []byte(id), []byte("SESSION"))
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k := range x {
				if volatile[k] {
					x[k] = "…"
				} else {
					x[k] = walk(x[k])
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	return walk(v)
}

// openSandboxed opens a session of o, closed when the test ends, and
// skips the test on a host that cannot enforce its sandbox.
func openSandboxed(t testing.TB, o Options) *Session {
	t.Helper()
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if !s.w.sandbox.Plan().Active() {
		t.Skip("no sandbox on this host")
	}
	return s
}

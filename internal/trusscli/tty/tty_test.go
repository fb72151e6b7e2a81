//go:build heavy

// The heavy tier (go test -tags heavy; .ci/run runs it): the binary built
// and driven in pseudo-terminals, the demo compiling in the sandbox.

// Package tty_test drives the truss binary in a pseudo-terminal: the
// interactive session as a person uses it, against the simulated model.
package tty_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/sim/simtest"
	"github.com/trussdev/truss/internal/testenv"
	"github.com/trussdev/truss/internal/tui/tuitest"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// buildBinary builds the truss binary for one test.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "truss")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/trussdev/truss/cmd/truss")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// interactiveEnv is the environment of a truss run by the tests: its own
// TRUSS_HOME, the test binary's HOME and TMPDIR (testenv.Run's), the
// host's Go caches and PATH.
func interactiveEnv(home string) []string {
	env := []string{"TRUSS_HOME=" + home, "TERM=xterm-256color", "TMPDIR=" + os.TempDir()}
	for _, k := range []string{"HOME", "PATH", "GOCACHE", "GOPATH", "GOMODCACHE", "GOENV"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// escalatedRun is a script action that runs command asking to escalate.
func escalatedRun(t *testing.T, command, why string) map[string]any {
	in, err := json.Marshal(map[string]string{"command": command, "sandbox_permissions": "require_escalated", "justification": why})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"kind": "run", "command": command, "raw_input": string(in)}
}

// waitIdle waits until no turn runs (the status line no longer offers to
// cancel one).
func waitIdle(t *testing.T, term *tuitest.Terminal) {
	t.Helper()
	deadline := time.Now().Add(tuitest.Timeout)
	for strings.Contains(term.Screen(), "esc cancels") {
		if time.Now().After(deadline) {
			t.Fatalf("the turn never ended; the screen shows:\n%s", term.Screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInteractiveSession drives the real binary in a pseudo-terminal
// against the simulated model: a task that edits a file and runs a
// command, an escalation approved, a long command whose output shows while
// it runs, cancelled with Esc,
// /diff and /ledger, /quit; then the session is listed and its ledger
// verifies, with the escalated command's question, answer and output in
// it.
func TestInteractiveSession(t *testing.T) {
	bin := buildBinary(t)
	home, root, outside := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "greeting.txt"), []byte("hello one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(outside, "fetched.txt")
	script := simtest.WriteScript(t, home,
		map[string]any{"say": "Changing the greeting.", "actions": []map[string]any{
			{"kind": "replace", "path": "greeting.txt", "old": "hello one", "new": "hello two"},
			{"kind": "run", "command": "echo ran-in-sandbox"}}},
		map[string]any{"say": "The greeting says two."},
		map[string]any{"actions": []map[string]any{escalatedRun(t, "echo fetched > "+target+" && echo escalated-ok", "Do you allow fetching outside the workspace?")}},
		map[string]any{"say": "Fetched."},
		map[string]any{"actions": []map[string]any{{"kind": "run", "command": "echo long-start''ed; sleep 60"}}},
		map[string]any{"say": "Stopped."},
	)
	cmd := exec.Command(bin, "--provider", "sim", "--script", script, "--sim-dialect", "chat", "--surface", "generic", "--no-validate")
	cmd.Dir, cmd.Env = root, interactiveEnv(home)
	term := tuitest.Start(t, cmd, 100, 40)
	term.WaitForText("on-request", "generic")
	// send types a line once no turn runs (the status line then no
	// longer offers to cancel one).
	send := func(line string) {
		t.Helper()
		waitIdle(t, term)
		term.Type(line + "\r")
	}

	send("change the greeting")
	term.WaitForText("ran-in-sandbox", "+hello two", "The greeting says two.")

	send("fetch it")
	term.WaitForText("Allow this command?", "fetching outside the workspace")
	term.Type("y")
	term.WaitForText("escalated-ok", "Fetched.")
	if b, err := os.ReadFile(target); err != nil || string(b) != "fetched\n" {
		t.Fatalf("the approved escalation did not write outside the workspace: %q, %v", b, err)
	}

	send("run the long one")
	// Its output is shown while it runs (the command line itself does
	// not hold the words).
	term.WaitForText("┊ long-started", "running…")
	term.Type("\x1b")
	term.WaitForText("canceled")

	send("/diff")
	term.WaitForText("-hello one", "+hello two")
	send("/ledger")
	term.WaitForText("The ledger verifies")
	send("/quit")
	if code := term.Exit(); code != 0 {
		t.Fatalf("exit status %d; the screen shows:\n%s", code, term.Text())
	}
	m := regexp.MustCompile(`Session (\S+) saved\.`).FindStringSubmatch(term.Output())
	if m == nil {
		t.Fatalf("no session id printed after the UI exited:\n%s", term.Text())
	}
	id := m[1]

	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Dir, c.Env = root, interactiveEnv(home)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("truss %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run("sessions"); !strings.Contains(out, id) {
		t.Errorf("truss sessions does not list %s:\n%s", id, out)
	}
	run("ledger", "verify", id)
	// The escalated call is in the ledger: its arguments (the request), and
	// its output, which only the approved, escalated command printed.
	dirs, err := session.Ledgers(filepath.Join(home, "sessions", id))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no ledger for %s: %v", id, err)
	}
	var all bytes.Buffer
	filepath.WalkDir(dirs[0], func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			all.Write(b)
		}
		return nil
	})
	for _, want := range []string{"require_escalated", "escalated-ok"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the ledger lacks %q", want)
		}
	}
	// Where the recorder keeps the approval with the result, it is the
	// user's yes to the escalation.
	if strings.Contains(all.String(), `"approval":`) {
		for _, want := range []string{`"decision":"approved"`, `"by":"user"`, `"escalated":true`} {
			if !strings.Contains(all.String(), want) {
				t.Errorf("the ledger's approval lacks %s", want)
			}
		}
	}
}

// TestInteractiveChecks drives the real binary in a pseudo-terminal in a
// workspace whose checks are slow while a file named slow exists: an
// answer that changed no file runs none; a task that changed files starts
// them in the background, and the next task is taken at once and cancels
// them; /check runs them on demand; the ledger records the cancelled
// check as cancelled.
func TestInteractiveChecks(t *testing.T) {
	bin := buildBinary(t)
	home, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "greeting.txt"), []byte("hello one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := simtest.WriteScript(t, home,
		map[string]any{"say": "Hello."},
		map[string]any{"actions": []map[string]any{
			{"kind": "create", "path": "slow", "content": "x\n"},
			{"kind": "replace", "path": "greeting.txt", "old": "hello one", "new": "hello two"}}},
		map[string]any{"say": "Changed, slowly."},
		map[string]any{"say": "Hello again."},
		map[string]any{"actions": []map[string]any{{"kind": "run", "command": "rm slow"}}},
		map[string]any{"say": "Fast again."},
	)
	cmd := exec.Command(bin, "--provider", "sim", "--script", script, "--sim-dialect", "chat", "--surface", "generic",
		"--test-cmd", "if [ -e slow ]; then sleep 120; fi; grep -q 'hello two' greeting.txt")
	cmd.Dir, cmd.Env = root, interactiveEnv(home)
	term := tuitest.Start(t, cmd, 100, 40)
	term.WaitForText("on-request", "generic")
	idle := func() { t.Helper(); waitIdle(t, term) }

	term.Type("hi\r")
	term.WaitForText("Hello.", "✓ completed")
	idle()
	if sc := term.Text(); strings.Contains(sc, "checks") || strings.Contains(sc, "validation") {
		t.Fatalf("an answer that changed nothing ran the checks:\n%s", sc)
	}

	term.Type("change it\r")
	term.WaitForText("Changed, slowly.", "checks running")
	idle()
	// The checks run; the next task is taken at once, and cancels them.
	term.Type("hi again\r")
	term.WaitForText("Hello again.", "cancelled before they ended")
	if strings.Contains(term.Text(), "Wait for the turn to end") {
		t.Fatalf("a task typed while the checks ran was refused:\n%s", term.Text())
	}
	idle()

	term.Type("make it fast\r")
	term.WaitForText("Fast again.", "checks (run by truss): validation passed")
	idle()
	term.Type("/check\r")
	for deadline := time.Now().Add(tuitest.Timeout); strings.Count(term.Text(), "validation passed") < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/check reported no verdict; the screen shows:\n%s", term.Text())
		}
	}
	term.Type("/quit\r")
	if code := term.Exit(); code != 0 {
		t.Fatalf("exit status %d; the screen shows:\n%s", code, term.Text())
	}
	m := regexp.MustCompile(`Session (\S+) saved\.`).FindStringSubmatch(term.Output())
	if m == nil {
		t.Fatalf("no session id printed after the UI exited:\n%s", term.Text())
	}
	c := exec.Command(bin, "ledger", "show", m[1])
	c.Dir, c.Env = root, interactiveEnv(home)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("truss ledger show: %v\n%s", err, out)
	}
	for _, want := range []string{"CANCELLED (concludes nothing) by truss (verification boundary, in the background)",
		"passed by truss (verification boundary, in the background)", "passed by truss (verification boundary, on demand)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the ledger does not show %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "FAILED by truss") {
		t.Errorf("the ledger records a failed check:\n%s", out)
	}
}

// TestInteractiveResume: truss --resume opens on the conversation so far,
// /resume lists the directory's other sessions to pick from, and quitting
// after a resume says the session was saved (it was).
func TestInteractiveResume(t *testing.T) {
	bin := buildBinary(t)
	home, root := t.TempDir(), t.TempDir()
	script := simtest.WriteScript(t, home, map[string]any{"say": "Answer one."})
	ids := make([]string, 2)
	for i, task := range []string{"the first task", "the second task"} {
		c := exec.Command(bin, "run", "--provider", "sim", "--script", script, "--no-validate", task)
		c.Dir, c.Env = root, interactiveEnv(home)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("truss run: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`--resume (\S+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no session id:\n%s", out)
		}
		ids[i] = string(m[1])
	}
	cmd := exec.Command(bin, "--resume", ids[0], "--no-validate")
	cmd.Dir, cmd.Env = root, interactiveEnv(home)
	term := tuitest.Start(t, cmd, 100, 40)
	term.WaitForText("the first task", "Answer one.", "Resumed session "+ids[0])
	term.Type("/resume\r")
	term.WaitForText("most recent first", "the second task", "/resume N continues")
	if strings.Contains(term.Text(), "Resumed.") {
		t.Fatalf("/resume switched without asking:\n%s", term.Text())
	}
	term.Type("/resume 1\r")
	term.WaitForText("the second task", "Resumed.")
	term.Type("/quit\r")
	if code := term.Exit(); code != 0 {
		t.Fatalf("exit status %d; the screen shows:\n%s", code, term.Text())
	}
	if out := term.Output(); !strings.Contains(out, "Session "+ids[1]+" saved.") || strings.Contains(out, "nothing was saved") {
		t.Errorf("after quitting a resumed session:\n%s", out)
	}
}

// TestDemoInteractive: truss demo --interactive opens the interactive
// session on the demo repository with no key: whatever task is typed, the
// scripted model fixes the test (the diff, the tests' output), Truss's
// checks pass in the background, and the next task asks for an approval.
func TestDemoInteractive(t *testing.T) {
	bin := buildBinary(t)
	home := t.TempDir()
	cmd := exec.Command(bin, "demo", "--interactive")
	cmd.Dir, cmd.Env = t.TempDir(), interactiveEnv(home)
	term := tuitest.Start(t, cmd, 110, 60)
	term.WaitForText("Ask Truss to do something")
	term.Type("fix the failing test\r")
	// The tests build in the sandbox's own cache, cold on a new machine.
	term.WaitWithinText(12*time.Minute, "s[n/2-1] + s[n/2]", "--- PASS: TestMedian", "checks (run by truss): validation passed")
	term.Type("what else?\r")
	term.WaitForText("Allow this command?", "outside the sandbox")
	term.Type("y")
	term.WaitForText("That was the approval card")
	term.Type("/quit\r")
	if code := term.Exit(); code != 0 {
		t.Fatalf("exit status %d; the screen shows:\n%s", code, term.Text())
	}
	// The demo's repository is removed: no advice to resume it.
	if out := term.Output(); !strings.Contains(out, "saved.") || !strings.Contains(out, "The demo repository was removed") || strings.Contains(out, "resume with") {
		t.Errorf("after quitting:\n%s", out)
	}
}

// TestExecRefusesEscalation: truss exec never waits for a person: an
// escalation request under on-request is refused at once, as unattended,
// and the run goes on.
func TestExecRefusesEscalation(t *testing.T) {
	bin := buildBinary(t)
	home, root, outside := t.TempDir(), t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "fetched.txt")
	script := simtest.WriteScript(t, home,
		map[string]any{"actions": []map[string]any{escalatedRun(t, "echo fetched > "+target, "Do you allow it?")}},
		map[string]any{"say": "It was refused.", "on_result": map[string]any{"unattended": map[string]any{"say": "refused-unattended"}}},
	)
	for _, policy := range []string{"on-request", "never"} {
		t.Run(policy, func(t *testing.T) {
			cmd := exec.Command(bin, "exec", "--provider", "sim", "--script", script, "--sim-dialect", "chat", "--surface", "generic", "--no-validate", "--approval", policy, "fetch it")
			cmd.Dir, cmd.Env = root, interactiveEnv(home)
			cmd.Stdin = nil
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("truss exec: %v\n%s", err, out)
			}
			if _, err := os.Stat(target); err == nil {
				t.Fatal("the escalated command ran")
			}
			want := "refused-unattended"
			if policy == "never" {
				want = "It was refused."
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("the model did not read the refusal (%s):\n%s", want, out)
			}
		})
	}
}

// TestInteractiveEditsAndCompletion: with --approval-edits ask an edit
// waits for its card, which shows the diff before anything is written,
// and "y" makes it; @path completes from the workspace with Tab; /model
// lists the provider's models and /model N switches to one.
func TestInteractiveEditsAndCompletion(t *testing.T) {
	bin := buildBinary(t)
	home, root := t.TempDir(), t.TempDir()
	for name, data := range map[string]string{"counter.txt": "one\n", "notes.txt": "a note\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := simtest.WriteScript(t, home,
		map[string]any{"say": "Counting up.", "actions": []map[string]any{{"kind": "replace", "path": "counter.txt", "old": "one", "new": "two"}}},
		map[string]any{"say": "Counted."},
	)
	cmd := exec.Command(bin, "--provider", "sim", "--script", script, "--sim-dialect", "chat", "--surface", "generic", "--no-validate", "--approval-edits", "ask")
	cmd.Dir, cmd.Env = root, interactiveEnv(home)
	term := tuitest.Start(t, cmd, 100, 40)
	term.WaitForText("on-request + ask before edits")

	term.Type("count up, see @no")
	term.WaitFor("notes.txt")
	term.Type("\t")
	term.WaitFor("see @notes.txt")
	term.Type("\r")
	term.WaitForText("Allow this edit?", "-one", "+two")
	if b, _ := os.ReadFile(filepath.Join(root, "counter.txt")); string(b) != "one\n" {
		t.Fatalf("the edit was made before it was allowed: %q", b)
	}
	term.Type("y")
	term.WaitForText("Counted.")
	waitIdle(t, term)
	if b, _ := os.ReadFile(filepath.Join(root, "counter.txt")); string(b) != "two\n" {
		t.Fatalf("the allowed edit was not made: %q", b)
	}

	term.Type("/model\r")
	term.WaitForText("Models of the provider", "sim-coder")
	waitIdle(t, term)
	term.Type("/model 1\r")
	term.WaitFor("sim-gpt ·")
	waitIdle(t, term)
	term.Type("/quit\r")
	if code := term.Exit(); code != 0 {
		t.Fatalf("exit status %d; the terminal holds:\n%s", code, term.Text())
	}
}

// TestInteractiveRunsEnd drives the real binary in a pseudo-terminal
// through everything that closes or re-opens the session — a task, a
// surface switch refused, two model switches, a task and /compact, /resume
// of another session — and quits with /quit, then with Ctrl-D: every run
// of every session verifies with truss ledger verify --require-end.
func TestInteractiveRunsEnd(t *testing.T) {
	bin := buildBinary(t)
	for _, quit := range []struct{ name, keys string }{{"quit", "/quit\r"}, {"ctrl-d", "\x04"}} {
		t.Run(quit.name, func(t *testing.T) {
			home, root := t.TempDir(), t.TempDir()
			script := simtest.WriteScript(t, home,
				map[string]any{"say": "Answer one."}, map[string]any{"say": "Answer two."}, map[string]any{"say": "Answer three."})
			truss := func(args ...string) string {
				t.Helper()
				c := exec.Command(bin, args...)
				c.Dir, c.Env = root, interactiveEnv(home)
				out, err := c.CombinedOutput()
				if err != nil {
					t.Fatalf("truss %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			// Another session of the directory, for /resume.
			truss("run", "--provider", "sim", "--script", script, "--sim-dialect", "chat", "--no-validate", "the other task")

			cmd := exec.Command(bin, "--provider", "sim", "--script", script, "--sim-dialect", "chat", "--no-validate")
			cmd.Dir, cmd.Env = root, interactiveEnv(home)
			term := tuitest.Start(t, cmd, 100, 40)
			term.WaitForText("on-request")
			send := func(line string, want ...string) {
				t.Helper()
				waitIdle(t, term)
				term.Type(line + "\r")
				term.WaitForText(want...)
			}
			send("hi", "Answer one.")
			send("/surface anthropic", "the anthropic surface needs")
			send("/model sim-claude", "Model: sim-claude")
			send("/model sim-coder", "Model: sim-coder")
			send("go on", "Answer two.")
			send("/compact", "Compacted:")
			send("/resume", "most recent first", "the other task")
			send("/resume 1", "Resumed.")
			waitIdle(t, term)
			term.Type(quit.keys)
			if code := term.Exit(); code != 0 {
				t.Fatalf("exit status %d; the screen shows:\n%s", code, term.Text())
			}
			// The sessions (.changes beside them is the change trackers').
			ids, err := filepath.Glob(filepath.Join(home, "sessions", "[0-9]*"))
			if err != nil || len(ids) != 2 {
				t.Fatalf("sessions %v, %v; want the other and this one", ids, err)
			}
			for _, dir := range ids {
				out := truss("ledger", "verify", "--require-end", filepath.Base(dir))
				if strings.Contains(out, "NOT ENDED") {
					t.Errorf("session %s:\n%s", filepath.Base(dir), out)
				}
			}
		})
	}
}

package interactive

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/sandbox"
	sessions "github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/sim/simtest"
	"github.com/trussdev/truss/internal/testenv"
	"github.com/trussdev/truss/internal/tui"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper() // the sandbox re-executes this binary as its helper
	}
	os.Exit(testenv.Run(m))
}

// TestInteractiveSessionCommands: the session behind the UI switches the
// model, the sandbox and the surface by re-opening itself with the
// transcript kept, refuses what it cannot do with the reason and stays
// usable, attaches files, starts a new session and resumes the earlier
// one.
func TestInteractiveSessionCommands(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	t.Setenv("TRUSS_HOME", home)
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := simtest.WriteScript(t, home,
		map[string]any{"say": "One."}, map[string]any{"say": "Two."}, map[string]any{"say": "Three."}, map[string]any{"say": "Four."})
	o := harness.Options{Version: "test", Provider: "sim", Script: script, SimDialect: "chat", Surface: "generic", Root: root,
		Validation: harness.ValidationOptions{Off: true}, MCP: harness.MCPOptions{Off: true}, Approval: approval.OnRequest,
		Approver: approval.Headless{}, Sandbox: harness.SandboxOptions{Fallback: sandbox.FallbackNone}}
	log := &harness.ChangeLog{}
	o.Observers = []agent.Observer{log}
	ctx := context.Background()
	s, err := harness.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	is := &session{opts: o, s: s, log: log, notify: func(msg string) { notes = append(notes, msg) }}
	defer is.close()
	var _ interface {
		tui.Session
		tui.ModelSwitcher
		tui.SurfaceSwitcher
		tui.SandboxSwitcher
		tui.Compactor
		tui.Differ
		tui.LedgerVerifier
		tui.Resumer
		tui.Renewer
		tui.Attacher
		tui.ModelLister
		tui.FileLister
		tui.Checker
		tui.ResumeLister
		tui.Transcripter
	} = is

	if fs, err := is.Files(ctx, "no"); err != nil || strings.Join(fs, " ") != "notes.txt" {
		t.Errorf("Files(no) = %q, %v", fs, err)
	}
	if ms, err := is.Models(ctx); err != nil || len(ms) == 0 {
		t.Errorf("Models = %q, %v", ms, err)
	}

	if rep, err := is.Attach(ctx, "notes.txt"); err != nil || rep != "notes.txt, 2 lines" {
		t.Fatalf("Attach = %q, %v", rep, err)
	}
	if _, err := is.Attach(ctx, "../outside.txt"); err == nil {
		t.Fatal("a path outside the workspace was attached")
	}
	if out, err := is.Run(ctx, "read @notes.txt"); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	first := is.Status().SessionID
	tr := is.session().Transcript()
	if !strings.Contains(itemsText(tr), "second line") {
		t.Errorf("the attached file is not in the task: %s", itemsText(tr))
	}

	// A typo of a listed model is met with it and not switched to.
	listed, _ := is.Models(ctx)
	typo := listed[0][:len(listed[0])-1]
	if err := is.SetModel(ctx, typo); err == nil || err.Error() != "the provider lists no model "+typo+"; did you mean "+listed[0]+"? (/model "+listed[0]+" switches to it)" {
		t.Errorf("/model %s: %v", typo, err)
	}
	if m := is.Status().Model; m == typo {
		t.Errorf("switched to the typo %s", typo)
	}
	// A name no listed model is near is switched to, with a note.
	if err := is.SetModel(ctx, "sim-other"); err != nil {
		t.Fatal(err)
	}
	if len(notes) == 0 || !strings.HasPrefix(notes[len(notes)-1], "sim-other is not a model the provider lists (it lists ") {
		t.Errorf("the notes after /model sim-other: %q", notes)
	}
	st := is.Status()
	if st.Model != "sim-other" || st.SessionID != first || len(is.session().Transcript()) != len(tr) {
		t.Errorf("after /model: %+v, %d items (want %d)", st, len(is.session().Transcript()), len(tr))
	}
	if err := is.SetSandbox(ctx, "read-only"); err != nil {
		t.Fatal(err)
	}
	if st := is.Status(); !strings.HasPrefix(st.Sandbox, "read-only") || st.Approval != "on-request" {
		t.Errorf("after /sandbox read-only: %+v", st)
	}
	if err := is.SetSandbox(ctx, "sideways"); err == nil {
		t.Error("/sandbox sideways was accepted")
	}
	if err := is.SetSurface(ctx, "nonesuch"); err == nil || !strings.Contains(err.Error(), "nonesuch") {
		t.Errorf("/surface nonesuch: %v", err)
	}
	if out, err := is.Run(ctx, "go on"); err != nil || out.Status != agent.StatusCompleted || out.Text != "Two." {
		t.Fatalf("after a refused switch the session does not go on: %+v, %v", out, err)
	}
	if rep, err := is.VerifyLedger(ctx); err != nil || !strings.Contains(rep, "The ledger verifies") {
		t.Errorf("VerifyLedger = %q, %v", rep, err)
	}

	if err := is.NewSession(ctx); err != nil {
		t.Fatal(err)
	}
	// The session left is said to be kept, with how to resume it.
	if want := "Session " + first + " saved (truss --resume " + first + ")."; notes[len(notes)-1] != want {
		t.Errorf("after /new the last note is %q, want %q", notes[len(notes)-1], want)
	}
	// The first session lists the model it last ran on.
	if cs, err := is.Resumable(ctx); err != nil || len(cs) == 0 || cs[0].ID != first || cs[0].Model != "sim-other" {
		t.Errorf("after /model, a task and /new, /resume lists %+v, %v", cs, err)
	}

	if id := is.Status().SessionID; id == first || len(is.session().Transcript()) != 0 {
		t.Fatalf("/new: session %s with %d items", id, len(is.session().Transcript()))
	}
	if _, err := is.Run(ctx, "a new task"); err != nil {
		t.Fatal(err)
	}
	items, err := is.Resume(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if is.Status().SessionID != first || !strings.Contains(itemsText(items), "Two.") {
		t.Errorf("/resume: session %s, transcript %s", is.Status().SessionID, itemsText(items))
	}
	// /compact replaces the resumed conversation's turns by a summary.
	if rep, err := is.Compact(ctx); err != nil || !strings.Contains(rep, "Compacted: ") {
		t.Errorf("Compact = %q, %v", rep, err)
	}
	if tr := itemsText(is.session().Transcript()); !strings.Contains(tr, "simulated summary") || strings.Contains(tr, "Two.") {
		t.Errorf("after /compact the transcript is %s", tr)
	}
}

func itemsText(items []model.Item) string {
	b, _ := json.Marshal(items)
	return string(b)
}

// TestApprovalRequest: an edit's question reaches the card as an edit
// with its diff, or without one with its arguments and why; a command's
// as before.
func TestApprovalRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   approval.Request
		want tui.ApprovalRequest
	}{
		{"edit", approval.Request{Kind: approval.KindEdit, Tool: "edit_file", Summary: "replace text in a.go", Diff: "--- a/a.go\n+++ b/a.go\n"},
			tui.ApprovalRequest{Edit: true, Tool: "edit_file", Command: "replace text in a.go", Diff: "--- a/a.go\n+++ b/a.go\n"}},
		{"edit without a preview", approval.Request{Kind: approval.KindEdit, Tool: "apply_patch", Summary: "apply a patch", Detail: "*** Begin Patch", PreviewError: "no such file"},
			tui.ApprovalRequest{Edit: true, Tool: "apply_patch", Command: "apply a patch\n*** Begin Patch", Reason: "no preview of this edit: no such file"}},
		{"escalation", approval.Request{Kind: approval.KindEscalation, CallID: "call_7", Tool: "shell", Command: "curl x", Dir: "sub", Justification: "fetch"},
			tui.ApprovalRequest{CallID: "call_7", Tool: "shell", Command: "(in sub) curl x", Reason: "fetch", Network: true, Paths: []string{"the whole file system"}}},
		{"command", approval.Request{Kind: approval.KindCommand, Tool: "shell", Command: "rm -rf build"},
			tui.ApprovalRequest{Tool: "shell", Command: "rm -rf build"}},
	} {
		got := approvalRequest(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestNewAfterResume: /new in a session opened by its id alone (truss
// --resume ID: no provider, script or workspace given) opens a new session
// of the same provider, script and workspace, as the resumed one had.
func TestNewAfterResume(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	t.Setenv("TRUSS_HOME", home)
	script := simtest.WriteScript(t, home, map[string]any{"say": "One."}, map[string]any{"say": "Two."})
	o := harness.Options{Version: "test", Provider: "sim", Script: script, SimDialect: "chat", Surface: "generic", Root: root,
		Validation: harness.ValidationOptions{Off: true}, MCP: harness.MCPOptions{Off: true}, Approval: approval.OnRequest,
		Approver: approval.Headless{}, Sandbox: harness.SandboxOptions{Fallback: sandbox.FallbackNone}}
	ctx := context.Background()
	first, err := harness.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Run(ctx, "a task"); err != nil {
		t.Fatal(err)
	}
	id := first.Info().SessionID
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	byID := o
	byID.Provider, byID.Script, byID.SimDialect, byID.Root, byID.Resume = "", "", "", "", id
	s, err := harness.Open(ctx, byID)
	if err != nil {
		t.Fatal(err)
	}
	is := &session{opts: byID, s: s, log: &harness.ChangeLog{}, notify: func(msg string) { t.Log(msg) }}
	defer is.close()
	if err := is.NewSession(ctx); err != nil {
		t.Fatalf("/new after a resume by id: %v", err)
	}
	st := is.Status()
	if st.SessionID == id || st.Workspace != root {
		t.Errorf("/new: session %s in %s (resumed %s in %s)", st.SessionID, st.Workspace, id, root)
	}
	if out, err := is.Run(ctx, "go on"); err != nil || out.Status != agent.StatusCompleted {
		t.Errorf("the new session does not run: %+v, %v", out, err)
	}
}

// TestNotices: a warning and a retry are one line each on the screen,
// without the "truss: " of a command line's stderr.
func TestNotices(t *testing.T) {
	var got []string
	warn, retry := notices(func(s string) { got = append(got, s) })
	warn(`warning: "m" is not in Truss's model catalog` + "\n  (truss models)")
	retry(1, 1500*time.Millisecond, errors.New("chat: HTTP 503: busy"))
	want := []string{
		`warning: "m" is not in Truss's model catalog (truss models)`,
		"chat: HTTP 503: busy; retrying in 1.5s (attempt 2)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("notices %q, want %q", got, want)
	}
}

// TestEveryRunEnds: a session driven through what the UI's commands do —
// a task, a surface switch refused (the anthropic surface on the chat
// dialect), two model switches, a task and /compact, /new with a task,
// /resume of the first session and the end (/quit, Ctrl-D) — leaves
// every run of every session it opened ended with session.end, each
// following the one before it, as truss ledger verify --require-end
// requires; the refused switch leaves the session open as it was, and
// the switches and the resume that nothing followed leave no run.
func TestEveryRunEnds(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	t.Setenv("TRUSS_HOME", home)
	script := simtest.WriteScript(t, home,
		map[string]any{"say": "One."}, map[string]any{"say": "Two."}, map[string]any{"say": "Three."}, map[string]any{"say": "Four."})
	o := harness.Options{Version: "test", Provider: "sim", Script: script, SimDialect: "chat", Root: root,
		Validation: harness.ValidationOptions{Off: true}, MCP: harness.MCPOptions{Off: true}, Approval: approval.OnRequest,
		Approver: approval.Headless{}, Sandbox: harness.SandboxOptions{Fallback: sandbox.FallbackNone}}
	ctx := context.Background()
	s, err := harness.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	is := &session{opts: o, s: s, log: &harness.ChangeLog{}, notify: func(msg string) { t.Log(msg) }}
	run := func(task string) {
		t.Helper()
		if out, err := is.Run(ctx, task); err != nil || out.Status != agent.StatusCompleted {
			t.Fatalf("Run(%q) = %+v, %v", task, out, err)
		}
	}
	run("hi")
	first := is.Status().SessionID
	if err := is.SetSurface(ctx, "anthropic"); err == nil || !strings.Contains(err.Error(), "anthropic surface needs") {
		t.Errorf("/surface anthropic on the chat dialect: %v", err)
	}
	if is.session() != s {
		t.Error("a refused surface switch re-opened the session")
	}
	for _, m := range []string{"sim-claude", "sim-coder"} {
		if err := is.SetModel(ctx, m); err != nil {
			t.Fatalf("/model %s: %v", m, err)
		}
	}
	run("go on")
	if rep, err := is.Compact(ctx); err != nil || !strings.Contains(rep, "Compacted: ") {
		t.Fatalf("Compact = %q, %v", rep, err)
	}
	if err := is.NewSession(ctx); err != nil {
		t.Fatal(err)
	}
	second := is.Status().SessionID
	run("a new task")
	if _, err := is.Resume(ctx, first); err != nil {
		t.Fatal(err)
	}
	if c, err := is.close(); err != nil || c.ID != first {
		t.Fatalf("close = %+v, %v", c, err)
	}

	dir, err := sessions.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	kd, err := ledger.KeyDir()
	if err != nil {
		t.Fatal(err)
	}
	_, vkey, err := ledger.LoadOrCreateKey(kd)
	if err != nil {
		t.Fatal(err)
	}
	// The first session: its first task's run, and the run of the task
	// and the compaction after the model switches; the second: its task's.
	for id, want := range map[string][]string{first: {"completed", ledger.StatusClosed}, second: {"completed"}} {
		dirs, err := sessions.Ledgers(filepath.Join(dir, id))
		if err != nil || len(dirs) != len(want) {
			t.Errorf("session %s: runs %q, %v; want %d", id, dirs, err, len(want))
			continue
		}
		var prev ledger.Run
		for i, d := range dirs {
			r, entries, err := ledger.Verify(d, vkey)
			if err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			if err := ledger.CheckEnded(entries, r.Sealed); err != nil {
				t.Errorf("session %s, run %d: %v", id, i+1, err)
			}
			cur := ledger.Run{Name: filepath.Base(d), Report: r, Entries: entries}
			if i > 0 {
				if err := ledger.CheckNext(prev, cur, i+1); err != nil {
					t.Errorf("session %s: %v", id, err)
				}
			}
			prev = cur
			if last, _ := entries[len(entries)-1].Data.(map[string]any); last["status"] != want[i] {
				t.Errorf("session %s, run %d ends with %s %v, want status %s", id, i+1, entries[len(entries)-1].Type, last, want[i])
			}
		}
	}
}

// TestOpenedSaysNoChecks: a session with validation on and no checks is
// said to be one when it opens, before the first task; one with checks,
// or with validation off, is not.
func TestOpenedSaysNoChecks(t *testing.T) {
	home := t.TempDir()
	t.Setenv("TRUSS_HOME", home)
	script := simtest.WriteScript(t, home, map[string]any{"say": "One."})
	for _, tc := range []struct {
		name  string
		files map[string]string
		v     harness.ValidationOptions
		want  bool
	}{
		{"no checks", map[string]string{"notes.txt": "x\n"}, harness.ValidationOptions{}, true},
		{"detected", map[string]string{"tests/test_a.py": "def test_a(): pass\n"}, harness.ValidationOptions{}, false},
		{"given", map[string]string{"notes.txt": "x\n"}, harness.ValidationOptions{TestCmd: "true"}, false},
		{"off", map[string]string{"notes.txt": "x\n"}, harness.ValidationOptions{Off: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, body := range tc.files {
				os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
				os.WriteFile(filepath.Join(root, name), []byte(body), 0o644)
			}
			o := harness.Options{Version: "test", Provider: "sim", Script: script, SimDialect: "chat", Surface: "generic", Root: root, NoLedger: true,
				Validation: tc.v, MCP: harness.MCPOptions{Off: true}, Sandbox: harness.SandboxOptions{Fallback: sandbox.FallbackNone}}
			s, err := harness.Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var notes []string
			opened(s, o, func(msg string) { notes = append(notes, msg) })
			if got := slices.Contains(notes, harness.NoChecksNote); got != tc.want {
				t.Errorf("notes %q; want the no-checks note: %v", notes, tc.want)
			}
		})
	}
}

//go:build linux

package ledger

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/changes"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/shell"
)

// TestRecordedShellChanges runs real shell commands and file edits through
// executors wrapped with a change tracker, records them, and checks the
// ledger: each file a command created, changed, deleted or renamed is in
// its call's changes with both contents as payloads; an editor change is
// recorded once (by its own call, not again by the next command's scan);
// what changed after the last call (a command's background process) is in
// a workspace.changes entry; and the workspace check passes — and fails
// once a file is changed after the session.
func TestRecordedShellChanges(t *testing.T) {
	for _, git := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "git"}[git], func(t *testing.T) {
			root := t.TempDir()
			for p, c := range map[string]string{"a.txt": "alpha\n", "m.txt": "moving\n", "e.txt": "edit me\n"} {
				if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if git {
				runGit(t, root, "init", "-q", ".")
				runGit(t, root, "add", "-A")
				runGit(t, root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
			}
			sh, tr := trackedShell(t, root, changes.Options{})
			ws, err := tfs.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			var mux tool.Mux
			mux.HandleAll(tfs.Ops, &tfs.Executor{W: ws})
			mux.Handle(tool.OpExec, sh)
			ex := changes.Wrap(&mux, tr)

			rec, dir, vkey := trackedRecorder(t, root, tr)
			calls := []tool.Call{
				{Op: tool.OpExec, Args: &tool.ExecArgs{Command: "echo x > new.txt; rm a.txt"}},
				{Op: tool.OpReplace, Args: &tool.ReplaceArgs{Path: "e.txt", Old: "edit", New: "edited"}},
				{Op: tool.OpExec, Args: &tool.ExecArgs{Command: "mv m.txt sub.txt && echo more >> new.txt"}},
			}
			for i, c := range calls {
				c.ID = "call_" + string(rune('a'+i))
				res := ex.Execute(context.Background(), c)
				if res.Err != nil {
					t.Fatalf("call %d: %v", i, res.Err)
				}
				rec.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: 1,
					Call: &model.ToolCall{ID: c.ID, Name: "t", Kind: model.ToolFunction, Input: "{}"},
					Ops:  []tool.Call{c}, Results: []tool.Result{res},
					Result: &model.ToolResult{CallID: c.ID, Text: res.Output}, FullText: res.Output})
			}
			// A process the last command left running writes after it.
			if err := os.WriteFile(filepath.Join(root, "late.txt"), []byte("late\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			rec.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted}})
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			if err := rec.W.Close(); err != nil {
				t.Fatal(err)
			}

			_, entries, err := Verify(dir, vkey)
			if err != nil {
				t.Fatal(err)
			}
			payloads, err := Payloads(dir)
			if err != nil {
				t.Fatal(err)
			}
			type found struct{ path, movedTo, before, after string }
			var got []found
			for _, e := range entries {
				if e.Type != "tool.result" && e.Type != "workspace.changes" {
					continue
				}
				var data struct {
					Results []struct {
						Changes []tool.FileChange `json:"changes"`
					} `json:"results"`
				}
				raw, _ := json.Marshal(e.Data)
				json.Unmarshal(raw, &data)
				content := func(d string) string {
					if d == "" {
						return "-"
					}
					if e.Payloads["content."+d[:16]] != d {
						t.Errorf("entry %d does not name content %s", e.Seq, d[:16])
					}
					return string(payloads[d])
				}
				for _, r := range data.Results {
					for _, ch := range r.Changes {
						got = append(got, found{ch.Path, ch.MovedTo, content(ch.Before), content(ch.After)})
					}
				}
			}
			want := []found{
				{"a.txt", "", "alpha\n", "-"},
				{"new.txt", "", "-", "x\n"},
				{"e.txt", "", "edit me\n", "edited me\n"},
				{"m.txt", "sub.txt", "moving\n", "moving\n"},
				{"new.txt", "", "x\n", "x\nmore\n"},
				{"late.txt", "", "-", "late\n"},
			}
			if len(got) != len(want) {
				t.Fatalf("recorded %+v, want %+v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("change %d: %+v, want %+v", i, got[i], want[i])
				}
			}
			if err := VerifyWorkspace(dir, entries, root); err != nil {
				t.Fatalf("workspace check: %v", err)
			}
			os.WriteFile(filepath.Join(root, "sub.txt"), []byte("changed after\n"), 0o644)
			if err := VerifyWorkspace(dir, entries, root); err == nil || !strings.Contains(err.Error(), "sub.txt") {
				t.Fatalf("workspace check of a file changed after the session: %v", err)
			}
		})
	}
}

func runGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestRecordedBulkChanges: a command that changes more files than the
// tracker lists one by one is recorded as one bulk change whose manifest
// names each file; the workspace check compares every one of them, also
// when they are more than session.end lists in its data (InlineFiles),
// and only its final_files payload does.
func TestRecordedBulkChanges(t *testing.T) {
	for _, n := range []int{40, InlineFiles + 40} {
		t.Run(strconv.Itoa(n), func(t *testing.T) { recordedBulkChanges(t, n) })
	}
}

func recordedBulkChanges(t *testing.T, n int) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "gone.txt"), []byte("bye\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh, tr := trackedShell(t, root, changes.Options{BulkThreshold: 10})
	ex := changes.Wrap(sh, tr)
	rec, dir, vkey := trackedRecorder(t, root, tr)
	c := tool.Call{ID: "call_a", Op: tool.OpExec, Args: &tool.ExecArgs{Command: `mkdir d && for i in $(seq 1 ` + strconv.Itoa(n) + `); do echo "$i" > d/f$i; done; rm gone.txt`}}
	res := ex.Execute(context.Background(), c)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	bulk := 0
	for _, ch := range res.Changes {
		if ch.Files > 0 {
			bulk++
		}
	}
	if bulk != 1 {
		t.Fatalf("changes %+v: want one bulk change", res.Changes)
	}
	rec.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: 1,
		Call: &model.ToolCall{ID: c.ID, Name: "t", Kind: model.ToolFunction, Input: "{}"},
		Ops:  []tool.Call{c}, Results: []tool.Result{res},
		Result: &model.ToolResult{CallID: c.ID, Text: res.Output}, FullText: res.Output})
	rec.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted}})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rec.W.Close(); err != nil {
		t.Fatal(err)
	}
	_, entries, err := Verify(dir, vkey)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyWorkspace(dir, entries, root); err != nil {
		t.Fatalf("workspace check: %v", err)
	}
	end := entries[len(entries)-1].Data.(map[string]any)
	if _, inline := end["files"]; inline != (n+1 <= InlineFiles) || (end["files_count"] == nil) == (n+1 > InlineFiles) {
		t.Errorf("session.end of %d files: data %v", n+1, end)
	}
	for _, tc := range []struct{ name, change string }{{"d/f17", "edit"}, {"gone.txt", "back"}} {
		p := filepath.Join(root, tc.name)
		if err := os.WriteFile(p, []byte(tc.change), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := VerifyWorkspace(dir, entries, root); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Fatalf("workspace check after %s changed: %v", tc.name, err)
		}
		if tc.name == "gone.txt" {
			os.Remove(p)
		} else {
			os.WriteFile(p, []byte("17\n"), 0o644)
		}
	}
	// What the model left can be a link to /dev/zero or a FIFO where a
	// file was: the check says so, without following the one or
	// waiting on the other.
	zero, fifo := filepath.Join(root, "d", "f17"), filepath.Join(root, "d", "f18")
	os.Remove(zero)
	os.Symlink("/dev/zero", zero)
	os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"d/f17", "d/f18"} {
		err := VerifyWorkspace(dir, entries, root)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("workspace check with %s replaced: %v", name, err)
		}
		os.Remove(filepath.Join(root, filepath.FromSlash(name)))
		os.WriteFile(filepath.Join(root, filepath.FromSlash(name)), []byte(strings.TrimPrefix(name, "d/f")+"\n"), 0o644)
	}
	if err := VerifyWorkspace(dir, entries, root); err != nil {
		t.Fatalf("workspace check after the files are back: %v", err)
	}
}

// trackedShell is a shell in root and a tracker of root's changes with
// opts, both closed when the test ends.
func trackedShell(t *testing.T, root string, opts changes.Options) (*shell.Session, *changes.Tracker) {
	t.Helper()
	tr, err := changes.Open(context.Background(), []string{root}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	sh := shell.New(shell.Config{Dir: root})
	t.Cleanup(func() { sh.Close() })
	return sh, tr
}

// trackedRecorder is a recorder on a new ledger of a session in root whose
// file changes tr finds: the recorder, the ledger's directory and its
// verifier key.
func trackedRecorder(t *testing.T, root string, tr *changes.Tracker) (*Recorder, string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	s, vkey := newKey(t, "truss/test")
	w, err := Create(dir, "S", s)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := NewRecorder(w, Start{Model: "m", Workspace: root})
	if err != nil {
		t.Fatal(err)
	}
	rec.Settle = func() ([]tool.FileChange, error) { return tr.ScanAll(context.Background()) }
	return rec, dir, vkey
}

package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/patch"
)

// want is a file's recorded change: its content before (nil: it did not
// exist) and after (nil: it does not exist now), at path, or moved from
// path to movedTo.
type want struct {
	path, movedTo string
	before, after []byte
}

// TestRecordedContents runs real calls through the file and patch
// executors, records them, and reads every change's contents back from
// the ledger's payloads: each edit, creation, deletion and move — through
// both patch dialects, a recursive delete and renames — is there with its
// content before and after, and no content is re-read from the workspace
// (the files are changed again after each call, before it is recorded).
func TestRecordedContents(t *testing.T) {
	files := map[string]string{
		"a.txt":        "alpha\nbeta\n",
		"d.txt":        "doomed\n",
		"m.txt":        "moving\nline\n",
		"dir/x.txt":    "x content\n",
		"dir/sub/y.go": "package y\n",
		"r.txt":        "renamed file\n",
	}
	b := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		name  string
		calls []tool.Call
		want  []want
	}{{
		name: "envelope",
		calls: []tool.Call{{Op: tool.OpPatch, Args: &tool.PatchArgs{Text: "*** Begin Patch\n" +
			"*** Update File: a.txt\n@@\n alpha\n-beta\n+gamma\n" +
			"*** Add File: new.txt\n+fresh\n" +
			"*** Delete File: d.txt\n" +
			"*** Update File: m.txt\n*** Move to: moved/n.txt\n@@\n moving\n-line\n+LINE\n" +
			"*** End Patch"}}},
		want: []want{
			{path: "a.txt", before: b("alpha\nbeta\n"), after: b("alpha\ngamma\n")},
			{path: "new.txt", after: b("fresh\n")},
			{path: "d.txt", before: b("doomed\n")},
			// A move in a patch is the old file's deletion and the new one's creation.
			{path: "m.txt", before: b("moving\nline\n")},
			{path: "moved/n.txt", after: b("moving\nLINE\n")},
		},
	}, {
		name: "operations",
		calls: []tool.Call{
			{Op: tool.OpPatchOp, Args: &tool.PatchOpArgs{Type: patch.OpUpdate, Path: "a.txt", Diff: "@@\n alpha\n-beta\n+gamma\n"}},
			{Op: tool.OpPatchOp, Args: &tool.PatchOpArgs{Type: patch.OpCreate, Path: "new.txt", Diff: "+fresh\n+"}},
			{Op: tool.OpPatchOp, Args: &tool.PatchOpArgs{Type: patch.OpDelete, Path: "d.txt"}},
		},
		want: []want{
			{path: "a.txt", before: b("alpha\nbeta\n"), after: b("alpha\ngamma\n")},
			{path: "new.txt", after: b("fresh\n")},
			{path: "d.txt", before: b("doomed\n")},
		},
	}, {
		name:  "recursive delete",
		calls: []tool.Call{{Op: tool.OpDelete, Args: &tool.DeleteArgs{Path: "dir", Recursive: true}}},
		want: []want{
			{path: "dir/sub/y.go", before: b("package y\n")},
			{path: "dir/x.txt", before: b("x content\n")},
		},
	}, {
		name: "renames",
		calls: []tool.Call{
			{Op: tool.OpRename, Args: &tool.RenameArgs{From: "r.txt", To: "s/r2.txt"}},
			{Op: tool.OpRename, Args: &tool.RenameArgs{From: "dir", To: "dir2"}},
		},
		want: []want{
			{path: "r.txt", movedTo: "s/r2.txt", before: b("renamed file\n"), after: b("renamed file\n")},
			{path: "dir/sub/y.go", movedTo: "dir2/sub/y.go", before: b("package y\n"), after: b("package y\n")},
			{path: "dir/x.txt", movedTo: "dir2/x.txt", before: b("x content\n"), after: b("x content\n")},
		},
	}, {
		name: "editor",
		calls: []tool.Call{
			{Op: tool.OpReplace, Args: &tool.ReplaceArgs{Path: "a.txt", Old: "beta", New: "delta"}},
			{Op: tool.OpCreate, Args: &tool.CreateArgs{Path: "c.txt", Content: "created\n"}},
			{Op: tool.OpDelete, Args: &tool.DeleteArgs{Path: "d.txt"}},
		},
		want: []want{
			{path: "a.txt", before: b("alpha\nbeta\n"), after: b("alpha\ndelta\n")},
			{path: "c.txt", after: b("created\n")},
			{path: "d.txt", before: b("doomed\n")},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, c := range files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ws, err := tfs.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			fx := &tfs.Executor{W: ws}
			var mux tool.Mux
			mux.HandleAll(tfs.Ops, fx)
			mux.HandleAll(patch.Ops, patch.NewExecutor(fx))

			dir := filepath.Join(t.TempDir(), "ledger")
			s, vkey := newKey(t, "truss/test")
			w, err := Create(dir, "S", s)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := NewRecorder(w, Start{Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range tc.calls {
				c.ID = "call_" + string(rune('a'+i))
				res := mux.Execute(context.Background(), c)
				if res.Err != nil {
					t.Fatalf("call %d: %v", i, res.Err)
				}
				// Whatever happens to the files now must not change what
				// is recorded of the call.
				for _, ch := range res.Changes {
					for _, p := range []string{ch.Path, ch.MovedTo} {
						if _, err := os.Stat(filepath.Join(root, p)); p != "" && err == nil {
							os.WriteFile(filepath.Join(root, p), []byte("changed later\n"), 0o644)
						}
					}
				}
				rec.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: 1,
					Call: &model.ToolCall{ID: c.ID, Name: "t", Kind: model.ToolFunction, Input: "{}"},
					Ops:  []tool.Call{c}, Results: []tool.Result{res},
					Result: &model.ToolResult{CallID: c.ID, Text: res.Output}, FullText: res.Output})
			}
			rec.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted}})
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}

			_, entries, err := Verify(dir, vkey)
			if err != nil {
				t.Fatal(err)
			}
			store, err := openPayloads(dir)
			if err != nil {
				t.Fatal(err)
			}
			content := func(e Entry, d string) []byte {
				t.Helper()
				if d == "" {
					return nil
				}
				if d == tool.Digest(nil) {
					return []byte{}
				}
				name := "content." + d[:16]
				if e.Payloads[name] != d {
					t.Fatalf("entry %d names %s as %q, want %s", e.Seq, name, e.Payloads[name], d)
				}
				b, err := store.get(d)
				if err != nil {
					t.Fatalf("payload %s: %v", d, err)
				}
				return b
			}
			var got []want
			for _, e := range entries {
				if e.Type != "tool.result" {
					continue
				}
				var data struct {
					Results []struct {
						Changes []tool.FileChange `json:"changes"`
					} `json:"results"`
				}
				raw, _ := json.Marshal(e.Data)
				if err := json.Unmarshal(raw, &data); err != nil {
					t.Fatal(err)
				}
				for _, r := range data.Results {
					for _, ch := range r.Changes {
						got = append(got, want{path: ch.Path, movedTo: ch.MovedTo, before: content(e, ch.Before), after: content(e, ch.After)})
					}
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("recorded %d changes %+v, want %d", len(got), got, len(tc.want))
			}
			for i, g := range got {
				wt := tc.want[i]
				if g.path != wt.path || g.movedTo != wt.movedTo || !same(g.before, wt.before) || !same(g.after, wt.after) {
					t.Errorf("change %d: got %s→%s %q → %q, want %s→%s %q → %q", i, g.path, g.movedTo, g.before, g.after,
						wt.path, wt.movedTo, wt.before, wt.after)
				}
			}
		})
	}
}

// same compares contents, nil (no file) apart from empty.
func same(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

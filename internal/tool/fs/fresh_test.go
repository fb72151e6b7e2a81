package fs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// pair returns two executors on one workspace directory: sharing one
// *Workspace, or on two workspaces opened with one Locks registry.
func pair(t *testing.T, dir string, shared bool) (*Executor, *Executor) {
	t.Helper()
	open := func(l *Locks) *Workspace {
		w, err := OpenWith(dir, WorkspaceOptions{Locks: l})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return w
	}
	if shared {
		w := open(nil)
		return &Executor{W: w}, &Executor{W: w}
	}
	l := &Locks{}
	return &Executor{W: open(l)}, &Executor{W: open(l)}
}

// TestConcurrentReplaces: two executors on one workspace replace
// different lines of one file at once, viewing it again whenever an edit
// is refused because the other changed it: every replacement that
// succeeded is in the file — no writer overwrites another's change.
func TestConcurrentReplaces(t *testing.T) {
	const n = 200
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			dir := t.TempDir()
			var sb strings.Builder
			for i := range n {
				fmt.Fprintf(&sb, "k%d=old\n", i)
			}
			if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(sb.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			a, b := pair(t, dir, shared)
			var wg sync.WaitGroup
			for k, e := range []*Executor{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := k; i < n; i += 2 {
						for {
							r := e.Execute(context.Background(), tool.Call{ID: "c", Op: tool.OpReplace,
								Args: &tool.ReplaceArgs{Path: "f.txt", Old: fmt.Sprintf("k%d=old\n", i), New: fmt.Sprintf("k%d=new\n", i)}})
							if r.Err == nil {
								break
							}
							if r.Err.Kind != tool.ErrStale {
								t.Errorf("replace k%d: %v", i, r.Err)
								return
							}
							// As a model would: view the file again, then retry.
							e.Execute(context.Background(), tool.Call{ID: "v", Op: tool.OpView, Args: &tool.ViewArgs{Path: "f.txt"}})
						}
					}
				}()
			}
			wg.Wait()
			got, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
			if lost := strings.Count(string(got), "=old"); lost != 0 {
				t.Fatalf("%d of %d replacements lost", lost, n)
			}
		})
	}
}

// TestStaleEdit: two executors view a file, then replace different parts
// of it at once. One wins; the other is refused with ErrStale, because
// the file changed since it viewed it, and the winner's change stays.
// After viewing again, the refused one's edit goes through.
func TestStaleEdit(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "f.txt"), []byte("a=1\nb=1\n"), 0o644)
			a, b := pair(t, dir, shared)
			execs := []*Executor{a, b}
			edits := []*tool.ReplaceArgs{{Path: "f.txt", Old: "a=1", New: "a=2"}, {Path: "f.txt", Old: "b=1", New: "b=2"}}
			for _, e := range execs {
				if r := e.Execute(context.Background(), tool.Call{Op: tool.OpView, Args: &tool.ViewArgs{Path: "f.txt", Start: 1, End: 1}}); r.Err != nil {
					t.Fatal(r.Err)
				}
			}
			results := make([]tool.Result, 2)
			var wg sync.WaitGroup
			for i, e := range execs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = e.Execute(context.Background(), tool.Call{Op: tool.OpReplace, Args: edits[i]})
				}()
			}
			wg.Wait()
			win, lose := 0, 1
			if results[0].Err != nil {
				win, lose = 1, 0
			}
			if results[win].Err != nil {
				t.Fatalf("both refused: %v; %v", results[0].Err, results[1].Err)
			}
			le := results[lose].Err
			if le == nil || le.Kind != tool.ErrStale {
				t.Fatalf("the second edit: got %v, want an ErrStale refusal", le)
			}
			if want := "f.txt changed since you last viewed it (by another agent or a command); view it again before editing"; le.Message != want {
				t.Errorf("message %q, want %q", le.Message, want)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
			if !strings.Contains(string(got), edits[win].New) || !strings.Contains(string(got), edits[lose].Old) {
				t.Fatalf("file %q: want the winner's edit only", got)
			}
			execs[lose].Execute(context.Background(), tool.Call{Op: tool.OpView, Args: &tool.ViewArgs{Path: "f.txt"}})
			if r := execs[lose].Execute(context.Background(), tool.Call{Op: tool.OpReplace, Args: edits[lose]}); r.Err != nil {
				t.Fatalf("after viewing again: %v", r.Err)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(got) != "a=2\nb=2\n" {
				t.Fatalf("file %q, want both edits", got)
			}
		})
	}
}

// TestFreshness: what one executor may change after the file changed
// behind it (another agent, a command).
func TestFreshness(t *testing.T) {
	view := func(p string) tool.Call { return tool.Call{Op: tool.OpView, Args: &tool.ViewArgs{Path: p}} }
	replace := func(p string) tool.Call {
		return tool.Call{Op: tool.OpReplace, Args: &tool.ReplaceArgs{Path: p, Old: "x", New: "y"}}
	}
	outside := func(p, content string) tool.Call { return tool.Call{ID: "outside:" + p, Args: content} }
	for _, tc := range []struct {
		name  string
		calls []tool.Call // the last one is checked
		want  tool.ErrorKind
	}{
		{"never viewed", []tool.Call{outside("f", "x changed"), replace("f")}, ""},
		{"viewed, unchanged", []tool.Call{view("f"), replace("f")}, ""},
		{"viewed, changed", []tool.Call{view("f"), outside("f", "x changed"), replace("f")}, tool.ErrStale},
		{"viewed, changed, viewed", []tool.Call{view("f"), outside("f", "x changed"), view("f"), replace("f")}, ""},
		{"own edits", []tool.Call{view("f"), replace("f"), {Op: tool.OpReplace, Args: &tool.ReplaceArgs{Path: "f", Old: "y", New: "z"}}}, ""},
		{"own creation", []tool.Call{{Op: tool.OpCreate, Args: &tool.CreateArgs{Path: "n", Content: "x"}}, replace("n")}, ""},
		{"own creation, changed", []tool.Call{{Op: tool.OpCreate, Args: &tool.CreateArgs{Path: "n", Content: "x"}}, outside("n", "x 2"), replace("n")}, tool.ErrStale},
		{"insert", []tool.Call{view("f"), outside("f", "x changed"), {Op: tool.OpInsert, Args: &tool.InsertArgs{Path: "f", Line: 0, Text: "t"}}}, tool.ErrStale},
		{"overwrite", []tool.Call{view("f"), outside("f", "x changed"), {Op: tool.OpWrite, Args: &tool.CreateArgs{Path: "f", Content: "w"}}}, tool.ErrStale},
		{"overwrite after it was deleted", []tool.Call{view("f"), outside("f", ""), {Op: tool.OpWrite, Args: &tool.CreateArgs{Path: "f", Content: "w"}}}, ""},
		{"own delete, created again", []tool.Call{view("f"), {Op: tool.OpDelete, Args: &tool.DeleteArgs{Path: "f"}}, outside("f", "theirs"), {Op: tool.OpWrite, Args: &tool.CreateArgs{Path: "f", Content: "w"}}}, tool.ErrStale},
		{"create over a changed file", []tool.Call{view("f"), outside("f", "x changed"), {Op: tool.OpCreate, Args: &tool.CreateArgs{Path: "f", Content: "c"}}}, tool.ErrExists},
		{"delete", []tool.Call{view("f"), outside("f", "x changed"), {Op: tool.OpDelete, Args: &tool.DeleteArgs{Path: "f"}}}, tool.ErrStale},
		{"recursive delete", []tool.Call{view("d/g"), outside("d/g", "x changed"), {Op: tool.OpDelete, Args: &tool.DeleteArgs{Path: "d", Recursive: true}}}, tool.ErrStale},
		{"rename", []tool.Call{view("f"), outside("f", "x changed"), {Op: tool.OpRename, Args: &tool.RenameArgs{From: "f", To: "f2"}}}, tool.ErrStale},
		{"renamed, then edited", []tool.Call{view("f"), {Op: tool.OpRename, Args: &tool.RenameArgs{From: "f", To: "f2"}}, replace("f2")}, ""},
		{"moved directory, changed", []tool.Call{{Op: tool.OpRename, Args: &tool.RenameArgs{From: "d", To: "e"}}, outside("e/g", "x 3"), replace("e/g")}, tool.ErrStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, dir := newWS(t, map[string]string{"f": "x\n", "d/g": "x\n"})
			for i, c := range tc.calls {
				if p, ok := strings.CutPrefix(c.ID, "outside:"); ok {
					if c.Args == "" {
						os.Remove(filepath.Join(dir, p))
					} else if err := os.WriteFile(filepath.Join(dir, p), []byte(c.Args.(string)), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				r := e.Execute(context.Background(), c)
				if i < len(tc.calls)-1 {
					if r.Err != nil {
						t.Fatalf("call %d: %v", i, r.Err)
					}
					continue
				}
				var got tool.ErrorKind
				if r.Err != nil {
					got = r.Err.Kind
				}
				if got != tc.want {
					t.Fatalf("got %q (%v), want %q", got, r.Err, tc.want)
				}
			}
		})
	}
}

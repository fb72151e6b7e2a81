//go:build linux

package changes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
)

// bash is a shell executor for tests: each call runs its command in dir.
func bash(dir string) tool.Executor {
	return tool.ExecutorFunc(func(ctx context.Context, call tool.Call) tool.Result {
		cmd := exec.CommandContext(ctx, "bash", "-c", call.Args.(*tool.ExecArgs).Command)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		res := tool.Result{CallID: call.ID, Op: call.Op, Stdout: string(out)}
		if err != nil {
			res.Err = &tool.Error{Kind: tool.ErrExit, Message: err.Error()}
		}
		return res
	})
}

func session(t *testing.T, root string) (tool.Executor, *Tracker) {
	t.Helper()
	tr := open(t, []string{root}, Options{})
	ws, err := tfs.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	var mux tool.Mux
	mux.HandleAll(tfs.Ops, &tfs.Executor{W: ws})
	mux.Handle(tool.OpExec, bash(root))
	return Wrap(&mux, tr), tr
}

func run(ex tool.Executor, cmd string) tool.Result {
	return ex.Execute(context.Background(), tool.Call{ID: "c", Op: tool.OpExec, Args: &tool.ExecArgs{Command: cmd}})
}

// TestWrap: a command's result carries what it changed — also when it
// failed — and nothing a file tool changed before it; a file tool's
// result is passed through as it was.
func TestWrap(t *testing.T) {
	root := t.TempDir()
	layout(t, root, base)
	ex, _ := session(t, root)
	edit := ex.Execute(context.Background(), tool.Call{ID: "e", Op: tool.OpReplace, Args: &tool.ReplaceArgs{Path: "a.txt", Old: "alpha", New: "beta"}})
	if edit.Err != nil || len(edit.Changes) != 1 {
		t.Fatalf("edit: %+v", edit)
	}
	res := run(ex, `echo more >> c.txt; echo new > d.txt; exit 3`)
	if res.Err == nil {
		t.Fatal("the command's failure was lost")
	}
	check(t, res.Changes, []want{
		{path: "c.txt", kind: tool.ChangeUpdate, before: b("charlie\n"), after: b("charlie\nmore\n")},
		{path: "d.txt", kind: tool.ChangeAdd, after: b("new\n")},
	})
	// The editor's content is the before of a command's change.
	res = run(ex, `echo gamma > a.txt`)
	check(t, res.Changes, []want{{path: "a.txt", kind: tool.ChangeUpdate, before: b("beta\n"), after: b("gamma\n")}})
	// A view passes through.
	v := ex.Execute(context.Background(), tool.Call{ID: "v", Op: tool.OpView, Args: &tool.ViewArgs{Path: "a.txt"}})
	if v.Err != nil || v.File == nil || v.File.Content != "gamma\n" {
		t.Fatalf("view: %+v", v)
	}
}

// TestNoteGap: a file changed by something nobody reported, then edited by
// a file tool, has the unreported change reported by the next scan (from
// the index's content to the tool's before content), before the scan's
// own.
func TestNoteGap(t *testing.T) {
	root := t.TempDir()
	layout(t, root, base)
	ex, tr := session(t, root)
	// Written behind the tracker's back (a background process).
	os.WriteFile(filepath.Join(root, "a.txt"), b("behind\n"), 0o644)
	edit := ex.Execute(context.Background(), tool.Call{ID: "e", Op: tool.OpReplace, Args: &tool.ReplaceArgs{Path: "a.txt", Old: "behind", New: "edited"}})
	if edit.Err != nil {
		t.Fatal(edit.Err)
	}
	got, err := tr.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, []want{{path: "a.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), after: b("behind\n")}})
}

// TestNoteMoves: renames and deletions through the file tools leave the
// index as the files are: the next scan reports nothing of them, and a
// command's change of a renamed file has the right before content.
func TestNoteMoves(t *testing.T) {
	root := t.TempDir()
	layout(t, root, base)
	ex, _ := session(t, root)
	for _, c := range []tool.Call{
		{ID: "1", Op: tool.OpRename, Args: &tool.RenameArgs{From: "dir", To: "moved/dir2"}},
		{ID: "2", Op: tool.OpDelete, Args: &tool.DeleteArgs{Path: "c.txt"}},
		{ID: "3", Op: tool.OpCreate, Args: &tool.CreateArgs{Path: "deep/new/n.txt", Content: "n\n"}},
	} {
		if res := ex.Execute(context.Background(), c); res.Err != nil {
			t.Fatalf("%s: %v", c.Op, res.Err)
		}
	}
	res := run(ex, `echo z >> moved/dir2/x.txt; echo m >> deep/new/n.txt`)
	check(t, res.Changes, []want{
		{path: "deep/new/n.txt", kind: tool.ChangeUpdate, before: b("n\n"), after: b("n\nm\n")},
		{path: "moved/dir2/x.txt", kind: tool.ChangeUpdate, before: b("x content\n"), after: b("x content\nz\n")},
	})
}

// TestConcurrentAgents: agents sharing a workspace edit and run commands at
// once; every change is reported exactly once, and each file's changes
// form an unbroken chain from its first content to its last.
func TestConcurrentAgents(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for i := range 4 {
		files[fmt.Sprintf("f%d.txt", i)] = "0\n"
	}
	layout(t, root, files)
	ex, tr := session(t, root)
	var mu sync.Mutex
	var all []tool.FileChange
	var wg sync.WaitGroup
	for a := range 4 {
		wg.Go(func() {
			f := fmt.Sprintf("f%d.txt", a)
			shared := "shared.txt"
			for i := range 6 {
				var res tool.Result
				switch i % 3 {
				case 0:
					res = run(ex, fmt.Sprintf("echo %d-%d >> %s; echo %d-%d >> %s", a, i, f, a, i, shared))
				case 1:
					res = ex.Execute(context.Background(), tool.Call{ID: "w", Op: tool.OpWrite, Args: &tool.CreateArgs{Path: f, Content: fmt.Sprintf("w%d-%d\n", a, i)}})
				case 2:
					res = run(ex, fmt.Sprintf("cp %s %s.bak && rm %s.bak", f, f, f))
				}
				mu.Lock()
				all = append(all, res.Changes...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	last, err := tr.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, last...)
	// Each file's changes chain: ordered so that every change's before is
	// the previous one's after, they lead from its first content to its
	// last. (Results come back in any order; the scans ran in one.)
	byPath := map[string][]tool.FileChange{}
	for _, ch := range all {
		if ch.MovedTo != "" {
			t.Fatalf("a move: %s", show([]tool.FileChange{ch}))
		}
		byPath[ch.Path] = append(byPath[ch.Path], ch)
	}
	state := map[string]string{}
	for p, c := range files {
		state[p] = tool.Digest(b(c))
	}
	for p, chs := range byPath {
		cur := state[p]
		for len(chs) > 0 {
			k := slices.IndexFunc(chs, func(c tool.FileChange) bool { return c.Before == cur })
			if k < 0 {
				t.Fatalf("%s: no change follows content %.8s; left: %s", p, cur, show(chs))
			}
			cur = chs[k].After
			chs = slices.Delete(chs, k, k+1)
		}
		state[p] = cur
		if cur == "" {
			delete(state, p)
		}
	}
	for p, d := range state {
		c, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || tool.Digest(c) != d {
			t.Errorf("%s: recorded %.8s, the file is %q (%v)", p, d, c, err)
		}
	}
}

// TestWrapCanceled: a command whose call was canceled (a timeout) may have
// changed files before it was stopped; they are recorded all the same.
func TestWrapCanceled(t *testing.T) {
	root := t.TempDir()
	layout(t, root, base)
	tr := open(t, []string{root}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	ex := Wrap(tool.ExecutorFunc(func(ctx context.Context, call tool.Call) tool.Result {
		os.WriteFile(filepath.Join(root, "half.txt"), b("half\n"), 0o644)
		cancel()
		<-ctx.Done()
		return tool.Result{CallID: call.ID, Op: call.Op, Err: &tool.Error{Kind: tool.ErrTimeout, Message: "timed out"}}
	}), tr)
	res := ex.Execute(ctx, tool.Call{ID: "c", Op: tool.OpExec, Args: &tool.ExecArgs{Command: "x"}})
	check(t, res.Changes, []want{{path: "half.txt", kind: tool.ChangeAdd, after: b("half\n")}})
	if u, ok := ex.(interface{ Unwrap() tool.Executor }); !ok || u.Unwrap() == nil {
		t.Error("the wrapper does not unwrap")
	}
}

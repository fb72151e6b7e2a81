package gitsafe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostile makes a repository whose configuration names a program for
// every hook git has: fsmonitor, hooks, filters (clean, smudge and the
// long-running process), a textconv and an external diff driver, a pager
// and an alias. Each program creates a file in marks named after it.
func hostile(t *testing.T) (repo, marks string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo, marks = t.TempDir(), t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("*.txt filter=evil diff=evil\n*.dat filter=proc\n*.eq filter=a=b\n"), 0o644)
	run("add", "-A")
	run("commit", "-qm", "init")
	mark := func(name string) string { return "touch " + filepath.Join(marks, name) }
	cfg := map[string]string{
		"core.fsmonitor":      mark("fsmonitor"),
		"core.pager":          mark("pager") + "; cat",
		"filter.evil.clean":   mark("clean") + "; cat",
		"filter.evil.smudge":  mark("smudge") + "; cat",
		"filter.proc.process": mark("process"),
		"filter.a=b.clean":    mark("eq") + "; cat",
		"diff.evil.textconv":  mark("textconv") + "; cat",
		"diff.evil.command":   mark("diffcmd"),
		"diff.external":       mark("external"),
		"alias.status":        "!" + mark("alias"),
	}
	for k, v := range cfg {
		run("config", k, v)
	}
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	os.WriteFile(hook, []byte("#!/bin/sh\n"+mark("hook")+"\n"), 0o755)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("two\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "b.dat"), []byte("dat\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "c.eq"), []byte("eq\n"), 0o644)
	return repo, marks
}

func marked(t *testing.T, marks string) []string {
	t.Helper()
	ents, _ := os.ReadDir(marks)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// Truss's git commands over a hostile repository run none of its
// programs, and still work.
func TestNoRepositoryPrograms(t *testing.T) {
	repo, marks := hostile(t)
	// The control: plain git runs them (else this test could not fail).
	ctl := exec.Command("git", "-C", repo, "status", "--porcelain")
	ctl.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	ctl.Run()
	if got := marked(t, marks); len(got) == 0 {
		t.Fatal("plain git ran none of the repository's programs; the test proves nothing")
	}
	for _, e := range marked(t, marks) {
		os.Remove(filepath.Join(marks, e))
	}

	ctx := context.Background()
	g := Git{Dir: repo}
	if names, err := g.Filters(ctx); err != nil || len(names) != 3 || !slices.Contains(names, "evil") || !slices.Contains(names, "proc") || !slices.Contains(names, "a=b") {
		t.Fatalf("filters %v %v", names, err)
	}
	steps := [][]string{
		{"rev-parse", "HEAD"},
		{"status", "--porcelain"},
		{"stash", "create", "snapshot"},
		{"worktree", "add", "--detach", filepath.Join(t.TempDir(), "wt"), "HEAD"},
		{"add", "-A"},
		{"diff", "--cached", "--binary", "HEAD"},
		{"log", "-p", "-1"},
	}
	var diff string
	for _, args := range steps {
		out, err := g.Output(ctx, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if args[0] == "diff" {
			diff = out
		}
	}
	if got := marked(t, marks); len(got) > 0 {
		t.Errorf("the repository's programs ran: %v", got)
	}
	if !strings.Contains(diff, "-one\n+two\n") || !strings.Contains(diff, "b.dat") {
		t.Errorf("diff:\n%s", diff)
	}
}

// A pinned Git reads the filter drivers once and empties them in every
// command as Git does.
func TestPinnedRunsNoRepositoryPrograms(t *testing.T) {
	repo, marks := hostile(t)
	ctx := context.Background()
	g, err := Git{Dir: repo}.Pinned(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var diff string
	for _, args := range [][]string{{"add", "-A"}, {"diff", "--cached", "--binary", "HEAD"}, {"status", "--porcelain"}} {
		out, err := g.Output(ctx, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if args[0] == "diff" {
			diff = out
		}
	}
	if got := marked(t, marks); len(got) > 0 {
		t.Errorf("the repository's programs ran: %v", got)
	}
	if !strings.Contains(diff, "-one\n+two\n") || !strings.Contains(diff, "c.eq") {
		t.Errorf("diff:\n%s", diff)
	}
}

// The caller's GIT_* variables do not reach git: GIT_DIR cannot point
// Truss at another repository, GIT_CONFIG_* cannot add settings.
func TestCallerEnvironmentIgnored(t *testing.T) {
	repo, marks := hostile(t)
	t.Setenv("GIT_DIR", "/nonexistent")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
	t.Setenv("GIT_CONFIG_VALUE_0", "touch "+filepath.Join(marks, "env"))
	if _, err := (Git{Dir: repo}).Output(context.Background(), "status", "--porcelain"); err != nil {
		t.Fatal(err)
	}
	if got := marked(t, marks); len(got) > 0 {
		t.Errorf("ran: %v", got)
	}
}

func TestState(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=t@t", "-c", "user.name=t"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	g := Git{Dir: dir}
	if _, err := g.State(context.Background()); err == nil {
		t.Fatal("State of a directory that is no repository: no error")
	}
	git("init", "-q")
	if s, err := g.State(context.Background()); err != nil || s != (State{}) {
		t.Fatalf("empty repository: %+v, %v", s, err)
	}
	os.WriteFile(filepath.Join(dir, "a"), []byte("a\n"), 0o644)
	git("add", "a")
	git("commit", "-qm", "a")
	head := git("rev-parse", "HEAD")
	for _, tc := range []struct {
		name  string
		do    func()
		dirty bool
	}{
		{"clean", func() {}, false},
		{"untracked", func() { os.WriteFile(filepath.Join(dir, "b"), nil, 0o644) }, true},
		{"ignored", func() {
			os.Remove(filepath.Join(dir, "b"))
			os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("c\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "c"), nil, 0o644)
		}, false},
		{"modified", func() { os.WriteFile(filepath.Join(dir, "a"), []byte("b\n"), 0o644) }, true},
		// Thousands of untracked long names: git is stopped at the
		// first, its listing never held.
		{"many untracked names", func() {
			os.WriteFile(filepath.Join(dir, "a"), []byte("a\n"), 0o644)
			for i := range 3000 {
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("%0200d", i)), nil, 0o644)
			}
		}, true},
	} {
		tc.do()
		s, err := g.State(context.Background())
		if err != nil || s.Head != head || s.Dirty != tc.dirty {
			t.Errorf("%s: %+v, %v; want head %s dirty %v", tc.name, s, err, head, tc.dirty)
		}
	}
}

// Plumbing refuses every command and flag that could read a work tree
// file, and so run a filter, textconv or fsmonitor.
func TestPlumbingRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"status"}, {"diff"}, {"add", "-A"}, {"stash", "create"}, {"checkout", "HEAD"},
		{"worktree", "add", "--detach", "/x", "HEAD"}, {"worktree", "remove", "/x"},
		{"read-tree", "-u", "HEAD"}, {"read-tree", "-m", "HEAD"}, {"hash-object", "a.txt"},
		{"cat-file", "--filters", "HEAD:a"}, {"cat-file", "--textconv", "HEAD:a"},
		{"update-index", "--refresh"}, {"update-index", "--add", "a"}, {"ls-files", "-m"},
		{"diff-tree", "--ext-diff", "HEAD"}, {"diff-tree", "--textconv", "HEAD"}, {"-c", "x=y"}, {},
	} {
		if _, err := (Git{Dir: t.TempDir()}).Plumbing(context.Background(), nil, args...); !errors.Is(err, ErrNotPlumbing) {
			t.Errorf("%v: %v, want ErrNotPlumbing", args, err)
		}
	}
}

// The plumbing commands run none of a hostile repository's programs,
// those configured under includeIf gitdir worktrees for a worktree
// included, and a worktree added without checkout gets none either.
func TestPlumbingRunsNoRepositoryPrograms(t *testing.T) {
	repo, marks := hostile(t)
	inc := filepath.Join(t.TempDir(), "inc")
	os.WriteFile(inc, []byte("[filter \"wt\"]\n\tprocess = touch "+filepath.Join(marks, "wt-process")+"\n\tsmudge = touch "+filepath.Join(marks, "wt-smudge")+"\n"), 0o644)
	f, _ := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[includeIf \"gitdir:**/worktrees/**\"]\n\tpath = " + inc + "\n")
	f.Close()
	os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("* filter=wt\n"), 0o644)
	ctx := context.Background()
	g := Git{Dir: repo}
	wt := filepath.Join(t.TempDir(), "wt")
	for _, args := range [][]string{
		{"rev-parse", "--verify", "HEAD"},
		{"ls-files", "--stage", "-z"}, {"ls-files", "--stage", "--debug", "-z"},
		{"ls-tree", "-r", "-z", "HEAD"},
		{"worktree", "add", "--no-checkout", "--detach", wt, "HEAD"},
		{"diff-tree", "-r", "-p", "--binary", "--root", "HEAD"},
	} {
		if _, err := g.Plumbing(ctx, nil, args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	id, err := g.Plumbing(ctx, strings.NewReader("blob\ndata 4\nabc\n\ndone\n"), "fast-import", "--quiet", "--done")
	if err != nil {
		t.Fatal(id, err)
	}
	want, _ := BlobID("sha1", []byte("abc\n"))
	if out, err := g.Plumbing(ctx, nil, "cat-file", "-t", want); err != nil || strings.TrimSpace(out) != "blob" {
		t.Errorf("the blob fast-import wrote: %q %v", out, err)
	}
	if got := marked(t, marks); len(got) > 0 {
		t.Errorf("the repository's programs ran: %v", got)
	}
}

// Find finds the nearest .git, and Same tells a replaced one apart.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	if r, err := Find(dir); err != nil || r.DotGit != "" && !strings.HasPrefix(dir, filepath.Dir(r.DotGit)) {
		t.Fatalf("%+v %v", r, err)
	}
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	r, err := Find(filepath.Join(dir, "sub"))
	if err != nil || r.DotGit != filepath.Join(dir, ".git") {
		t.Fatalf("%+v %v", r, err)
	}
	os.Rename(filepath.Join(dir, ".git"), filepath.Join(dir, "old"))
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	r2, _ := Find(dir)
	if r.Same(r2) || !r2.Same(r2) || (Repo{}).Same(Repo{}) {
		t.Errorf("Same: %+v %+v", r, r2)
	}
}

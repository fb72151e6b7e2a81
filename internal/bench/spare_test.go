package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/gitsafe"
)

// made waits until n checkouts made ahead lie in dir (a plan's private
// directory) and returns their repositories' paths.
func made(t *testing.T, dir string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var ready []string
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			repo := filepath.Join(dir, e.Name(), "repo")
			// reset --hard writes the index last.
			if _, err := os.Stat(filepath.Join(repo, ".git", "index")); err == nil {
				ready = append(ready, repo)
			}
		}
		if len(ready) >= n {
			return ready
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d checkouts made ahead in %s, want %d", len(ready), dir, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkTree fails unless dir is a clean checkout of commit.
func checkTree(t *testing.T, dir, commit string) {
	t.Helper()
	ctx := context.Background()
	if head, err := Head(ctx, dir); err != nil || head != commit {
		t.Fatalf("HEAD of %s = %q, %v; want %s", dir, head, err, commit)
	}
	st, err := gitsafe.Git{Dir: dir}.Output(ctx, "status", "--porcelain", "--untracked-files=all")
	if err != nil || st != "" {
		t.Fatalf("status of %s: %q, %v", dir, st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Fatal(err)
	}
}

// fixture is a repository of n files at root/src, its last commit, a
// directory root/work to make checkouts near, and templates in root.
func fixture(t *testing.T, n int) (repo, commit, near string, tp *Templates) {
	t.Helper()
	root := t.TempDir()
	repo = filepath.Join(root, "src")
	commit = makeSourceRepo(context.Background(), t, repo, n)
	near = filepath.Join(root, "work")
	if err := os.Mkdir(near, 0o755); err != nil {
		t.Fatal(err)
	}
	return repo, commit, near, &Templates{Dir: filepath.Join(root, "templates")}
}

func TestPlanMakesCheckoutsAhead(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	repo := filepath.Join(root, "src")
	commit := makeSourceRepo(ctx, t, repo, 40)
	near := filepath.Join(root, "work")
	other := filepath.Join(root, "elsewhere")
	for _, d := range []string{near, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tp := &Templates{Dir: filepath.Join(root, "templates")}
	w := Want{Repo: repo, Commit: commit, Near: near}
	withdraw := tp.Plan(ctx, []Want{w, w, w}, 2)
	defer withdraw()

	priv := tp.Private()
	if len(priv) != 1 || filepath.Dir(priv[0]) != near {
		t.Fatalf("Private() = %v, want one directory in %s", priv, near)
	}
	if fi, err := os.Stat(priv[0]); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("private directory: %v, %v", fi, err)
	}
	made(t, priv[0], 2)
	// Made ahead, moved into place: the destination is one of the
	// directories made ahead.
	for i := range 3 {
		var was []os.FileInfo
		for _, d := range made(t, priv[0], 1) {
			if fi, err := os.Stat(d); err == nil {
				was = append(was, fi)
			}
		}
		dst := filepath.Join(near, "run"+string(rune('a'+i)), "repo")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		head, err := tp.Checkout(ctx, repo, commit, dst)
		if err != nil || head != commit {
			t.Fatalf("checkout %d: %q, %v", i, head, err)
		}
		now, err := os.Stat(dst)
		if err != nil || !slices.ContainsFunc(was, func(fi os.FileInfo) bool { return os.SameFile(fi, now) }) {
			t.Fatalf("checkout %d was not one made ahead (%v)", i, err)
		}
		checkTree(t, dst, commit)
	}
	// Beyond the plan, and outside its Near: made on the spot, the same.
	for _, dst := range []string{filepath.Join(near, "rund", "repo"), filepath.Join(other, "repo")} {
		if head, err := tp.Checkout(ctx, repo, commit, dst); err != nil || head != commit {
			t.Fatalf("checkout at %s: %q, %v", dst, head, err)
		}
		checkTree(t, dst, commit)
	}
	withdraw()
	if _, err := os.Stat(priv[0]); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the plan's directory outlived it: %v", err)
	}
	if p := tp.Private(); len(p) != 0 {
		t.Fatalf("Private() after withdraw = %v", p)
	}
}

func TestPlanWithdrawRemovesWhatWasNotTaken(t *testing.T) {
	ctx := context.Background()
	repo, commit, near, tp := fixture(t, 20)
	w := Want{Repo: repo, Commit: commit, Near: near}
	withdraw := tp.Plan(ctx, []Want{w, w, w, w}, 3)
	made(t, tp.Private()[0], 3)
	withdraw()
	withdraw() // twice is harmless
	ents, err := os.ReadDir(near)
	if err != nil || len(ents) != 0 {
		t.Fatalf("left in %s: %v, %v", near, ents, err)
	}
}

// A checkout that cannot be made ahead is made on the spot, and its error
// is the caller's.
func TestPlanFailureIsTheCallers(t *testing.T) {
	ctx := context.Background()
	repo, _, near, tp := fixture(t, 10)
	missing := strings.Repeat("1", 40)
	withdraw := tp.Plan(ctx, []Want{{Repo: repo, Commit: missing, Near: near}}, 1)
	defer withdraw()
	_, err := tp.Checkout(ctx, repo, missing, filepath.Join(near, "run", "repo"))
	if err == nil || !strings.Contains(err.Error(), "has no commit "+missing) {
		t.Fatalf("err = %v, want the missing commit named", err)
	}
}

// A taker whose context ends while its checkout is being made gives up at
// once; the checkout is removed, and withdraw leaves nothing.
func TestPlanTakerCancelled(t *testing.T) {
	ctx := context.Background()
	repo, commit, near, tp := fixture(t, 200)
	withdraw := tp.Plan(ctx, []Want{{Repo: repo, Commit: commit, Near: near}}, 1)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tp.Checkout(cctx, repo, commit, filepath.Join(near, "run", "repo")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	withdraw()
	ents, _ := os.ReadDir(near)
	if len(ents) != 0 {
		t.Fatalf("left in %s: %v", near, ents)
	}
}

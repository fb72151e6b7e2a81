package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/trussdev/truss/internal/gitsafe"
)

// Checkout makes dst (which must not exist, or be empty) a fresh
// repository holding the tree of commit from the repository at repo, and
// nothing else of it: a new repository into which that one commit is
// fetched without its history (depth 1), checked out detached. Neither
// later commits, other branches, stashes nor unreachable objects of repo
// reach dst, so a workspace made this way holds nothing of a task's hidden
// tests but what base_commit itself holds. HEAD is commit's own id.
//
// Git runs through gitsafe: none of repo's hooks, filters or drivers run.
// It returns the id of the commit checked out (commit may be any
// revision repo resolves: a branch, a tag).
func Checkout(ctx context.Context, repo, commit, dst string) (string, error) {
	abs, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	g := gitsafe.Git{Dir: dst}
	if _, err := g.Output(ctx, "init", "-q", "--template=", "--initial-branch=truss-bench"); err != nil {
		return "", fmt.Errorf("checkout: %w", err)
	}
	// gitsafe forbids every transport; this one fetch from a local
	// directory is allowed explicitly (a -c option wins over the
	// environment's settings).
	url := "file://" + filepath.ToSlash(abs)
	if _, err := g.Output(ctx, "-c", "protocol.file.allow=always", "fetch", "-q", "--depth=1", "--no-tags",
		"--no-write-fetch-head", url, "+"+commit+":refs/truss/base"); err != nil {
		return "", fmt.Errorf("repository %s has no commit %s: %w", repo, commit, err)
	}
	if _, err := g.Output(ctx, parallelCheckout("checkout", "-q", "--detach", "refs/truss/base")...); err != nil {
		return "", fmt.Errorf("checkout of %s: %w", commit, err)
	}
	if _, err := g.Output(ctx, "update-ref", "-d", "refs/truss/base"); err != nil {
		return "", fmt.Errorf("checkout: %w", err)
	}
	return Head(ctx, dst)
}

// parallelCheckout is args with git set to write a working tree's files
// with four workers (git's parallel checkout) once there are at least 100
// of them. Writing files is a checkout's cost, most of it the file
// system's latency (inode allocation, the journal), which workers overlap;
// each worker is a process, though, whose start costs CPU. On a shared
// two-core machine with an ext4 virtual disk, runs on a 1,000-file
// repository (BenchmarkRunOverhead, 53 samples each, interleaved) had a
// harness time of 130 ms (p25), 218 ms (median) with one worker, 135 ms and
// 198 ms with eight, 124 ms and 178 ms with four.
func parallelCheckout(args ...string) []string {
	return append([]string{"-c", "checkout.workers=4", "-c", "checkout.thresholdForParallelism=100"}, args...)
}

// Head returns the commit checked out in dir.
func Head(ctx context.Context, dir string) (string, error) {
	out, err := gitsafe.Git{Dir: dir}.Output(ctx, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// Diff returns the changes of the working tree at dir against commit as a
// binary-safe git patch: every tracked file changed or deleted and every
// untracked file not ignored, added. It stages them in dir's index (the
// workspace is done with by then).
func Diff(ctx context.Context, dir, commit string) (string, error) {
	// Neither command changes the configuration.
	g, err := gitsafe.Git{Dir: dir}.Pinned(ctx)
	if err != nil {
		return "", fmt.Errorf("diff of the workspace: %w", err)
	}
	if _, err := g.Output(ctx, "add", "-A", "--", "."); err != nil {
		return "", fmt.Errorf("diff of the workspace: %w", err)
	}
	out, err := g.Output(ctx, "diff", "--cached", "--binary", "--no-color", "--no-renames", commit, "--")
	if err != nil {
		return "", fmt.Errorf("diff of the workspace: %w", err)
	}
	return out, nil
}

// Templates makes checkouts from a fetched copy of each repository's
// commit kept in Dir: the first checkout of a (repository, commit) fetches
// it once (as Checkout does) into a template holding that one commit and
// no working tree; every checkout then copies the template's .git and
// writes the working tree from it, which spares each run the fetch (the
// packing and indexing of every object). Copies share no file with the
// template or with each other. Safe for concurrent use.
type Templates struct {
	// Dir holds the templates; the caller removes it when done.
	Dir string

	mu sync.Mutex
	m  map[[2]string]*template
	// spares are the checkouts Plan's builders made or are making, not
	// yet taken; plans the plans not yet withdrawn. Both under mu.
	spares []*spare
	plans  []*plan
}

type template struct {
	mu   sync.Mutex
	done bool
	dir  string
	head string
	err  error
	// git is git in the template with its filter drivers read (none:
	// its configuration is Truss's), for its copies, whose
	// configuration is the same.
	git gitsafe.Git
}

// Checkout makes dst a checkout of commit from repo, like the package's
// Checkout, through a template; with a nil t, by the package's Checkout.
// A checkout planned with Plan and made ahead is moved into place (when
// dst is under the Want's Near and does not exist or is empty): one
// rename.
func (t *Templates) Checkout(ctx context.Context, repo, commit, dst string) (string, error) {
	if t == nil {
		return Checkout(ctx, repo, commit, dst)
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	if head, ok := t.takeSpare(ctx, abs, commit, dst); ok {
		return head, nil
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return t.checkout(ctx, abs, commit, dst)
}

// checkout makes dst a checkout of commit from the repository at abs
// through its template.
func (t *Templates) checkout(ctx context.Context, abs, commit, dst string) (string, error) {
	head, g, err := t.template(ctx, abs, commit)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	if err := os.CopyFS(filepath.Join(dst, ".git"), os.DirFS(filepath.Join(g.Dir, ".git"))); err != nil {
		return "", fmt.Errorf("checkout: %w", err)
	}
	g.Dir = dst
	if _, err := g.Output(ctx, parallelCheckout("reset", "-q", "--hard", head)...); err != nil {
		return "", fmt.Errorf("checkout of %s: %w", commit, err)
	}
	return head, nil
}

// template returns the template of (abs, commit), fetching it on first
// use: the commit's id and git pinned in the template's directory.
func (t *Templates) template(ctx context.Context, abs, commit string) (string, gitsafe.Git, error) {
	t.mu.Lock()
	if t.m == nil {
		t.m = map[[2]string]*template{}
	}
	k := [2]string{abs, commit}
	tp := t.m[k]
	if tp == nil {
		tp = &template{dir: filepath.Join(t.Dir, fmt.Sprintf("template-%d", len(t.m)))}
		t.m[k] = tp
	}
	t.mu.Unlock()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if !tp.done {
		head, err := fetchTemplate(ctx, abs, commit, tp.dir)
		if err == nil {
			tp.git, err = gitsafe.Git{Dir: tp.dir}.Pinned(ctx)
		}
		if err != nil && ctx.Err() != nil {
			// Cut short by this caller's context: not the template's
			// failure, so the next caller fetches it again.
			os.RemoveAll(tp.dir)
			return "", gitsafe.Git{}, err
		}
		tp.head, tp.err, tp.done = head, err, true
	}
	return tp.head, tp.git, tp.err
}

// fetchTemplate fetches commit from repo into a new repository at dir,
// with HEAD detached at it and no working tree written.
func fetchTemplate(ctx context.Context, repo, commit, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	g := gitsafe.Git{Dir: dir}
	if _, err := g.Output(ctx, "init", "-q", "--template=", "--initial-branch=truss-bench"); err != nil {
		return "", fmt.Errorf("checkout: %w", err)
	}
	if _, err := g.Output(ctx, "-c", "protocol.file.allow=always", "fetch", "-q", "--depth=1", "--no-tags",
		"--no-write-fetch-head", "file://"+filepath.ToSlash(repo), "+"+commit+":refs/truss/base"); err != nil {
		return "", fmt.Errorf("repository %s has no commit %s: %w", repo, commit, err)
	}
	head, err := g.Output(ctx, "rev-parse", "refs/truss/base^{commit}")
	if err != nil {
		return "", fmt.Errorf("checkout: %w", err)
	}
	head = strings.TrimSpace(head)
	for _, args := range [][]string{{"update-ref", "--no-deref", "HEAD", head}, {"update-ref", "-d", "refs/truss/base"}} {
		if _, err := g.Output(ctx, args...); err != nil {
			return "", fmt.Errorf("checkout: %w", err)
		}
	}
	return head, nil
}

// Janitor removes directories in the background, so that a run's wall
// time does not include the removal of its workspaces. Wait waits for
// every removal. A nil Janitor removes at once.
type Janitor struct {
	wg sync.WaitGroup
}

// Remove removes dir and everything in it.
func (j *Janitor) Remove(dir string) {
	if j == nil {
		os.RemoveAll(dir)
		return
	}
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		os.RemoveAll(dir)
	}()
}

// Wait waits until every directory given to Remove is gone.
func (j *Janitor) Wait() {
	if j != nil {
		j.wg.Wait()
	}
}

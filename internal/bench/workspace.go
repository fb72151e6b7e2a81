package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
	if _, err := g.Output(ctx, "init", "-q", "--initial-branch=truss-bench"); err != nil {
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
	if _, err := g.Output(ctx, "checkout", "-q", "--detach", "refs/truss/base"); err != nil {
		return "", fmt.Errorf("checkout of %s: %w", commit, err)
	}
	if _, err := g.Output(ctx, "update-ref", "-d", "refs/truss/base"); err != nil {
		return "", fmt.Errorf("checkout: %w", err)
	}
	return Head(ctx, dst)
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
	g := gitsafe.Git{Dir: dir}
	if _, err := g.Output(ctx, "add", "-A", "--", "."); err != nil {
		return "", fmt.Errorf("diff of the workspace: %w", err)
	}
	out, err := g.Output(ctx, "diff", "--cached", "--binary", "--no-color", "--no-renames", commit, "--")
	if err != nil {
		return "", fmt.Errorf("diff of the workspace: %w", err)
	}
	return out, nil
}

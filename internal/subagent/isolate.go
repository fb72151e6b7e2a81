package subagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// isolation is an isolated copy of a workspace: a git worktree of the
// workspace's repository at its current state (uncommitted changes to
// tracked files included, untracked files not), or, outside a repository, a
// plain copy of the directory.
type isolation struct {
	// dir is the copy of the workspace the child works in.
	dir string
	// top is the worktree's root (git), base the commit it started from.
	top, base string
	// repo is the workspace's repository root; empty for a plain copy.
	repo string
	// from is the workspace that was copied.
	from string
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// isolate makes an isolated copy of workspace under workdir, named after
// the session.
func isolate(ctx context.Context, workspace, workdir, session string) (*isolation, error) {
	if workdir == "" {
		workdir = os.TempDir()
	}
	if err := os.MkdirAll(workdir, 0o700); err != nil {
		return nil, err
	}
	name := "agent-" + safeID(session)
	top, err := git(ctx, workspace, "rev-parse", "--show-toplevel")
	if err == nil {
		top = strings.TrimSpace(top)
		if base, err := snapshot(ctx, top); err == nil {
			wt := filepath.Join(workdir, name)
			if _, err := git(ctx, top, "worktree", "add", "--detach", wt, base); err != nil {
				return nil, err
			}
			rel, err := filepath.Rel(top, workspace)
			if err != nil {
				rel = "."
			}
			return &isolation{dir: filepath.Join(wt, rel), top: wt, base: base, repo: top, from: workspace}, nil
		}
	}
	dst, err := os.MkdirTemp(workdir, name+"-")
	if err != nil {
		return nil, err
	}
	if err := copyTree(workspace, dst); err != nil {
		os.RemoveAll(dst)
		return nil, fmt.Errorf("copy the workspace: %w", err)
	}
	return &isolation{dir: dst, top: dst, from: workspace}, nil
}

// snapshot returns a commit of the repository's current state: a stash
// commit when tracked files have uncommitted changes (the working tree is
// left alone), else HEAD.
func snapshot(ctx context.Context, top string) (string, error) {
	out, err := git(ctx, top, "stash", "create", "truss: sub-agent snapshot")
	if err == nil && strings.TrimSpace(out) != "" {
		return strings.TrimSpace(out), nil
	}
	out, err = git(ctx, top, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// diff returns the changes made in the copy: git's binary-safe diff of
// everything against the start for a worktree; a unified diff of the
// changed paths against the workspace's files for a plain copy.
func (i *isolation) diff(ctx context.Context, changed []string) (string, error) {
	if i.repo != "" {
		if _, err := git(ctx, i.top, "add", "-A"); err != nil {
			return "", err
		}
		return git(ctx, i.top, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", i.base)
	}
	var sb strings.Builder
	for _, p := range changed {
		old, oerr := os.ReadFile(filepath.Join(i.from, filepath.FromSlash(p)))
		cur, cerr := os.ReadFile(filepath.Join(i.dir, filepath.FromSlash(p)))
		if oerr != nil && cerr != nil {
			continue
		}
		from, to := "a/"+p, "b/"+p
		if oerr != nil {
			from = "/dev/null"
		}
		if cerr != nil {
			to = "/dev/null"
		}
		sb.WriteString(udiff.Unified(from, to, string(old), string(cur)))
	}
	return sb.String(), nil
}

// remove deletes the copy (and the worktree's registration).
func (i *isolation) remove() {
	if i.repo != "" {
		if _, err := git(context.Background(), i.repo, "worktree", "remove", "--force", i.top); err == nil {
			return
		}
		os.RemoveAll(i.top)
		git(context.Background(), i.repo, "worktree", "prune")
		return
	}
	os.RemoveAll(i.top)
}

// copyTree copies the regular files, directories and symbolic links of src
// into dst, leaving out .git.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case info.Mode().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil // sockets, devices and pipes are not copied
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

package subagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aymanbagabas/go-udiff"

	"github.com/trussdev/truss/internal/gitsafe"
)

// isolation is an isolated copy of a workspace: a git worktree of the
// workspace's repository at its current state (uncommitted changes to
// tracked files included, untracked files not), or, outside a repository, a
// plain copy of the directory.
//
// The child's commands write the copy, so nothing read back from it is
// trusted: git runs through gitsafe (no hooks, fsmonitor, filters or diff
// drivers of the repository) and, on the worktree, with its git directory
// named explicitly (a .git file the child rewrote is not followed); a
// symbolic link is diffed as a link (its target's name), never followed.
type isolation struct {
	// dir is the copy of the workspace the child works in.
	dir string
	// top is the worktree's root (git), base the commit it started from.
	top, base string
	// gitdir is the worktree's git directory, found when it was made.
	gitdir string
	// repo is the workspace's repository root; empty for a plain copy.
	repo string
	// from is the workspace that was copied.
	from string
}

// git runs git in dir (see package gitsafe).
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitsafe.Git{Dir: dir}.Output(ctx, args...)
}

// worktreeGit runs git on the worktree, its repository named explicitly.
func (i *isolation) worktreeGit(ctx context.Context, args ...string) (string, error) {
	return gitsafe.Git{Dir: i.top, GitDir: i.gitdir, WorkTree: i.top}.Output(ctx, args...)
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
			iso := &isolation{top: wt, base: base, repo: top, from: workspace}
			gd, err := git(ctx, wt, "rev-parse", "--absolute-git-dir")
			if err != nil {
				iso.remove()
				return nil, err
			}
			iso.gitdir = strings.TrimSpace(gd)
			rel, err := filepath.Rel(top, workspace)
			if err != nil {
				rel = "."
			}
			iso.dir = filepath.Join(wt, rel)
			return iso, nil
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
		if _, err := i.worktreeGit(ctx, "add", "-A"); err != nil {
			return "", err
		}
		return i.worktreeGit(ctx, "diff", "--cached", "--binary", "--no-color", i.base)
	}
	from, err := os.OpenRoot(i.from)
	if err != nil {
		return "", err
	}
	defer from.Close()
	cp, err := os.OpenRoot(i.dir)
	if err != nil {
		return "", err
	}
	defer cp.Close()
	var sb strings.Builder
	for _, p := range changed {
		old, oerr := readEntry(from, p)
		cur, cerr := readEntry(cp, p)
		if oerr != nil && cerr != nil {
			continue
		}
		a, b := "a/"+p, "b/"+p
		if oerr != nil {
			a = "/dev/null"
		}
		if cerr != nil {
			b = "/dev/null"
		}
		sb.WriteString(udiff.Unified(a, b, old, cur))
	}
	return sb.String(), nil
}

// readEntry returns what a diff shows of the entry at p under r: a
// regular file's content, a symbolic link as "symbolic link to TARGET"
// (never what it points to), an error for anything else or for a path
// whose directories lead outside r.
func readEntry(r *os.Root, p string) (string, error) {
	p = filepath.FromSlash(p)
	fi, err := r.Lstat(p)
	if err != nil {
		return "", err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := r.Readlink(p)
		if err != nil {
			return "", err
		}
		return "symbolic link to " + target + "\n", nil
	case fi.Mode().IsRegular():
		f, err := r.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		return string(b), err
	}
	return "", fmt.Errorf("%s is not a regular file", p)
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

package gitsafe

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotPlumbing is the error of Plumbing for a command or a flag that
// could read a work tree file or run a program the repository names.
var ErrNotPlumbing = errors.New("is not one of the git commands that run no program of the repository")

// plumbingCommand is a command Plumbing runs and the flags it may take.
type plumbingCommand struct {
	command string
	flags   []string
}

// plumbingFlags are, for each command Plumbing runs, the flags it may
// take (a flag ending in "=" takes a value after it; "-p" and "-m" of
// commit-tree take the next argument). These commands read and write only
// the object store, refs and index files: none reads or writes a work
// tree file, none consults a filter, diff or merge driver, and none runs
// a hook once hooks are off, whatever the repository's configuration —
// conditional includes and all — says. That is what makes them safe, not
// the settings Command adds.
var plumbingFlags = []plumbingCommand{
	{"rev-parse", []string{"--verify", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--show-object-format", "--is-inside-work-tree", "--show-prefix", "-q", "--quiet"}},
	{"ls-files", []string{"--stage", "-s", "-z", "--full-name", "--debug"}},
	{"ls-tree", []string{"-r", "-z", "--full-tree", "--full-name", "-t"}},
	{"read-tree", []string{"--empty"}},
	{"update-index", []string{"-z", "--index-info"}},
	{"write-tree", []string{}},
	{"commit-tree", []string{"-p", "-m"}},
	{"update-ref", []string{"--no-deref", "-d"}},
	{"diff-tree", []string{"-r", "-p", "--binary", "--full-index", "--no-renames", "--no-color", "-z", "--name-only", "--name-status", "--raw", "--root"}},
	{"fast-import", []string{"--quiet", "--done"}},
	{"cat-file", []string{"--batch", "--batch-check", "-t", "-s", "-e"}},
	{"worktree", []string{"add", "prune", "--no-checkout", "--detach", "--expire=", "-q", "--quiet"}},
}

// checkPlumbing refuses args unless Plumbing may run them.
func checkPlumbing(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no command: %w", ErrNotPlumbing)
	}
	i := slices.IndexFunc(plumbingFlags, func(p plumbingCommand) bool { return p.command == args[0] })
	if i < 0 {
		return fmt.Errorf("git %s %w", args[0], ErrNotPlumbing)
	}
	allowed, rest := plumbingFlags[i].flags, args[1:]
	switch args[0] {
	case "worktree":
		// add only without a checkout, which is what runs filters and
		// hooks in the new worktree's own configuration.
		if len(rest) == 0 || (rest[0] != "add" && rest[0] != "prune") {
			return fmt.Errorf("git worktree %v %w", rest, ErrNotPlumbing)
		}
		if rest[0] == "add" && !slices.Contains(rest, "--no-checkout") {
			return fmt.Errorf("git worktree add without --no-checkout %w", ErrNotPlumbing)
		}
	case "update-index":
		if !slices.Contains(rest, "--index-info") {
			return fmt.Errorf("git update-index without --index-info %w", ErrNotPlumbing)
		}
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue // a revision, tree or path: none is a work tree file to these commands
		}
		if args[0] == "commit-tree" && (a == "-p" || a == "-m") {
			i++
			continue
		}
		ok := slices.Contains(allowed, a)
		if k, _, found := strings.Cut(a, "="); found {
			ok = slices.Contains(allowed, k+"=")
		}
		if !ok {
			return fmt.Errorf("git %s %s %w", args[0], a, ErrNotPlumbing)
		}
	}
	return nil
}

// Plumbing runs one of the git commands that read and write only the
// object store, refs and index files (rev-parse, ls-files --stage [--debug],
// ls-tree, read-tree without -u, update-index --index-info, write-tree,
// commit-tree, update-ref, diff-tree, fast-import, cat-file without
// --filters or --textconv, worktree add --no-checkout and worktree
// prune), with stdin as its standard input (nil: none), and returns its
// standard output. Any other command or flag is ErrNotPlumbing: no
// command run here reads a work tree file, so none runs a clean or smudge
// filter, textconv, external diff or fsmonitor, whatever the repository's
// configuration says under whichever condition, and hooks are off. It
// reads no filter names first (Command does), so it costs one process.
//
// diff-tree is given --no-ext-diff and --no-textconv; commit-tree commits
// as "truss <truss@localhost>".
func (g Git) Plumbing(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	cmd, err := g.PlumbingCommand(ctx, args...)
	if err != nil {
		return "", err
	}
	cmd.Stdin = stdin
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// PlumbingCommand returns, not started, the git command Plumbing would
// run for args (ErrNotPlumbing for any other), for a caller that streams
// its input and output (a long-lived `cat-file --batch`). The caller sets
// its standard input, output and error.
func (g Git) PlumbingCommand(ctx context.Context, args ...string) (*exec.Cmd, error) {
	if err := checkPlumbing(args); err != nil {
		return nil, err
	}
	var extra [][2]string
	if args[0] == "commit-tree" {
		extra = [][2]string{{"user.name", "truss"}, {"user.email", "truss@localhost"}, {"user.useConfigOnly", "false"}}
	}
	return g.command(ctx, extra, args...), nil
}

// BlobID returns the object name git gives a blob with content data in a
// repository of the object format ("sha1" or "sha256").
func BlobID(format string, data []byte) (string, error) {
	h, err := NewBlobHash(format, int64(len(data)))
	if err != nil {
		return "", err
	}
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// NewBlobHash returns a hash that, once given exactly size bytes of
// content, sums to the name (binary) of the blob of that content in the
// object format ("sha1", "" or "sha256"): git hash-object of a stream.
func NewBlobHash(format string, size int64) (hash.Hash, error) {
	var h hash.Hash
	switch format {
	case "sha1", "":
		h = sha1.New()
	case "sha256":
		h = sha256.New()
	default:
		return nil, fmt.Errorf("unknown object format %q", format)
	}
	h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	return h, nil
}

// Repo is the identity of a repository's .git (a directory, or a
// "gitdir:" file) as found from a directory: where it is, and its device
// and inode, which no command can give another file.
type Repo struct {
	// DotGit is the path of the .git found; "" when there is none.
	DotGit   string
	Dev, Ino uint64
}

// Find returns the .git that git would find first from dir upwards (the
// nearest .git entry of dir or an ancestor), without running git, or the
// zero Repo when there is none. Only lstat is used: a .git that is a
// symbolic link is not a repository here.
func Find(dir string) (Repo, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Repo{}, err
	}
	for {
		p := filepath.Join(dir, ".git")
		var st unix.Stat_t
		err := unix.Lstat(p, &st)
		switch {
		case err == nil && (st.Mode&unix.S_IFMT == unix.S_IFDIR || st.Mode&unix.S_IFMT == unix.S_IFREG):
			return Repo{DotGit: p, Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
		case err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTDIR):
			return Repo{}, fmt.Errorf("look for a repository: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return Repo{}, nil
		}
		dir = parent
	}
}

// Same reports whether r and o are the same .git: the same path, device
// and inode, and not the zero Repo.
func (r Repo) Same(o Repo) bool {
	return r.DotGit != "" && r == o
}

// Package gitsafe runs git on the host over repositories whose contents and
// configuration Truss does not trust.
//
// A repository's own configuration (.git/config and what it includes, a
// worktree's config, .gitattributes) is written by whoever wrote the
// repository — and, in a workspace that had no .git when a session began,
// by the model's commands. Git runs programs that configuration names: the
// fsmonitor hook, hooks, clean and smudge filters, external diff and
// textconv drivers, pagers, credential helpers, ssh. Truss's own git
// invocations run none of them: every command is started with (settings
// in GIT_CONFIG_COUNT and its pairs, which override the repository's as -c
// does)
//
//   - no system or global configuration (GIT_CONFIG_NOSYSTEM,
//     GIT_CONFIG_GLOBAL=/dev/null, GIT_ATTR_NOSYSTEM) and none of the
//     caller's GIT_* variables;
//   - core.fsmonitor off, hooks from /dev/null, no pager, no external
//     diff, no ssh, no credential helper, no transport at all
//     (protocol.allow=never), no signing;
//   - every filter driver the repository's configuration defines emptied
//     (filter.NAME.clean, .smudge and .process set to "", which git takes
//     as no filter), since git has no switch that turns filters off:
//     the names are read first with `git config --get-regexp`, which runs
//     nothing;
//   - optional locks off, so status does not rewrite the index.
//
// Textconv and external diff drivers cannot be emptied the same way (git
// fails on an empty one), so the commands that show diffs — diff, log,
// show — are given --no-ext-diff and --no-textconv; other commands that
// can run them (blame, grep with --textconv) are not for Truss to run.
// A Git with GitDir and WorkTree set names the repository explicitly, so a
// .git file in a directory commands can write cannot point Truss at
// another repository.
//
// Emptying the drivers by name cannot be complete: a driver defined only
// under a condition (includeIf "gitdir:**/worktrees/**", "onbranch:"), or
// in an included file written after the names were read, is not among the
// names, and a command that starts git in another repository or work
// tree (worktree add's checkout) evaluates the conditions anew. Plumbing is
// the way that holds whatever the configuration says: it runs only the
// commands that never read or write a work-tree file, so no filter,
// textconv, external diff or fsmonitor can run at all. Truss's own
// operations on trees commands write (an isolated sub-agent's worktree,
// the change tracker's baseline and before contents) use Plumbing, with
// the files read and written, and judged clean or not, through
// internal/hostfs.
// Find and Repo.Same tell whether a workspace is still in the repository
// it was in when the session began: one that appeared later is the
// commands' own and is given no git at all.
package gitsafe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/trussdev/truss/internal/hostfs"
)

// Git is where git runs.
type Git struct {
	// Dir is the directory git runs in (-C).
	Dir string
	// GitDir and WorkTree, when set, are the repository and its working
	// tree (GIT_DIR, GIT_WORK_TREE), instead of what git finds from Dir.
	GitDir, WorkTree string
	// IndexFile, when set, is the index git uses (GIT_INDEX_FILE).
	IndexFile string
	// Bare runs git with --bare: no work tree at all, so that nothing,
	// not even a .gitattributes file, is read from one.
	Bare bool
	// Path, when set, is the PATH git is found in and given (a session's:
	// none of the directories its commands write, hostfs.SafePath);
	// otherwise hostfs.UserPath(). Either way the trees git works on are left out
	// of it.
	Path string

	// filters, set by Pinned, are the filter drivers read once.
	filters *[]string
}

// Pinned returns g with the repository's filter drivers read now, once:
// its commands empty those drivers without reading the configuration
// again (each reading is a git process). It is for a sequence of Truss's
// own commands none of which changes the repository's configuration, with
// nothing else writing it meanwhile.
func (g Git) Pinned(ctx context.Context) (Git, error) {
	names, err := g.Filters(ctx)
	if err != nil {
		return g, err
	}
	g.filters = &names
	return g, nil
}

// settings are the -c options of every invocation.
var settings = []string{
	"core.fsmonitor=false",
	"core.hooksPath=/dev/null",
	"core.pager=cat",
	"core.editor=false",
	"core.askPass=",
	"core.sshCommand=false",
	"credential.helper=",
	"diff.external=",
	"protocol.allow=never",
	// A repository's protocol.NAME.allow would override protocol.allow;
	// these, given on the command line, win over any of its includes.
	"protocol.file.allow=never",
	"protocol.ssh.allow=never",
	"protocol.git.allow=never",
	"protocol.http.allow=never",
	"protocol.https.allow=never",
	"protocol.ext.allow=never",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"submodule.recurse=false",
	"core.untrackedCache=false",
	"core.attributesFile=/dev/null",
	"core.alternateRefsCommand=",
	"sequence.editor=false",
	"gpg.program=false",
	"gpg.ssh.program=false",
	"gpg.x509.program=false",
	"gc.auto=0",
	"maintenance.auto=false",
}

// env returns the environment of every invocation: the caller's without
// its GIT_* variables, and the variables that keep configuration out.
func (g Git) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || k == "PAGER" || k == "LC_ALL" || k == "EDITOR" || k == "VISUAL" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "PAGER=cat", "GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_REPLACE_OBJECTS=1", "GIT_ADVICE=0", "LC_ALL=C")
	if g.GitDir != "" {
		env = append(env, "GIT_DIR="+g.GitDir)
	}
	if g.WorkTree != "" {
		env = append(env, "GIT_WORK_TREE="+g.WorkTree)
	}
	if g.IndexFile != "" {
		env = append(env, "GIT_INDEX_FILE="+g.IndexFile)
	}
	return env
}

// workTreeOf is the directory that holds the .git a path is in or below
// (the work tree of repo/.git/worktrees/x is repo's, as far as what
// commands write goes), else the path itself.
func workTreeOf(p string) string {
	p = filepath.Clean(p)
	sep := string(filepath.Separator)
	if i := strings.LastIndex(p+sep, sep+".git"+sep); i >= 0 {
		if i == 0 {
			return sep
		}
		return p[:i]
	}
	return p
}

// command is git with args and the settings, plus extra settings as
// key, value pairs. The settings go in GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n
// and GIT_CONFIG_VALUE_n, which take precedence as -c does, not in -c
// itself: a driver named "a=b" would make "-c filter.a=b.clean=" set
// filter.a.
func (g Git) command(ctx context.Context, extra [][2]string, args ...string) *exec.Cmd {
	if len(args) > 0 && (args[0] == "diff" || args[0] == "log" || args[0] == "show" || args[0] == "diff-tree") {
		args = append([]string{args[0], "--no-ext-diff", "--no-textconv"}, args[1:]...)
	}
	base := []string{"--no-pager"}
	if g.Bare {
		base = append(base, "--bare")
	}
	if g.Dir != "" {
		base = append(base, "-C", g.Dir)
	}
	cmd := exec.CommandContext(ctx, "git", append(base, args...)...)
	// git is found, and finds what it runs, only in PATH entries outside
	// the trees it works on: a command that wrote a git into the
	// workspace's activated .venv/bin is not run.
	var exclude []string
	for _, d := range []string{g.Dir, g.WorkTree, g.GitDir} {
		if d != "" {
			exclude = append(exclude, d, workTreeOf(d))
		}
	}
	path := g.Path
	if path == "" {
		path = hostfs.UserPath()
	}
	path = hostfs.SafePath(path, exclude)
	cmd.Path, cmd.Err = "git", nil
	if exe, err := hostfs.LookPath("git", path); err != nil {
		cmd.Err = err
	} else {
		cmd.Path = exe
	}
	env := g.env()
	env = append(env, "PATH="+path)
	kv := extra[:0:0]
	for _, s := range settings {
		k, v, _ := strings.Cut(s, "=")
		kv = append(kv, [2]string{k, v})
	}
	kv = append(kv, extra...)
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(kv)))
	for i, p := range kv {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, p[1]))
	}
	cmd.Env = env
	return cmd
}

// Filters returns the names of the filter drivers the repository's
// configuration defines.
func (g Git) Filters(ctx context.Context) ([]string, error) {
	cmd := g.command(ctx, nil, "config", "--includes", "--name-only", "--get-regexp", `^filter\.`)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 { // no such key
			return nil, nil
		}
		return nil, fmt.Errorf("git config: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return filterNames(out.String()), nil
}

// filterNames reads the driver names from `git config --name-only` output
// (one key a line, "filter.NAME.KEY"; NAME may hold dots), each once.
func filterNames(out string) []string {
	seen := map[string]bool{}
	var names []string
	for _, key := range strings.Split(strings.TrimSpace(out), "\n") {
		rest, ok := strings.CutPrefix(key, "filter.")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i < 0 {
			continue
		}
		if n := rest[:i]; !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

// Command returns git with args, ready to run in the repository with
// every program the repository could name disabled.
func (g Git) Command(ctx context.Context, args ...string) (*exec.Cmd, error) {
	var filters []string
	if g.filters != nil {
		filters = *g.filters
	} else {
		var err error
		if filters, err = g.Filters(ctx); err != nil {
			return nil, err
		}
	}
	var extra [][2]string
	for _, n := range filters {
		for _, k := range []string{"clean", "smudge", "process"} {
			extra = append(extra, [2]string{"filter." + n + "." + k, ""})
		}
		extra = append(extra, [2]string{"filter." + n + ".required", "false"})
	}
	return g.command(ctx, extra, args...), nil
}

// Output runs git with args and returns its standard output; a failure's
// error carries its standard error.
func (g Git) Output(ctx context.Context, args ...string) (string, error) {
	cmd, err := g.Command(ctx, args...)
	if err != nil {
		return "", err
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// State is what a repository's work tree is at: the commit checked out and
// whether anything differs from it.
type State struct {
	Head  string // full object name of HEAD; "" on a repository with no commit yet
	Dirty bool   // a tracked file differs from HEAD, or an untracked file is not ignored
}

// State reads the repository's state with one `git status` (porcelain v2,
// which reports HEAD's object name too), run as Command runs every git.
// Its output is read a line at a time and git is stopped at the first
// change, which is all Dirty needs: a work tree with a million untracked
// names costs a line, not their listing in memory. An error means dir is
// not in a work tree or git failed.
func (g Git) State(ctx context.Context) (State, error) {
	args := []string{"status", "--porcelain=v2", "--branch", "--ignore-submodules=all"}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, err := g.Command(ctx, args...)
	if err != nil {
		return State{}, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return State{}, err
	}
	if err := cmd.Start(); err != nil {
		return State{}, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	var s State
	r := bufio.NewReaderSize(out, 64<<10)
	for {
		line, rerr := r.ReadSlice('\n')
		if len(line) > 0 && readStateLine(&s, strings.TrimSuffix(string(line), "\n")) {
			// A change: git is stopped, and its status is not asked.
			cancel()
			cmd.Wait()
			return s, nil
		}
		if rerr == bufio.ErrBufferFull {
			// A header line never gets this long: a change's.
			s.Dirty = true
			cancel()
			cmd.Wait()
			return s, nil
		}
		if rerr != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return State{}, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return s, nil
}

// readStateLine reads one line of `git status --porcelain=v2 --branch`
// into s and reports whether it is a change (Dirty then set).
func readStateLine(s *State, l string) bool {
	switch {
	case l == "":
	case strings.HasPrefix(l, "# branch.oid "):
		if oid := strings.TrimPrefix(l, "# branch.oid "); oid != "(initial)" {
			s.Head = oid
		}
	case strings.HasPrefix(l, "# "):
	default:
		s.Dirty = true
		return true
	}
	return false
}

// limitedWriter keeps the first n bytes written to it in w and drops the
// rest, never failing a write.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// Package gitsafe runs git on the host over repositories whose contents and
// configuration Truss does not trust.
//
// A repository's own configuration (.git/config and what it includes, a
// worktree's config, .gitattributes) is written by whoever wrote the
// repository — and, in a workspace that had no .git when a session began,
// by the model's commands. Git runs programs that configuration names: the
// fsmonitor hook, hooks, clean and smudge filters, external diff and
// textconv drivers, pagers, credential helpers, ssh. Truss's own git
// invocations run none of them: every command is started with
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
package gitsafe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Git is where git runs.
type Git struct {
	// Dir is the directory git runs in (-C).
	Dir string
	// GitDir and WorkTree, when set, are the repository and its working
	// tree (GIT_DIR, GIT_WORK_TREE), instead of what git finds from Dir.
	GitDir, WorkTree string
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
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"submodule.recurse=false",
	"core.untrackedCache=false",
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
	return env
}

// base is the command line before the subcommand.
func (g Git) base(extra []string) []string {
	args := []string{"--no-pager"}
	if g.Dir != "" {
		args = append(args, "-C", g.Dir)
	}
	for _, s := range append(settings[:len(settings):len(settings)], extra...) {
		args = append(args, "-c", s)
	}
	return args
}

func (g Git) command(ctx context.Context, extra []string, args ...string) *exec.Cmd {
	if len(args) > 0 && (args[0] == "diff" || args[0] == "log" || args[0] == "show") {
		args = append([]string{args[0], "--no-ext-diff", "--no-textconv"}, args[1:]...)
	}
	cmd := exec.CommandContext(ctx, "git", append(g.base(extra), args...)...)
	cmd.Env = g.env()
	cmd.Stdin = nil
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
	seen := map[string]bool{}
	var names []string
	for _, key := range strings.Split(strings.TrimSpace(out.String()), "\n") {
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
	return names, nil
}

// Command returns git with args, ready to run in the repository with
// every program the repository could name disabled.
func (g Git) Command(ctx context.Context, args ...string) (*exec.Cmd, error) {
	filters, err := g.Filters(ctx)
	if err != nil {
		return nil, err
	}
	var extra []string
	for _, n := range filters {
		extra = append(extra, "filter."+n+".clean=", "filter."+n+".smudge=", "filter."+n+".process=", "filter."+n+".required=false")
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

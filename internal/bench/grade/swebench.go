package grade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/swebench"
	"github.com/trussdev/truss/internal/container"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/validate"
)

// RulesTruss is Verdict.Rules for a verdict under Truss's own rules: the
// task's test_cmd (or the detected test command) runs, each listed test's
// verdict is read from go test -json, pytest or JUnit output (else the
// command's exit status stands for all), and the task is resolved iff
// every listed test passed.
const RulesTruss = "truss"

// LiveRules are the rules a SWE-bench record is graded live under when
// the Grader does not choose: v4.1.0's. Live grading writes the test log
// itself, with the start and end markers that the harness's eval script
// has printed since v3 around the test command's output; v4.1 reads the
// text between them (the whole log when that parses to nothing), needs
// no v2 "Applied Patch" line, and, unlike v5, no exit-code line or sign
// that a known suite ran. (swebench.DefaultRules, v2.0.13, is the default
// for grading logs the harness wrote, to compare with the leaderboard.)
const LiveRules = swebench.RulesV4_1

// The lines live grading writes around the test output: the eval script's
// markers as its `set -x` trace prints them.
const (
	liveStart = "+ : '" + swebench.MarkerStartTestOutput + "'"
	liveEnd   = "+ : '" + swebench.MarkerEndTestOutput + "'"
)

// condaActivate activates the environment of SWE-bench's images (conda's
// "testbed", as the harness's eval script does first) when the image has
// conda; elsewhere it does nothing.
const condaActivate = "if [ -f /opt/miniconda3/bin/activate ]; then . /opt/miniconda3/bin/activate && conda activate testbed; fi"

// liveSpec is how a SWE-bench record is graded live: the harness's spec
// for it, what swebench.Grade needs of it, and the rules.
type liveSpec struct {
	spec  *swebench.Spec
	inst  swebench.Instance
	rules swebench.Rules
}

// harnessRepo returns the task's repository as the harness names it,
// "owner/name": task.Repo when it has that form (one slash, neither part
// empty, not a path that starts with "/", "./" or "../"). A local path
// (RepoDir, or a Repo that is a path) names no harness repository.
func harnessRepo(repo string) (string, bool) {
	if strings.HasPrefix(repo, "/") || strings.HasPrefix(repo, "./") || strings.HasPrefix(repo, "../") {
		return "", false
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") || owner == "." || owner == ".." {
		return "", false
	}
	return repo, true
}

// liveFor returns how task is graded live, or nil when it is not: it has
// a test_cmd, its repository is not one the harness's spec table knows
// (unknown to the harness, or a Multilingual one whose commands are
// per-instance task data), or it has no version. A known repository with
// a version its spec table lacks is an error (wrapping
// *swebench.UnknownVersionError): grading it some other way would not be
// the harness's grading. So is a Grader.Rules value swebench does not
// define.
func (g *Grader) liveFor(task *bench.Task) (*liveSpec, error) {
	if task.TestCmd != "" {
		return nil, nil
	}
	repo, ok := harnessRepo(task.Repo)
	if !ok {
		return nil, nil
	}
	spec, err := swebench.SpecFor(repo, task.Version, task.TestPatch)
	var unknownRepo *swebench.UnknownRepoError
	var perInstance *swebench.InstanceCommandsError
	var unknownVersion *swebench.UnknownVersionError
	switch {
	case errors.As(err, &unknownRepo), errors.As(err, &perInstance):
		return nil, nil
	case errors.As(err, &unknownVersion) && strings.TrimSpace(task.Version) == "":
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("instance %s: no test_cmd, and %w", task.InstanceID, err)
	}
	rules := g.Rules
	if rules == "" {
		rules = LiveRules
	}
	if err := rules.Check(); err != nil {
		return nil, fmt.Errorf("grading %s: %w", task.InstanceID, err)
	}
	return &liveSpec{spec: spec, rules: rules, inst: swebench.Instance{InstanceID: task.InstanceID, Repo: repo,
		Version: task.Version, FailToPass: task.FailToPass, PassToPass: task.PassToPass}}, nil
}

// step is a command run before the tests; fatal says whether its failure
// stops the grading (the tests do not run).
type step struct {
	cmd   string
	fatal bool
}

// steps are the commands run before the spec's test command, in order:
// conda's activation, the task's setup_cmd (fatal, as for any task), then
// the spec's eval commands (django's locale settings), which, as in the
// harness's eval script (no `set -e`), do not stop the tests when they
// fail.
func (l *liveSpec) steps(task *bench.Task) []step {
	s := []step{{cmd: condaActivate}}
	for _, c := range task.SetupCmd {
		s = append(s, step{cmd: c, fatal: true})
	}
	for _, c := range l.spec.Setup {
		s = append(s, step{cmd: c})
	}
	return s
}

// env is the setup and test commands as the verdict records them.
func (l *liveSpec) env(task *bench.Task) validate.Env {
	e := validate.Env{Test: l.spec.Command, Source: "swebench spec " + l.spec.Repo + " " + l.spec.Version}
	for _, s := range l.steps(task) {
		e.Setup = append(e.Setup, s.cmd)
	}
	return e
}

// run runs the steps and the spec's test command in sh within timeout
// (all of them together), writes the test log as the harness's eval
// script would have printed it, grades it under the rules and fills v.
// The error is for a shell that failed (it could not start, a sandbox
// limit) or a cancelled ctx, not for tests that failed.
func (l *liveSpec) run(ctx context.Context, task *bench.Task, sh validate.Shell, timeout time.Duration, v *Verdict) error {
	deadline := time.Now().Add(timeout)
	left := func() time.Duration { return max(time.Until(deadline), time.Second) }
	shellFailed := func(res tool.Result) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if res.Err != nil && res.ExitCode == nil && !res.TimedOut {
			return fmt.Errorf("running the tests: %s", res.Err.Message)
		}
		return nil
	}
	v.Source = "swebench:" + l.spec.Parser
	for _, s := range l.steps(task) {
		res := sh.Run(ctx, s.cmd, left())
		if err := shellFailed(res); err != nil {
			return err
		}
		if res.TimedOut || (s.fatal && res.Err != nil) {
			v.Log = []byte(res.Stdout + res.Stderr)
			v.SetupFailed, v.TimedOut, v.ExitCode = s.cmd, res.TimedOut, exitCode(res)
			for _, name := range task.Tests() {
				v.Tests[name] = bench.TestMissing
			}
			return nil
		}
	}
	// What the steps started (a build script of the checkout's, run by
	// an install) does not run on into the tests (validate.StrayKiller).
	if k, ok := sh.(validate.StrayKiller); ok {
		switch err := k.KillOthers(ctx); {
		case errors.Is(err, validate.ErrStraysUnreachable):
			v.Notes = append(v.Notes, straysNote)
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("after the setup commands: %w", err)
		}
	}
	if f, ok := sh.(validate.CacheFreshener); ok {
		if err := f.FreshCaches(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("after the setup commands: %w", err)
		}
	}
	res := sh.Run(ctx, l.spec.Command, left())
	if err := shellFailed(res); err != nil {
		return err
	}
	v.ExitCode, v.TimedOut = exitCode(res), res.TimedOut
	log := l.log(res, timeout)
	v.Log = []byte(log)
	sv, err := swebench.Grade(l.inst, log, l.rules)
	if err != nil {
		return err
	}
	for name, s := range sv.Tests {
		v.Tests[name] = s
	}
	// A run that timed out gets no report from the harness (it stops
	// with an error): not resolved, whatever its log holds.
	v.Resolved = sv.PatchApplied && sv.Resolved && !res.TimedOut
	return nil
}

// log is the test log as the harness's test_output.txt holds it: the
// test command's output (stdout, then stderr) between the start and end
// markers; under the v2 rules after the "Applied Patch (pred)" line their
// harness wrote; under v5's followed by the exit code line its eval
// script prints; for a command that timed out, followed by the
// harness's timeout line.
func (l *liveSpec) log(res tool.Result, timeout time.Duration) string {
	var b strings.Builder
	line := func(s string) {
		b.WriteString(s)
		if s != "" && !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	}
	if l.rules == swebench.RulesV2_0 || l.rules == swebench.RulesV2_1 {
		line(swebench.MarkerApplyPatchPass + " (pred)")
	}
	line(liveStart)
	line(res.Stdout)
	line(res.Stderr)
	line(liveEnd)
	if l.rules == swebench.RulesV5 {
		line(fmt.Sprintf("%s: %d", swebench.MarkerTestExitCode, exitCode(res)))
	}
	if res.TimedOut {
		line(fmt.Sprintf("\n\nTimeout error: %d seconds exceeded.", int(timeout.Seconds())))
	}
	return b.String()
}

// exitCode is a result's exit status, -1 when it has none (killed).
func exitCode(res tool.Result) int {
	if res.ExitCode != nil {
		return *res.ExitCode
	}
	return -1
}

// containerShell is a shell that runs in a container (InImage's): the
// facts of its environment, of which a verdict records the image's
// identity. It is detected by a type assertion, so a Shells need not
// implement it.
type containerShell interface {
	Facts() container.Facts
}

// recordEnvironment records in v where sh runs: its sandbox, and the
// image of its container when it says.
func recordEnvironment(v *Verdict, sh validate.Shell) {
	if e, ok := sh.(interface{ Enforced() string }); ok {
		v.Sandbox = e.Enforced()
	}
	if c, ok := sh.(containerShell); ok {
		f := c.Facts()
		v.ImageID, v.ImageRepoDigests = f.ImageID, f.RepoDigests
	}
}

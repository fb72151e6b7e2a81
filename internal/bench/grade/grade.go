// Package grade is the benchmark's grader, at the verification boundary:
// in a fresh checkout of a task's repository at base_commit it applies the
// model's patch, puts back every test file the patch touched as the base
// has it and notes the test configuration it changed (testcode.go), applies
// the task's test_patch (which wins over the model's changes to those
// files), runs the setup and the tests in a fresh sandboxed shell, and
// reads each listed test's verdict from the test runner's structured
// output; where it ran go test itself it asks the test binaries again
// (gocheck.go). A task is resolved iff every FAIL_TO_PASS and PASS_TO_PASS
// test passed; a listed test that did not run is missing and counts as
// failed (the rules named RulesTruss).
//
// A SWE-bench record (no test_cmd; a repository and version the official
// harness's spec table knows, internal/bench/swebench) is graded live as
// the harness grades it instead: the spec's test command with the test
// patch's directives, its log read by the repository's parser and judged
// under the Grader's swebench.Rules (swebench.go).
package grade

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/swebench"
	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/validate"
)

// Grader grades patches.
type Grader struct {
	// Shells starts the shell the setup and tests run in.
	Shells Shells
	// Dir is where grading checkouts are made (and removed); "" means
	// the system's temporary directory.
	Dir string
	// Timeout bounds the setup and test commands together; 0 means 30
	// minutes.
	Timeout time.Duration
	// Checkouts, when set, makes the checkouts from templates (faster
	// for a task graded more than once).
	Checkouts *bench.Templates
	// Janitor, when set, removes the grading checkouts in the
	// background (its owner waits for it); else they are removed before
	// Grade returns.
	Janitor *bench.Janitor
	// Rules are the SWE-bench harness's rules a SWE-bench record is
	// graded under when it is graded live (see swebench.go); "" means
	// LiveRules. They do not apply to a task with a test_cmd or one whose
	// repository the harness does not know.
	Rules swebench.Rules
}

// Private is what a Shells' graded commands write outside the grading
// directory (their caches), which the agents of other runs must not read.
type Private interface {
	Private() []string
}

// Confiner is a Shells that hides and covers host paths from every
// grading's commands (Sandboxed): Confinement returns them, absolute.
type Confiner interface {
	Confinement() (hidden, covered []string)
}

// Confinement returns what every grading's commands hide and cover
// besides their own grading's (the Shells' Confiner), for a worker's
// gradings to hide and cover as well; nothing for shells that see no host
// path, or a nil Grader.
func (g *Grader) Confinement() (hidden, covered []string) {
	if g == nil {
		return nil, nil
	}
	if c, ok := g.Shells.(Confiner); ok {
		return c.Confinement()
	}
	return nil, nil
}

// Private returns what the graded commands write and the runs' agents
// must not read: Dir (the grading checkouts, with the hidden tests
// applied, and their temporary directories) and what the Shells say
// (Private). Dir "" is the temporary directory, which is not returned.
func (g *Grader) Private() []string {
	var out []string
	if g.Dir != "" {
		out = append(out, g.Dir)
	}
	if p, ok := g.Shells.(Private); ok {
		out = append(out, p.Private()...)
	}
	return out
}

// Verdict is a grading's outcome.
type Verdict struct {
	Resolved bool `json:"resolved"`
	// PatchApplied is false when the patch did not apply: nothing else
	// was done, and Tests is empty.
	PatchApplied bool `json:"patch_applied"`
	// ApplyError is git apply's complaint when the patch did not apply.
	ApplyError string `json:"apply_error,omitempty"`
	// Tests holds each listed test's verdict: bench.TestPassed,
	// bench.TestFailed, bench.TestMissing, or (a SWE-bench record's,
	// graded live) swebench.TestSkipped, a test its harness counted
	// neither passed nor failed.
	Tests map[string]string `json:"tests"`
	// Rules names the rules that decided Resolved: a SWE-bench harness
	// release (a swebench.Rules value, "swebench-v4.1.0") for a SWE-bench
	// record graded live, else RulesTruss. Every verdict has it, one whose
	// patch did not apply too.
	Rules string `json:"rules"`
	// Command is the test command; Setup the setup commands. Source says
	// where the verdicts came from: "go test -json", "pytest", "junit"
	// or "exit status" (the whole command's, for every listed test) under
	// RulesTruss; "swebench:PARSER" (the harness's log parser, e.g.
	// "swebench:parse_log_flask") for a SWE-bench record graded live;
	// "go test -json and pytest" for output of a command of neither kind
	// that held both, from which nothing was read (readOutput).
	Command string   `json:"command"`
	Setup   []string `json:"setup,omitempty"`
	Source  string   `json:"source"`
	// CheckedAgainst names the test output a JUnit report's verdicts
	// were checked against ("go test -json", "pytest") when the log held
	// one; a listed test on which they disagree failed (see Notes).
	CheckedAgainst string `json:"checked_against,omitempty"`
	// Detected is the file the test command was detected from ("go.mod",
	// "Makefile", …) when the task has no test_cmd: read on the base
	// checkout with the test patch, before the model's patch.
	Detected string `json:"detected_from,omitempty"`
	// Notes say what the grader saw that bears on the verdict: why a
	// declared JUnit report was not used, a report that disagrees with
	// the test output, a model's patch that changed the file the test
	// command was detected from, test code set aside, test configuration
	// changed, a test binary whose output cannot be trusted.
	Notes []string `json:"notes,omitempty"`
	// TestCodeSetAside lists the test files (slash-separated paths in
	// the repository: Go's *_test.go, Python's test_*.py, *_test.py and
	// conftest.py, at any depth) that the model's patch added, changed or
	// deleted and that were put back as base_commit has them (removed
	// when new) before the test patch was applied: the tests that ran
	// are the task's, never the model's. The verdict does not depend on
	// the model's version of them. Empty when the patch left test code
	// alone.
	TestCodeSetAside []string `json:"test_code_set_aside,omitempty"`
	// ConfigChanged lists the files configuring the tests that the
	// model's patch changed, added or deleted and that were graded as
	// the patch left them (a fix may need them): pytest.ini, .pytest.ini,
	// pytest.toml, tox.ini, setup.cfg, pyproject.toml, entry_points.txt,
	// sitecustomize.py, usercustomize.py, go.work at any depth; go.mod's go, toolchain and replace lines; and the file the
	// test command was detected from, whole. A file the test patch
	// touches is not listed (its version is the task's). A verdict with
	// this field set deserves a look at the patch: the configuration
	// can load code that changes what the tests report.
	ConfigChanged []string `json:"config_changed,omitempty"`
	// Untrusted lists the Go packages whose test binary, asked again
	// after the run for a test that does not exist or for the listed
	// tests alone, reported a test it was not asked for, or did not
	// pass the listed tests it had passed: their output cannot be
	// trusted and every listed test of theirs failed. Checked only where
	// the grader chose the command (the detected go test -json ./...).
	// Under the detected python -m pytest -rA it holds the test file in
	// which the grader's own failing test was reported passed: the run's
	// reports cannot be trusted, and every listed test failed; the
	// same where no report was read and the run exited 0 though the
	// canary was in it. It also holds the test files the setup commands
	// changed (or added where the test patch's files are), which makes
	// every listed test fail under any command.
	Untrusted []string `json:"untrusted_packages,omitempty"`
	// SetupFailed is the setup command that failed (the tests did not
	// run).
	SetupFailed string `json:"setup_failed,omitempty"`
	// TestPatchFailed is why the test patch, which applies to the base,
	// did not apply over the model's patch: nothing ran, every listed
	// test is missing, and the task is not resolved.
	TestPatchFailed string `json:"test_patch_failed,omitempty"`
	ExitCode        int    `json:"exit_code"`
	// TimedOut says the setup and test commands did not end within the
	// Grader's Timeout: the task is not resolved, whatever the listed
	// tests' verdicts read from the output so far (as SWE-bench's
	// harness, which writes no report for a run that timed out).
	TimedOut bool `json:"timed_out,omitempty"`
	// Sandbox names the sandbox the commands ran in.
	Sandbox string `json:"sandbox,omitempty"`
	// ImageID is the image the commands ran in, when they ran in a
	// container: its config digest ("sha256:…") as the engine resolved the
	// reference when the container started, which a tag moved later does
	// not change; ImageRepoDigests are the registry digests the engine
	// knows for it (none for an image built or imported locally). Both are
	// empty when the shell does not say (a host sandbox).
	ImageID          string   `json:"image_id,omitempty"`
	ImageRepoDigests []string `json:"image_repo_digests,omitempty"`
	// PatchSHA256 identifies the graded patch.
	PatchSHA256 string `json:"patch_sha256"`
	// PrepareS is the time spent making the checkout and applying the
	// patches and starting the shell (the Prepare's time included,
	// though a runner overlaps it with the agent's); TestS the setup and
	// tests' own.
	PrepareS float64 `json:"prepare_s"`
	TestS    float64 `json:"test_s"`
	// CheckS is the time spent asking the test binaries again after the
	// tests (see Untrusted), not part of TestS; 0 when none was asked.
	CheckS float64 `json:"check_s,omitempty"`
	// Log is the test command's output (stdout then stderr).
	Log []byte `json:"-"`
}

// NotResolvedPatchFailed is the verdict's text when the patch did not apply.
const NotResolvedPatchFailed = "not resolved: patch failed"

// String says the verdict in a few words.
func (v *Verdict) String() string {
	switch {
	case !v.PatchApplied:
		return NotResolvedPatchFailed
	case v.Resolved:
		return "resolved"
	case v.SetupFailed != "":
		return "not resolved: setup failed"
	case v.TestPatchFailed != "":
		return "not resolved: the test patch did not apply over the patch"
	case v.TimedOut:
		return "not resolved: the tests timed out"
	}
	failed := 0
	for _, s := range v.Tests {
		if s != bench.TestPassed {
			failed++
		}
	}
	return fmt.Sprintf("not resolved: %d of %d listed tests failed or missing", failed, len(v.Tests))
}

// Grade grades patch (a unified diff against base_commit; "" for none) on
// task. An error means the grading itself could not be done (the
// repository has no base_commit, the test_patch does not apply, no test
// command, the sandbox cannot start), not that the patch is wrong. It is
// Prepare followed by the Prepared's Grade.
func (g *Grader) Grade(ctx context.Context, task *bench.Task, patch string) (*Verdict, error) {
	p, err := g.Prepare(ctx, task)
	if err != nil {
		return nil, err
	}
	return p.Grade(ctx, patch)
}

// Prepared is a grading checkout made before the patch to grade exists:
// the task's repository at base_commit in a directory of its own, outside
// any workspace, with nothing of the test patch in it or beside it
// (Prepare reads the test patch's file list and the base's version of
// those files, kept in memory; Grade writes the patch and applies it,
// after the model's). The checkout appears at DIR/repo once ready. A
// runner prepares it while the agent works, so that grading after the
// diff is left with applying the patches and running the tests.
//
// Grade grades once and removes the checkout; Close removes it without
// grading. Every Prepared must be graded or closed. Its methods are not
// for concurrent use.
type Prepared struct {
	g    *Grader
	task *bench.Task
	// dir holds ws, the checkout, and the patches' files; git runs
	// there (its configuration is the template's, which no patch
	// reaches).
	dir, ws, base string
	git           gitsafe.Git
	took          time.Duration
	// restore is the base's version of every file the test patch
	// touches; testErr what was wrong with the test patch (reported when
	// it is applied, as it would have been then).
	restore []baseFile
	testErr error
	done    bool
	// live is how a SWE-bench record is graded live; nil for Truss's
	// own grading.
	live *liveSpec
	// env is the setup and test commands, decided in Prepare (a task's
	// own, or detected on the base checkout); redetect says the test
	// patch touches a file detection reads, so Grade detects again on
	// the base with the test patch, before the model's patch.
	env      validate.Env
	redetect bool
	// tree is the base checkout's test code, test configuration and
	// root marker files (scanTree), against which the model's patch is
	// compared.
	tree treeScan
	// module is the module path of the base's root go.mod ("" when
	// none), by which the test patch's packages are named (goHomes),
	// and the paths its ignore directives keep out of go test ./....
	module     string
	modIgnores []string
}

// baseFile is a file as base_commit has it: absent, a regular file
// (data, perm) or a symbolic link (link).
type baseFile struct {
	path    string
	present bool
	symlink bool
	perm    fs.FileMode
	data    []byte
	link    string
}

// Prepare makes task's grading checkout at base_commit. On an error
// nothing of it is left (Janitor's removals aside). A SWE-bench record
// that cannot be graded as its harness would (a known repository, a
// version its spec table lacks; an unknown Grader.Rules) is an error here,
// before any checkout is made.
func (g *Grader) Prepare(ctx context.Context, task *bench.Task) (_ *Prepared, err error) {
	start := time.Now()
	live, err := g.liveFor(task)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(g.Dir, "grade-"+safeName(task.InstanceID)+"-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			g.Janitor.Remove(dir)
		}
	}()
	// The checkout is made under another name and appears as dir/repo
	// when it is ready.
	p := &Prepared{g: g, task: task, dir: dir, ws: filepath.Join(dir, "repo"), live: live}
	part := filepath.Join(dir, "repo.partial")
	if p.base, err = g.Checkouts.Checkout(ctx, task.RepoDir, task.BaseCommit, part); err != nil {
		return nil, err
	}
	if p.git, err = (gitsafe.Git{Dir: part}).Pinned(ctx); err != nil {
		return nil, err
	}
	if strings.TrimSpace(task.TestPatch) != "" {
		// The test patch stays in memory: a run prepares while its agent
		// works, and the agent's commands can read this directory.
		p.restore, p.testErr = readTestFiles(ctx, p.git, task.TestPatch)
		if p.testErr != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if live == nil {
		// The commands are decided on the base, before any patch: a
		// model's patch cannot choose them.
		if p.env, err = taskEnv(task); err != nil {
			return nil, err
		}
		if p.env.Test == "" {
			p.redetect = p.testErr == nil && touchesMarker(p.restore)
			if !p.redetect {
				if err = p.detect(part); err != nil {
					return nil, err
				}
			}
		}
	}
	if p.tree, err = scanTree(part); err != nil {
		return nil, err
	}
	if mod, err := hostfs.ReadFileIn(part, "go.mod", 1<<20); err == nil {
		p.module, p.modIgnores = modulePath(mod), modIgnores(mod)
	}
	if err = os.Rename(part, p.ws); err != nil {
		return nil, err
	}
	p.git.Dir = p.ws
	p.took = time.Since(start)
	return p, nil
}

// Close removes the checkout (through the Grader's Janitor when it has
// one). Closing again, or after Grade, does nothing.
func (p *Prepared) Close() {
	if !p.done {
		p.done = true
		p.g.Janitor.Remove(p.dir)
	}
}

// Grade grades patch in the prepared checkout, as the Grader's Grade
// does, and removes the checkout.
func (p *Prepared) Grade(ctx context.Context, patch string) (*Verdict, error) {
	if p.done {
		return nil, errors.New("grading: the prepared checkout was graded or closed already")
	}
	defer p.Close()
	start := time.Now()
	task, ws, dir := p.task, p.ws, p.dir
	v := &Verdict{Tests: map[string]string{}, PatchSHA256: digest(patch), Rules: RulesTruss}
	if p.live != nil {
		v.Rules = string(p.live.rules)
	}
	prepared := func() float64 { return (p.took + time.Since(start)).Seconds() }
	if p.redetect {
		// The test patch changes a file detection reads: detect on the
		// base with it, then put the base back, all before the model's
		// patch.
		if err := p.applyTestPatch(ctx); err != nil {
			return nil, fmt.Errorf("instance %s: test_patch: %w", task.InstanceID, err)
		}
		if err := p.detect(ws); err != nil {
			return nil, err
		}
		if err := restore(ws, p.restore); err != nil {
			return nil, err
		}
	}
	// The patches are kept outside the checkout, where the tests cannot
	// see them.
	if strings.TrimSpace(patch) != "" {
		fellBack, err := apply(ctx, p.git, filepath.Join(dir, "model.patch"), patch)
		if err != nil {
			var ae *applyError
			if errors.As(err, &ae) {
				v.ApplyError = ae.msg
				v.Notes = append(v.Notes, "the patch did not apply: "+ae.msg)
				v.PrepareS = prepared()
				return v, nil
			}
			return nil, err
		}
		if fellBack {
			// GNU patch was refused any .git path, and the configuration
			// is read again all the same: what fails now is the patch's
			// doing, not the grading's.
			if p.git, err = (gitsafe.Git{Dir: ws}).Pinned(ctx); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				v.ApplyError = "after GNU patch applied it, the checkout's git configuration could not be read: " + err.Error()
				v.Notes = append(v.Notes, "the patch did not apply: "+v.ApplyError)
				v.PrepareS = prepared()
				return v, nil
			}
		}
	}
	// The test code is the task's: what the model's patch did to test
	// files is undone before the test patch is applied; what it did to
	// the tests' configuration is flagged.
	after, err := scanTree(ws)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The base's checkout was scanned: what cannot be now (a name
		// that is not UTF-8, which Go's file systems refuse) is the
		// patch's doing, a failed patch and not a grading error.
		v.ApplyError = "the checkout could not be read after the patch: " + err.Error()
		v.Notes = append(v.Notes, "the patch did not apply: "+v.ApplyError)
		v.PrepareS = prepared()
		return v, nil
	}
	v.PatchApplied = true
	if v.TestCodeSetAside, err = p.setAsideTestCode(ctx, after); err != nil {
		return nil, err
	}
	if len(v.TestCodeSetAside) > 0 {
		v.Notes = append(v.Notes, "the model's changes to test code are not used for grading: "+strings.Join(v.TestCodeSetAside, ", "))
	}
	if strings.TrimSpace(task.TestPatch) != "" {
		if err := p.applyTestPatch(ctx); err != nil {
			if p.testErr != nil || ctx.Err() != nil {
				return nil, fmt.Errorf("instance %s: test_patch: %w", task.InstanceID, err)
			}
			// It applies to the base (Prepare checked): what stops it now
			// is the model's patch, and the task's tests cannot run.
			v.TestPatchFailed = err.Error()
			v.Notes = append(v.Notes, "the test patch, which applies to the base, did not apply over the model's patch, so the listed tests did not run: "+err.Error())
			for _, name := range task.Tests() {
				v.Tests[name] = bench.TestMissing
			}
			v.PrepareS = prepared()
			return v, nil
		}
	}
	env := p.env
	marker := ""
	if p.live != nil {
		env = p.live.env(task)
	} else if env.Source != "test_cmd" {
		v.Detected = env.Source
		marker = env.Source
	}
	var notes []string
	v.ConfigChanged, notes = p.configChanges(after, marker)
	v.Notes = append(v.Notes, notes...)
	v.Command, v.Setup = env.Test, env.Setup
	// A JUnit report is read only when the task says its command writes
	// one: then the grading gets a report directory of its own, made now
	// under a fresh name beside the checkout (no patch can have put
	// anything there), the one place outside the checkout its commands
	// may write, bound back in the covered grader's directory so that no
	// other grading sees it.
	junitDeclared := task.JUnit && p.live == nil
	var reports string
	var envs, writable []string
	if junitDeclared {
		var err error
		if reports, err = os.MkdirTemp(dir, "report-"); err != nil {
			return nil, fmt.Errorf("the grading's report directory: %w", err)
		}
		envs = []string{"TRUSS_BENCH_JUNIT=" + filepath.Join(reports, junitName)}
		writable = []string{reports}
	}
	shells := p.g.Shells
	if ts, ok := shells.(TaskShells); ok {
		if shells, err = ts.ForTask(task); err != nil {
			return nil, err
		}
	}
	var sh validate.Shell
	if hs, ok := shells.(HidingShells); ok {
		// Checkouts made ahead hold other tasks' trees, perhaps a later
		// commit's with this task's fix; the grader's directory holds
		// every other grading's checkout (a patch that resolves it, its
		// caches) and this one's patches.
		sh, err = hs.OpenHiding(ws, envs, p.g.Checkouts.Private(), []string{filepath.Dir(dir)}, writable)
	} else {
		sh, err = shells.Open(ws, envs)
	}
	if err != nil {
		return nil, err
	}
	recordEnvironment(v, sh)
	timeout := p.g.Timeout
	if timeout == 0 {
		timeout = 30 * time.Minute
	}
	if p.live != nil {
		defer sh.Close()
		v.PrepareS = prepared()
		tstart := time.Now()
		err := p.live.run(ctx, task, sh, timeout, v)
		v.TestS = time.Since(tstart).Seconds()
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", task.InstanceID, err)
		}
		return v, nil
	}
	// The shell outlives the runner's use of it: the test binaries are
	// asked again in it (goCheck).
	defer sh.Close()
	runner := validate.Runner{Env: env, NewShell: func() validate.Shell { return keptOpen(sh) }, Timeout: timeout}
	var cleared error
	if junitDeclared {
		// What the setup commands (which may run the model's code: an
		// install script, a build) left where the report goes is removed
		// before the test command starts.
		runner.BeforeTest = func() { cleared = clearReport(reports) }
	}
	// The test patch's Go packages, by which a bare listed name is
	// placed (goHomes); where the grader chose the go test command, the
	// canary goes in them (canary.go).
	touched := make([]string, len(p.restore))
	for i, f := range p.restore {
		touched[i] = f.path
	}
	dirs := goTestDirs(ws, p.module, touched)
	// The canaries are written before the setup commands, which may run
	// the patch's code (setup.py, a Makefile, go generate): no code of
	// the patch sees the test code without them, so none can tell them
	// by when they appear.
	checkGo := env.Source != "test_cmd" && env.Test == detectedGoTest
	var can goCanary
	if checkGo {
		var tops []string
		for _, name := range task.Tests() {
			top, _, _ := strings.Cut(name, "/")
			if i := strings.LastIndex(top, "."); i >= 0 {
				top = top[i+1:]
			}
			if !slices.Contains(tops, top) {
				tops = append(tops, top)
			}
		}
		var removeCanary func()
		can, removeCanary = plantCanary(ws, dirs, tops)
		defer removeCanary()
	}
	// Where the grader chose pytest's command, the canary goes in a
	// listed test's file (pycanary.go).
	checkPy := env.Source != "test_cmd" && env.Test == detectedPytest
	var pyCan pyCanary
	if checkPy {
		var touchedSlash []string
		for _, f := range touched {
			touchedSlash = append(touchedSlash, filepath.ToSlash(f))
		}
		var note string
		if pyCan, note = plantPyCanary(ws, task.Tests(), touchedSlash, env.Setup); note != "" {
			v.Notes = append(v.Notes, note)
		}
	}
	// The test code the setup commands leave, canaries included, must be
	// what the grader put there; what they left running was ended
	// before this check (validate.StrayKiller), so it stays so.
	testCode, err := p.testScan()
	if err != nil {
		return nil, err
	}
	var setupTouched []string
	{
		before := runner.BeforeTest
		runner.BeforeTest = func() {
			if before != nil {
				before()
			}
			setupTouched = p.setupTouchedTests(testCode)
		}
	}
	v.PrepareS = prepared()
	tstart := time.Now()
	sum, res := runner.Run(ctx)
	v.TestS = time.Since(tstart).Seconds()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v.Log = []byte(res.Stdout + res.Stderr)
	v.ExitCode, v.TimedOut, v.SetupFailed = sum.ExitCode, sum.TimedOut, sum.Setup
	if sum.StraysLeft {
		v.Notes = append(v.Notes, straysNote)
	}
	if res.Err != nil && res.ExitCode == nil && !res.TimedOut {
		// The shell itself failed (it could not start, a sandbox limit).
		return nil, fmt.Errorf("running the tests: %s", res.Err.Message)
	}
	out := res.Stdout + "\n" + res.Stderr
	var verdicts Verdicts
	var source string
	if junitDeclared {
		var notes []string
		verdicts, v.CheckedAgainst, notes = readJUnit(out, env.Test, reports, cleared, task.Tests())
		source, v.Notes = "junit", append(v.Notes, notes...)
	} else {
		var note string
		if verdicts, source, note = readOutput(out, env.Test); note != "" {
			v.Notes = append(v.Notes, note)
		}
	}
	var homes goHomes
	if source == "go test -json" {
		// A bare name counts only where the test patch's packages
		// declare it.
		homes = findGoHomes(dirs, task.Tests())
		if names := homes.unhomed(task.Tests()); len(names) > 0 {
			// A name no test-patch package declares: its homes are the
			// packages whose test files declare it, the base's and the
			// test patch's (the test code is the task's by now).
			homes.tree = findTreeHomes(ws, p.module, p.testFiles(touched), p.goMods(touched), p.modIgnores, names)
		}
		var notes []string
		verdicts, notes = goVerdicts(out, task.Tests(), homes, checkGo)
		v.Notes = append(v.Notes, notes...)
	}
	v.Source = source
	for _, name := range task.Tests() {
		switch {
		case v.SetupFailed != "":
			v.Tests[name] = bench.TestMissing
		case source == "exit status":
			v.Tests[name] = bench.TestFailed
			if sum.OK {
				v.Tests[name] = bench.TestPassed
			}
		case source == "pytest" && moduleError(verdicts, name):
			v.Tests[name] = bench.TestFailed
		case verdicts[name] != "":
			v.Tests[name] = verdicts[name]
		default:
			v.Tests[name] = bench.TestMissing
		}
	}
	if source == "go test -json" && checkGo && v.SetupFailed == "" && !v.TimedOut {
		deadline := tstart.Add(timeout)
		left := func() time.Duration { return max(time.Until(deadline), time.Second) }
		cstart := time.Now()
		// The test binaries ran the patch's code: nothing they left
		// running acts while they are asked again.
		if k, ok := sh.(validate.StrayKiller); ok {
			if err := k.KillOthers(ctx); err != nil && !errors.Is(err, validate.ErrStraysUnreachable) {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, fmt.Errorf("instance %s: after the tests: %w", task.InstanceID, err)
			}
		}
		// Nor does a cache entry they wrote decide what is built.
		if f, ok := sh.(validate.CacheFreshener); ok {
			if err := f.FreshCaches(ctx); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, fmt.Errorf("instance %s: after the tests: %w", task.InstanceID, err)
			}
		}
		c, err := goCheck(ctx, sh, out, v.Tests, homes, can, left)
		v.CheckS = time.Since(cstart).Seconds()
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", task.InstanceID, err)
		}
		v.Untrusted = c.untrusted
		v.Notes = append(v.Notes, c.notes...)
		for _, name := range c.failed {
			v.Tests[name] = bench.TestFailed
		}
	}
	if source == "exit status" && pyCan.id != "" && v.SetupFailed == "" {
		if sum.OK {
			// The canary fails by construction: a run that holds it and
			// exits 0 had its exit status forced.
			v.Untrusted = append(v.Untrusted, pyCan.file)
			for _, name := range task.Tests() {
				v.Tests[name] = bench.TestFailed
			}
			v.Notes = append(v.Notes, fmt.Sprintf("the test run cannot be trusted: no pytest report was read, and it exited 0 though %s, a test of the grader's that fails by construction, was in it, so its listed tests failed: %s", pyCan.id, strings.Join(task.Tests(), ", ")))
		} else {
			v.Notes = append(v.Notes, fmt.Sprintf("no pytest report was read, so the verdicts come from the exit status, which %s, a test of the grader's that fails by construction, makes non-zero: every listed test failed", pyCan.id))
		}
	}
	if source == "pytest" && pyCan.id != "" && v.SetupFailed == "" && !v.TimedOut {
		forged, note := pyCan.check(verdicts)
		if note != "" {
			v.Notes = append(v.Notes, note)
		}
		if forged {
			v.Untrusted = append(v.Untrusted, pyCan.file)
			var names []string
			for _, name := range task.Tests() {
				v.Tests[name] = bench.TestFailed
				names = append(names, name)
			}
			v.Notes = append(v.Notes, fmt.Sprintf("the test run's reports cannot be trusted (it reported %s, a test of the grader's that fails by construction, passed), so its listed tests failed: %s", pyCan.id, strings.Join(names, ", ")))
		}
	}
	if len(setupTouched) > 0 && v.SetupFailed == "" {
		v.Untrusted = append(v.Untrusted, setupTouched...)
		for _, name := range task.Tests() {
			v.Tests[name] = bench.TestFailed
		}
		v.Notes = append(v.Notes, fmt.Sprintf("the setup commands changed the test code the grader put in place (%s), so the run cannot be trusted and its listed tests failed: %s", strings.Join(setupTouched, ", "), strings.Join(task.Tests(), ", ")))
	}
	v.Resolved = !v.TimedOut
	for _, s := range v.Tests {
		if s != bench.TestPassed {
			v.Resolved = false
		}
	}
	if v.TimedOut && v.SetupFailed == "" {
		// Neither canary was checked on a run that did not end; as
		// SWE-bench's harness, which stops with an error and writes no
		// report for a run that timed out, it resolves nothing.
		v.Notes = append(v.Notes, fmt.Sprintf("the test run timed out after %s, so it resolves nothing (as SWE-bench's harness, which writes no report for it); the listed tests' verdicts are what its output held when it was stopped", timeout))
	}
	return v, nil
}

// testFiles are the Go test files of the checkout, the base's (its scan)
// and those the test patch touches, sorted.
func (p *Prepared) testFiles(touched []string) []string {
	var files []string
	for f := range p.tree {
		if strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	for _, f := range touched {
		if f = filepath.ToSlash(f); strings.HasSuffix(f, "_test.go") && !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return files
}

// goMods are the go.mod files of the base's checkout and those the test
// patch touches.
func (p *Prepared) goMods(touched []string) []string {
	var mods []string
	for f := range p.tree {
		if path.Base(f) == "go.mod" {
			mods = append(mods, f)
		}
	}
	for _, f := range touched {
		if f = filepath.ToSlash(f); path.Base(f) == "go.mod" {
			mods = append(mods, f)
		}
	}
	return mods
}

// keepOpen is a shell whose Close does nothing (its owner closes it).
type keepOpen struct{ validate.Shell }

func (keepOpen) Close() error { return nil }

// straysNote says that what the setup commands left running was not ended
// before the tests (validate.ErrStraysUnreachable).
const straysNote = "what the setup commands left running could not be ended before the tests: the sandbox has no PID namespace of its own (no user namespaces here), so a process they started could still change the tests while they ran"

// keptOpen is sh that the runner does not close: a StrayKiller and a
// CacheFreshener where sh is one, a shell that has neither otherwise.
func keptOpen(sh validate.Shell) validate.Shell {
	k, kill := sh.(validate.StrayKiller)
	f, fresh := sh.(validate.CacheFreshener)
	switch {
	case kill && fresh:
		return struct {
			keepOpen
			validate.StrayKiller
			validate.CacheFreshener
		}{keepOpen{sh}, k, f}
	case kill:
		return struct {
			keepOpen
			validate.StrayKiller
		}{keepOpen{sh}, k}
	case fresh:
		return struct {
			keepOpen
			validate.CacheFreshener
		}{keepOpen{sh}, f}
	}
	return keepOpen{sh}
}

// junitName is the report's name in the grading's report directory, and
// maxJUnit the largest report read (past it, the verdicts come from the
// output).
const (
	junitName = "junit.xml"
	maxJUnit  = 64 << 20
)

// readJUnit reads the listed tests' verdicts from the JUnit report the
// test command wrote in reports (cleared is what removing a report left
// before it started went wrong with), as the graded commands left it,
// through hostfs: a symbolic link, a FIFO or a report over maxJUnit is
// refused. Without a usable report there are no verdicts (every listed
// test is missing) and notes say why. When the output of the test command
// cmd holds its own go test -json events or pytest report too
// (readOutput), checked names it and the two
// must agree on every listed test: where they do not, the test failed
// and a note names it (for pytest, whose node ids JUnit does not use,
// only on the tests both name).
func readJUnit(out, cmd, reports string, cleared error, listed []string) (v Verdicts, checked string, notes []string) {
	if cleared != nil {
		return nil, "", []string{"what the setup commands left where the JUnit report goes could not be removed: " + cleared.Error()}
	}
	doc, err := hostfs.ReadFileIn(reports, junitName, maxJUnit)
	switch {
	case hostfs.IsNotExist(err):
		return nil, "", []string{"no JUnit report was written to $TRUSS_BENCH_JUNIT"}
	case errors.Is(err, hostfs.ErrTooLarge):
		return nil, "", []string{fmt.Sprintf("the JUnit report is larger than %d MiB, not read", maxJUnit>>20)}
	case err != nil:
		return nil, "", []string{"the JUnit report was refused: " + err.Error()}
	}
	v, ok, err := ParseJUnit(doc)
	switch {
	case err != nil:
		return nil, "", []string{"the JUnit report is unreadable: " + err.Error()}
	case !ok:
		return nil, "", []string{"the JUnit report holds no test case"}
	}
	ov, checked, note := readOutput(out, cmd)
	if note != "" {
		notes = append(notes, note)
	}
	if ov == nil {
		return v, "", nil
	}
	var differ []string
	for _, name := range listed {
		j, o := cmp.Or(v[name], bench.TestMissing), cmp.Or(ov[name], bench.TestMissing)
		if j == o || checked == "pytest" && (v[name] == "" || ov[name] == "") {
			continue
		}
		differ = append(differ, fmt.Sprintf("%s (junit %s, %s %s)", name, j, checked, o))
		v[name] = bench.TestFailed
	}
	if len(differ) > 0 {
		notes = append(notes, "the JUnit report and the "+checked+" output disagree, so these failed: "+strings.Join(differ, ", "))
	}
	return v, checked, notes
}

// readOutput reads per-test verdicts from the output of the test command
// cmd, by the parser for what cmd runs (outputKind): go test -json's
// events from go test -json, pytest's report from pytest, never the other
// (a pytest run's code can print lines shaped like go test -json events,
// and a Go test can print pytest's). With no report of the command's kind
// the source is the whole command's exit status (and v is nil). Only a
// command of neither kind or both (a script, make) has its output read
// for either, and a log that holds both is no command's own output: no
// verdict is read from it (v is empty, every listed test missing) and a
// note says so.
func readOutput(out, cmd string) (v Verdicts, source, note string) {
	kind := outputKind(cmd)
	if kind == "" || kind == sourceGo {
		if v, ok := ParseGoTestJSON([]byte(out)); ok {
			if kind == "" {
				if _, both := ParsePytest([]byte(out)); both {
					return Verdicts{}, sourceMixed, "the output holds both go test -json events and a pytest report, which no one test run writes, so no verdict was read from it"
				}
			}
			return v, sourceGo, ""
		}
	}
	if kind == "" || kind == sourcePytest {
		if v, ok := ParsePytest([]byte(out)); ok {
			return v, sourcePytest, ""
		}
	}
	return nil, "exit status", ""
}

// The sources of verdicts read from a test command's output.
const (
	sourceGo     = "go test -json"
	sourcePytest = "pytest"
	// sourceMixed is output holding both (readOutput).
	sourceMixed = "go test -json and pytest"
)

// outputKind is the structured output the test command cmd writes, by
// the programs it runs: sourceGo for go test with -json, sourcePytest
// for pytest (python -m pytest, pytest, py.test), "" for neither or both.
func outputKind(cmd string) string {
	words := strings.FieldsFunc(cmd, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == ';' || r == '&' || r == '|' || r == '(' || r == ')' || r == '"' || r == '\''
	})
	var goTest, json, pytest bool
	for i, w := range words {
		switch base := path.Base(w); {
		case base == "go" && i+1 < len(words) && words[i+1] == "test":
			goTest = true
		case w == "-json" || strings.HasPrefix(w, "-json="):
			json = true
		case base == "pytest" || base == "py.test":
			pytest = true
		}
	}
	switch {
	case goTest && json && !pytest:
		return sourceGo
	case pytest && !goTest:
		return sourcePytest
	}
	return ""
}

// clearReport removes whatever is at the report's path in reports.
func clearReport(reports string) error {
	return os.RemoveAll(filepath.Join(reports, junitName))
}

// taskEnv is the task's own setup and test commands; Test is "" when it
// has no test_cmd (then detected, see detect). A task whose commands name
// $TRUSS_BENCH_JUNIT without saying it writes a report ("junit": true)
// is refused: that variable is set only for such tasks.
func taskEnv(task *bench.Task) (validate.Env, error) {
	env := validate.Env{Setup: task.SetupCmd, Test: task.TestCmd, Source: "test_cmd"}
	if !task.JUnit && strings.Contains(strings.Join(append(slices.Clip(env.Setup), env.Test), "\n"), "TRUSS_BENCH_JUNIT") {
		return env, fmt.Errorf("instance %s: its commands name $TRUSS_BENCH_JUNIT but the task does not say it writes a JUnit report (\"junit\": true)", task.InstanceID)
	}
	return env, nil
}

// detect sets the test command detected in the checkout at ws, as
// validate detects it (go test with -json, pytest with -rA for a
// per-test report), and keeps the detected-from file's content. It runs
// before the model's patch is applied.
func (p *Prepared) detect(ws string) error {
	d, ok := validate.Detect(ws)
	if !ok {
		return fmt.Errorf("instance %s: no test_cmd and no test command detected in the repository", p.task.InstanceID)
	}
	switch d.Test {
	case "go test ./...":
		d.Test = "go test -json ./..."
	case "python -m pytest -q":
		d.Test = "python -m pytest -rA"
	}
	p.env.Test, p.env.Source = d.Test, d.Source
	return nil
}

// touchesMarker reports whether the test patch touches a file
// validate.Detect reads.
func touchesMarker(files []baseFile) bool {
	for _, f := range files {
		top, _, _ := strings.Cut(filepath.ToSlash(f.path), "/")
		if slices.Contains(validate.Markers(), top) {
			return true
		}
	}
	return false
}

// applyError is a patch that does not apply.
type applyError struct{ msg string }

func (e *applyError) Error() string { return "patch does not apply: " + e.msg }

// apply applies a patch to the checkout where g runs with git apply, or,
// when git refuses it, GNU patch with fuzz (as SWE-bench's evaluation
// does) if it is installed (fellBack); all or nothing.
func apply(ctx context.Context, g gitsafe.Git, file, patch string) (fellBack bool, _ error) {
	if !strings.HasSuffix(patch, "\n") {
		patch += "\n"
	}
	// git apply runs on the host: what a patch would have it write
	// beyond its own text is bounded before it runs.
	if err := checkPatchWrites(ctx, g, patch); err != nil {
		return false, err
	}
	if err := os.WriteFile(file, []byte(patch), 0o600); err != nil {
		return false, err
	}
	_, gerr := g.Output(ctx, "apply", "--whitespace=nowarn", file)
	if gerr == nil {
		return false, nil
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	msg := gerr.Error()
	if i := strings.Index(msg, ": error: "); i >= 0 {
		msg = msg[i+2:]
	}
	if gnuPatch, err := hostfs.LookPath("patch", hostfs.UserPath()); err == nil {
		// GNU patch writes wherever the patch says, .git included (git
		// apply refuses it): a patch naming a .git component anywhere is
		// refused before GNU patch runs, by its headers and by the files
		// GNU patch's dry run says it would write.
		if name := gitDirName(patchNames(patch)); name != "" {
			return false, &applyError{msg: fmt.Sprintf("%s; GNU patch not tried: the patch names %s, in a .git directory", msg, name)}
		}
		args := []string{"--batch", "--fuzz=5", "-p1", "--no-backup-if-mismatch", "-r", "-", "-d", g.Dir, "-i", file}
		out, err := exec.CommandContext(ctx, gnuPatch, append([]string{"--dry-run"}, args...)...).Output()
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err == nil {
			if name := gitDirName(checkedFiles(string(out))); name != "" {
				return false, &applyError{msg: fmt.Sprintf("%s; GNU patch not run: it would write %s, in a .git directory", msg, name)}
			}
			if out, err := exec.CommandContext(ctx, gnuPatch, args...).CombinedOutput(); err != nil {
				if ctx.Err() != nil {
					return true, ctx.Err()
				}
				// The dry run passed and the real one did not (a file
				// beyond a symbolic link the patch made): the checkout is
				// partly patched and graded no further.
				return true, &applyError{msg: fmt.Sprintf("GNU patch applied it only in part (%v): %s", err, strings.TrimSpace(string(out)))}
			}
			return true, nil
		}
	}
	return false, &applyError{msg: msg}
}

// patchNames are the file names a patch's header lines give (diff --git,
// ---, +++, ***, Index:, rename and copy lines), as written: every line
// that GNU patch or git could take a name from, hunk lines that look like
// headers included.
func patchNames(patch string) []string {
	var names []string
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, h := range []string{"diff --git ", "--- ", "+++ ", "*** ", "Index: ", "rename from ", "rename to ", "copy from ", "copy to "} {
			if rest, ok := strings.CutPrefix(line, h); ok {
				names = append(names, rest)
			}
		}
	}
	return names
}

// checkedFiles are the files GNU patch's dry run says it checked
// ("checking file NAME").
func checkedFiles(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "checking file "); ok {
			names = append(names, rest)
		}
	}
	return names
}

// gitDirName returns the first of names that has a .git component (in
// any case; a header's other words, quotes and a tab's timestamp
// around it), or "".
func gitDirName(names []string) string {
	for _, n := range names {
		for _, c := range strings.FieldsFunc(n, func(r rune) bool { return r == '/' || r == '\\' || r == ' ' || r == '\t' }) {
			if strings.EqualFold(strings.Trim(c, `'"`), ".git") {
				return strings.TrimSpace(n)
			}
		}
	}
	return ""
}

// readTestFiles reads the base's version of every file the test patch
// touches from the checkout where g runs (still at base): what
// applyTestPatch restores. It reads the patch only (from its standard
// input); nothing of it reaches a file. A test patch that does not apply
// to the base is an error here: one that applies here and not over the
// model's patch is the model's doing.
func readTestFiles(ctx context.Context, g gitsafe.Git, patch string) ([]baseFile, error) {
	if !strings.HasSuffix(patch, "\n") {
		patch += "\n"
	}
	cmd, err := g.Command(ctx, "apply", "--check", "--numstat", "-z", "-")
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stdin, cmd.Stderr = strings.NewReader(patch), &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git apply --numstat: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return readBase(g.Dir, numstatPaths(string(out)))
}

// readBase reads paths as the checkout at ws has them.
func readBase(ws string, paths []string) ([]baseFile, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var files []baseFile
	for _, p := range paths {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			return nil, fmt.Errorf("the test patch names %q, outside the repository", p)
		}
		f := baseFile{path: filepath.FromSlash(p)}
		fi, err := root.Lstat(f.path)
		switch {
		case errors.Is(err, fs.ErrNotExist) || err == nil && fi.IsDir():
			// Not a file of the base: removed before the patch.
		case err != nil:
			return nil, err
		case fi.Mode()&fs.ModeSymlink != 0:
			f.present, f.symlink = true, true
			if f.link, err = root.Readlink(f.path); err != nil {
				return nil, err
			}
		case fi.Mode().IsRegular():
			f.present, f.perm = true, fi.Mode().Perm()
			if f.data, err = root.ReadFile(f.path); err != nil {
				return nil, err
			}
		}
		files = append(files, f)
	}
	return files, nil
}

// applyTestPatch makes every file the test patch touches what it is at
// base (removing those base does not have), then applies the patch: the
// hidden tests win over any change the model made to them.
func (p *Prepared) applyTestPatch(ctx context.Context) error {
	if p.testErr != nil {
		return p.testErr
	}
	if err := restore(p.ws, p.restore); err != nil {
		return err
	}
	// The patch is kept outside the checkout, where the tests cannot see
	// it.
	file := filepath.Join(p.dir, "test.patch")
	patch := p.task.TestPatch
	if !strings.HasSuffix(patch, "\n") {
		patch += "\n"
	}
	if err := os.WriteFile(file, []byte(patch), 0o600); err != nil {
		return err
	}
	_, err := p.git.Output(ctx, "apply", "--whitespace=nowarn", file)
	return err
}

// restore puts files back in the checkout at ws as the base has them,
// whatever is at their paths now. It works within ws: a directory the
// model's patch made a symbolic link is not followed out of it.
func restore(ws string, files []baseFile) error {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return err
	}
	defer root.Close()
	// The paths the base does not have first, then the base's files: a
	// base file that is also the directory of an absent path (the model
	// deleted X_test.go and added X_test.go/x_test.go) is written last,
	// and not replaced by that path's directory.
	files = slices.Clone(files)
	slices.SortStableFunc(files, func(a, b baseFile) int {
		switch {
		case a.present == b.present:
			return 0
		case !a.present:
			return -1
		}
		return 1
	})
	for _, f := range files {
		// The directories of the path first: a file or symbolic link the
		// model's patch put where one of them goes is removed, so that
		// nothing stands in the way of the base's file or the test
		// patch's.
		if err := mkdirs(root, filepath.Dir(f.path)); err != nil {
			return fmt.Errorf("restoring %s: %w", f.path, err)
		}
		if err := root.RemoveAll(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("restoring %s: %w", f.path, err)
		}
		if !f.present {
			continue
		}
		if f.symlink {
			err = root.Symlink(f.link, f.path)
		} else if err = root.WriteFile(f.path, f.data, f.perm); err == nil {
			err = root.Chmod(f.path, f.perm)
		}
		if err != nil {
			return fmt.Errorf("restoring %s: %w", f.path, err)
		}
	}
	return nil
}

// mkdirs makes dir and its parents in root, removing what is at their
// paths when it is not a directory (a file or symbolic link the model's
// patch put there).
func mkdirs(root *os.Root, dir string) error {
	if dir == "." {
		return nil
	}
	if err := mkdirs(root, filepath.Dir(dir)); err != nil {
		return err
	}
	fi, err := root.Lstat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		if err := root.Remove(dir); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return root.Mkdir(dir, 0o755)
}

// numstatPaths reads the paths of `git apply --numstat -z`: "A\tD\tPATH\0"
// per file, or "A\tD\t\0FROM\0TO\0" for a rename.
func numstatPaths(out string) []string {
	var paths []string
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		parts := strings.SplitN(f, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[2] != "" {
			paths = append(paths, parts[2])
			continue
		}
		if i+2 < len(fields) {
			paths = append(paths, fields[i+1], fields[i+2])
			i += 2
		}
	}
	return paths
}

// safeName keeps the letters, digits, '-', '_' and '.' of an id.
func safeName(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}

// digest is the hex SHA-256 of s.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

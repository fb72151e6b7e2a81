// Package validate runs a project's checks: it detects the test command
// from the repository (or takes it from the user), runs it in a fresh
// shell — the sandboxed one the caller provides — and summarizes the
// outcome for a model: passed and failed counts and the first failures. The
// full log stays in the tool.Result for the record.
//
// The same Runner serves the model's validate tool (tool.OpValidate) and
// the verification boundary, where Truss runs the checks once more itself
// at the end of a run and records the verdict.
package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/lazyre"
	"github.com/trussdev/truss/internal/tool"
)

// Env is a task's environment: setup commands and the test command.
type Env struct {
	Setup []string `json:"setup,omitempty"`
	Test  string   `json:"test"`
	// Source says where the test command came from ("go.mod",
	// "package.json", "--test-cmd", ...).
	Source string `json:"source"`
}

// MaxMarker is how much of a marker file (package.json, pyproject.toml,
// Makefile, ...) Detect reads: the first MaxMarker bytes.
const MaxMarker = 1 << 20

var makeTest = lazyre.Regexp{Expr: `(?m)^test\s*:`}

// Detect finds the test command of the repository at root: go.mod → go
// test ./...; package.json with a test script → npm test; Cargo.toml →
// cargo test; pyproject.toml, pytest.ini, setup.cfg or tox.ini with pytest,
// a conftest.py, a tests directory beside a setup.py, or a tests or test
// directory holding a Python test file (test_*.py, *_test.py,
// conftest.py, in it or a directory beneath; pytest runs unittest's too) →
// python -m pytest -q; a Makefile with a test target → make test. It
// reports false when none applies.
//
// Commands may have planted anything at those names, and Detect runs on
// the host, so the markers are looked at through a strict hostfs.Root:
// a marker that is a symbolic link, a FIFO, a socket or a device (tests
// one that is not a directory) counts as absent, no open blocks, and at
// most MaxMarker bytes of each are read (a package.json cut there does
// not parse, and so names no test script).
func Detect(root string) (Env, bool) {
	r, err := hostfs.OpenRoot(root)
	if err != nil {
		return Env{}, false
	}
	defer r.Close()
	isDir := func(name string) bool { i, err := r.Lstat(name); return err == nil && i.IsDir() }
	has := func(name string) bool { i, err := r.Lstat(name); return err == nil && i.IsRegular() }
	read := func(name string) string {
		b, _, err := r.ReadHead(name, MaxMarker)
		if err != nil {
			return ""
		}
		return string(b)
	}
	switch {
	case has("go.mod"):
		return Env{Test: "go test ./...", Source: "go.mod"}, true
	case has("package.json"):
		var pkg struct {
			Scripts map[string]string `json:"scripts"`
		}
		if json.Unmarshal([]byte(read("package.json")), &pkg) == nil {
			if t := pkg.Scripts["test"]; t != "" && !strings.Contains(t, "no test specified") {
				return Env{Test: "npm test", Source: "package.json"}, true
			}
		}
	case has("Cargo.toml"):
		return Env{Test: "cargo test", Source: "Cargo.toml"}, true
	}
	for _, f := range []string{"pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini"} {
		if has(f) && (f == "pytest.ini" || strings.Contains(read(f), "pytest")) {
			return Env{Test: "python -m pytest -q", Source: f}, true
		}
	}
	if has("conftest.py") {
		return Env{Test: "python -m pytest -q", Source: "conftest.py"}, true
	}
	if has("setup.py") && isDir("tests") {
		return Env{Test: "python -m pytest -q", Source: "setup.py"}, true
	}
	for _, d := range []string{"tests", "test"} {
		if isDir(d) && holdsPythonTests(r, d) {
			return Env{Test: "python -m pytest -q", Source: d}, true
		}
	}
	if makeTest.Get().MatchString(read("Makefile")) {
		return Env{Test: "make test", Source: "Makefile"}, true
	}
	return Env{}, false
}

// Bounds of holdsPythonTests' search: the names it looks at and the
// directories it goes down, so that a directory planted with a million
// names, or nested a thousand deep, costs no more.
const (
	maxTestNames = 10000
	maxTestDepth = 3
)

// holdsPythonTests reports whether the directory dir of r holds a regular
// file pytest collects by default (test_*.py, *_test.py) or a
// conftest.py, in it or in a directory up to maxTestDepth beneath it. A
// link (to a directory or a file) is not followed.
func holdsPythonTests(r *hostfs.Root, dir string) bool {
	budget := maxTestNames
	var search func(r *hostfs.Root, dir string, depth int) bool
	search = func(r *hostfs.Root, dir string, depth int) bool {
		d, err := r.OpenDir(dir)
		if err != nil {
			return false
		}
		defer d.Close()
		found := false
		var subdirs []string
		d.ListFunc(func(name string, info hostfs.Info) bool {
			budget--
			switch {
			case info.IsDir():
				if depth < maxTestDepth && !strings.HasPrefix(name, ".") && name != "__pycache__" && name != "node_modules" {
					subdirs = append(subdirs, name)
				}
			case info.IsRegular() && strings.HasSuffix(name, ".py"):
				found = strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py") || name == "conftest.py"
			}
			return !found && budget > 0
		})
		for _, s := range subdirs {
			if found || budget <= 0 {
				break
			}
			found = search(d, s, depth+1)
		}
		return found
	}
	return search(r, dir, 1)
}

// Markers are the paths Detect reads, relative to the repository's root:
// a change to any of them can change what it detects.
func Markers() []string {
	return []string{"go.mod", "package.json", "Cargo.toml", "pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini", "setup.py", "conftest.py", "tests", "test", "Makefile"}
}

// Summary is the outcome of a validation run.
type Summary struct {
	Command  string        `json:"command"`
	OK       bool          `json:"ok"`
	ExitCode int           `json:"exit_code"`
	TimedOut bool          `json:"timed_out,omitempty"`
	Passed   int           `json:"passed"`
	Failed   int           `json:"failed"`
	Skipped  int           `json:"skipped,omitempty"`
	Unit     string        `json:"unit"` // what the counts count: "tests" or "packages"
	Failures []string      `json:"failures,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Setup reports a setup command that failed (the tests did not run).
	Setup string `json:"setup,omitempty"`
	// Cancelled reports that the run was cancelled before it ended (its
	// context was): it concludes nothing, and OK is false.
	Cancelled bool `json:"cancelled,omitempty"`
	// StraysLeft reports that what the setup commands left running could
	// not be ended before the tests (ErrStraysUnreachable).
	StraysLeft bool `json:"strays_left,omitempty"`
	// NotRun says why the test command could not run any test at all,
	// from what it printed and its exit status: its runner is not
	// installed where the commands run (the shell's 127 and 126, Python's
	// "No module named pytest" for `python -m pytest`), or names what is
	// not there (npm's missing script, make's missing target). No test
	// ran: OK is false and the counts are zero. Empty otherwise, and on
	// a cancelled or timed-out run, whose meaning is their own.
	NotRun string `json:"not_run,omitempty"`
	// NotRunHint says what would let the test command run, where NotRun
	// is set.
	NotRunHint string `json:"not_run_hint,omitempty"`
}

var (
	goFail     = lazyre.Regexp{Expr: `(?m)^\s*--- FAIL: (\S+)`}
	goOK       = lazyre.Regexp{Expr: `(?m)^ok\s+\S+`}
	goPkgFail  = lazyre.Regexp{Expr: `(?m)^FAIL\s+\S+`}
	pytestLine = lazyre.Regexp{Expr: `(?m)^=*\s*(?:(\d+) failed)?,?\s*(?:(\d+) passed)?,?\s*(?:(\d+) skipped)?.* in [\d.]+s`}
	cargoLine  = lazyre.Regexp{Expr: `test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored`}
	jestLine   = lazyre.Regexp{Expr: `Tests:\s+(?:(\d+) failed, )?(?:(\d+) skipped, )?(?:(\d+) passed, )?\d+ total`}
	plainLine  = lazyre.Regexp{Expr: `(?m)^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$`}

	// What a test command prints when it could not run its tests at all
	// (couldNotRun). Python's runpy, for `python -m X` with no X, prints
	// "/usr/bin/python3: No module named X", or for a dotted X whose
	// package is missing "...: Error while finding module specification
	// for 'X' (ModuleNotFoundError: No module named 'P')"; a test's own
	// import error is "ModuleNotFoundError: No module named 'x'" with no
	// interpreter's path before it.
	pyNoModule   = lazyre.Regexp{Expr: `(?m)^\S*python[\d.]*(?:\.exe)?: (?:No module named ([\w.]+)|Error while finding module specification for '[\w.]+' \(ModuleNotFoundError: No module named '([\w.]+)'\))\s*$`}
	npmNoScript  = lazyre.Regexp{Expr: `(?m)^npm (?:error|ERR!) Missing script: "([^"]+)"`}
	makeNoTarget = lazyre.Regexp{Expr: `(?m)^make(?:\[\d+\])?: \*\*\* No rule to make target '([^']+)'\.`}
	makeRecipe   = lazyre.Regexp{Expr: `(?m)^make(?:\[\d+\])?: \*\*\* \[[^\]]*\] Error (12[67])\s*$`}
	cargoNoToml  = lazyre.Regexp{Expr: "(?m)^error: could not find `Cargo.toml` in .*$"}
)

// The hint's ending: what the user can do whatever the cause.
const orTestCmd = "or give --test-cmd CMD"

// couldNotRun says why a test command that exited with status exit,
// printing out, could not run any test at all (Summary.NotRun) and what
// would let it; "" when its output does not show that.
func couldNotRun(out string, exit int) (reason, hint string) {
	if exit <= 0 {
		return "", ""
	}
	if m := pyNoModule.Get().FindStringSubmatch(out); m != nil {
		mod := m[1] + m[2]
		return "No module named " + mod, "install " + mod + " in the environment the commands see, " + orTestCmd
	}
	if m := npmNoScript.Get().FindStringSubmatch(out); m != nil {
		return fmt.Sprintf("npm: Missing script: %q", m[1]), fmt.Sprintf("add a %q script to package.json, %s", m[1], orTestCmd)
	}
	if m := makeNoTarget.Get().FindStringSubmatch(out); m != nil {
		return fmt.Sprintf("make: No rule to make target '%s'", m[1]), fmt.Sprintf("add a %s target to the Makefile, %s", m[1], orTestCmd)
	}
	if m := cargoNoToml.Get().FindString(out); m != "" {
		return strings.TrimPrefix(m, "error: "), "run the tests where the Cargo.toml is, " + orTestCmd
	}
	code := exit
	if m := makeRecipe.Get().FindStringSubmatch(out); m != nil {
		code, _ = strconv.Atoi(m[1]) // a recipe's command could not run
	}
	switch code {
	case 127:
		return lastLine(out, "exit status 127 (command not found)", "command not found", ": not found", "No such file or directory"),
			"install the program where the commands run (on their PATH), " + orTestCmd
	case 126:
		return lastLine(out, "exit status 126 (not executable)", "Permission denied", "cannot execute", "Is a directory"),
			"make it executable, " + orTestCmd
	}
	return "", ""
}

// lastLine is out's last line that contains one of subs, trimmed; def
// when none does.
func lastLine(out, def string, subs ...string) string {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		for _, sub := range subs {
			if strings.Contains(lines[i], sub) {
				return strings.TrimSpace(lines[i])
			}
		}
	}
	return def
}

// Summarize reads a test run's output and exit status: the counts it
// reports, or, where it reports none and failed, why it could not run any
// test (NotRun) when its output says so, else one failure.
func Summarize(command, out string, exit int) Summary {
	s := Summary{Command: command, ExitCode: exit, OK: exit == 0, Unit: "tests"}
	atoi := func(v string) int { n, _ := strconv.Atoi(v); return n }
	sumAll := func(re *regexp.Regexp, pi, fi, si int) bool {
		ms := re.FindAllStringSubmatch(out, -1)
		for _, m := range ms {
			if pi > 0 {
				s.Passed += atoi(m[pi])
			}
			if fi > 0 {
				s.Failed += atoi(m[fi])
			}
			if si > 0 {
				s.Skipped += atoi(m[si])
			}
		}
		return len(ms) > 0
	}
	switch {
	case goOK.Get().MatchString(out) || goPkgFail.Get().MatchString(out) || goFail.Get().MatchString(out):
		s.Unit = "packages"
		s.Passed = len(goOK.Get().FindAllString(out, -1))
		s.Failed = len(goPkgFail.Get().FindAllString(out, -1))
		for _, m := range goFail.Get().FindAllStringSubmatch(out, -1) {
			s.Failures = append(s.Failures, m[1])
		}
	case sumAll(cargoLine.Get(), 1, 2, 3):
	case sumAll(jestLine.Get(), 3, 1, 2):
	case sumAll(plainLine.Get(), 1, 2, 3):
	case sumAll(pytestLine.Get(), 2, 1, 3):
	}
	if s.Failed == 0 && !s.OK && s.Passed == 0 && s.Skipped == 0 && len(s.Failures) == 0 {
		if s.NotRun, s.NotRunHint = couldNotRun(out, exit); s.NotRun == "" {
			s.Failed = 1 // it failed without saying what
		}
	}
	return s
}

// Text renders a summary for the model: the verdict, the counts and the
// first failures from the log (at most maxLines lines of it).
func (s Summary) Text(log string, maxLines int) string {
	var b strings.Builder
	switch {
	case s.Cancelled:
		fmt.Fprintf(&b, "validation cancelled: `%s` was stopped after %.1f s; it concludes nothing", s.Command, s.Duration.Seconds())
		return b.String()
	case s.Setup != "":
		fmt.Fprintf(&b, "validation failed: the setup command `%s` exited with status %d; the tests did not run", s.Setup, s.ExitCode)
	case s.TimedOut:
		fmt.Fprintf(&b, "validation failed: `%s` timed out after %.1f s", s.Command, s.Duration.Seconds())
	case s.NotRun != "":
		fmt.Fprintf(&b, "validation failed: `%s` exited with status %d: the test command could not run: %s; %s; no test ran", s.Command, s.ExitCode, s.NotRun, s.NotRunHint)
	case s.OK:
		fmt.Fprintf(&b, "validation passed: `%s` (%.1f s)", s.Command, s.Duration.Seconds())
	default:
		fmt.Fprintf(&b, "validation failed: `%s` exited with status %d (%.1f s)", s.Command, s.ExitCode, s.Duration.Seconds())
	}
	if s.Passed+s.Failed+s.Skipped > 0 {
		fmt.Fprintf(&b, "\n%s: %d passed, %d failed", s.Unit, s.Passed, s.Failed)
		if s.Skipped > 0 {
			fmt.Fprintf(&b, ", %d skipped", s.Skipped)
		}
	}
	if len(s.Failures) > 0 {
		fmt.Fprintf(&b, "\nfailing: %s", strings.Join(s.Failures, ", "))
	}
	if !s.OK && log != "" {
		if s.NotRun != "" {
			b.WriteString("\noutput:\n")
		} else {
			b.WriteString("\nfirst failures:\n")
		}
		b.WriteString(firstFailures(log, maxLines))
	}
	return b.String()
}

// firstFailures picks the part of a log that shows the first failures: from
// the first line that reports one, else the log's tail.
func firstFailures(log string, maxLines int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	start := -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "FAIL") || strings.HasPrefix(t, "FAILED") ||
			strings.HasPrefix(t, "panic:") || strings.Contains(t, "Error") || strings.HasPrefix(t, "E ") {
			start = i
			break
		}
	}
	if start < 0 {
		start = max(0, len(lines)-maxLines)
	}
	end := min(len(lines), start+maxLines)
	out := strings.Join(lines[start:end], "\n")
	if end < len(lines) {
		out += fmt.Sprintf("\n[... %d more lines in the full log ...]", len(lines)-end)
	}
	return out
}

// Shell runs commands for a validation: a fresh session each time, in the
// sandbox, so that nothing the model left in its own shell changes the
// outcome.
type Shell interface {
	Run(ctx context.Context, command string, timeout time.Duration) tool.Result
	Close() error
}

// A StrayKiller is a Shell that can end every process its commands left
// running (a daemon a build script forked) while the shell, its working
// directory and exported variables stay. Runner ends them after the setup
// commands, before BeforeTest and the test command, so that nothing the
// setup commands started (code of the checkout: setup.py, a Makefile)
// acts after the checks BeforeTest makes or during the tests. A grader's
// shell is one; an agent's is not (the model's own background work, a
// server it started, is its to keep).
type StrayKiller interface {
	KillOthers(ctx context.Context) error
}

// A CacheFreshener is a Shell that can give its next commands build caches
// of their own, empty over trusted read-only layers, in place of those its
// commands so far wrote: a setup command that ran a checkout's code could
// have planted cache entries that make the tests' build link forged
// objects. Runner calls it after the setup commands (and StrayKiller's
// KillOthers), before BeforeTest.
type CacheFreshener interface {
	FreshCaches(ctx context.Context) error
}

// ErrStraysUnreachable is a StrayKiller's error where its shell has no PID
// namespace of its own (a sandbox without user namespaces): what the
// commands left running cannot be told from the user's own processes.
// Runner goes on to the tests and says so (Summary.StraysLeft).
const ErrStraysUnreachable = straysError("the shell has no PID namespace of its own (no user namespaces here), so the processes its commands left running cannot be told from the user's and were not ended")

type straysError string

func (e straysError) Error() string { return string(e) }

// Runner runs the checks of one task environment.
type Runner struct {
	Env Env
	// NewShell starts a fresh shell in the workspace.
	NewShell func() Shell
	// Timeout bounds the whole test command; 0 means 10 minutes.
	Timeout time.Duration
	// MaxLines bounds the log lines shown to the model; 0 means 40.
	MaxLines int
	// BeforeTest, when set, is called after every setup command
	// succeeded (and, on a StrayKiller, what they left running was
	// ended) and before the test command starts (the grader removes
	// what the setup commands may have left where the test command's
	// report goes).
	BeforeTest func()
}

// Run runs the setup commands and the test command, and returns the
// summary with the result holding the full log (stdout, stderr, exit code).
func (r *Runner) Run(ctx context.Context) (Summary, tool.Result) {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	sh := r.NewShell()
	defer sh.Close()
	start := time.Now()
	for _, c := range r.Env.Setup {
		res := sh.Run(ctx, c, timeout)
		if ctx.Err() != nil {
			return Summary{Command: r.Env.Test, Unit: "tests", Cancelled: true, ExitCode: -1, Duration: time.Since(start)}, res
		}
		if res.Err != nil {
			s := Summary{Command: r.Env.Test, Setup: c, Unit: "tests", Duration: time.Since(start)}
			if res.ExitCode != nil {
				s.ExitCode = *res.ExitCode
			}
			return s, res
		}
	}
	strays := false
	if k, ok := sh.(StrayKiller); ok && len(r.Env.Setup) > 0 {
		err := k.KillOthers(ctx)
		if errors.Is(err, ErrStraysUnreachable) {
			strays, err = true, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return Summary{Command: r.Env.Test, Unit: "tests", Cancelled: true, ExitCode: -1, Duration: time.Since(start)}, tool.Result{}
			}
			// Not the tests' failure: the shell's (as a shell that
			// could not start), with no exit status.
			return Summary{Command: r.Env.Test, Unit: "tests", ExitCode: -1, Duration: time.Since(start)},
				tool.Result{Err: &tool.Error{Kind: tool.ErrShell, Message: "after the setup commands: " + err.Error(), Err: err}}
		}
	}
	if f, ok := sh.(CacheFreshener); ok && len(r.Env.Setup) > 0 {
		if err := f.FreshCaches(ctx); err != nil {
			if ctx.Err() != nil {
				return Summary{Command: r.Env.Test, Unit: "tests", Cancelled: true, ExitCode: -1, Duration: time.Since(start)}, tool.Result{}
			}
			return Summary{Command: r.Env.Test, Unit: "tests", ExitCode: -1, Duration: time.Since(start)},
				tool.Result{Err: &tool.Error{Kind: tool.ErrShell, Message: "after the setup commands: " + err.Error(), Err: err}}
		}
	}
	if r.BeforeTest != nil {
		r.BeforeTest()
	}
	res := sh.Run(ctx, r.Env.Test, timeout)
	if ctx.Err() != nil {
		// What ran of it was cut short: no counts, no verdict.
		return Summary{Command: r.Env.Test, Unit: "tests", Cancelled: true, ExitCode: -1, Duration: time.Since(start)}, res
	}
	exit := -1
	if res.ExitCode != nil {
		exit = *res.ExitCode
	}
	s := Summarize(r.Env.Test, res.Stdout+"\n"+res.Stderr, exit)
	s.TimedOut, s.StraysLeft = res.TimedOut, strays
	if res.TimedOut || (res.Err != nil && res.Err.Kind != tool.ErrExit) {
		s.OK = false
		// What it printed before it was stopped, or a shell that failed,
		// is not the test command's word on whether it could run.
		if s.NotRun != "" {
			s.NotRun, s.NotRunHint, s.Failed = "", "", 1
		}
	}
	s.Duration = time.Since(start)
	return s, res
}

// Execute implements tool.Executor for tool.OpValidate: the result's Output
// is the summary the model reads; Stdout and Stderr keep the full log.
func (r *Runner) Execute(ctx context.Context, call tool.Call) tool.Result {
	s, res := r.Run(ctx)
	res.CallID, res.Op = call.ID, call.Op
	lines := r.MaxLines
	if lines == 0 {
		lines = 40
	}
	res.Output = s.Text(res.Stdout+res.Stderr, lines)
	res.Err = nil
	if !s.OK {
		res.Err = &tool.Error{Kind: tool.ErrExit, Message: res.Output}
	}
	return res
}

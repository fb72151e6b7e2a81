package grade_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/swebench"
	"github.com/trussdev/truss/internal/container"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/validate"
)

// canned is what a fake shell answers to one command.
type canned struct {
	stdout, stderr string
	exit           int
	timedOut       bool
}

// fakeShells opens fake shells that answer each command from a table
// (an unknown command exits 0 with no output) and record what they ran.
// With facts set, its shells say they run in a container of that image.
type fakeShells struct {
	answers map[string]canned
	facts   *container.Facts

	mu  sync.Mutex
	ran []string
}

func (f *fakeShells) Open(dir string, env []string) (validate.Shell, error) {
	if f.facts != nil {
		return &fakeContainerShell{fakeShell{f}, *f.facts}, nil
	}
	return &fakeShell{f}, nil
}

func (f *fakeShells) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ran...)
}

type fakeShell struct{ f *fakeShells }

func (s *fakeShell) Run(ctx context.Context, command string, timeout time.Duration) tool.Result {
	s.f.mu.Lock()
	s.f.ran = append(s.f.ran, command)
	s.f.mu.Unlock()
	a := s.f.answers[command]
	res := tool.Result{Stdout: a.stdout, Stderr: a.stderr, TimedOut: a.timedOut}
	if !a.timedOut {
		res.ExitCode = &a.exit
	}
	if a.exit != 0 || a.timedOut {
		res.Err = &tool.Error{Kind: tool.ErrExit, Message: "exit status"}
	}
	return res
}

func (s *fakeShell) Close() error     { return nil }
func (s *fakeShell) Enforced() string { return "fake" }

// fakeContainerShell is a fake shell that says it runs in a container.
type fakeContainerShell struct {
	fakeShell
	facts container.Facts
}

func (s *fakeContainerShell) Facts() container.Facts { return s.facts }

// pytestLog is pytest -rA's output for the flask fixture: each of the
// FAIL_TO_PASS test and the others with the given status.
func pytestLog(f2p string) string {
	summary := "PASSED tests/test_helpers.py::test_get_debug_flag[-False]\n" +
		"PASSED tests/test_helpers.py::test_get_debug_flag[0-False]\n" +
		"PASSED tests/test_helpers.py::test_get_debug_flag[False-False]\n" +
		"PASSED tests/test_helpers.py::test_get_debug_flag[No-False]\n" +
		"PASSED tests/test_helpers.py::test_get_debug_flag[True-True]\n" +
		"PASSED tests/test_helpers.py::test_split_blueprint_path[a-expect0]\n" +
		"PASSED tests/test_helpers.py::test_split_blueprint_path[a.b-expect1]\n"
	tail := "8 passed"
	if f2p == "FAILED" {
		tail = "1 failed, 7 passed"
	}
	return "============================= test session starts ==============================\n" +
		"platform linux -- Python 3.11.2, pytest-7.2.1, pluggy-1.0.0\n" +
		"rootdir: /testbed, configfile: pyproject.toml, testpaths: tests\n" +
		"collected 8 items\n\ntests/test_helpers.py ........                                            [100%]\n\n" +
		"==================================== PASSES ====================================\n" +
		"=========================== short test summary info ============================\n" +
		summary + f2p + " tests/test_helpers.py::test_split_blueprint_path[a.b.c-expect2]" +
		map[bool]string{true: " - AssertionError: assert ['a.b.c', 'a'] == ['a.b.c', 'a.b', 'a']", false: ""}[f2p == "FAILED"] + "\n" +
		"============================== " + tail + " in 0.04s ===============================\n"
}

// djangoLog is runtests.py --verbosity 2's output (on stderr) for the
// django fixture, the FAIL_TO_PASS test ending with status.
func djangoLog(status string) string {
	return "Testing against Django installed in '/testbed/django'\nImporting application utils_tests\n" +
		"Skipping setup of unused database(s): default, other.\nSystem check identified no issues (0 silenced).\n" +
		"test_capfirst (utils_tests.test_text.TestUtilsText) ... ok\n" +
		"test_capfirst_lazy (utils_tests.test_text.TestUtilsText) ... " + status + "\n\n" +
		"----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nOK\n"
}

// Live grading of SWE-bench records with a shell that answers from a
// table: the spec's command with the test directives is what runs, after
// the spec's setup; the log is graded by the repository's parser under
// the Grader's rules (v4.1 by default), and the verdict says which.
func TestGradeSWEbenchLive(t *testing.T) {
	flask, django := flaskTask(t), djangoTask(t)
	const flaskCmd = "pytest -rA tests/test_helpers.py"
	const djangoCmd = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 utils_tests.test_text"
	f2p, p2p := flask.FailToPass[0], flask.PassToPass[0]
	djangoLocale := "sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen"
	withSetup := *flask
	withSetup.SetupCmd = bench.Commands{"pip install -e ."}
	flaskSetup := []string{"if [ -f /opt/miniconda3/bin/activate ]; then . /opt/miniconda3/bin/activate && conda activate testbed; fi"}
	tests := []struct {
		name     string
		task     *bench.Task
		rules    swebench.Rules
		answers  map[string]canned
		resolved bool
		// wantRules, wantSource, wantCmd: the verdict's; wantSetup its
		// setup commands; want the listed tests' verdicts (nil: not
		// checked).
		wantRules, wantSource, wantCmd string
		wantSetup                      []string
		want                           map[string]string
		setupFailed                    string
		timedOut                       bool
	}{
		{name: "flask gold", task: flask, answers: map[string]canned{flaskCmd: {stdout: pytestLog("PASSED")}}, resolved: true,
			wantRules: "swebench-v4.1.0", wantSource: "swebench:parse_log_flask", wantCmd: flaskCmd, wantSetup: flaskSetup,
			want: map[string]string{f2p: bench.TestPassed, p2p: bench.TestPassed}},
		{name: "flask, the FAIL_TO_PASS test fails", task: flask,
			answers:   map[string]canned{flaskCmd: {stdout: pytestLog("FAILED"), exit: 1}},
			wantRules: "swebench-v4.1.0", wantSource: "swebench:parse_log_flask", wantCmd: flaskCmd,
			want: map[string]string{f2p: bench.TestFailed, p2p: bench.TestPassed}},
		{name: "flask, the FAIL_TO_PASS test did not run", task: flask,
			answers:   map[string]canned{flaskCmd: {stdout: strings.ReplaceAll(pytestLog("PASSED"), "PASSED tests/test_helpers.py::test_split_blueprint_path[a.b.c-expect2]\n", ""), exit: 0}},
			wantRules: "swebench-v4.1.0", wantSource: "swebench:parse_log_flask", wantCmd: flaskCmd,
			want: map[string]string{f2p: bench.TestMissing, p2p: bench.TestPassed}},
		{name: "flask, skipped under v4.1 is neither: resolved", task: flask,
			answers:   map[string]canned{flaskCmd: {stdout: strings.Replace(pytestLog("PASSED"), "PASSED tests/test_helpers.py::test_split_blueprint_path[a.b.c", "SKIPPED tests/test_helpers.py::test_split_blueprint_path[a.b.c", 1)}},
			resolved:  true,
			wantRules: "swebench-v4.1.0", wantSource: "swebench:parse_log_flask", wantCmd: flaskCmd,
			want: map[string]string{f2p: swebench.TestSkipped}},
		{name: "flask, skipped under v5 fails", task: flask, rules: swebench.RulesV5,
			answers:   map[string]canned{flaskCmd: {stdout: strings.Replace(pytestLog("PASSED"), "PASSED tests/test_helpers.py::test_split_blueprint_path[a.b.c", "SKIPPED tests/test_helpers.py::test_split_blueprint_path[a.b.c", 1)}},
			wantRules: "swebench-v5", wantSource: "swebench:parse_log_flask", wantCmd: flaskCmd,
			want: map[string]string{f2p: swebench.TestSkipped}},
		{name: "flask, all passed but the exit status is not 0: v4.1 resolves", task: flask,
			answers:  map[string]canned{flaskCmd: {stdout: pytestLog("PASSED"), exit: 3}},
			resolved: true, wantRules: "swebench-v4.1.0", wantSource: "swebench:parse_log_flask", wantCmd: flaskCmd},
		{name: "flask, all passed but the exit status is not 0: v5 does not (spoofed output)", task: flask, rules: swebench.RulesV5,
			answers:   map[string]canned{flaskCmd: {stdout: pytestLog("PASSED"), exit: 3}},
			wantRules: "swebench-v5", wantSource: "swebench:parse_log_flask", wantCmd: flaskCmd,
			want: map[string]string{f2p: bench.TestMissing, p2p: bench.TestMissing}},
		{name: "flask under v2.0.13", task: flask, rules: swebench.RulesV2_0,
			answers:  map[string]canned{flaskCmd: {stdout: pytestLog("PASSED")}},
			resolved: true, wantRules: "swebench-v2.0.13", wantSource: "swebench:parse_log_flask", wantCmd: flaskCmd},
		{name: "flask, timed out", task: flask,
			answers:   map[string]canned{flaskCmd: {stdout: pytestLog("PASSED"), timedOut: true}},
			wantRules: "swebench-v4.1.0", wantSource: "swebench:parse_log_flask", wantCmd: flaskCmd, timedOut: true},
		{name: "flask, the task's setup_cmd fails", task: &withSetup,
			answers:   map[string]canned{"pip install -e .": {stderr: "no network", exit: 1}, flaskCmd: {stdout: pytestLog("PASSED")}},
			wantRules: "swebench-v4.1.0", wantSource: "swebench:parse_log_flask", wantCmd: flaskCmd,
			wantSetup: append(append([]string(nil), flaskSetup...), "pip install -e ."), setupFailed: "pip install -e .",
			want: map[string]string{f2p: bench.TestMissing, p2p: bench.TestMissing}},
		{name: "django 3.0: the locale setup fails, the tests run all the same", task: django,
			answers:  map[string]canned{djangoLocale: {stderr: "sed: can't read /etc/locale.gen", exit: 2}, djangoCmd: {stderr: djangoLog("ok")}},
			resolved: true, wantRules: "swebench-v4.1.0", wantSource: "swebench:parse_log_django", wantCmd: djangoCmd,
			wantSetup: append(append([]string(nil), flaskSetup...), djangoLocale, "export LANG=en_US.UTF-8", "export LANGUAGE=en_US:en", "export LC_ALL=en_US.UTF-8"),
			want:      map[string]string{django.FailToPass[0]: bench.TestPassed, django.PassToPass[0]: bench.TestPassed}},
		{name: "django 3.0, the FAIL_TO_PASS test fails", task: django,
			answers:   map[string]canned{djangoCmd: {stderr: djangoLog("FAIL"), exit: 1}},
			wantRules: "swebench-v4.1.0", wantSource: "swebench:parse_log_django", wantCmd: djangoCmd,
			want: map[string]string{django.FailToPass[0]: bench.TestFailed, django.PassToPass[0]: bench.TestPassed}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sh := &fakeShells{answers: tc.answers}
			g := &grade.Grader{Shells: sh, Dir: t.TempDir(), Rules: tc.rules}
			v, err := g.Grade(context.Background(), tc.task, tc.task.Patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.Resolved != tc.resolved || !v.PatchApplied {
				t.Errorf("resolved %v applied %v (%s), want resolved %v; tests %v\n%s", v.Resolved, v.PatchApplied, v, tc.resolved, v.Tests, v.Log)
			}
			if v.Rules != tc.wantRules || v.Source != tc.wantSource || v.Command != tc.wantCmd {
				t.Errorf("rules %q source %q command %q, want %q %q %q", v.Rules, v.Source, v.Command, tc.wantRules, tc.wantSource, tc.wantCmd)
			}
			if tc.wantSetup != nil && !reflect.DeepEqual(v.Setup, tc.wantSetup) {
				t.Errorf("setup %q, want %q", v.Setup, tc.wantSetup)
			}
			ran := sh.commands()
			wantRan := v.Setup
			if tc.setupFailed == "" {
				wantRan = append(append([]string(nil), v.Setup...), tc.wantCmd)
			}
			if !reflect.DeepEqual(ran, wantRan) {
				t.Errorf("ran %q, want %q", ran, wantRan)
			}
			if v.SetupFailed != tc.setupFailed || v.TimedOut != tc.timedOut {
				t.Errorf("setup failed %q timed out %v, want %q %v", v.SetupFailed, v.TimedOut, tc.setupFailed, tc.timedOut)
			}
			if len(v.Tests) != len(tc.task.Tests()) {
				t.Errorf("tests %v, want one for each of %v", v.Tests, tc.task.Tests())
			}
			for name, w := range tc.want {
				if v.Tests[name] != w {
					t.Errorf("%s: %q, want %q", name, v.Tests[name], w)
				}
			}
			// The log is the harness's test_output.txt shape: what the
			// rules that read it would say of it.
			log := string(v.Log)
			if tc.setupFailed == "" {
				if !strings.Contains(log, "+ : '>>>>> Start Test Output'\n") || !strings.Contains(log, "+ : '>>>>> End Test Output'\n") {
					t.Errorf("the log lacks the markers:\n%s", log)
				}
				if got := swebench.DetectRules(log); tc.rules != swebench.RulesV2_0 && got != swebench.Rules(tc.wantRules) {
					t.Errorf("the log reads as %s's, graded under %s", got, tc.wantRules)
				}
			}
			if v.Sandbox != "fake" || v.ImageID != "" {
				t.Errorf("sandbox %q image %q", v.Sandbox, v.ImageID)
			}
		})
	}
}

// The grader chooses between live SWE-bench grading, Truss's own rules
// and an error from the task's fields and the Grader's rules.
func TestGradeSWEbenchChoice(t *testing.T) {
	flask := flaskTask(t)
	const detected = "python -m pytest -rA"
	truss := map[string]canned{detected: {stdout: pytestLog("PASSED")}}
	with := func(f func(*bench.Task)) *bench.Task {
		c := *flask
		f(&c)
		return &c
	}
	tests := []struct {
		name       string
		task       *bench.Task
		rules      swebench.Rules
		wantRules  string
		wantSource string
		wantCmd    string
		// wantErr, when set, is what Grade's error says; errAs a type it
		// wraps.
		wantErr string
		errAs   any
	}{
		{name: "a SWE-bench record", task: flask, wantRules: "swebench-v4.1.0", wantSource: "swebench:parse_log_flask", wantCmd: "pytest -rA tests/test_helpers.py"},
		{name: "rules v4.0.4 chosen", task: flask, rules: swebench.RulesV4_0, wantRules: "swebench-v4.0.4", wantSource: "swebench:parse_log_flask", wantCmd: "pytest -rA tests/test_helpers.py"},
		{name: "a repository the harness does not know: detected", task: with(func(t *bench.Task) { t.Repo = "example/flaskish" }),
			wantRules: grade.RulesTruss, wantSource: "pytest", wantCmd: detected},
		{name: "a local path named like a harness repository: detected", task: with(func(t *bench.Task) { t.Repo = "./pallets/flask" }),
			wantRules: grade.RulesTruss, wantSource: "pytest", wantCmd: detected},
		{name: "an absolute path: detected", task: with(func(t *bench.Task) { t.Repo = t.RepoDir }),
			wantRules: grade.RulesTruss, wantSource: "pytest", wantCmd: detected},
		{name: "no version: not a SWE-bench record, detected", task: with(func(t *bench.Task) { t.Version = "" }),
			wantRules: grade.RulesTruss, wantSource: "pytest", wantCmd: detected},
		{name: "a Multilingual repository (its commands are the task's): detected", task: with(func(t *bench.Task) { t.Repo = "tokio-rs/tokio" }),
			wantRules: grade.RulesTruss, wantSource: "pytest", wantCmd: detected},
		{name: "a test_cmd wins", task: with(func(t *bench.Task) { t.TestCmd = detected }),
			wantRules: grade.RulesTruss, wantSource: "pytest", wantCmd: detected},
		{name: "a version the spec table lacks", task: with(func(t *bench.Task) { t.Version = "0.1" }),
			wantErr: `pallets__flask-4970: no test_cmd, and swebench: pallets/flask has no spec for version "0.1"`, errAs: new(*swebench.UnknownVersionError)},
		{name: "unknown rules", task: flask, rules: "swebench-v9", wantErr: "swebench: unknown rules", errAs: &swebench.ErrUnknownRules},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			answers := truss
			if tc.wantSource != "pytest" {
				answers = map[string]canned{tc.wantCmd: {stdout: pytestLog("PASSED")}}
			}
			g := &grade.Grader{Shells: &fakeShells{answers: answers}, Dir: t.TempDir(), Rules: tc.rules}
			v, err := g.Grade(context.Background(), tc.task, tc.task.Patch)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if e, ok := tc.errAs.(*error); ok {
					if !errors.Is(err, *e) {
						t.Errorf("%v does not wrap %v", err, *e)
					}
				} else if !errors.As(err, tc.errAs) {
					t.Errorf("%v does not wrap a %T", err, tc.errAs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.Rules != tc.wantRules || v.Source != tc.wantSource || v.Command != tc.wantCmd || !v.Resolved {
				t.Errorf("rules %q source %q command %q resolved %v, want %q %q %q true\n%s", v.Rules, v.Source, v.Command, v.Resolved,
					tc.wantRules, tc.wantSource, tc.wantCmd, v.Log)
			}
		})
	}
	// A patch that does not apply: the verdict still says which rules.
	g := &grade.Grader{Shells: &fakeShells{}, Dir: t.TempDir()}
	v, err := g.Grade(context.Background(), flask, "this is not a patch\n")
	if err != nil || v.PatchApplied || v.Rules != "swebench-v4.1.0" {
		t.Errorf("%v %+v", err, v)
	}
}

// A shell in a container says which image: the verdict records its ID and
// repository digests.
func TestGradeRecordsImage(t *testing.T) {
	flask := flaskTask(t)
	facts := &container.Facts{Image: "localhost/x:latest", ImageID: "sha256:" + strings.Repeat("ab", 32),
		RepoDigests: []string{"docker.io/swebench/x@sha256:" + strings.Repeat("cd", 32)}}
	for _, tc := range []struct {
		name string
		task *bench.Task
	}{
		{"live", flask},
		{"truss", func() *bench.Task { c := *flask; c.TestCmd = "python -m pytest -rA"; return &c }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := &fakeShells{facts: facts, answers: map[string]canned{
				"pytest -rA tests/test_helpers.py": {stdout: pytestLog("PASSED")}, "python -m pytest -rA": {stdout: pytestLog("PASSED")}}}
			g := &grade.Grader{Shells: sh, Dir: t.TempDir()}
			v, err := g.Grade(context.Background(), tc.task, tc.task.Patch)
			if err != nil {
				t.Fatal(err)
			}
			if !v.Resolved || v.ImageID != facts.ImageID || !reflect.DeepEqual(v.ImageRepoDigests, facts.RepoDigests) {
				t.Errorf("resolved %v image %q %v, want %q %v", v.Resolved, v.ImageID, v.ImageRepoDigests, facts.ImageID, facts.RepoDigests)
			}
		})
	}
}

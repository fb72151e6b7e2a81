package validate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		files map[string]string
		test  string
	}{
		{map[string]string{"go.mod": "module x\n"}, "go test ./..."},
		{map[string]string{"package.json": `{"scripts":{"test":"jest"}}`}, "npm test"},
		{map[string]string{"package.json": `{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}`}, ""},
		{map[string]string{"Cargo.toml": "[package]\n"}, "cargo test"},
		{map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\n"}, "python -m pytest -q"},
		{map[string]string{"setup.py": "", "tests/test_a.py": ""}, "python -m pytest -q"},
		// A repository with test files and no configuration at all.
		{map[string]string{"calc.py": "", "tests/test_calc.py": ""}, "python -m pytest -q"},
		{map[string]string{"calc.py": "", "test/calc_test.py": ""}, "python -m pytest -q"},
		{map[string]string{"calc.py": "", "conftest.py": ""}, "python -m pytest -q"},
		{map[string]string{"tests/conftest.py": "", "tests/data.json": ""}, "python -m pytest -q"},
		// A tests directory of something else is not Python's.
		{map[string]string{"tests/run.sh": "", "tests/helper.py": ""}, ""},
		{map[string]string{"setup.py": "", "tests/README": ""}, "python -m pytest -q"}, // setup.py's tests, as before
		{map[string]string{"README": "", "tests/README": ""}, ""},
		{map[string]string{"tests/unit/test_a.py": ""}, "python -m pytest -q"},
		{map[string]string{"tests/a/b/test_a.py": ""}, "python -m pytest -q"},
		{map[string]string{"tests/a/b/c/test_a.py": ""}, ""}, // deeper than the search goes
		{map[string]string{"tests/__pycache__/test_a.py": ""}, ""},
		{map[string]string{"test/test_a.py/x": ""}, ""}, // a directory named like a test file
		{map[string]string{"Makefile": "all:\n\ttrue\ntest: all\n\t./t.sh\n"}, "make test"},
		{map[string]string{"README.md": "x"}, ""},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		for name, body := range tc.files {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
			os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
		}
		env, ok := Detect(dir)
		if env.Test != tc.test || ok != (tc.test != "") {
			t.Errorf("%v: got %q %v, want %q", tc.files, env.Test, ok, tc.test)
		}
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name, out              string
		exit                   int
		passed, failed, skiped int
		unit                   string
		failures               string
	}{
		{"go", "--- FAIL: TestMedian (0.00s)\n    stats_test.go:23: bad\nFAIL\nFAIL\texample.com/stats\t0.01s\nok  \texample.com/other\t0.02s\n", 1, 1, 1, 0, "packages", "TestMedian"},
		{"go ok", "ok  \ta\t0.1s\nok  \tb\t(cached)\n", 0, 2, 0, 0, "packages", ""},
		{"pytest", "....F\n=== 1 failed, 4 passed, 2 skipped in 0.12s ===\n", 1, 4, 1, 2, "tests", ""},
		{"cargo", "test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured\ntest result: ok. 2 passed; 0 failed; 1 ignored\n", 101, 5, 1, 1, "tests", ""},
		{"jest", "Tests:       1 failed, 2 skipped, 7 passed, 10 total\n", 1, 7, 1, 2, "tests", ""},
		{"plain", "check: 3 passed, 1 failed\n", 1, 3, 1, 0, "tests", ""},
		{"silent failure", "boom\n", 2, 0, 1, 0, "tests", ""},
	}
	for _, tc := range tests {
		s := Summarize("cmd", tc.out, tc.exit)
		if s.Passed != tc.passed || s.Failed != tc.failed || s.Skipped != tc.skiped || s.Unit != tc.unit || strings.Join(s.Failures, ",") != tc.failures || s.OK != (tc.exit == 0) {
			t.Errorf("%s: %+v", tc.name, s)
		}
	}
	s := Summarize("go test ./...", "--- FAIL: TestMedian (0.00s)\n    stats_test.go:23: bad\n", 1)
	text := s.Text("=== RUN TestMedian\n--- FAIL: TestMedian (0.00s)\n    stats_test.go:23: bad\n", 40)
	if !strings.Contains(text, "validation failed: `go test ./...` exited with status 1") || !strings.Contains(text, "first failures:\n--- FAIL: TestMedian") || strings.Contains(text, "=== RUN") {
		t.Errorf("text:\n%s", text)
	}
}

// recShell records the commands it runs, and what else happened between
// them, in log.
type recShell struct{ log *[]string }

func (s recShell) Run(_ context.Context, command string, _ time.Duration) tool.Result {
	*s.log = append(*s.log, command)
	zero := 0
	return tool.Result{ExitCode: &zero}
}

func (s recShell) Close() error { return nil }

// TestRunnerBeforeTest: BeforeTest runs once, after every setup command
// and before the test command; not at all when a setup command fails.
func TestRunnerBeforeTest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing bool
		want    string
	}{
		{"setup passes", false, "s1 s2 before test"},
		{"setup fails", true, "s1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			sh := recShell{&log}
			var newShell func() Shell = func() Shell { return sh }
			if tc.failing {
				newShell = func() Shell { return failShell{sh} }
			}
			r := Runner{Env: Env{Setup: []string{"s1", "s2"}, Test: "test"}, NewShell: newShell,
				BeforeTest: func() { log = append(log, "before") }}
			r.Run(context.Background())
			if got := strings.Join(log, " "); got != tc.want {
				t.Errorf("ran %q, want %q", got, tc.want)
			}
		})
	}
}

// killShell is a recShell that is a StrayKiller, whose KillOthers fails
// when err is set.
type killShell struct {
	recShell
	err error
}

func (s killShell) KillOthers(context.Context) error {
	*s.log = append(*s.log, "kill")
	return s.err
}

// TestRunnerKillsStrays: on a StrayKiller, what the setup commands left
// running is ended after the last of them and before BeforeTest and the
// test command; with no setup command there is nothing to end; a kill
// that fails is the shell's error, no test run; a shell with no PID
// namespace to search runs the tests and the summary says what was left.
func TestRunnerKillsStrays(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup []string
		err   error
		want  string
	}{
		{"after the setup commands", []string{"s1", "s2"}, nil, "s1 s2 kill before test"},
		{"no setup command", nil, nil, "before test"},
		{"the kill fails", []string{"s1"}, errors.New("no PID namespace"), "s1 kill"},
		{"no PID namespace", []string{"s1"}, ErrStraysUnreachable, "s1 kill before test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			sh := killShell{recShell{&log}, tc.err}
			r := Runner{Env: Env{Setup: tc.setup, Test: "test"}, NewShell: func() Shell { return sh },
				BeforeTest: func() { log = append(log, "before") }}
			sum, res := r.Run(context.Background())
			if got := strings.Join(log, " "); got != tc.want {
				t.Errorf("ran %q, want %q", got, tc.want)
			}
			if sum.StraysLeft != (tc.err == ErrStraysUnreachable) {
				t.Errorf("strays left %v", sum.StraysLeft)
			}
			if tc.err != nil && tc.err != ErrStraysUnreachable && (res.Err == nil || res.Err.Kind != tool.ErrShell || res.ExitCode != nil || !strings.Contains(res.Err.Message, "no PID namespace")) {
				t.Errorf("result %+v, want the shell's error", res)
			}
		})
	}
}

// failShell fails every command it runs.
type failShell struct{ recShell }

func (s failShell) Run(ctx context.Context, command string, timeout time.Duration) tool.Result {
	r := s.recShell.Run(ctx, command, timeout)
	one := 1
	r.ExitCode, r.Err = &one, &tool.Error{Kind: tool.ErrExit, Message: "exit 1"}
	return r
}

// TestMarkersAreWhatDetectReads: each of Markers, alone in a repository,
// is what Detect detects the test command from.
func TestMarkersAreWhatDetectReads(t *testing.T) {
	bodies := map[string]string{"go.mod": "module x\n", "package.json": `{"scripts":{"test":"jest"}}`, "Cargo.toml": "",
		"pyproject.toml": "pytest", "pytest.ini": "", "setup.cfg": "pytest", "tox.ini": "pytest", "Makefile": "test:\n"}
	for _, m := range Markers() {
		dir := t.TempDir()
		switch m {
		case "setup.py":
			os.WriteFile(filepath.Join(dir, "setup.py"), nil, 0o644)
			os.Mkdir(filepath.Join(dir, "tests"), 0o755)
		case "tests", "test":
			os.Mkdir(filepath.Join(dir, m), 0o755)
			os.WriteFile(filepath.Join(dir, m, "test_a.py"), nil, 0o644)
		default:
			os.WriteFile(filepath.Join(dir, m), []byte(bodies[m]), 0o644)
		}
		env, ok := Detect(dir)
		if !ok || env.Source != m {
			t.Errorf("marker %s alone: detected %+v %v", m, env, ok)
		}
	}
}

// TestSummarizeCouldNotRun: a test command whose runner could not run at
// all (outputs as this machine's runners print them) is said to be one,
// with what to do, not counted as a failed test; a test's own import error,
// a runner's count and a plain failure keep their meaning.
func TestSummarizeCouldNotRun(t *testing.T) {
	for _, tc := range []struct {
		name, command, out string
		exit               int
		notRun, hint       string // "" when the tests ran
		failed             int
	}{
		{"pytest not installed", "python -m pytest -q", "\n/root/.pyenv/versions/3.11.7/bin/python: No module named pytest\n", 1,
			"No module named pytest", "install pytest in the environment the commands see, or give --test-cmd CMD", 0},
		{"python3 -m nose2", "python3 -m nose2", "\n/usr/bin/python3: No module named nose2\n", 1, "No module named nose2", "install nose2", 0},
		{"dotted module, its package missing", "python -m json.tool", "\n/root/.pyenv/versions/3.11.7/bin/python: Error while finding module specification for 'json.tool' (ModuleNotFoundError: No module named 'json')\n", 1,
			"No module named json", "install json", 0},
		{"dotted module", "python3 -m pytest_xdist.plugin", "\n/usr/bin/python3: Error while finding module specification for 'pytest_xdist.plugin' (ModuleNotFoundError: No module named 'pytest_xdist')\n", 1,
			"No module named pytest_xdist", "install pytest_xdist", 0},
		{"missing binary", "nosuchrunner --all", "\nbash: nosuchrunner: command not found\n", 127, "bash: nosuchrunner: command not found", "install the program where the commands run (on their PATH), or give --test-cmd CMD", 0},
		{"missing binary, in the sandbox", "no-such-test-runner -q", "\n/usr/bin/bash: line 2: no-such-test-runner: command not found\n", 127,
			"/usr/bin/bash: line 2: no-such-test-runner: command not found", "install the program", 0},
		{"missing binary, script line", "nosuchrunner", "\nbash: line 1: nosuchrunner: command not found\n", 127, "bash: line 1: nosuchrunner: command not found", "install the program", 0},
		{"missing script file", "./t.sh", "\nbash: ./t.sh: No such file or directory\n", 127, "bash: ./t.sh: No such file or directory", "install the program", 0},
		{"127 saying nothing", "x", "\n", 127, "exit status 127 (command not found)", "install the program", 0},
		{"not executable", "./t.sh", "\nbash: ./t.sh: Permission denied\n", 126, "bash: ./t.sh: Permission denied", "make it executable, or give --test-cmd CMD", 0},
		{"npm without a test script", "npm test", "\nnpm error Missing script: \"test\"\nnpm error\nnpm error To see a list of scripts, run:\nnpm error   npm run\n", 1,
			`npm: Missing script: "test"`, `add a "test" script to package.json, or give --test-cmd CMD`, 0},
		{"old npm", "npm run unit", "\nnpm ERR! Missing script: \"unit\"\n", 1, `npm: Missing script: "unit"`, `add a "unit" script`, 0},
		{"npm script's runner not installed", "npm test", "\n> test\n> jest\n\n\nsh: 1: jest: not found\n", 127, "sh: 1: jest: not found", "install the program", 0},
		{"make without a test target", "make test", "\nmake: *** No rule to make target 'test'.  Stop.\n", 2, "make: No rule to make target 'test'", "add a test target to the Makefile", 0},
		{"make recipe's runner missing", "make test", "nosuchrunner -v\n\nmake: nosuchrunner: No such file or directory\nmake: *** [Makefile:2: test] Error 127\n", 2,
			"make: nosuchrunner: No such file or directory", "install the program", 0},
		{"cargo outside a crate", "cargo test", "\nerror: could not find `Cargo.toml` in `/tmp/x` or any parent directory\n", 101,
			"could not find `Cargo.toml` in `/tmp/x` or any parent directory", "run the tests where the Cargo.toml is", 0},
		// The tests ran: a test's own import error, a count, a plain failure.
		{"a test's import error", "python -m pytest -q", "\n==================================== ERRORS ====================================\nE   ModuleNotFoundError: No module named 'requests'\n=========================== short test summary info ============================\nERROR tests/test_a.py\n1 error in 0.05s\n", 2, "", "", 1},
		{"counted, then a missing program", "./all.sh", "check: 3 passed, 1 failed\nbash: lint: command not found\n", 127, "", "", 1},
		{"failed without saying", "./t.sh", "boom\n", 1, "", "", 1},
		{"passed", "./t.sh", "bash: x: command not found\n", 0, "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.command, tc.out, tc.exit)
			if s.NotRun != tc.notRun || !strings.HasPrefix(s.NotRunHint, tc.hint) || (tc.notRun == "") != (s.NotRunHint == "") || s.Failed != tc.failed || s.OK != (tc.exit == 0) {
				t.Fatalf("%+v", s)
			}
			text := s.Text(tc.out, 40)
			if tc.notRun != "" {
				want := fmt.Sprintf("validation failed: `%s` exited with status %d: the test command could not run: %s; %s", tc.command, tc.exit, s.NotRun, s.NotRunHint)
				if !strings.HasPrefix(text, want) || strings.Contains(text, "1 failed") {
					t.Errorf("text:\n%s\nwant it to start %q", text, want)
				}
			} else if strings.Contains(text, "could not run") {
				t.Errorf("text:\n%s", text)
			}
		})
	}
}

// TestRunnerNotRunKeepsTimeout: a test command stopped by its timeout is a
// timeout, whatever it printed before.
func TestRunnerNotRunKeepsTimeout(t *testing.T) {
	r := Runner{Env: Env{Test: "nosuchrunner"}, NewShell: func() Shell { return timeoutShell{} }}
	s, _ := r.Run(context.Background())
	if s.NotRun != "" || !s.TimedOut || s.OK || !strings.HasPrefix(s.Text("", 0), "validation failed: `nosuchrunner` timed out") {
		t.Errorf("%+v", s)
	}
}

// timeoutShell's commands print a command-not-found and time out.
type timeoutShell struct{}

func (timeoutShell) Run(context.Context, string, time.Duration) tool.Result {
	code := 127
	return tool.Result{Stderr: "bash: nosuchrunner: command not found\n", ExitCode: &code, TimedOut: true,
		Err: &tool.Error{Kind: tool.ErrTimeout, Message: "timed out"}}
}

func (timeoutShell) Close() error { return nil }

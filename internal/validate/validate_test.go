package validate

import (
	"context"
	"errors"
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

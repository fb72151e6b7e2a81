package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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

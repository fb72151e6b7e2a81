//go:build heavy

package grade_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/sandbox"
)

// TestOverlayGradingRunsTestsItself: the host's build cache holds a
// passing result of a test that fails inside the grading (it needs a
// directory only the host has, in the /tmp the sandbox replaces); go test
// in a grading whose Go build cache is an overlay of the host's
// (CacheOverlay) runs the test and reports the failure instead of the
// host's "(cached)" pass. It skips where overlayfs cannot be mounted in a
// user namespace, before building the testing packages into a new cache
// (a cold build, a minute or more). CacheOwn's cache program refuses a
// lower's test results (package cacheprog's TestRealGo).
func TestOverlayGradingRunsTestsItself(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	hostCache := filepath.Join(t.TempDir(), "go-build")
	if err := os.MkdirAll(filepath.Join(hostCache, "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOCACHE", hostCache)
	t.Setenv("GOFLAGS", "")
	t.Setenv("GOTOOLCHAIN", "local")
	s := &grade.Sandboxed{Caches: grade.CacheOverlay}
	run := func(src map[string]string, cmd string) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "repo")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range src {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sh, err := s.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Close()
		r := sh.Run(context.Background(), cmd, 5*time.Minute)
		return r.Stdout + r.Stderr
	}
	if out := run(nil, `ls "$GOCACHE"`); !strings.Contains(out, "ab") {
		t.Skipf("no warm layer here (overlayfs in a user namespace): %q", out)
	}
	// In the temporary directory, which a grading's sandbox replaces with
	// its own: only the host has it.
	marker, err := os.MkdirTemp("", "marker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(marker) })
	src := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"m.go":   "package m\n",
		// A directory listing, which go test's result cache does not
		// check (as it checks the files a test opens).
		"m_test.go": "package m\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestHost(t *testing.T) {\n\tif _, err := os.ReadDir(" + strconv.Quote(marker) + "); err != nil {\n\t\tt.Fatal(\"not on the host\")\n\t}\n}\n",
	}
	onHost := t.TempDir()
	for name, data := range src {
		if err := os.WriteFile(filepath.Join(onHost, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		cmd := exec.Command("go", "test", ".")
		cmd.Dir = onHost
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("on the host: %v\n%s", err, out)
		}
		if i == 1 && !strings.Contains(string(out), "(cached)") {
			t.Fatalf("the host's cache holds no test result: %s", out)
		}
	}
	if out := run(src, `go test . 2>&1; true`); strings.Contains(out, "(cached)") || !strings.Contains(out, "not on the host") {
		t.Fatalf("the grading did not run the test itself: %q", out)
	}
}

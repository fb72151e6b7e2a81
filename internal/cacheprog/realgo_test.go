package cacheprog_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/cacheprog"
)

// goWith runs the go command in dir with GOCACHE=private and this test
// binary as its cache program over lowers.
func goWith(t *testing.T, dir, private string, lowers []string, args ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	prog, err := cacheprog.Command(self, private, lowers...)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOCACHE="+private, "GOCACHEPROG="+prog, "GOFLAGS=", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestRealGo: the protocol against the go command itself. A build over
// the host's warm cache compiles only the module's own package, takes the
// standard library from the host's cache in place without touching it,
// and puts what it compiled into its private directory; a later command
// with that directory as a lower cache takes the build but runs the
// tests again, where one with it as its private directory reports them
// cached.
func TestRealGo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	host := os.Getenv("GOCACHE") // testenv's: the go command's own cache, read only here
	if !filepath.IsAbs(host) {
		t.Skip("no host build cache")
	}
	mod := t.TempDir()
	for name, src := range map[string]string{
		"go.mod":    "module example.com/m\n\ngo 1.24\n",
		"m.go":      "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n",
		"m_test.go": "package main\n\nimport \"testing\"\n\nfunc TestM(t *testing.T) {}\n",
	} {
		write(t, filepath.Join(mod, name), []byte(src))
	}
	first := t.TempDir()
	out := goWith(t, mod, first, []string{host}, "build", "-x", "-o", os.DevNull, ".")
	compiled := regexp.MustCompile(`(?m)/compile .* -p (\S+) `).FindAllStringSubmatch(out, -1)
	var pkgs []string
	for _, m := range compiled {
		pkgs = append(pkgs, m[1])
	}
	if !raceEnabled && strings.Join(pkgs, " ") != "main" {
		// The test binary was just built with this cache: fmt and its
		// dependencies are in it, as every go test run leaves them.
		t.Errorf("compiled %v, want main alone over a warm host cache", pkgs)
	}
	fromHost := regexp.MustCompile(`packagefile fmt=(\S+)`).FindStringSubmatch(out)
	if !raceEnabled && (fromHost == nil || !strings.HasPrefix(fromHost[1], host+string(filepath.Separator))) {
		t.Errorf("fmt is not read from the host's cache: %v", fromHost)
	}
	var before time.Time
	if fromHost != nil {
		fi, err := os.Stat(fromHost[1])
		if err != nil {
			t.Fatal(err)
		}
		before = fi.ModTime()
	}
	if ents, _ := filepath.Glob(filepath.Join(first, "*", "*-a")); len(ents) == 0 {
		t.Error("nothing was put into the private directory")
	}
	if out := goWith(t, mod, first, []string{host}, "test", "."); strings.Contains(out, "(cached)") {
		t.Errorf("a first test run reports cached results: %s", out)
	}
	second := t.TempDir()
	out = goWith(t, mod, second, []string{first, host}, "test", "-x", ".")
	if strings.Contains(out, "(cached)") || strings.Contains(out, "/compile ") {
		t.Errorf("over a lower cache holding the build and the result, the tests must run again and nothing compile:\n%s", out)
	}
	if out := goWith(t, mod, first, []string{host}, "test", "."); !strings.Contains(out, "(cached)") {
		t.Errorf("the private directory's own test result is not used: %s", out)
	}
	if fromHost != nil {
		if fi, _ := os.Stat(fromHost[1]); !fi.ModTime().Equal(before) {
			t.Error("the host cache's entry was touched")
		}
	}
}

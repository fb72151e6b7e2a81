package grade_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/toolcache"
)

// TestGradingCachesOwn: each grading's build cache shows the host's, warm,
// and what a graded command writes there (an object file planted for the
// next build, or an entry planted for an action a later build looks up)
// reaches neither the host's cache nor a later grading's. By default
// (CacheOwn) Go's build cache is read through the cache program, which
// the graded commands can run themselves: it answers from the host's
// cache in place, and what one grading put is gone for the next. A cache
// toolcache.SharedEnv names for the agents' commands changes none of it:
// the gradings neither read nor write it.
func TestGradingCachesOwn(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	for _, tc := range []struct {
		name      string
		mode      grade.CacheMode
		sharedEnv bool
	}{
		{"own", grade.CacheDefault, false},
		{"own with the agents' shared cache set", grade.CacheDefault, true},
		{"overlay", grade.CacheOverlay, false},
	} {
		mode := tc.mode
		t.Run(tc.name, func(t *testing.T) {
			shared := t.TempDir()
			if tc.sharedEnv {
				t.Setenv(toolcache.SharedEnv, shared)
			}
			hostCache := t.TempDir()
			os.MkdirAll(filepath.Join(hostCache, "ab"), 0o755)
			os.WriteFile(filepath.Join(hostCache, "ab", "std-d"), []byte("warm-4711"), 0o644)
			warm := plantEntry(t, hostCache, "warm action", "warm-object")
			t.Setenv("GOCACHE", hostCache)
			s := &grade.Sandboxed{Caches: mode}
			run := func(cmd string) tool.Result {
				t.Helper()
				dir := filepath.Join(t.TempDir(), "repo")
				os.MkdirAll(dir, 0o755)
				sh, err := s.Open(dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer sh.Close()
				r := sh.Run(context.Background(), cmd, time.Minute)
				if r.ExitCode == nil || *r.ExitCode != 0 {
					t.Fatalf("%s: %+v", cmd, r)
				}
				return r
			}
			planted := actionID("planted action")
			// What a graded patch can do: write into the cache it is given,
			// entries included, and try the host's.
			plant := fmt.Sprintf(`cat "$GOCACHE/ab/std-d" 2>/dev/null; echo; mkdir -p "$GOCACHE/ab" "$GOCACHE/%[1]s"; echo planted > "$GOCACHE/ab/std-d"; echo planted > "$GOCACHE/ab/new-d"
printf 'v1 %[2]x %[2]x %%20d %%20d\n' 8 1 > "$GOCACHE/%[1]s/%[2]x-a"; echo planted > "$GOCACHE/%[1]s/%[2]x-d"
echo x > %[3]s/direct 2>/dev/null; mkdir -p %[3]s/%[1]s 2>/dev/null; cp "$GOCACHE/%[1]s/%[2]x-a" %[3]s/%[1]s/ 2>/dev/null; true`, hex.EncodeToString(planted[:1]), planted, hostCache)
			ask := `cat "$GOCACHE/ab/std-d" 2>/dev/null; ls "$GOCACHE/ab" 2>/dev/null; echo`
			if mode == grade.CacheDefault {
				ask += `; echo "$GOCACHEPROG"; ` + progGets(warm, planted)
			}
			r1 := run(plant + "\n" + ask)
			r2 := run(ask)
			if b, _ := os.ReadFile(filepath.Join(hostCache, "ab", "std-d")); string(b) != "warm-4711" {
				t.Errorf("the host's cache was written: %q", b)
			}
			for _, p := range []string{"ab/new-d", "direct", fmt.Sprintf("%x/%x-a", planted[:1], planted)} {
				if _, err := os.Stat(filepath.Join(hostCache, p)); err == nil {
					t.Errorf("%s was made in the host's cache", p)
				}
			}
			if strings.Contains(r2.Stdout, "planted") || strings.Contains(r2.Stdout, "new-d") {
				t.Errorf("a later grading sees what an earlier one wrote: %q", r2.Stdout)
			}
			if ents, _ := os.ReadDir(shared); len(ents) > 0 {
				t.Errorf("a grading wrote the agents' shared cache: %v", ents)
			}
			if mode == grade.CacheOverlay {
				if !strings.Contains(r1.Stdout, "warm-4711") || !strings.Contains(r2.Stdout, "warm-4711") {
					t.Skipf("no warm layer here (overlayfs in a user namespace): %q %q", r1.Stdout, r2.Stdout)
				}
				return
			}
			// The program, run by the graded command in its sandbox: the
			// host's entry is a hit at its place in the host's cache, in
			// both gradings; the planted one only in the grading that
			// planted it.
			warmHit := fmt.Sprintf(`"DiskPath":"%s/`, hostCache)
			for i, r := range []tool.Result{r1, r2} {
				if !strings.Contains(r.Stdout, `{"ID":1,"OutputID"`) || !strings.Contains(r.Stdout, warmHit) {
					t.Errorf("grading %d: the program did not answer from the host's cache: %q %q", i+1, r.Stdout, r.Stderr)
				}
			}
			if !strings.Contains(r1.Stdout, `{"ID":2,"OutputID"`) {
				t.Errorf("the planting grading's own entry is not a hit for it: %q", r1.Stdout)
			}
			if !strings.Contains(r2.Stdout, `{"ID":2,"Miss":true}`) {
				t.Errorf("a later grading's program finds the planted entry: %q", r2.Stdout)
			}
		})
	}
}

// actionID is a test's action ID, from a word.
func actionID(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// plantEntry puts an entry for action a, whose output is body, into a
// build cache in the go command's layout.
func plantEntry(t *testing.T, dir, a, body string) [32]byte {
	t.Helper()
	id, out := actionID(a), sha256.Sum256([]byte(body))
	for name, b := range map[string]string{
		fmt.Sprintf("%x/%x-a", id[:1], id):   fmt.Sprintf("v1 %x %x %20d %20d\n", id, out, len(body), 1),
		fmt.Sprintf("%x/%x-d", out[:1], out): body,
	} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// progGets is a shell command that asks the cache program GOCACHEPROG
// names for the actions, as requests 1, 2, …
func progGets(ids ...[32]byte) string {
	var req strings.Builder
	for i, id := range ids {
		fmt.Fprintf(&req, `{"ID":%d,"Command":"get","ActionID":"%s"}\n\n`, i+1, base64.StdEncoding.EncodeToString(id[:]))
	}
	return fmt.Sprintf(`printf '%s' | $GOCACHEPROG`, req.String())
}

// TestGradingStartsWarm: a grading over the host's warm build cache (the
// go command's own, which built this test) compiles the checkout's
// package and no package of the standard library.
func TestGradingStartsWarm(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	if raceEnabled {
		t.Skip("the host's cache holds the standard library built for the race detector")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	checkWarm(t, &grade.Sandboxed{})
}

// checkWarm grades a small module importing fmt and net/http with s and
// fails if anything but the module's packages (and the test's main) is
// compiled.
func checkWarm(t *testing.T, s *grade.Sandboxed) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(dir, 0o755)
	for name, src := range map[string]string{
		"go.mod":    "module example.com/warm\n\ngo 1.24\n",
		"w.go":      "package warm\n\nimport (\n\t\"fmt\"\n\t\"net/http\"\n)\n\nfunc Hello() string { return fmt.Sprint(http.StatusOK) }\n",
		"w_test.go": "package warm\n\nimport \"testing\"\n\nfunc TestHello(t *testing.T) {\n\tif Hello() != \"200\" {\n\t\tt.Fatal(Hello())\n\t}\n}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh, err := s.Open(dir, []string{"GOFLAGS=", "GOTOOLCHAIN=local"})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	r := sh.Run(context.Background(), `go test -x . 2>&1`, 10*time.Minute)
	if r.ExitCode == nil || *r.ExitCode != 0 || !strings.Contains(r.Stdout, "ok  \texample.com/warm") {
		t.Fatalf("the grading's test failed: %+v", r)
	}
	var compiled []string
	for _, m := range regexp.MustCompile(`(?m)/compile .* -p (\S+) `).FindAllStringSubmatch(r.Stdout, -1) {
		compiled = append(compiled, m[1])
	}
	if len(compiled) == 0 || slices.ContainsFunc(compiled, func(p string) bool { return !strings.HasPrefix(p, "example.com/warm") && p != "main" }) {
		t.Errorf("compiled %v, want the checkout's packages (and the test main) alone", compiled)
	}
}

// TestGradingHidesWhatSessionsHide: a graded command reads none of what a
// session's commands cannot: the signing key, the saved sessions, other
// projects' memories and caches, the user's credentials.
func TestGradingHidesWhatSessionsHide(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	th := t.TempDir()
	t.Setenv("TRUSS_HOME", th)
	home := t.TempDir()
	t.Setenv("HOME", home)
	files := map[string]string{
		filepath.Join(th, "ledger.key"):                                  "KEY-4711",
		filepath.Join(th, "sessions", "s1", "transcript.jsonl"):          "SESSION-4711",
		filepath.Join(th, "memories", "other-1234", "notes.md"):          "MEMORY-4711",
		filepath.Join(th, "cache", "workspaces", "other-ab", "x", "obj"): "CACHE-4711",
		filepath.Join(home, ".ssh", "id_ed25519"):                        "SSH-4711",
	}
	var cmd strings.Builder
	for p, content := range files {
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(content), 0o600)
		cmd.WriteString("cat " + p + " 2>/dev/null; ")
	}
	dir := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(dir, 0o755)
	sh, err := (&grade.Sandboxed{}).Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	r := sh.Run(context.Background(), cmd.String()+`mkdir -p "$GOCACHE" && touch "$GOCACHE/w" && echo cache-writable; echo done`, time.Minute)
	if !strings.Contains(r.Stdout, "done") {
		t.Fatalf("the command did not run: %+v", r)
	}
	// The grading's own cache, though among Truss's caches, is not
	// hidden with the others.
	if !strings.Contains(r.Stdout, "cache-writable") {
		t.Errorf("the grading cannot write its own cache: %q %q", r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout, "4711") {
		t.Errorf("a graded command read what it must not: %q", r.Stdout)
	}
}

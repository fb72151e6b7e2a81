package harness

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
)

// TestBoundaryOwnCaches: the model's command writes a marker into every
// cache its environment names — Go's build and module caches, the XDG
// cache, pip's, npm's, TMPDIR — and records where the Go cache program
// reads; the verification boundary's checks list what their own
// environment's caches hold. The checks must find none of the markers
// and read no Go build cache the commands could write, with the
// workspace's caches, with a session's private ones and with the
// read-only sandbox's (in the session's TMPDIR): a command that
// can write a cache the checks read can forge their verdict (a build
// cache entry that maps a buggy compile to a correct object).
func TestBoundaryOwnCaches(t *testing.T) {
	vars := `"$GOCACHE" "$XDG_CACHE_HOME" "$npm_config_cache" "$PIP_CACHE_DIR" "$TMPDIR" "$GOMODCACHE" "$PYTHONPYCACHEPREFIX"`
	// The command also names where it wrote, in the workspace: the checks
	// try those paths too (a go.mod's replace can name any of them).
	plant := `for d in ` + vars + `; do [ -n "$d" ] && echo PLANTED-4711 > "$d/planted" 2>/dev/null && echo "wrote $d" && echo "$d/planted" >> .planted-at; done; echo "cmdprog=$GOCACHEPROG"; echo "cmdcache=$GOCACHE"`
	check := `for d in ` + vars + `; do [ -n "$d" ] && cat "$d/planted" 2>/dev/null; done; while read -r f; do cat "$f" 2>/dev/null; done < .planted-at; echo "checkprog=$GOCACHEPROG"; echo "checkcache=$GOCACHE"; echo "checktmp=$TMPDIR"; echo checked`
	for _, tc := range []struct {
		name    string
		private bool
		mode    sandbox.Mode
	}{
		{"workspace caches", false, ""},
		{"private caches", true, ""},
		{"read-only", false, sandbox.ReadOnly}, // the caches are in the session's TMPDIR
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Truss's directory and TMPDIR outside /tmp, where the
			// sandbox's own /tmp does not hide them already.
			for _, v := range []string{"TRUSS_HOME", "TMPDIR"} {
				d, err := os.MkdirTemp("/var/tmp", "truss-cachetest-")
				if err != nil {
					t.Skip("no /var/tmp:", err)
				}
				t.Cleanup(func() { os.RemoveAll(d) })
				t.Setenv(v, d)
			}
			o := fixture(t, `{"steps": [`+runStep(t, plant, nil)+`, {"say": "Done."}]}`)
			o.PrivateCaches, o.Sandbox.Mode = tc.private, tc.mode
			o.Validation.TestCmd = check
			rs := shellResults(&o)
			s := openSandboxed(t, o)
			out, err := s.Run(context.Background(), "plant")
			if err != nil {
				t.Fatal(err)
			}
			if len(*rs) != 1 {
				t.Fatalf("%d shell results", len(*rs))
			}
			wrote := (*rs)[0].Stdout
			if strings.Count(wrote, "wrote ") < 5 {
				t.Fatalf("the command could not write its caches: %q %q", wrote, (*rs)[0].Stderr)
			}
			if out.Verdict == nil {
				t.Fatal("no verdict")
			}
			log := out.Verdict.Log
			if !strings.Contains(log, "checked") {
				t.Fatalf("the checks did not run: %q", log)
			}
			if strings.Contains(log, "PLANTED-4711") {
				t.Errorf("the checks read what the model's command wrote to its caches:\ncommand: %s\nchecks: %s", wrote, log)
			}
			// The Go build cache the checks read (GOCACHE, or the cache
			// program's private directory and lowers) is none the
			// command wrote.
			cmdCache := field(wrote, "cmdcache=")
			prog, cache := field(log, "checkprog="), field(log, "checkcache=")
			if cmdCache == "" || cache == "" {
				t.Fatalf("no GOCACHE: command %q, checks %q", wrote, log)
			}
			if cache == cmdCache || strings.Contains(prog, cmdCache) {
				t.Errorf("the checks read the command's Go build cache %s: GOCACHE=%s GOCACHEPROG=%s", cmdCache, cache, prog)
			}
			for _, d := range s.w.caches.Writable {
				if strings.Contains(prog, d) {
					t.Errorf("the checks' cache program reads %s, which the commands write: %s", d, prog)
				}
			}
			if field(log, "checktmp=") == s.w.tmp {
				t.Errorf("the checks' TMPDIR is the commands' %s", s.w.tmp)
			}
			if !out.Verdict.OK {
				t.Errorf("the verdict fails: %q", log)
			}
		})
	}
}

// field is the rest of the line of out that begins with prefix.
func field(out, prefix string) string {
	for l := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v
		}
	}
	return ""
}

// TestBoundaryNamesTestCodeChanged: the checks run the workspace's tests
// as the model left them, so the verdict names the test code the model's
// calls changed (a TestMain that exits 0 would pass every check), the
// ledger's validation entry records it, and the user is warned; code
// that is not test code is not named.
func TestBoundaryNamesTestCodeChanged(t *testing.T) {
	o := fixture(t, `{"steps": [`+runStep(t, `echo 'package p' > zz_main_test.go; mkdir -p tests && echo x > tests/helper.py; echo 'package p' > p.go; `+
		`printf 'module m\n\ngo 1.22\n\nrequire b v1.0.0\n' > go.mod; printf 'module m\n\ngo 1.22\n\nreplace a => ./a\n' > sub/go.mod; echo '[pytest]' > pytest.ini; printf 'test:\n\ttrue\n' > Makefile`, nil)+`, {"say": "Done."}]}`)
	writeFiles(t, o.Root, map[string]string{"go.mod": "module m\n\ngo 1.22\n", "sub/go.mod": "module m\n\ngo 1.22\n", "Makefile": "test:\n\tgo test ./...\n"})
	o.Validation.TestCmd = "true"
	var warned []string
	o.OnWarning = func(msg string) { warned = append(warned, msg) }
	s := openSandboxed(t, o)
	out, err := s.Run(context.Background(), "change")
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict == nil {
		t.Fatal("no verdict")
	}
	if want := []string{"tests/helper.py", "zz_main_test.go"}; !slices.Equal(out.Verdict.TestCodeChanged, want) {
		t.Errorf("TestCodeChanged %q, want %q", out.Verdict.TestCodeChanged, want)
	}
	// A go.mod's new requirement decides no test run; its replace does.
	// The Makefile is not the command's source here (--test-cmd).
	if want := []string{"pytest.ini", "sub/go.mod"}; !slices.Equal(out.Verdict.TestConfigChanged, want) {
		t.Errorf("TestConfigChanged %q, want %q", out.Verdict.TestConfigChanged, want)
	}
	if !slices.ContainsFunc(warned, func(w string) bool {
		return strings.Contains(w, "test configuration the model changed") && strings.Contains(w, "sub/go.mod")
	}) {
		t.Errorf("no warning names the test configuration: %q", warned)
	}
	if !slices.ContainsFunc(warned, func(w string) bool {
		return strings.Contains(w, "test code the model changed") && strings.Contains(w, "zz_main_test.go")
	}) {
		t.Errorf("no warning names the test code: %q", warned)
	}
	entries, err := os.ReadFile(filepath.Join(out.LedgerDir, "entries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(entries), `"test_code_changed":["tests/helper.py","zz_main_test.go"]`) {
		t.Errorf("the ledger's validation entry does not name the test code")
	}
	if !strings.Contains(string(entries), `"test_config_changed":["pytest.ini","sub/go.mod"]`) {
		t.Errorf("the ledger's validation entry does not name the test configuration")
	}
}

func TestTrustedPath(t *testing.T) {
	ws := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Join(ws, ".venv", "bin"), link); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(ws, ".venv", "bin"), 0o755)
	in := strings.Join([]string{"bin", filepath.Join(ws, ".venv", "bin"), "/usr/local/go/bin", "", link, "/usr/bin", ws}, ":")
	if got, want := trustedPath(in, []string{ws, "/nonexistent/cache"}), "/usr/local/go/bin:/usr/bin"; got != want {
		t.Errorf("trustedPath = %q, want %q", got, want)
	}
}

// TestBoundaryNamesCommandFiles: the checks' command given as `make
// test` (not detected) reads its recipe from the Makefile, and a go.mod's
// ignore line takes a package out of ./...: the model's changes to either
// are named as changed test configuration.
func TestBoundaryNamesCommandFiles(t *testing.T) {
	o := fixture(t, `{"steps": [`+runStep(t, `printf 'test:\n\t@echo ok\n' > Makefile; printf 'ignore ./calc\n' >> go.mod`, nil)+`, {"say": "Done."}]}`)
	writeFiles(t, o.Root, map[string]string{"go.mod": "module m\n\ngo 1.25\n", "Makefile": "test:\n\tgo test ./...\n"})
	o.Validation.TestCmd = "make test || true"
	s := openSandboxed(t, o)
	out, err := s.Run(context.Background(), "change")
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict == nil {
		t.Fatal("no verdict")
	}
	if want := []string{"Makefile", "go.mod"}; !slices.Equal(out.Verdict.TestConfigChanged, want) {
		t.Errorf("TestConfigChanged %q, want %q", out.Verdict.TestConfigChanged, want)
	}
}

// writeFiles writes files (slash path: content) under root, making their
// directories.
func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for n, c := range files {
		p := filepath.Join(root, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

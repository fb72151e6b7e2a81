package harness

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
)

// TestPrivateCaches: with PrivateCaches, and always in a read-only
// sandbox, what one session's commands write to their build and package
// caches (Go's, pip's, the XDG cache) is not seen by another session's,
// of the same workspace, open at the same time or later; the caches they
// read start warm from the host's, which stay unwritten (a read-only
// session's go test does not rebuild the standard library). Without it
// (CacheName), the two share one writable cache, and the second reads
// what the first planted.
func TestPrivateCaches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    sandbox.Mode
		private bool // PrivateCaches
		warm    bool // Go's build cache through the program over the host's
		leak    bool
	}{
		{"private", sandbox.WorkspaceWrite, true, true, false},
		{"shared by name", sandbox.WorkspaceWrite, false, false, true},
		{"read-only", sandbox.ReadOnly, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostDir := t.TempDir()
			hostGo, hostXDG := filepath.Join(hostDir, "go-build"), filepath.Join(hostDir, "xdg")
			for p, v := range map[string]string{filepath.Join(hostGo, "ab", "warm-d"): "WARM-GO", filepath.Join(hostXDG, "pip", "warm"): "WARM-PIP"} {
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("GOCACHE", hostGo)
			t.Setenv("XDG_CACHE_HOME", hostXDG)
			t.Setenv("HOSTGO", hostGo)
			before := tree(t, hostDir)

			plant := `for d in "$GOCACHE" "$XDG_CACHE_HOME" "$PIP_CACHE_DIR"; do echo PLANTED-4711 > "$d/planted" && echo wrote; done; cat "$PIP_CACHE_DIR/warm" 2>/dev/null; echo; echo "prog=$GOCACHEPROG"; cat "$HOSTGO/ab/warm-d"; echo; echo x > "$HOSTGO/ab/evil" 2>/dev/null || echo host-refused`
			look := `cat "$GOCACHE/planted" "$XDG_CACHE_HOME/planted" "$PIP_CACHE_DIR/planted" 2>/dev/null; echo looked`
			a := fixture(t, `{"steps": [`+runStep(t, plant, nil)+`, {"say": "Done."}]}`)
			a.Validation.Off = true
			a.PrivateCaches, a.CacheName, a.Sandbox.Mode = tc.private, "shared-by-name", tc.mode
			b := a
			b.Observers = nil
			sc := filepath.Join(t.TempDir(), "b.json")
			if err := os.WriteFile(sc, []byte(`{"steps": [`+runStep(t, look, nil)+`, {"say": "Done."}]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			b.Script = sc
			ra, rb := shellResults(&a), shellResults(&b)

			sa, err := Open(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			defer sa.Close()
			if !sa.w.sandbox.Plan().Active() {
				t.Skip("no sandbox on this host")
			}
			if _, err := sa.Run(context.Background(), "plant"); err != nil {
				t.Fatal(err)
			}
			if len(*ra) != 1 {
				t.Fatalf("%d shell results", len(*ra))
			}
			out := (*ra)[0].Stdout
			if strings.Count(out, "wrote") != 3 || !strings.Contains(out, "host-refused") {
				t.Errorf("the commands could not write their caches, or wrote the host's: %q %q", out, (*ra)[0].Stderr)
			}
			if tc.warm {
				// Go's build cache is read through the cache program over
				// the host's, which the commands can read in place.
				if !strings.Contains(out, "prog=") || !strings.Contains(out, hostGo) || !strings.Contains(out, "WARM-GO") {
					t.Errorf("the Go cache program does not read the host's build cache: %q", out)
				}
				if !strings.Contains(out, "WARM-PIP") {
					t.Log("no warm pip layer here (overlayfs in a user namespace)")
				}
			}
			// Another session, while the first is open and after it.
			for _, closeFirst := range []bool{false, true} {
				if closeFirst {
					sa.Close()
				}
				*rb = nil
				sb, err := Open(context.Background(), b)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := sb.Run(context.Background(), "look"); err != nil {
					t.Fatal(err)
				}
				sb.Close()
				if len(*rb) != 1 {
					t.Fatalf("%d shell results", len(*rb))
				}
				got := (*rb)[0].Stdout
				if !strings.Contains(got, "looked") {
					t.Fatalf("the second session's command did not run: %q %q", got, (*rb)[0].Stderr)
				}
				if leaked := strings.Contains(got, "PLANTED-4711"); leaked != tc.leak {
					t.Errorf("first session closed %v: the second read the first's cache: %v, want %v (%q)", closeFirst, leaked, tc.leak, got)
				}
			}
			if after := tree(t, hostDir); after != before {
				t.Errorf("the host's caches changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// tree lists the files under dir with their contents.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		b.WriteString(p + "=" + string(data) + ";")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReadOnlyCachesWithoutProgram: a read-only session whose Go cache
// program cannot be had (no helper binary the commands could not
// replace) still opens, with Go's build cache an overlay of the host's
// instead, warm all the same.
func TestReadOnlyCachesWithoutProgram(t *testing.T) {
	root, tmp, hostGo := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("TRUSS_HOME", t.TempDir())
	t.Setenv("GOCACHE", hostGo)
	// A helper in the workspace, which a session's commands could have
	// written: never the cache program.
	t.Setenv("TRUSS_SANDBOX_HELPER", filepath.Join(root, "truss-sandbox"))
	_, caches, err := PlanSandbox(root, tmp, SandboxOptions{Mode: sandbox.ReadOnly, Fallback: sandbox.FallbackNone})
	if err != nil {
		t.Fatal(err)
	}
	if caches.GoProgram != "" {
		t.Errorf("the cache program is %s, in the workspace", caches.GoProgram)
	}
	gocache := filepath.Join(tmp, "caches", "go-build")
	found := false
	for _, l := range caches.Layers {
		found = found || l.Dir == gocache && l.Lower == hostGo
	}
	if !found || !slices.Contains(caches.Env, "GOCACHE="+gocache) {
		t.Errorf("Go's build cache is no overlay of the host's: %+v", caches)
	}
}

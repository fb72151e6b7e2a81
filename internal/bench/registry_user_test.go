package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestUserRegistryAcrossDataDirs: two benchmarks of one user under
// different data directories (TRUSS_HOME) keep one registry, so that each
// hides the other's paths; the registry an earlier Truss kept in a data
// directory is still read (and hidden), and its paths taken into the
// user's at the next write; it is never written.
func TestUserRegistryAcrossDataDirs(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(TestUserHomeEnv, filepath.Join(dir, "home"))
	user := filepath.Join(dir, "home", ".local", "share", "truss")
	homeA, homeB := filepath.Join(dir, "homeA"), filepath.Join(dir, "homeB")
	outA, outB, outOld := filepath.Join(dir, "outA"), filepath.Join(dir, "outB"), filepath.Join(dir, "outOld")
	// An earlier Truss recorded outOld, which exists, in homeA's registry.
	if err := os.Mkdir(outOld, 0o700); err != nil {
		t.Fatal(err)
	}
	oldFile := filepath.Join(homeA, "bench", "known-paths.json")
	if err := os.MkdirAll(filepath.Dir(oldFile), 0o700); err != nil {
		t.Fatal(err)
	}
	old := `{"version": 1, "paths": [{"path": "` + outOld + `", "kind": "out", "added": "2026-01-01T00:00:00Z"}]}`
	if err := os.WriteFile(oldFile, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Setenv("TRUSS_HOME", homeA)
	regA, err := DefaultRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if err := regA.Add(KnownOut, outA); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRUSS_HOME", homeB)
	regB, err := DefaultRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if err := regB.Add(KnownOut, outB); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name       string
		reg        *Registry
		own        string
		hide       []string // paths and registry directories hidden
		notHidden  string
		wantEarly  []string // Registry.Earlier
		registryIn string
	}{
		{"A", regA, outA, []string{outB, outOld, filepath.Join(user, "bench"), filepath.Dir(oldFile)}, outA, []string{oldFile}, user},
		// outOld too: A's Add took the earlier registry's paths in.
		{"B", regB, outB, []string{outA, outOld, filepath.Join(user, "bench")}, outB, []string{filepath.Join(homeB, "bench", "known-paths.json")}, user},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if want := filepath.Join(tc.registryIn, "bench", "known-paths.json"); tc.reg.File != want {
				t.Errorf("registry %s, want %s whatever TRUSS_HOME says", tc.reg.File, want)
			}
			if !slices.Equal(tc.reg.Earlier, tc.wantEarly) {
				t.Errorf("earlier registries %q, want %q", tc.reg.Earlier, tc.wantEarly)
			}
			v := &KnownView{Registry: tc.reg, Own: []string{tc.own}}
			hidden, _, err := v.Current()
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tc.hide {
				if !slices.Contains(hidden, h) {
					t.Errorf("%s not hidden: %q", h, hidden)
				}
			}
			if slices.Contains(hidden, tc.notHidden) {
				t.Errorf("its own %s hidden: %q", tc.notHidden, hidden)
			}
		})
	}
	// The earlier registry is not written.
	if b, err := os.ReadFile(oldFile); err != nil || string(b) != old {
		t.Errorf("the earlier registry changed: %q, %v", b, err)
	}
	if b, err := os.ReadFile(regA.File); err != nil || !strings.Contains(string(b), outOld) {
		t.Errorf("the user's registry: %q, %v; want the earlier registry's paths taken in", b, err)
	}
}

// TestRegistryEarlierBad: an earlier registry that cannot be read is an
// error naming it, as the registry's own file is.
func TestRegistryEarlierBad(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "old", "known-paths.json")
	if err := os.MkdirAll(filepath.Dir(bad), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Registry{File: filepath.Join(dir, "new", "known-paths.json"), Earlier: []string{bad}}
	if _, err := r.All(); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("All() = %v; want an error naming %s", err, bad)
	}
}

// TestRegistryDirMode: the registry's directory is made 0700, and one of
// wider mode is narrowed before anything is written in it.
func TestRegistryDirMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode os.FileMode // of an existing directory; 0: none
	}{
		{"made", 0},
		{"open to all", 0o755},
		{"group", 0o770},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), "bench")
			if tc.mode != 0 {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(d, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			r := &Registry{File: filepath.Join(d, "known-paths.json")}
			if err := r.Add(KnownOut, "/nonexistent-out"); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(d)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o700 {
				t.Errorf("mode %v, want 0700", fi.Mode().Perm())
			}
		})
	}
}

// TestUserDatabaseHome: the home the user database gives the process's
// UID is not $HOME's (the tests' own); a UID without an entry has none.
func TestUserDatabaseHome(t *testing.T) {
	for _, tc := range []struct {
		name string
		uid  int
		none bool
	}{
		{"this user", os.Getuid(), false},
		{"no entry", 2147480000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := userDatabaseHome(tc.uid)
			if tc.none {
				if got != "" {
					t.Errorf("userDatabaseHome(%d) = %q, want none", tc.uid, got)
				}
				return
			}
			if got == "" {
				t.Skip("no usable home in the user database for this UID")
			}
			if h := os.Getenv("HOME"); got == h {
				t.Errorf("userDatabaseHome = $HOME (%s): the tests' home, not the user database's", h)
			}
		})
	}
}

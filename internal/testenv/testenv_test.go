package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetup: a binary's own root holds its home and temporary directory
// and goes with RemoveAll, read-only directories and all; a binary
// started under the marker keeps its parent's.
func TestSetup(t *testing.T) {
	for _, k := range []string{"HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "TRUSS_HOME", Marker} {
		t.Setenv(k, os.Getenv(k)) // restored when the test ends
	}
	os.Unsetenv(Marker)
	root, err := Setup()
	if err != nil || root == "" {
		t.Fatalf("Setup = %q, %v", root, err)
	}
	for _, k := range []string{"HOME", "TMPDIR", "XDG_CACHE_HOME"} {
		if rel, err := filepath.Rel(root, os.Getenv(k)); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Errorf("%s = %s, not under %s", k, os.Getenv(k), root)
		}
	}
	if os.Getenv("TRUSS_HOME") != "" || os.Getenv(Marker) != root {
		t.Errorf("TRUSS_HOME %q, %s %q", os.Getenv("TRUSS_HOME"), Marker, os.Getenv(Marker))
	}
	if again, err := Setup(); again != "" || err != nil {
		t.Errorf("under the marker Setup = %q, %v; want the parent's directories", again, err)
	}
	ro := filepath.Join(os.Getenv("HOME"), "go", "pkg", "mod", "x@v1")
	if err := os.MkdirAll(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "f"), []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{ro, filepath.Dir(ro)} {
		os.Chmod(d, 0o555)
	}
	if err := RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("the root is still there: %v", err)
	}
}

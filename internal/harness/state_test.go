package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateOutsideWritableRoots: a workspace or an extra root that holds
// Truss's own state (a workspace that is $HOME, an --add-dir above
// ~/.config/truss, a link to it) is refused before anything runs, with
// the way out; one beside the state opens.
func TestStateOutsideWritableRoots(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("TRUSS_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	if err := os.MkdirAll(filepath.Join(home, ".config", "truss"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".local", "share"), 0o700); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "h")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		root     string
		writable []string
		readOnly []string
		refused  string
	}{
		{"workspace is HOME", home, nil, nil, home},
		{"workspace is a link to HOME", link, nil, nil, "own state"},
		{"workspace is the config directory", filepath.Join(home, ".config"), nil, nil, ".config"},
		{"add-dir above the config", proj, []string{filepath.Join(home, ".config")}, nil, ".config"},
		{"add-dir-ro of the data directory's parent", proj, nil, []string{filepath.Join(home, ".local")}, ".local"},
		{"a project beside the state", proj, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Version: "test", Provider: "sim", Script: DemoScript, SimDialect: "chat", Surface: "generic",
				Root: tc.root, WritableDirs: tc.writable, ReadOnlyDirs: tc.readOnly, NoSession: true, NoLedger: true,
				Validation: ValidationOptions{Off: true}, MCP: MCPOptions{Off: true}, Spawn: SpawnOptions{Off: true}}
			s, err := Open(context.Background(), o)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				s.Close()
				return
			}
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "Truss's own state") || !strings.Contains(err.Error(), "TRUSS_HOME") || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("error %v", err)
			}
		})
	}
}

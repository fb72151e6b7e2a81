package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/hostfs"
	"golang.org/x/sys/unix"
)

// What a command could plant as the project's configuration is refused,
// never followed, waited on or read whole.
func TestReadFilesRefusesPlanted(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(outside, []byte("[sandbox]\nnetwork = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		plant func(root string) error
		want  error
	}{
		{"config a link", func(root string) error { return os.Symlink(outside, filepath.Join(root, ".truss", "config.toml")) }, hostfs.ErrLink},
		{"config a FIFO", func(root string) error { return unix.Mkfifo(filepath.Join(root, ".truss", "config.toml"), 0o644) }, hostfs.ErrNotRegular},
		{"agent a FIFO", func(root string) error {
			if err := os.MkdirAll(filepath.Join(root, ".truss", "agents"), 0o755); err != nil {
				return err
			}
			return unix.Mkfifo(filepath.Join(root, ".truss", "agents", "a.md"), 0o644)
		}, hostfs.ErrNotRegular},
		{"agents a link", func(root string) error {
			return os.Symlink(filepath.Dir(outside), filepath.Join(root, ".truss", "agents"))
		}, hostfs.ErrLink},
		{"config too large", func(root string) error {
			return os.WriteFile(filepath.Join(root, ".truss", "config.toml"), make([]byte, MaxFile+1), 0o644)
		}, hostfs.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, ".truss"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tc.plant(root); err != nil {
				t.Fatal(err)
			}
			files, err := ReadFiles(root)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadFiles: %v (%d files), want %v", err, len(files), tc.want)
			}
		})
	}
}

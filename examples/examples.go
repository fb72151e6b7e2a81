// Package examples bundles the demo repository and the scripted fix that
// `truss demo` runs on the simulated model.
package examples

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/tools/txtar"
)

// DemoRepo is the demo repository as a txtar archive.
//
//go:embed demo.txtar
var DemoRepo []byte

// DemoScript is the simulated model's script for the demo.
//
//go:embed demo-fix.json
var DemoScript []byte

// DemoInteractiveScript is the simulated model's script for `truss demo
// --interactive`: a fix with its diff and streamed test output, then a
// command that asks to leave the sandbox, for the approval card.
//
//go:embed demo-interactive.json
var DemoInteractiveScript []byte

// Unpack writes a txtar archive's files below dir.
func Unpack(archive []byte, dir string) error {
	a := txtar.Parse(archive)
	for _, f := range a.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("unpack %s: %w", f.Name, err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return fmt.Errorf("unpack %s: %w", f.Name, err)
		}
	}
	return nil
}

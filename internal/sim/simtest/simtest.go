// Package simtest gives tests the simulated model at its strictest: the
// dialects' rules and every request validated against the providers'
// OpenAPI descriptions (internal/apispec), which the truss binary does not
// link.
package simtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/sim"
)

// New returns a server for a script that validates every request against
// the providers' OpenAPI descriptions.
func New(s *sim.Script) *sim.Server {
	srv := sim.New(s)
	srv.Spec = apispec.Checker{}
	return srv
}

// WriteScript writes a script of steps (each a step's JSON as a map) to
// dir/script.json for a truss that reads --script, and returns its path.
func WriteScript(t testing.TB, dir string, steps ...map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "script.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Serve parses script and serves it (New: validated against the OpenAPI
// descriptions) on a loopback port until the test ends, requiring apiKey
// when it is not "". It returns the server and its base URL.
func Serve(t testing.TB, script, apiKey string) (*sim.Server, string) {
	t.Helper()
	s, err := sim.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	srv := New(s)
	srv.APIKey = apiKey
	base, err := srv.Listen(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return srv, base
}

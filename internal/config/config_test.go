package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, body string) string {
	t.Helper()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".truss"), 0o755)
	if err := os.WriteFile(filepath.Join(root, Path), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestLoad(t *testing.T) {
	root := write(t, `[validate]
test = "make check"
setup = ["make deps"]
timeout = "90s"
env = { B = "2", A = "1" }
[sandbox]
mode = "read-only"
network = true
writable = ["cache", "/abs"]
`)
	c, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if c.Validate.Test != "make check" || c.Validate.Setup[0] != "make deps" || c.Validate.TimeoutValue() != 90*time.Second ||
		strings.Join(c.Validate.EnvList(), " ") != "A=1 B=2" || c.Sandbox.Mode != "read-only" || !*c.Sandbox.Network ||
		c.Sandbox.Writable[0] != filepath.Join(root, "cache") || c.Sandbox.Writable[1] != "/abs" {
		t.Errorf("%+v", c)
	}
	// No file: an empty configuration.
	if c, err := Load(t.TempDir()); err != nil || c.Validate.Test != "" {
		t.Errorf("%v %+v", err, c)
	}
	for body, want := range map[string]string{
		"[validate]\ntets = \"x\"\n":      `unknown setting "validate.tets"`,
		"[validate]\ntimeout = \"ten\"\n": "not a duration",
		"[validate\n":                     "config.toml",
	} {
		if _, err := Load(write(t, body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

// Package config reads a project's Truss configuration, .truss/config.toml
// at the workspace root:
//
//	[validate]
//	test = "go test ./..."          # the test command (default: detected)
//	setup = ["go mod download"]     # run before the tests, in the same shell
//	timeout = "10m"                 # bound on setup and tests
//	env = { CGO_ENABLED = "0" }     # set in every shell of the session
//
//	[sandbox]
//	mode = "workspace-write"        # read-only, workspace-write or full
//	network = false
//	writable = ["../shared-cache"]  # further writable roots (relative to the workspace)
//
// Every key is optional; command-line flags override the file. Unknown keys
// are an error, so a misspelt setting is not silently ignored.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/BurntSushi/toml"
)

// Path is the configuration file, relative to the workspace root.
const Path = ".truss/config.toml"

// Config is the file's content.
type Config struct {
	Validate Validate `toml:"validate"`
	Sandbox  Sandbox  `toml:"sandbox"`
}

// Validate configures the task environment.
type Validate struct {
	Test    string            `toml:"test"`
	Setup   []string          `toml:"setup"`
	Timeout duration          `toml:"timeout"`
	Env     map[string]string `toml:"env"`
}

// Sandbox configures the sandbox.
type Sandbox struct {
	Mode     string   `toml:"mode"`
	Network  *bool    `toml:"network"`
	Writable []string `toml:"writable"`
}

type duration struct{ time.Duration }

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("not a duration (like 10m or 90s): %w", err)
	}
	d.Duration = v
	return nil
}

// TimeoutValue returns the configured validation timeout (0 when unset).
func (v Validate) TimeoutValue() time.Duration { return v.Timeout.Duration }

// EnvList returns the configured environment as NAME=VALUE, sorted.
func (v Validate) EnvList() []string {
	var out []string
	for k, val := range v.Env {
		out = append(out, k+"="+val)
	}
	sort.Strings(out)
	return out
}

// Load reads the configuration of the workspace at root; a missing file is
// an empty configuration.
func Load(root string) (*Config, error) {
	p := filepath.Join(root, Path)
	var c Config
	md, err := toml.DecodeFile(p, &c)
	if errors.Is(err, fs.ErrNotExist) {
		return &c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("%s: unknown setting %q", p, und[0].String())
	}
	for i, w := range c.Sandbox.Writable {
		if !filepath.IsAbs(w) {
			c.Sandbox.Writable[i] = filepath.Join(root, w)
		}
	}
	if _, err := os.Stat(root); err != nil {
		return nil, err
	}
	return &c, nil
}

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
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Path is the configuration file, relative to the workspace root.
const Path = ".truss/config.toml"

// Config is the file's content.
type Config struct {
	Validate Validate `toml:"validate"`
	Sandbox  Sandbox  `toml:"sandbox"`
	MCP      MCP      `toml:"mcp"`
}

// MCP is the [mcp] table: the MCP servers whose tools are offered to the
// model.
//
//	[mcp]
//	startup_wait = "2s"           # how long the first turn waits for servers (default 1s)
//
//	[mcp.servers.fs]              # a stdio server
//	command = "npx"
//	args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
//	env = { LOG_LEVEL = "warn" }
//	startup_timeout = "20s"
//	tool_timeout = "60s"
//	enabled_tools = ["read_text_file", "list_directory"]
//
//	[mcp.servers.docs]            # a streamable-HTTP server
//	url = "https://example.com/mcp"
//	bearer_token_env = "DOCS_TOKEN"
type MCP struct {
	StartupWait *duration            `toml:"startup_wait"`
	Servers     map[string]MCPServer `toml:"servers"`
}

// MCPServer is one [mcp.servers.NAME] table: command (with args, env and
// cwd) for a stdio server, or url (with headers and bearer_token_env) for a
// streamable-HTTP one.
type MCPServer struct {
	Command        string            `toml:"command"`
	Args           []string          `toml:"args"`
	Env            map[string]string `toml:"env"`
	Cwd            string            `toml:"cwd"`
	URL            string            `toml:"url"`
	Headers        map[string]string `toml:"headers"`
	BearerTokenEnv string            `toml:"bearer_token_env"`
	StartupTimeout duration          `toml:"startup_timeout"`
	ToolTimeout    duration          `toml:"tool_timeout"`
	EnabledTools   []string          `toml:"enabled_tools"`
	DisabledTools  []string          `toml:"disabled_tools"`
	Enabled        *bool             `toml:"enabled"`
}

// StartupTimeoutValue returns the server's startup timeout (0: the default).
func (s MCPServer) StartupTimeoutValue() time.Duration { return s.StartupTimeout.Duration }

// ToolTimeoutValue returns the server's call timeout (0: the default).
func (s MCPServer) ToolTimeoutValue() time.Duration { return s.ToolTimeout.Duration }

// StartupWaitValue returns [mcp] startup_wait and whether it was set.
func (m MCP) StartupWaitValue() (time.Duration, bool) {
	if m.StartupWait == nil {
		return 0, false
	}
	return m.StartupWait.Duration, true
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
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(root); err != nil {
			return nil, err
		}
		return &c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var missing *toml.StrictMissingError
		if errors.As(err, &missing) && len(missing.Errors) > 0 {
			return nil, fmt.Errorf("%s: unknown setting %q", p, strings.Join(missing.Errors[0].Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%s:%d:%d: %w", p, row, col, err)
		}
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	for name, srv := range c.MCP.Servers {
		if (srv.Command == "") == (srv.URL == "") {
			return nil, fmt.Errorf("%s: [mcp.servers.%s] needs either command or url", p, name)
		}
		if srv.Cwd != "" && !filepath.IsAbs(srv.Cwd) {
			srv.Cwd = filepath.Join(root, srv.Cwd)
			c.MCP.Servers[name] = srv
		}
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

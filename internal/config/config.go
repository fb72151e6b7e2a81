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
//	[changes]
//	ignore = ["node_modules", "target", "dist", "*.o"]  # not tracked for the ledger (.git never is)
//
//	[env]                           # the task environment (docs/environments.md)
//	image = "docker.io/library/python:3.9"  # run the tools in this image (default: the host)
//	workdir = "/testbed"            # where the workspace is mounted (default: the image's WORKDIR)
//	engine = "podman"               # podman or docker (default: the first that works)
//
// Every key is optional; command-line flags override the file. Unknown keys
// are an error, so a misspelt setting is not silently ignored.
//
// The project's configuration — this file and the agent definitions in
// .truss/agents — is obeyed in full only once the user has trusted it
// (package trust, `truss trust`). An untrusted or changed configuration is
// loaded with every setting that would widen the sandbox, start a program
// or hide changes from the ledger cleared: sandbox mode "full", network =
// true, writable roots, MCP servers, the validation's test and setup
// commands and environment, the agent definitions, [changes] ignore, and
// [env] image: the image decides what the project's tests run against,
// and so what the verification boundary's verdict means (an image whose
// test runner always passes would pass every change), and its programs
// run with the workspace writable — the user chooses it, with --env or by
// trusting the configuration.
// What stays only narrows the sandbox or tunes a wait. The loaded Config says what was decided (Config.Trust).
package config

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/trussdev/truss/internal/hostfs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/trussdev/truss/internal/changes"
	"github.com/trussdev/truss/internal/container"
	"github.com/trussdev/truss/internal/trust"
)

// Dir is the project's Truss directory, relative to the workspace root:
// its configuration, read-only to every tool and sandboxed command.
const Dir = ".truss"

// Path is the configuration file, relative to the workspace root.
const Path = ".truss/config.toml"

// AgentsDir holds the project's agent definitions (NAME.md), relative to
// the workspace root.
const AgentsDir = ".truss/agents"

// Config is the file's content, with the agent definitions' files and the
// trust decision.
type Config struct {
	Validate Validate `toml:"validate"`
	Sandbox  Sandbox  `toml:"sandbox"`
	MCP      MCP      `toml:"mcp"`
	Changes  Changes  `toml:"changes"`
	Env      Env      `toml:"env"`
	// Providers is the [providers] table of a project's file, read only
	// to be dropped: named providers belong in the user's configuration,
	// whose base URLs receive the user's keys. Parse clears it and
	// Trust.Warning says it was ignored.
	Providers any `toml:"providers"`

	// Agents are the agent definition files (.truss/agents/*.md, in name
	// order), as read; none when the configuration is not trusted.
	Agents []File `toml:"-"`
	// Trust is what was decided about obeying the configuration.
	Trust Trust `toml:"-"`
}

// File is one configuration file as read.
type File struct {
	Path string // relative to the workspace root, '/'-separated
	Data []byte
}

// Trust is the trust decision of a loaded configuration.
type Trust struct {
	trust.Decision
	// Ignored names the settings and files not obeyed because the
	// configuration is not trusted ("sandbox.writable",
	// "mcp.servers.NAME", ".truss/agents/NAME.md"), sorted.
	Ignored []string
	// ProvidersIn is the file whose [providers] table was ignored, which
	// no project may set, trusted or not ("" when it had none).
	ProvidersIn string
}

// Obeyed reports whether the configuration is obeyed in full: trusted, or
// there is none.
func (t Trust) Obeyed() bool {
	return t.State == trust.Trusted || t.State == trust.None || t.State == ""
}

// Warning is the one line to show the user when settings were ignored
// ("" when none were).
func (t Trust) Warning() string {
	var w []string
	if t.ProvidersIn != "" {
		w = append(w, fmt.Sprintf("%s: [providers] is ignored: named providers belong in the user's configuration (%s in Truss's directory, ~/.config/truss or $TRUSS_HOME), which no repository can write",
			t.ProvidersIn, UserFile))
	}
	if len(t.Ignored) != 0 {
		why := "is not trusted"
		if t.State == trust.Changed {
			why = "changed since it was trusted (" + strings.Join(t.Changed, ", ") + ")"
		}
		w = append(w, fmt.Sprintf("the project configuration in %s %s, so %s %s ignored; review it and run `truss trust` to use it",
			Dir, why, strings.Join(t.Ignored, ", "), map[bool]string{true: "is", false: "are"}[len(t.Ignored) == 1]))
	}
	return strings.Join(w, "; ")
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
	// Network is whether a stdio server's sandbox has the network; unset,
	// it has the session's.
	Network *bool `toml:"network"`
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

// Changes is the [changes] table: how the files commands change are found
// for the ledger (package changes).
type Changes struct {
	// Ignore lists the entries not tracked, as changes.Options.Ignore
	// takes them: a name ("node_modules", "*.pyc") at any depth, or a path
	// with '/' relative to the workspace ("build/out"). Unset (nil): the
	// defaults (changes.DefaultIgnore()); set, it replaces them. ".git" is
	// never tracked.
	Ignore []string `toml:"ignore"`
}

// Env is the [env] table: the task environment the session's tools run
// in (package container). Image is an image reference ("" for the host);
// Workdir where the workspace is mounted in it ("" for the image's
// working directory); Engine podman or docker ("" for the first that
// works). Only a trusted configuration may set Image and Workdir.
type Env struct {
	Image   string `toml:"image"`
	Workdir string `toml:"workdir"`
	Engine  string `toml:"engine"`
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

// Load reads the configuration of the workspace at root and decides, with
// the user's trust store, what of it to obey; a missing file is an empty
// configuration.
func Load(root string) (*Config, error) {
	st, err := trust.UserStore()
	if err != nil {
		st = nil // nothing is trusted without a store
	}
	return LoadWith(root, st)
}

// LoadWith is Load with a trust store; a nil store trusts nothing.
func LoadWith(root string, st *trust.Store) (*Config, error) {
	c, files, err := Read(root)
	if err != nil {
		return nil, err
	}
	d := trust.Decision{State: trust.Untrusted}
	if len(files) == 0 {
		d.State = trust.None
	} else if st != nil {
		if d, err = st.Check(root, files); err != nil {
			return nil, err
		}
	}
	c.Trust.Decision = d
	if !c.Trust.Obeyed() {
		c.Trust.Ignored = c.restrict()
	}
	return c, nil
}

// Read reads and parses the project's configuration files, all of them
// and in full, with no trust decision: what `truss trust` shows and
// records. The files are the bytes parsed.
func Read(root string) (*Config, trust.Files, error) {
	if _, err := os.Stat(root); err != nil {
		return nil, nil, err
	}
	files, err := ReadFiles(root)
	if err != nil {
		return nil, nil, err
	}
	c, err := Parse(root, files[Path])
	if err != nil {
		return nil, nil, err
	}
	for _, p := range files.Paths() {
		if p != Path {
			c.Agents = append(c.Agents, File{Path: p, Data: files[p]})
		}
	}
	return c, files, nil
}

// restrict clears the settings an untrusted configuration may not make
// and returns their names.
func (c *Config) restrict() []string {
	var ign []string
	if c.Sandbox.Mode != "" && c.Sandbox.Mode != "read-only" && c.Sandbox.Mode != "workspace-write" {
		ign = append(ign, "sandbox.mode = "+c.Sandbox.Mode)
		c.Sandbox.Mode = ""
	}
	if c.Sandbox.Network != nil && *c.Sandbox.Network {
		ign = append(ign, "sandbox.network")
		c.Sandbox.Network = nil
	}
	if len(c.Sandbox.Writable) > 0 {
		ign = append(ign, "sandbox.writable")
		c.Sandbox.Writable = nil
	}
	for name := range c.MCP.Servers {
		ign = append(ign, "mcp.servers."+name)
	}
	c.MCP.Servers = nil
	if c.Validate.Test != "" {
		ign = append(ign, "validate.test")
		c.Validate.Test = ""
	}
	if len(c.Validate.Setup) > 0 {
		ign = append(ign, "validate.setup")
		c.Validate.Setup = nil
	}
	if len(c.Validate.Env) > 0 {
		ign = append(ign, "validate.env")
		c.Validate.Env = nil
	}
	if t := c.Validate.Timeout.Duration; t != 0 && (t < MinUntrustedTimeout || t > MaxUntrustedTimeout) {
		// A file a command could have written must not choose the
		// boundary's bound: unbounded, a check that blocks keeps the
		// run from ever ending; tiny, it gives no verdict.
		ign = append(ign, "validate.timeout = "+t.String())
		c.Validate.Timeout.Duration = 0
	}
	if w, ok := c.MCP.StartupWaitValue(); ok && w > MaxUntrustedStartupWait {
		ign = append(ign, "mcp.startup_wait = "+w.String())
		c.MCP.StartupWait = nil
	}
	if c.Changes.Ignore != nil {
		// Ignoring files hides their changes from the ledger.
		ign = append(ign, "changes.ignore")
		c.Changes.Ignore = nil
	}
	if c.Env.Image != "" {
		// The image decides what the tests run against.
		ign = append(ign, "env.image")
		c.Env.Image = ""
	}
	if c.Env.Workdir != "" {
		// Where the workspace is mounted decides which of the image's
		// files it covers: over a directory of the image's PATH (or one
		// holding it), the workspace's files replace the image's
		// programs, the test runner included.
		ign = append(ign, "env.workdir")
		c.Env.Workdir = ""
	}
	for _, f := range c.Agents {
		ign = append(ign, f.Path)
	}
	c.Agents = nil
	sort.Strings(ign)
	return ign
}

// The bounds within which an untrusted configuration may set a wait:
// validate.timeout between MinUntrustedTimeout and MaxUntrustedTimeout
// (the default), mcp.startup_wait up to MaxUntrustedStartupWait.
const (
	MinUntrustedTimeout     = 10 * time.Second
	MaxUntrustedTimeout     = 10 * time.Minute
	MaxUntrustedStartupWait = 30 * time.Second
)

// Widening lists the settings of c that take effect only when the
// configuration is trusted: what trusting it enables.
func (c *Config) Widening() []string {
	cp := *c
	cp.Sandbox.Writable = append([]string(nil), c.Sandbox.Writable...)
	return cp.restrict()
}

// MaxFile is the most ReadFiles reads of one configuration file.
const MaxFile = 1 << 20

// ReadFiles reads the project's configuration files: .truss/config.toml
// and .truss/agents/*.md, each read once, through a strict hostfs Root on
// the workspace root: a symbolic link anywhere on the way, a FIFO, a
// device or a file over MaxFile is an error, never followed, waited on or
// read whole. Missing files are left out.
func ReadFiles(root string) (trust.Files, error) {
	r, err := hostfs.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	files := trust.Files{}
	read := func(p string) error {
		b, err := r.ReadFile(p, MaxFile)
		if hostfs.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		files[p] = b
		return nil
	}
	if err := read(Path); err != nil {
		return nil, err
	}
	d, err := r.OpenDir(AgentsDir)
	if hostfs.IsNotExist(err) {
		return files, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AgentsDir, err)
	}
	defer d.Close()
	ents, err := d.ReadDir()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AgentsDir, err)
	}
	for _, e := range ents {
		if e.Info.IsDir() || !strings.HasSuffix(e.Name, ".md") {
			continue
		}
		if err := read(path.Join(AgentsDir, e.Name)); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// Parse reads the content of a configuration file (nil: none) of the
// workspace at root; relative paths in it are taken from root.
//
// Its errors are *FileError: the user fixes the file.
func Parse(root string, b []byte) (*Config, error) {
	c, err := parse(root, b)
	if err != nil {
		return nil, &FileError{Err: err}
	}
	return c, nil
}

// FileError is an error in a configuration file's content, which the
// user fixes: the command line's exit status 2, as for a bad flag.
type FileError struct{ Err error }

func (e *FileError) Error() string { return e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// UsageError marks the error as the user's to fix (cli.ExitCode).
func (e *FileError) UsageError() bool { return true }

func parse(root string, b []byte) (*Config, error) {
	p := filepath.Join(root, Path)
	var c Config
	if b == nil {
		return &c, nil
	}
	if err := userOnly(b); err != nil {
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
	if c.Providers != nil {
		c.Providers, c.Trust.ProvidersIn = nil, p
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
	if err := changes.CheckIgnore(c.Changes.Ignore); err != nil {
		return nil, fmt.Errorf("%s: [changes] %w", p, err)
	}
	if err := c.Env.check(); err != nil {
		return nil, fmt.Errorf("%s: [env] %w", p, err)
	}
	for i, w := range c.Sandbox.Writable {
		if !filepath.IsAbs(w) {
			c.Sandbox.Writable[i] = filepath.Join(root, w)
		}
	}
	return &c, nil
}

// Protected returns the project's Truss directory under root when it
// exists: what the sandbox keeps read-only inside the workspace.
func Protected(root string) []string {
	d := filepath.Join(root, Dir)
	if _, err := os.Lstat(d); err != nil {
		return nil
	}
	return []string{d}
}

// check checks the [env] table's values.
func (e Env) check() error {
	if e.Image != "" {
		if strings.HasPrefix(e.Image, "image:") {
			return fmt.Errorf("image = %q: write the reference alone, without the image: prefix", e.Image)
		}
		if err := container.ValidateReference(e.Image); err != nil {
			return fmt.Errorf("image: %w", err)
		}
	}
	if e.Workdir != "" && !path.IsAbs(e.Workdir) {
		return fmt.Errorf("workdir = %q is not an absolute path in the container", e.Workdir)
	}
	switch e.Engine {
	case "", container.Podman, container.Docker:
	default:
		return fmt.Errorf("engine = %q: choose podman or docker", e.Engine)
	}
	return nil
}

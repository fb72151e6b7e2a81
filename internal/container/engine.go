// Package container runs a session's tools inside a task's own OCI image.
//
// An Engine is a container engine's command-line client (Podman or Docker)
// that answered: Find counts an engine as found when `podman info` or the
// Docker daemon answers, not when a binary is on PATH. The settings a host
// needs (an OCI runtime, a cgroup manager, resource limits below the host's
// hard limits) are chosen by Check, which tries candidates with a probe
// container and reports which it chose and why.
//
// Start opens an Env: one long-lived container from an image with the
// workspace bind-mounted at the image's working directory (else
// /workspace), no network unless asked, CPU, memory and pids limits, the
// host user's identity for files written in the workspace, and labels that
// name the session and the owning process (pid, start time, boot and host),
// so that Reap removes the containers of processes that are gone and never
// a live one's. Env.Launcher drives the persistent shell (internal/tool/shell)
// inside the container through the engine's exec; Env.Facts is what the
// ledger records about it.
//
// Start never pulls. Ensure makes sure an image is in the engine's store,
// pulling it when it is absent (once, however many callers ask at the
// same time), and Prefetch ensures a list of images a few at a time: what
// a benchmark with an image per task needs.
package container

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/trussdev/truss/internal/hostfs"
)

// The engines Find knows, in the order it tries them.
const (
	Podman = "podman"
	Docker = "docker"
)

// Engine is a working container engine and the settings chosen for it.
// It is safe for concurrent use.
type Engine struct {
	// Name is Podman or Docker.
	Name string
	// Path is the client binary.
	Path string
	// Version is the engine's version (Docker: the daemon's).
	Version string
	// Runtime is the engine's default OCI runtime, CgroupManager its cgroup
	// manager (Podman's; Docker's daemon cgroup driver) and CgroupVersion
	// "1" or "2".
	Runtime, CgroupManager, CgroupVersion string
	// Rootless is true when the engine runs without root privileges (files
	// written by the container's root then belong to the invoking user).
	Rootless bool
	// searchPath is the PATH the engine's program was found in (FindIn's),
	// also the PATH the engine runs with, so that what it looks up itself
	// (its runtimes, conmon, credential helpers) is not found in a
	// directory a command writes; "" keeps the process's.
	searchPath string
	// NoPull makes Ensure report an image absent from the store as a
	// *MissingImageError without pulling it. Set it before first use.
	NoPull bool

	pulls    pulls // Ensure's pulls in flight
	mu       sync.Mutex
	settings Settings
	checked  *Report // the last Check's report
	// seccompBase is the engine's default seccomp profile on disk
	// (Podman's; "" for Docker's, built into its daemon); profile is the
	// containers' own derived from it, profileNote what the facts say of
	// it ("" until derived).
	seccompBase string
	noSeccomp   bool // the engine runs containers without seccomp
	profile     []byte
	profileNote string
}

// Settings are the host-dependent options every container is run with.
type Settings struct {
	// Runtime is the OCI runtime asked for ("" = the engine's default).
	Runtime string `json:"runtime,omitempty"`
	// CgroupManager is Podman's cgroup manager ("" = its default).
	CgroupManager string `json:"cgroup_manager,omitempty"`
	// Ulimits are --ulimit values (NAME=SOFT:HARD); needed where the
	// engine's defaults exceed the host's hard limits.
	Ulimits []string `json:"ulimits,omitempty"`
	// Init runs the engine's init process (catatonit, tini) as PID 1 so
	// that orphans are reaped.
	Init bool `json:"init"`
}

// String is the settings as flags.
func (s Settings) String() string {
	var f []string
	if s.Runtime != "" {
		f = append(f, "--runtime "+s.Runtime)
	}
	if s.CgroupManager != "" {
		f = append(f, "--cgroup-manager "+s.CgroupManager)
	}
	for _, u := range s.Ulimits {
		f = append(f, "--ulimit "+u)
	}
	if s.Init {
		f = append(f, "--init")
	}
	if len(f) == 0 {
		return "(engine defaults)"
	}
	return strings.Join(f, " ")
}

// Settings returns the settings containers are run with.
func (e *Engine) Settings() Settings {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.settings
}

// SetSettings replaces the settings (a configured choice, or a Check's).
func (e *Engine) SetSettings(s Settings) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settings = s
}

// NotFoundError says that no engine works, with each one's reason.
type NotFoundError struct {
	// Tried maps an engine name to why it does not count as found.
	Tried []Attempt
}

// Attempt is one engine Find tried.
type Attempt struct {
	Name   string
	Reason string
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	b.WriteString("no working container engine")
	for i, a := range e.Tried {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", a.Name, a.Reason)
	}
	return b.String()
}

// Find returns the engine named (Podman or Docker), or with name "" the
// first of Podman and Docker that works. An engine works when its client
// is on PATH and `podman info` / the Docker daemon answers. The returned
// engine's settings are a first guess from the host's limits; Check tries
// them and chooses others when they do not work.
func Find(ctx context.Context, name string) (*Engine, error) {
	return FindIn(ctx, name, hostfs.UserPath())
}

// lookPath is the PATH the engine's own programs are looked up in.
func (e *Engine) lookPath() string {
	if e.searchPath == "" {
		return hostfs.UserPath()
	}
	return e.searchPath
}

// environ is the engine's environment: the process's, with PATH the one
// the engine was found in.
func (e *Engine) environ() []string {
	env := os.Environ()
	if e.searchPath == "" {
		return env
	}
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	return append(env, "PATH="+e.searchPath)
}

// FindIn is Find with the engine's program looked up in path (a PATH
// value) only: a session passes one without the directories its commands
// write (hostfs.SafePath).
func FindIn(ctx context.Context, name, path string) (*Engine, error) {
	names := []string{Podman, Docker}
	if name != "" {
		if name != Podman && name != Docker {
			return nil, fmt.Errorf("unknown container engine %q: choose podman or docker", name)
		}
		names = []string{name}
	}
	nf := &NotFoundError{}
	for _, n := range names {
		e, err := open(ctx, n, path)
		if err == nil {
			return e, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		nf.Tried = append(nf.Tried, Attempt{Name: n, Reason: err.Error()})
	}
	return nil, nf
}

func open(ctx context.Context, name, pathEnv string) (*Engine, error) {
	path, err := hostfs.LookPath(name, pathEnv)
	if err != nil {
		return nil, errors.New("not on PATH")
	}
	e := &Engine{Name: name, Path: path, searchPath: pathEnv}
	switch name {
	case Podman:
		out, err := e.output(ctx, "info", "--format", "json")
		if err != nil {
			return nil, fmt.Errorf("podman info failed: %w", err)
		}
		var info struct {
			Host struct {
				CgroupManager string `json:"cgroupManager"`
				CgroupVersion string `json:"cgroupVersion"`
				OCIRuntime    struct {
					Name string `json:"name"`
				} `json:"ociRuntime"`
				Security struct {
					Rootless           bool   `json:"rootless"`
					SeccompEnabled     bool   `json:"seccompEnabled"`
					SeccompProfilePath string `json:"seccompProfilePath"`
				} `json:"security"`
			} `json:"host"`
			Version struct {
				Version string `json:"Version"`
			} `json:"version"`
		}
		if err := json.Unmarshal(out, &info); err != nil {
			return nil, fmt.Errorf("podman info: %w", err)
		}
		e.Version = info.Version.Version
		e.Runtime = info.Host.OCIRuntime.Name
		e.CgroupManager = info.Host.CgroupManager
		e.CgroupVersion = strings.TrimPrefix(info.Host.CgroupVersion, "v")
		e.Rootless = info.Host.Security.Rootless
		e.seccompBase, e.noSeccomp = info.Host.Security.SeccompProfilePath, !info.Host.Security.SeccompEnabled
	case Docker:
		out, err := e.output(ctx, "info", "--format", "{{json .}}")
		if err != nil {
			return nil, fmt.Errorf("the Docker daemon does not answer: %w", err)
		}
		var info struct {
			ServerVersion   string   `json:"ServerVersion"`
			DefaultRuntime  string   `json:"DefaultRuntime"`
			CgroupDriver    string   `json:"CgroupDriver"`
			CgroupVersion   string   `json:"CgroupVersion"`
			SecurityOptions []string `json:"SecurityOptions"`
		}
		if err := json.Unmarshal(out, &info); err != nil {
			return nil, fmt.Errorf("docker info: %w", err)
		}
		if info.ServerVersion == "" {
			return nil, errors.New("the Docker daemon does not answer")
		}
		e.Version = info.ServerVersion
		e.Runtime = info.DefaultRuntime
		e.CgroupManager = info.CgroupDriver
		e.CgroupVersion = info.CgroupVersion
		e.noSeccomp = true
		for _, o := range info.SecurityOptions {
			if strings.Contains(o, "name=rootless") {
				e.Rootless = true
			}
			if strings.Contains(o, "name=seccomp") && !strings.Contains(o, "profile=unconfined") {
				e.noSeccomp = false
			}
		}
	}
	e.settings = Settings{Ulimits: hostUlimits(), Init: true}
	return e, nil
}

// CommandError is an engine command that failed.
type CommandError struct {
	Args     []string
	ExitCode int
	Stderr   string
}

func (e *CommandError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.ExitCode)
	}
	return fmt.Sprintf("%s: %s", strings.Join(e.Args, " "), msg)
}

// globals are the flags that go before the subcommand.
func (e *Engine) globals(s Settings) []string {
	if e.Name == Podman {
		var g []string
		if s.Runtime != "" {
			g = append(g, "--runtime", s.Runtime)
		}
		if s.CgroupManager != "" {
			g = append(g, "--cgroup-manager", s.CgroupManager)
		}
		return g
	}
	return nil
}

// command builds an engine command with the current settings' global flags.
func (e *Engine) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append(e.globals(e.Settings()), args...)
	if ctx == nil {
		return exec.Command(e.Path, full...)
	}
	return exec.CommandContext(ctx, e.Path, full...)
}

// output runs an engine command and returns its standard output; a failure
// is a *CommandError carrying its standard error.
func (e *Engine) output(ctx context.Context, args ...string) ([]byte, error) {
	return e.run(ctx, nil, e.command(ctx, args...))
}

func (e *Engine) run(ctx context.Context, stdin []byte, cmd *exec.Cmd) ([]byte, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.Env = append(e.environ(), "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		if ctx != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return out.Bytes(), &CommandError{Args: cmd.Args, ExitCode: code, Stderr: errb.String()}
	}
	return out.Bytes(), nil
}

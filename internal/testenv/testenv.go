// Package testenv keeps a test binary from writing outside directories it
// removes: Run gives the binary a home, cache, configuration and
// temporary directory of its own under one root, and removes the root when
// the tests end. Nothing a test (or a program it starts: a truss binary, a
// sandboxed go build, a browser) writes under the user's home or the
// system's temporary directory outlives the run.
//
// Go's own caches are the exception on purpose: GOCACHE, GOMODCACHE,
// GOPATH and GOENV are resolved before HOME moves and passed on explicitly, so that
// builds the tests start use the warm caches (read-only in the sandbox)
// instead of downloading into a fresh home.
package testenv

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// M is what Run runs: *testing.M.
type M interface {
	Run() int
}

// Run runs m with HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME, XDG_DATA_HOME,
// XDG_STATE_HOME and TMPDIR pointing at new directories under one root in
// the system's temporary directory, and TRUSS_HOME unset (a test that
// needs Truss's state sets it to a directory of its own), then removes the
// root, read-only directories included. It returns m's exit code, or 1
// when the environment could not be made or the root not removed.
//
// Call it from TestMain after any re-executed helper has been dispatched:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
func Run(m M) int {
	root, err := Setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	code := m.Run()
	if root == "" {
		return code // a test binary re-executed by a test: its parent's directories
	}
	if err := RemoveAll(root); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: the tests' directories were not removed:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Marker is set in the environment of a test binary under Run, to the
// root: a test binary that a test re-executes (a helper, a process it
// kills) inherits it and keeps its parent's directories, so that what it
// leaves is where its parent looks, and removed with the parent's.
const Marker = "TRUSS_TESTENV_ROOT"

// Setup makes the root and points the process's environment at it, as
// Run does, and returns the root; the caller removes it. Under Marker it
// changes nothing and returns "".
func Setup() (string, error) {
	if os.Getenv(Marker) != "" {
		return "", nil
	}
	if err := pinGo(); err != nil {
		return "", err
	}
	root, err := os.MkdirTemp("", "t")
	if err != nil {
		return "", err
	}
	// Short names: sockets made under TMPDIR must fit in 108 bytes, so
	// TMPDIR is the root itself, one short name below the outer one.
	for env, name := range map[string]string{
		"HOME": "h", "XDG_CONFIG_HOME": "h/.config", "XDG_CACHE_HOME": "h/.cache",
		"XDG_DATA_HOME": "h/.local/share", "XDG_STATE_HOME": "h/.local/state", "TMPDIR": ".",
	} {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			RemoveAll(root)
			return "", err
		}
		os.Setenv(env, d)
	}
	os.Setenv(Marker, root)
	os.Unsetenv("TRUSS_HOME")
	os.Unsetenv("TRUSS_SANDBOX_CACHE")
	return root, nil
}

// pinGo sets GOCACHE, GOMODCACHE, GOPATH and GOENV (the file of the
// user's go env -w settings) to what the go command uses now, before HOME
// moves (each left as it is when already set).
func pinGo() error {
	names := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"}
	unset := false
	for _, n := range names {
		if os.Getenv(n) == "" {
			unset = true
		}
	}
	if !unset {
		return nil
	}
	out, err := exec.Command("go", append([]string{"env", "-json"}, names...)...).Output()
	if err != nil {
		return fmt.Errorf("go env: %w", err)
	}
	var env map[string]string
	if err := json.Unmarshal(out, &env); err != nil {
		return fmt.Errorf("go env: %w", err)
	}
	for _, n := range names {
		if os.Getenv(n) == "" && env[n] != "" {
			os.Setenv(n, env[n])
		}
	}
	return nil
}

// RemoveAll removes dir and everything under it, making read-only
// directories (a Go module cache's, a sandbox's) writable first.
func RemoveAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// Wrap returns m whose Run is Run(m): for a TestMain that hands m to
// another runner (testscript.Main).
func Wrap(m M) M { return wrapped{m} }

type wrapped struct{ m M }

func (w wrapped) Run() int { return Run(w.m) }

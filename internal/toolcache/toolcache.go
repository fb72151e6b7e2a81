// Package toolcache gives the sandboxed commands of a workspace build and
// package caches of their own.
//
// A cache the host's toolchain uses is code that later runs outside the
// sandbox: a command that could write the Go build cache could plant an
// object file that the user's next `go build` links. So sandboxed commands
// never write the host's caches. Each workspace gets caches owned by Truss
// (under the user's cache directory, never used by the host's toolchain),
// which its sandboxed commands write and keep from one session to the next;
// what one workspace's commands write there reaches only that workspace's
// later sandboxed commands. The host's Go module cache, whose files Go
// verifies against go.sum and extracts read-only, is read in place and
// never written; with the network on, modules are downloaded into the
// workspace's own module cache, taking what the host's has first. The
// directories are made before confinement, so a fresh HOME (with no
// ~/.cache at all) works.
package toolcache

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trussdev/truss/internal/cacheprog"
)

// Caches are the caches of one workspace's sandboxed commands.
type Caches struct {
	// Dir is the workspace's cache directory.
	Dir string `json:"dir"`
	// Env is what the commands' environment gets: NAME=VALUE.
	Env []string `json:"env"`
	// Writable are the directories the sandbox lets the commands write
	// (Make creates them).
	Writable []string `json:"writable"`
	// ReadOnly are the host's caches the commands read but cannot write.
	ReadOnly []string `json:"read_only,omitempty"`
	// Layers are the caches that are the host's seen through a layer of
	// the commands' own (Layered): the sandbox mounts each as an overlay.
	Layers []Layer `json:"layers,omitempty"`
	// GoLowers are the Go build caches a Go cache program reads under
	// the commands' own (Programmed); they are in ReadOnly too.
	GoLowers []string `json:"go_lowers,omitempty"`
	// GoProgram is the executable GOCACHEPROG runs (Programmed): the
	// sandbox must let the commands run it.
	GoProgram string `json:"go_program,omitempty"`
}

// Layer is a cache of commands' own over the host's: Dir (what the
// commands' environment names) shows Lower, the host's cache, read-only,
// with what they write going to Upper; Work is the kernel's scratch.
// Dir, Upper and Work are in Caches.Writable.
type Layer struct {
	Dir, Lower, Upper, Work string
}

// Base is Truss's cache directory: $TRUSS_HOME/cache when TRUSS_HOME is
// set, else truss under the user's cache directory.
func Base() (string, error) {
	if h := os.Getenv("TRUSS_HOME"); h != "" {
		return filepath.Join(h, "cache"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for sandboxed commands: set TRUSS_HOME: %w", err)
	}
	return filepath.Join(d, "truss"), nil
}

// SharedEnv names a directory that, when set, is the cache directory of
// every workspace: one warm cache for a CI runner or a test suite, whose
// workspaces' commands then share what they write.
const SharedEnv = "TRUSS_SANDBOX_CACHE"

// DirFor is the cache directory of the workspace at root (or of the
// workspaces a name stands for): $TRUSS_SANDBOX_CACHE when set, else its
// WorkspaceDir under Base.
func DirFor(root string) (string, error) {
	if d := os.Getenv(SharedEnv); d != "" {
		if !filepath.IsAbs(d) {
			return "", fmt.Errorf("%s must be an absolute path, not %q", SharedEnv, d)
		}
		return d, nil
	}
	base, err := Base()
	if err != nil {
		return "", err
	}
	return WorkspaceDir(base, root), nil
}

// WorkspaceDir is the cache directory of the workspace at root under base:
// named after it, with a digest of its absolute path.
func WorkspaceDir(base, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(base, "workspaces", filepath.Base(root)+"-"+hex.EncodeToString(sum[:6]))
}

// For returns the caches of commands that keep them in dir (a workspace's
// WorkspaceDir, or a session's temporary directory), with the network on
// or off. It reads the host's Go settings from the environment; it
// creates nothing (Make does).
func For(dir string, network bool) *Caches {
	c := &Caches{Dir: dir}
	add := func(name, sub string) string {
		p := filepath.Join(dir, sub)
		c.Env = append(c.Env, name+"="+p)
		c.Writable = append(c.Writable, p)
		return p
	}
	// Whatever follows the XDG convention (Go's build cache by default,
	// pip, linters) lands in the private directory.
	add("XDG_CACHE_HOME", "xdg")
	add("GOCACHE", "go-build")
	add("npm_config_cache", "npm")
	add("PIP_CACHE_DIR", "pip")
	host := hostModCache()
	switch {
	case host != "" && !network:
		// Offline, modules come from the host's cache only: read it.
		c.Env = append(c.Env, "GOMODCACHE="+host)
		c.ReadOnly = append(c.ReadOnly, host)
	default:
		add("GOMODCACHE", "go-mod")
		if host != "" {
			proxy := os.Getenv("GOPROXY")
			if proxy == "" {
				proxy = "https://proxy.golang.org,direct"
			}
			c.Env = append(c.Env, "GOPROXY=file://"+filepath.ToSlash(filepath.Join(host, "cache", "download"))+","+proxy)
			c.ReadOnly = append(c.ReadOnly, host)
		}
	}
	return c
}

// Layered returns the caches of commands that must neither write a cache
// another run reads nor start cold (a benchmark's gradings): in dir, one
// run's own, the Go build cache, pip's and npm's are each the host's seen
// read-only through a layer of the run's own (Layers), so a run starts
// warm and what it writes — a planted object file included — is gone with
// dir; the module cache is For's. A cache the host does not have is an
// empty one of the run's.
func Layered(dir string, network bool) *Caches {
	c := For(dir, network)
	host := hostCaches()
	for _, kv := range c.Env {
		name, p, _ := strings.Cut(kv, "=")
		if lower := host[name]; lower != "" {
			c.Layers = append(c.Layers, Layer{Dir: p, Lower: lower, Upper: p + ".upper", Work: p + ".work"})
			c.Writable = append(c.Writable, p+".upper", p+".work")
		}
	}
	return c
}

// Programmed returns the caches of commands that must neither write a
// cache another run reads nor start cold (a benchmark's gradings), with
// Go's build cache read through a cache program (package cacheprog, run
// from exe): GOCACHE is dir's own go-build, which the program writes,
// over lowers (GoLowers: Go build caches in the go command's layout),
// which it reads in place, never writing or touching them. pip's and
// npm's caches are Layered's, overlays of the host's (their tools do not
// touch what they read); the module cache is For's. A lower in dir, or
// holding it, is an error: the commands could write it.
func Programmed(dir string, network bool, exe string, lowers []string) (*Caches, error) {
	c := Layered(dir, network)
	gocache := filepath.Join(dir, "go-build")
	for i, l := range c.Layers {
		if l.Dir == gocache {
			c.Layers = slices.Delete(c.Layers, i, i+1)
			c.Writable = slices.DeleteFunc(c.Writable, func(w string) bool { return w == l.Upper || w == l.Work })
			break
		}
	}
	for _, l := range lowers {
		if within(dir, l) || within(l, dir) {
			return nil, fmt.Errorf("the Go build cache %s and the commands' own cache %s overlap: the commands could write it", l, dir)
		}
	}
	prog, err := cacheprog.Command(exe, gocache, lowers...)
	if err != nil {
		return nil, err
	}
	c.Env = append(c.Env, "GOCACHEPROG="+prog)
	c.GoLowers = slices.Clone(lowers)
	c.ReadOnly = append(c.ReadOnly, lowers...)
	c.GoProgram = exe
	return c, nil
}

// within reports whether p is root or under it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// WarmGoDir is Truss's own warm Go build cache, written only by a
// trusted warm-up (the standard library built with no repository in
// sight, in a sandbox whose caches are For(filepath.Dir(WarmGoDir())))
// and read as a lower cache by Programmed's commands: go-warm/go-build
// under Base.
func WarmGoDir() (string, error) {
	base, err := Base()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "go-warm", "go-build"), nil
}

// HostGoCache is the host user's Go build cache (go env GOCACHE:
// $GOCACHE, else go-build in the user's cache directory) when it is a
// directory, else "".
func HostGoCache() string { return hostCaches()["GOCACHE"] }

// GoLowers are the trusted Go build caches Programmed's commands read, in
// order: the host user's own (HostGoCache), which no sandboxed command
// writes, and then WarmGoDir; each where it is a directory.
func GoLowers() []string {
	var out []string
	if d := HostGoCache(); d != "" {
		out = append(out, d)
	}
	if d, err := WarmGoDir(); err == nil {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// hostCaches are the host's own caches that Layered puts under a run's,
// by the variable that names them, where they exist: Go's build cache,
// pip's, npm's.
func hostCaches() map[string]string {
	userCache, _ := os.UserCacheDir()
	home, _ := os.UserHomeDir()
	defaults := map[string]string{"GOCACHE": "", "PIP_CACHE_DIR": "", "npm_config_cache": ""}
	if userCache != "" {
		defaults["GOCACHE"], defaults["PIP_CACHE_DIR"] = filepath.Join(userCache, "go-build"), filepath.Join(userCache, "pip")
	}
	if home != "" {
		defaults["npm_config_cache"] = filepath.Join(home, ".npm")
	}
	m := map[string]string{}
	for env, def := range defaults {
		d := cmp.Or(os.Getenv(env), def)
		if !filepath.IsAbs(d) {
			continue // GOCACHE=off, or no default
		}
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			m[env] = d
		}
	}
	return m
}

// hostModCache is the host's Go module cache when it exists: $GOMODCACHE,
// else the first GOPATH entry's pkg/mod, else ~/go/pkg/mod.
func hostModCache() string {
	d := os.Getenv("GOMODCACHE")
	if d == "" {
		gopath := strings.Split(os.Getenv("GOPATH"), string(os.PathListSeparator))[0]
		if gopath == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return ""
			}
			gopath = filepath.Join(home, "go")
		}
		d = filepath.Join(gopath, "pkg", "mod")
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		return ""
	}
	return d
}

// Value is the value Env gives name ("" where it gives none; the last
// where it gives two).
func (c *Caches) Value(name string) string {
	v := ""
	for _, kv := range c.Env {
		if n, val, _ := strings.Cut(kv, "="); n == name {
			v = val
		}
	}
	return v
}

// Make creates the writable directories (0700 for the workspace's).
func (c *Caches) Make() error {
	for _, d := range c.Writable {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("the cache directory for sandboxed commands: %w", err)
		}
	}
	return nil
}

// String says where the caches are, for `truss sandbox check`.
func (c *Caches) String() string {
	s := c.Dir + " (writable, this workspace's commands only)"
	if len(c.ReadOnly) > 0 {
		s += "; host's, read-only: " + strings.Join(c.ReadOnly, ", ")
	}
	return s
}

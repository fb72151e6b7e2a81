package hostfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SafePath is the value of PATH for the programs Truss itself runs on the
// host (git, bash, MCP servers): path with every entry that is relative,
// empty, or lies within one of the directories commands can write
// (writable, compared with symbolic links resolved) left out. A user who
// activated the workspace's virtual environment has its bin directory in
// PATH; a command that writes a git or a bash there must not have Truss
// run it outside the sandbox.
func SafePath(path string, writable []string) string {
	var roots []string
	for _, w := range writable {
		if w == "" {
			continue
		}
		roots = append(roots, Resolve(w))
	}
	var keep []string
	for _, e := range filepath.SplitList(path) {
		if e == "" || !filepath.IsAbs(e) {
			continue
		}
		r := Resolve(e)
		inside := false
		for _, w := range roots {
			if r == w || strings.HasPrefix(r, strings.TrimSuffix(w, string(filepath.Separator))+string(filepath.Separator)) {
				inside = true
				break
			}
		}
		if !inside {
			keep = append(keep, e)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// LookPath finds the program name as exec.LookPath does, in the entries
// of path (a PATH value) only. A name with a slash is returned as it is.
func LookPath(name, path string) (string, error) {
	if strings.ContainsRune(name, '/') {
		return name, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// Resolve is p with its symbolic links resolved as far as it exists (the
// nearest existing ancestor's, for a path not made yet).
func Resolve(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// UserPath is the process's PATH for a program Truss runs on the host
// outside a session (a session has its own, without every writable root):
// without relative entries, and without the entries in the current
// directory's tree, where a session in it would have let commands write (a
// workspace's activated .venv/bin). The current directory is kept when it
// is the user's home or the root, whose trees hold the user's own bin
// directories.
func UserPath() string {
	wd, err := os.Getwd()
	if err != nil || wd == "/" {
		return SafePath(os.Getenv("PATH"), nil)
	}
	if home, err := os.UserHomeDir(); err == nil && Resolve(home) == Resolve(wd) {
		return SafePath(os.Getenv("PATH"), nil)
	}
	return SafePath(os.Getenv("PATH"), []string{wd})
}

package changes

import (
	"fmt"
	"path"
	"strings"
)

// DefaultIgnore returns what a Tracker does not track when Options.Ignore
// is nil: nothing but each root's own ".git" (AlwaysIgnored). Dependency
// trees and caches are tracked, as bulk changes (DefaultBulk).
func DefaultIgnore() []string { return []string{} }

// DefaultBulk returns the directories, at any depth, whose changes a
// Tracker records as one bulk change each when Options.Bulk is nil:
// dependency trees, build outputs and tool caches that commands rewrite by
// the thousand. What changed in them is still recorded, by digest, in the
// bulk change's manifest.
func DefaultBulk() []string {
	return []string{"node_modules", "target", "__pycache__", ".venv", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
}

// AlwaysIgnored is the entry never tracked at the top of a root: the
// repository's object store and index, which the sandbox keeps read-only
// to commands and which change with every git command of Truss's own.
// Only the one there at Open (the same device and inode) is not tracked:
// a ".git" a command makes at the top during the session, or one anywhere
// else (a repository a command made, or a directory of that name planted
// among the sources), is tracked like any other.
const AlwaysIgnored = ".git"

// matcher decides which entries of a root are not tracked.
type matcher struct {
	exact map[string]bool // names without metacharacters
	names []string        // patterns matched against an entry's name, at any depth
	paths []string        // patterns matched against the path relative to the root
}

// parseIgnore checks the patterns of an ignore list and compiles them. A
// pattern without '/' ("node_modules", "*.pyc") matches an entry of that
// name at any depth; a pattern with '/' ("build/out", "docs/*/gen")
// matches the entry's path relative to its root, '/'-separated. Both are
// path.Match patterns. A trailing '/' is allowed and dropped (every
// ignored entry is ignored with what is under it). Empty patterns, a
// leading '/', and "." or ".." elements are errors.
func parseIgnore(patterns []string) (*matcher, error) {
	m := &matcher{exact: map[string]bool{}}
	for _, p := range patterns {
		q := strings.TrimSuffix(p, "/")
		switch {
		case q == "":
			return nil, fmt.Errorf("ignore pattern %q is empty", p)
		case strings.HasPrefix(q, "/"):
			return nil, fmt.Errorf("ignore pattern %q starts with '/': patterns are relative to the workspace root", p)
		case strings.ContainsRune(q, 0):
			return nil, fmt.Errorf("ignore pattern %q holds a NUL byte", p)
		}
		for _, el := range strings.Split(q, "/") {
			if el == "" || el == "." || el == ".." {
				return nil, fmt.Errorf("ignore pattern %q has an empty, \".\" or \"..\" element", p)
			}
		}
		if _, err := path.Match(q, ""); err != nil {
			return nil, fmt.Errorf("ignore pattern %q: %w", p, err)
		}
		switch {
		case strings.Contains(q, "/"):
			m.paths = append(m.paths, q)
		case !strings.ContainsAny(q, `*?[\\`):
			m.exact[q] = true
		default:
			m.names = append(m.names, q)
		}
	}
	return m, nil
}

// CheckIgnore reports whether patterns is a valid ignore list (see
// Options.Ignore), with an error naming the first bad pattern.
func CheckIgnore(patterns []string) error {
	_, err := parseIgnore(patterns)
	return err
}

// match reports whether the entry name in dir matches one of the
// patterns.
func (m *matcher) match(dir, name string) bool {
	if m.exact[name] {
		return true
	}
	for _, p := range m.names {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	if len(m.paths) > 0 {
		rel := name
		if dir != "" {
			rel = dir + "/" + name
		}
		for _, p := range m.paths {
			if ok, _ := path.Match(p, rel); ok {
				return true
			}
		}
	}
	return false
}

// bulkDir returns the directory of rel ('/'-separated, relative to its
// root) that a bulk pattern matches, the outermost one; ok is false when
// none does. rel itself (a file) is not a candidate.
func (m *matcher) bulkDir(rel string) (dir string, ok bool) {
	parent := ""
	for {
		i := strings.IndexByte(rel[len(parent):], '/')
		if i < 0 {
			return "", false
		}
		name := rel[len(parent) : len(parent)+i]
		d := strings.TrimSuffix(parent, "/")
		if m.match(d, name) {
			return rel[:len(parent)+i], true
		}
		parent = rel[:len(parent)+i+1]
	}
}

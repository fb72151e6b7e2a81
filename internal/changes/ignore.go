package changes

import (
	"fmt"
	"path"
	"strings"
)

// DefaultIgnore returns what a Tracker does not track when Options.Ignore
// is nil: build outputs, dependency trees and tool caches that commands
// rewrite by the thousand and nobody edits. ".git" is never tracked,
// whatever the list says.
func DefaultIgnore() []string {
	return []string{"node_modules", "target", "__pycache__", ".venv", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
}

// AlwaysIgnored is the name never tracked: a repository's object store and
// index change with every git command and are not workspace content.
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
	m := &matcher{exact: map[string]bool{AlwaysIgnored: true}}
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

// ignored reports whether the entry name in the directory dir
// ('/'-separated, relative to its root, "" for the root) is not tracked.
func (m *matcher) ignored(dir, name string) bool {
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

package validate

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// configNames are the names of the files, at any depth, that configure a
// test run: pytest's configuration files (its addopts can load a plugin
// with -p; a pytest.ini in a test's directory is found before the root's),
// tox's and setuptools', the files through which Python loads code of
// the checkout on its own (an entry_points.txt of an egg-info directory on
// the path registers pytest11 plugins, which pytest loads unasked; a
// sitecustomize.py or usercustomize.py on the path runs at start-up), and
// Go's module and workspace files (a replace or toolchain line changes
// what is built).
var configNames = []string{"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg", "pyproject.toml",
	"entry_points.txt", "sitecustomize.py", "usercustomize.py", "go.mod", "go.work"}

// configPrefixes begin the names of JavaScript test runners'
// configuration files (jest.config.js, vitest.config.ts, .mocharc.yml).
var configPrefixes = []string{"jest.config.", "vitest.config.", "vitest.workspace.", ".mocharc."}

// IsTestConfig reports whether the file at rel (slash-separated, relative
// to the repository's root) configures a test run, at any depth: the
// files of configNames; .npmrc (its node-options can load a module into
// every node that npm test starts); .gitattributes (its filters and
// working-tree encodings decide the bytes git writes, a task's tests
// among them); cargo's .cargo/config and .cargo/config.toml (a target's
// runner runs every test binary); and the JavaScript test runners'
// configuration files (configPrefixes).
func IsTestConfig(rel string) bool {
	base := path.Base(rel)
	switch {
	case slices.Contains(configNames, base), base == ".npmrc", base == ".gitattributes":
		return true
	case base == "config" || base == "config.toml":
		return path.Base(path.Dir(rel)) == ".cargo"
	}
	return slices.ContainsFunc(configPrefixes, func(p string) bool { return strings.HasPrefix(base, p) })
}

// ConfigEssence is what of a test configuration file's content (data, of
// the file at rel) decides a test run, for comparing two versions: a
// go.mod's go, toolchain, replace, ignore and godebug lines
// (ModDirectives; a new
// requirement changes no test's outcome by itself), a package.json's
// scripts (what npm test runs), any other file whole.
func ConfigEssence(rel string, data []byte) string {
	switch path.Base(rel) {
	case "go.mod":
		return ModDirectives(rel, data)
	case "package.json":
		var pkg struct {
			Scripts json.RawMessage `json:"scripts"`
		}
		if json.Unmarshal(data, &pkg) != nil {
			return "unparsed\x00" + string(data)
		}
		var scripts map[string]any
		json.Unmarshal(pkg.Scripts, &scripts)
		b, _ := json.Marshal(scripts) // sorted keys
		return string(b)
	}
	return string(data)
}

// ModDirectives is what of a go.mod configures a test run: its go,
// toolchain, replace, ignore and godebug lines (a go line above the
// installed Go's makes it fetch another toolchain; a replace swaps a
// module's code; an ignore takes a directory's packages out of ./...; a
// godebug changes the runtime's behavior). A file that does not parse is
// taken whole.
func ModDirectives(name string, data []byte) string {
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return "unparsed\x00" + string(data)
	}
	var b strings.Builder
	if f.Go != nil {
		fmt.Fprintf(&b, "go %s\n", f.Go.Version)
	}
	if f.Toolchain != nil {
		fmt.Fprintf(&b, "toolchain %s\n", f.Toolchain.Name)
	}
	for _, r := range f.Replace {
		fmt.Fprintf(&b, "replace %s %s => %s %s\n", r.Old.Path, r.Old.Version, r.New.Path, r.New.Version)
	}
	for _, i := range f.Ignore {
		fmt.Fprintf(&b, "ignore %s\n", i.Path)
	}
	for _, g := range f.Godebug {
		fmt.Fprintf(&b, "godebug %s=%s\n", g.Key, g.Value)
	}
	return b.String()
}

// CommandFiles are the workspace files (slash-separated, relative to the
// root) a test command cmd runs or reads its recipe from, beyond what
// IsTestConfig names: make's makefiles (GNUmakefile, makefile,
// Makefile, and a -f FILE), package.json for npm, yarn and pnpm, and
// every word of cmd that names a relative path (./run-tests.sh,
// scripts/test.py), so that a change to what the command runs is named
// even when the command was given, not detected.
func CommandFiles(cmd string) []string {
	var out []string
	add := func(p string) {
		p = path.Clean(strings.TrimPrefix(p, "./"))
		if p != "." && !strings.HasPrefix(p, "../") && !path.IsAbs(p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	words := strings.FieldsFunc(cmd, func(r rune) bool { return strings.ContainsRune(" \t\n;&|()'\"`", r) })
	for i, w := range words {
		switch w {
		case "make", "gmake":
			add("GNUmakefile")
			add("makefile")
			add("Makefile")
		case "npm", "yarn", "pnpm", "npx":
			add("package.json")
		case "-f", "--file", "--makefile":
			if i+1 < len(words) {
				add(words[i+1])
			}
		}
		if strings.HasPrefix(w, "-") || strings.Contains(w, "=") || strings.Contains(w, "...") {
			continue
		}
		if strings.Contains(w, "/") || strings.HasSuffix(w, ".sh") || strings.HasSuffix(w, ".py") {
			add(w)
		}
	}
	return out
}

package grade

import (
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/hostfs"
)

// A Go task lists its tests by bare name ("TestAdd"), as go test names
// them, and go test ./... runs every package: two packages can hold a test
// of the same name. A bare name counts only in the packages of the test
// patch that declare it, when any does: a patch that keeps the target
// package from reporting anything (a build error, an exit in init) is not
// resolved by another package's namesake. A name none of them declares
// (a PASS_TO_PASS test elsewhere in the repository) counts in any package.

// goHomes maps a listed bare name's top-level test to the import paths of
// the test patch's packages that declare it.
type goHomes map[string][]string

// counts reports whether the event of test in pkg gives the listed name
// its verdict: PKG.TEST always, a bare name in its homes (any package
// when it has none).
func (h goHomes) counts(name, pkg, test string) bool {
	if name == pkg+"."+test {
		return true
	}
	if name != test {
		return false
	}
	top, _, _ := strings.Cut(test, "/")
	homes := h[top]
	return len(homes) == 0 || slices.Contains(homes, pkg)
}

// goTestDecl is a top-level test function's declaration in a test file.
var goTestDecl = regexp.MustCompile(`(?m)^func[ \t]+(Test[^\s(\[]*)[ \t]*[(\[]`)

// maxTestFile is the largest test file read for its declarations.
const maxTestFile = 16 << 20

// goTestDir is a package of the test patch as the checkout has it once
// the test patch is applied: its directory (slash-separated, "." for the
// root), import path, the package clause of the test patch's test files
// in it ("" when it touches none), and the top-level tests its test files
// declare.
type goTestDir struct {
	dir, importPath, pkgName string
	declared                 []string
	// testFile is the test patch's test file in dir whose package
	// clause pkgName is (its name in dir), "" when none.
	testFile string
}

// goTestDirs reads, in the checkout at ws with the test patch applied, the
// *_test.go files of every package of the test patch (the directory of a
// Go file it touches, or the one above a testdata directory); module is
// the module path of the checkout's root go.mod at base ("" when none:
// no package). The test files are the task's by then (the model's changes
// to them set aside).
func goTestDirs(ws, module string, touched []string) []goTestDir {
	if module == "" {
		return nil
	}
	var dirs []goTestDir
	for _, p := range touched {
		parts := strings.Split(path.Clean(filepath.ToSlash(p)), "/")
		var dir string
		if i := slices.Index(parts, "testdata"); i >= 0 {
			dir = path.Join(append([]string{"."}, parts[:i]...)...)
		} else if strings.HasSuffix(p, ".go") {
			dir = path.Join(append([]string{"."}, parts[:len(parts)-1]...)...)
		} else {
			continue
		}
		i := slices.IndexFunc(dirs, func(d goTestDir) bool { return d.dir == dir })
		if i < 0 {
			ip := module
			if dir != "." {
				ip = module + "/" + dir
			}
			dirs = append(dirs, goTestDir{dir: dir, importPath: ip})
			i = len(dirs) - 1
		}
		if strings.HasSuffix(p, "_test.go") && dirs[i].pkgName == "" {
			dirs[i].pkgName = path.Base(filepath.ToSlash(p))
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	root, err := hostfs.OpenRoot(ws)
	if err != nil {
		return nil
	}
	defer root.Close()
	for i := range dirs {
		d := &dirs[i]
		// pkgName holds the test patch's test file's name until its
		// package clause is read.
		own := d.pkgName
		d.pkgName = ""
		r := root
		if d.dir != "." {
			if r, err = root.OpenDir(d.dir); err != nil {
				continue
			}
		}
		var files []string
		_ = r.ReadDirMatching(func(n string) bool { return strings.HasSuffix(n, "_test.go") }, func(n string, info hostfs.Info) {
			if info.Mode.IsRegular() {
				files = append(files, n)
			}
		})
		for _, f := range files {
			data, err := r.ReadFile(f, maxTestFile)
			if err != nil {
				continue
			}
			for _, m := range goTestDecl.FindAllSubmatch(data, -1) {
				if n := string(m[1]); !slices.Contains(d.declared, n) {
					d.declared = append(d.declared, n)
				}
			}
			if m := goPackageClause.FindSubmatch(data); f == own && m != nil && goIdent(string(m[1])) {
				d.pkgName, d.testFile = string(m[1]), f
			}
		}
		if r != root {
			r.Close()
		}
	}
	return dirs
}

// goPackageClause is a Go file's package clause.
var goPackageClause = regexp.MustCompile(`(?m)^package[ \t]+(\w+)`)

// findGoHomes returns the homes of the listed names among dirs.
func findGoHomes(dirs []goTestDir, listed []string) goHomes {
	h := goHomes{}
	for _, name := range listed {
		top, _, _ := strings.Cut(name, "/")
		for _, d := range dirs {
			if slices.Contains(d.declared, top) && !slices.Contains(h[top], d.importPath) {
				h[top] = append(h[top], d.importPath)
			}
		}
	}
	return h
}

// modulePath is the module path of go.mod's content data, "" when it has
// none.
func modulePath(data []byte) string { return modfile.ModulePath(data) }

// goVerdicts reads the listed tests' verdicts from go test -json output
// as ParseGoTestJSON does, a bare name only from the events of its homes;
// a bare name with homes passes only if it passed in every one of them
// (missing in one is failed: that home's package did not build, or
// exited before it ran), so a namesake in another home cannot stand in
// for it.
func goVerdicts(out string, listed []string, h goHomes) Verdicts {
	v := Verdicts{}
	inHome := map[string]map[string]string{} // bare name → home → verdict
	for _, ev := range goTestEvents(out) {
		verdict := ev.verdict()
		if verdict == "" || ev.Test == "" {
			continue
		}
		for _, name := range listed {
			if !h.counts(name, ev.Package, ev.Test) {
				continue
			}
			if top, _, _ := strings.Cut(name, "/"); name == ev.Test && len(h[top]) > 0 {
				if inHome[name] == nil {
					inHome[name] = map[string]string{}
				}
				if inHome[name][ev.Package] != bench.TestFailed {
					inHome[name][ev.Package] = verdict
				}
				continue
			}
			v.set(name, verdict)
		}
	}
	for name, got := range inHome {
		top, _, _ := strings.Cut(name, "/")
		verdict := bench.TestPassed
		for _, home := range h[top] {
			if got[home] != bench.TestPassed {
				verdict = bench.TestFailed
			}
		}
		v.set(name, verdict)
	}
	return v
}

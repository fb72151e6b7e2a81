package grade

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io"
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
// of the same name, and a patch that keeps the listed test's package from
// reporting anything (a build error, an exit in init) must not be resolved
// by another package's namesake. A bare name's homes are the packages of
// the test patch that declare it, when any does: it passes only if it
// passed in every one of them. A name none of them declares (a
// PASS_TO_PASS test elsewhere in the repository) has as homes every
// package of the checkout whose test files declare it (treeHome), the
// base's test files and the test patch's: it passes only if it passed in
// every home that ran it, and fails where a home ran and did not report it
// (its test binary did not build, or something kept the test from
// running). A home where go test could not run it (its file excluded by a
// build constraint, a nested module the command did not enter) is no
// evidence either way. A name no package declares counts in any package.

// goHomes says where a listed bare name's top-level test counts.
type goHomes struct {
	// patch maps a name to the import paths of the test patch's
	// packages that declare it.
	patch map[string][]string
	// tree maps a name no test-patch package declares to the packages
	// of the checkout that do.
	tree map[string][]treeHome
}

// treeHome is a package whose test files declare a listed name.
type treeHome struct {
	pkg string
	// built: the declaring file is built by go test here (its name and
	// build constraint, for the grader's GOOS and GOARCH).
	built bool
	// root: the package is in the checkout's root module, all of which
	// the detected go test ./... runs (its ignore directives aside).
	root bool
	// testMain: the package's test files declare a TestMain, which may
	// run no test and pass (an integration package that runs only when
	// asked to).
	testMain bool
}

// goTestMain is a TestMain declaration.
var goTestMain = regexp.MustCompile(`(?m)^func[ \t]+TestMain[ \t]*\(`)

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
	if homes := h.patch[top]; len(homes) > 0 {
		return slices.Contains(homes, pkg)
	}
	if homes := h.tree[top]; len(homes) > 0 {
		return slices.ContainsFunc(homes, func(t treeHome) bool { return t.pkg == pkg })
	}
	return true
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
	h := goHomes{patch: map[string][]string{}}
	for _, name := range listed {
		top, _, _ := strings.Cut(name, "/")
		for _, d := range dirs {
			if slices.Contains(d.declared, top) && !slices.Contains(h.patch[top], d.importPath) {
				h.patch[top] = append(h.patch[top], d.importPath)
			}
		}
	}
	return h
}

// unhomed returns the top-level names of the listed bare names that no
// test-patch package declares.
func (h goHomes) unhomed(listed []string) []string {
	var names []string
	for _, name := range listed {
		top, _, _ := strings.Cut(name, "/")
		if strings.Contains(top, ".") || len(h.patch[top]) > 0 || slices.Contains(names, top) {
			continue
		}
		names = append(names, top)
	}
	return names
}

// findTreeHomes finds, in the checkout at ws (the test code the task's:
// the base's with the test patch applied), the packages whose test files
// declare one of names as a test (func NAME(t *testing.T)). files are the
// checkout's test files (the base's and the test patch's, slash paths),
// mods the go.mod files that place them in modules, module the root
// module's path ("" when the checkout has none: no homes), ignores the
// root go.mod's ignore paths.
func findTreeHomes(ws, module string, files, mods, ignores, names []string) map[string][]treeHome {
	if module == "" || len(names) == 0 {
		return nil
	}
	root, err := hostfs.OpenRoot(ws)
	if err != nil {
		return nil
	}
	defer root.Close()
	modPaths := map[string]string{".": module} // module directory → path
	homes := map[string][]treeHome{}
	mains := map[string]bool{}     // directories whose test files declare TestMain
	pkgDirs := map[string]string{} // a home's package → its directory
	for _, f := range files {
		dir, base := path.Split(f)
		dir = path.Clean("./" + dir)
		if !strings.HasSuffix(base, "_test.go") || !goPackageDir(dir) {
			continue
		}
		data, err := root.ReadFile(f, maxTestFile)
		if err != nil {
			continue
		}
		if goTestMain.Match(data) {
			mains[dir] = true
		}
		declared := testFuncs(data, names)
		if len(declared) == 0 {
			continue
		}
		// The nearest go.mod above the file is its module's.
		modDir := dir
		for modDir != "." && !slices.Contains(mods, modDir+"/go.mod") {
			modDir = path.Dir(modDir)
		}
		mp, ok := modPaths[modDir]
		if !ok {
			if mod, err := root.ReadFile(modDir+"/go.mod", 1<<20); err == nil {
				mp = modulePath(mod)
			}
			modPaths[modDir] = mp
		}
		if mp == "" {
			continue
		}
		pkg := mp
		if rel := strings.TrimPrefix(strings.TrimPrefix(dir, modDir), "/"); modDir == "." && dir != "." {
			pkg = mp + "/" + dir
		} else if modDir != "." && rel != "" {
			pkg = mp + "/" + rel
		}
		ctx := build.Default
		ctx.OpenFile = func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		built, err := ctx.MatchFile(dir, base)
		home := treeHome{pkg: pkg, built: err == nil && built, root: modDir == "." && !ignored(dir, ignores)}
		pkgDirs[pkg] = dir
		for _, name := range declared {
			i := slices.IndexFunc(homes[name], func(t treeHome) bool { return t.pkg == pkg })
			if i < 0 {
				homes[name] = append(homes[name], home)
				continue
			}
			// Two files of a package (one per platform) declare it: the
			// package runs it if either is built.
			homes[name][i].built = homes[name][i].built || home.built
		}
	}
	for _, hs := range homes {
		for i := range hs {
			hs[i].testMain = mains[pkgDirs[hs[i].pkg]]
		}
	}
	return homes
}

// goPackageDir reports whether go test ./... can reach the directory
// (slash path, "." for the root): none of its elements is testdata,
// vendor, or begins with "." or "_".
func goPackageDir(dir string) bool {
	if dir == "." {
		return true
	}
	for _, e := range strings.Split(dir, "/") {
		if e == "testdata" || e == "vendor" || strings.HasPrefix(e, ".") || strings.HasPrefix(e, "_") {
			return false
		}
	}
	return true
}

// testFuncs returns which of names the Go test file data declares as a
// top-level function of one pointer parameter to a T (func NAME(t
// *testing.T), testing imported under any name or dot-imported). A file
// that does not parse is read for its declarations' text (goTestDecl).
func testFuncs(data []byte, names []string) []string {
	var found []string
	maybe := slices.ContainsFunc(names, func(n string) bool { return bytes.Contains(data, []byte(n)) })
	if !maybe {
		return nil
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", data, parser.SkipObjectResolution)
	if err != nil {
		for _, m := range goTestDecl.FindAllSubmatch(data, -1) {
			if n := string(m[1]); slices.Contains(names, n) && !slices.Contains(found, n) {
				found = append(found, n)
			}
		}
		return found
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !slices.Contains(names, fn.Name.Name) || slices.Contains(found, fn.Name.Name) {
			continue
		}
		if fn.Type.TypeParams != nil || fn.Type.Params == nil || len(fn.Type.Params.List) != 1 || len(fn.Type.Params.List[0].Names) > 1 {
			continue
		}
		star, ok := fn.Type.Params.List[0].Type.(*ast.StarExpr)
		if !ok {
			continue
		}
		switch x := star.X.(type) {
		case *ast.SelectorExpr:
			ok = x.Sel.Name == "T"
		case *ast.Ident:
			ok = x.Name == "T"
		default:
			ok = false
		}
		if ok {
			found = append(found, fn.Name.Name)
		}
	}
	return found
}

// modulePath is the module path of go.mod's content data, "" when it has
// none.
func modulePath(data []byte) string { return modfile.ModulePath(data) }

// modIgnores are the paths go.mod's content data ignores (its ignore
// directives), which go test ./... does not enter.
func modIgnores(data []byte) []string {
	f, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		return nil
	}
	var paths []string
	for _, ig := range f.Ignore {
		paths = append(paths, ig.Path)
	}
	return paths
}

// ignored reports whether the directory dir (slash path) is under one of
// the root go.mod's ignore paths: "./x" at the root, "x" at any depth.
func ignored(dir string, ignores []string) bool {
	for _, ig := range ignores {
		if rel, ok := strings.CutPrefix(ig, "./"); ok {
			rel = path.Clean(rel)
			if dir == rel || strings.HasPrefix(dir, rel+"/") {
				return true
			}
			continue
		}
		if ig = path.Clean(ig); strings.Contains("/"+dir+"/", "/"+ig+"/") {
			return true
		}
	}
	return false
}

// goVerdicts reads the listed tests' verdicts from go test -json output
// as ParseGoTestJSON does, a bare name only from the events of its homes.
// A bare name with test-patch homes passes only if it passed in every one
// of them (missing in one is failed: that home's package did not build, or
// exited before it ran), so a namesake in another home cannot stand in
// for it. One with homes elsewhere (h.tree) passes only if it passed in
// every home that ran: a home whose package reported a failure (its test
// binary did not build, an exit) or that ran its built file and did not
// report it fails it, and so does a home whose test of the subtest's
// top-level name failed or skipped without reporting the subtest (it may
// have stopped before it); so does, when whole (the detected go test ./... at
// the root ran), a built home of the root module that reported nothing
// while others did. A home that ran none of it, its file unbuilt here or
// outside the run, is no evidence.
func goVerdicts(out string, listed []string, h goHomes, whole bool) (Verdicts, []string) {
	v := Verdicts{}
	var notes []string
	inHome := map[string]map[string]string{}  // bare name → home → verdict
	ran := map[string]bool{}                  // packages with any event
	pkgFailed := map[string]bool{}            // packages that reported a failure
	topSeen := map[string]map[string]bool{}   // package → top-level tests it reported
	topFailed := map[string]map[string]bool{} // package → top-level tests it failed or skipped
	for _, ev := range goTestEvents(out) {
		if ev.Package != "" {
			ran[ev.Package] = true
			if ev.Test == "" && ev.Action == "fail" {
				pkgFailed[ev.Package] = true
			}
			if ev.Test != "" {
				if topSeen[ev.Package] == nil {
					topSeen[ev.Package] = map[string]bool{}
				}
				top, _, _ := strings.Cut(ev.Test, "/")
				topSeen[ev.Package][top] = true
				if top == ev.Test && ev.verdict() == bench.TestFailed {
					if topFailed[ev.Package] == nil {
						topFailed[ev.Package] = map[string]bool{}
					}
					topFailed[ev.Package][top] = true
				}
			}
		}
		verdict := ev.verdict()
		if verdict == "" || ev.Test == "" {
			continue
		}
		for _, name := range listed {
			if !h.counts(name, ev.Package, ev.Test) {
				continue
			}
			if top, _, _ := strings.Cut(name, "/"); name == ev.Test && (len(h.patch[top]) > 0 || len(h.tree[top]) > 0) {
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
	for _, name := range listed {
		top, _, _ := strings.Cut(name, "/")
		got := inHome[name]
		if homes := h.patch[top]; len(homes) > 0 {
			if got == nil {
				continue
			}
			verdict := bench.TestPassed
			for _, home := range homes {
				if got[home] != bench.TestPassed {
					verdict = bench.TestFailed
				}
			}
			v.set(name, verdict)
			continue
		}
		verdict := ""
		var why []string // the homes that failed it without reporting it
		for _, home := range h.tree[top] {
			switch s := got[home.pkg]; {
			case s == bench.TestPassed:
				if verdict == "" {
					verdict = s
				}
			case s != "":
				verdict = bench.TestFailed
			case !ran[home.pkg]:
				// Not in the run: no evidence, unless the run was the
				// whole root module's and others reported.
				if whole && home.root && home.built && len(ran) > 0 {
					verdict = bench.TestFailed
					why = append(why, home.pkg+" (not in the run, though go test ./... at the root runs it)")
				}
			case name != top && topFailed[home.pkg][top]:
				// The home's test of that name failed (or skipped) without
				// reporting the subtest: it may have stopped before it,
				// which no namesake elsewhere makes up for.
				verdict = bench.TestFailed
				why = append(why, home.pkg+" (its "+top+" failed or skipped without reporting it)")
			case name != top && topSeen[home.pkg][top]:
				// The home ran its test of that name and it passed, with no
				// such subtest there: a namesake's.
			case pkgFailed[home.pkg]:
				verdict = bench.TestFailed
				why = append(why, home.pkg+" (its package failed without reporting it: its test binary did not build, or it exited)")
			case home.built && home.testMain && len(topSeen[home.pkg]) == 0:
				// The package passed without running any test: its
				// TestMain chose to run none (an integration package
				// that runs when asked), no evidence.
			case home.built:
				verdict = bench.TestFailed
				why = append(why, home.pkg+" (it ran with the declaring file built and did not report it)")
			}
		}
		if verdict != "" {
			v.set(name, verdict)
		}
		if verdict == bench.TestFailed && len(why) > 0 {
			notes = append(notes, fmt.Sprintf("%s failed in the packages whose test files declare it: %s", name, strings.Join(why, ", ")))
		}
	}
	return v, notes
}

package hostfs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// treePackages are the packages that read, write, list or copy trees a
// sandboxed command can write (the workspace, --add-dir roots, a
// container's state directory). They do so only through this package:
// by-path calls of the os, io/ioutil and path/filepath functions below are
// refused there, except at the call sites of allowed, each of which names
// a path no command can write and says why.
var treePackages = []string{
	"internal/agent",
	"internal/approval",
	"internal/changes",
	"internal/config",
	"internal/container",
	"internal/gitsafe",
	"internal/harness",
	"internal/subagent",
	"internal/tool/fs",
	"internal/tool/memory",
	"internal/tool/patch",
	"internal/tool/shell",
	"internal/trust",
	"internal/validate",
}

// forbidden are the by-path calls: each resolves a name from the process's
// view of the file system, following links, and opens without O_NONBLOCK.
var forbidden = map[string]bool{
	"os.Open": true, "os.OpenFile": true, "os.ReadFile": true, "os.WriteFile": true,
	"os.ReadDir": true, "os.Create": true, "os.CreateTemp": true, "os.DirFS": true,
	"os.OpenRoot": true, "os.OpenInRoot": true, "os.CopyFS": true,
	"ioutil.ReadFile": true, "ioutil.WriteFile": true, "ioutil.ReadDir": true,
	"filepath.Walk": true, "filepath.WalkDir": true,
}

// allowed are the call sites outside this package that may make a
// forbidden call, as "package/file.go:Function os.Call", each with the
// reason its path is beyond every command's reach.
var allowed = map[string]string{
	"internal/harness/providers.go:Session.newProvider os.ReadFile":             "the --script file the user named on the command line",
	"internal/container/check.go:readTrim os.ReadFile":                          "the host's /proc and /sys files, which no command writes",
	"internal/container/reap.go:startTime os.ReadFile":                          "the host's /proc/PID/stat",
	"internal/container/fifo.go:openFIFO os.OpenFile":                           "the state directory's FIFOs, which the protocol needs opened blocking: O_NOFOLLOW, and anything but a FIFO refused after fstat",
	"internal/container/supervisor_linux.go:supervise os.OpenFile":              "the container's supervisor, inside the container, opening the control FIFO on the state directory's read-only mount",
	"internal/container/supervisor_linux.go:supervisor.start os.OpenFile":       "the container's supervisor opening a shell's FIFOs on the state directory's read-only mount, O_NOFOLLOW",
	"internal/container/supervisor_linux.go:supervisor.writeStatus os.OpenFile": "the container's supervisor creating a status file under a fresh name, O_EXCL|O_NOFOLLOW, then renaming it; inside the container it reaches nothing a command could not",
	"internal/harness/checkbox.go:readStdList os.ReadFile":                      "the warm cache's list in go-warm, Truss's cache directory, which no command writes (the warm-up's writable roots are go-warm's subdirectories, not go-warm); read after an Lstat that refuses all but a regular file",
	"internal/harness/checkbox.go:workspace.warmStd os.WriteFile":               "the package list, written in a directory just made in the session's private directory before any command runs in it",
	"internal/harness/workspace.go:Session.otherProjects os.ReadDir":            "the names in Truss's cache directory of workspaces, which no command writes (the writable roots are directories below each workspace's own)",
	"internal/tool/fs/workspace.go:OpenWith os.OpenRoot":                        "an os.Root kept for stat, mkdir, remove and rename beneath the root, which open no file's contents (so cannot block on a FIFO) and cannot leave the root; every read, write and listing goes through a hostfs Root",
}

// gaps are by-path calls still made on trees commands can write, each a
// known gap with what remains: the test names them in its log until they
// are gone, and fails on any other.
var gaps = map[string]string{}

// TestHostSideLayer fails when a package that handles trees commands can
// write reaches a file by path instead of through this package.
func TestHostSideLayer(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	var bad []string
	for _, pkg := range treePackages {
		dir := filepath.Join(root, filepath.FromSlash(pkg))
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			n := e.Name()
			if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			imports := map[string]string{} // local name -> import path
			for _, im := range f.Imports {
				p := strings.Trim(im.Path.Value, `"`)
				name := filepath.Base(p)
				if im.Name != nil {
					name = im.Name.Name
				}
				imports[name] = p
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				funcName := "(init)"
				var body ast.Node = d
				if ok {
					funcName = fn.Name.Name
					if fn.Recv != nil && len(fn.Recv.List) > 0 {
						funcName = recvName(fn.Recv.List[0].Type) + "." + funcName
					}
				}
				ast.Inspect(body, func(x ast.Node) bool {
					sel, ok := x.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					id, ok := sel.X.(*ast.Ident)
					if !ok {
						return true
					}
					p, ok := imports[id.Name]
					if !ok {
						return true
					}
					call := filepath.Base(p) + "." + sel.Sel.Name
					if p != "os" && p != "io/ioutil" && p != "path/filepath" || !forbidden[call] {
						return true
					}
					site := pkg + "/" + n + ":" + funcName + " " + call
					if _, ok := allowed[site]; ok {
						used[site] = true
						return true
					}
					if why, ok := gaps[site]; ok {
						used[site] = true
						t.Logf("known gap: %s: %s", site, why)
						return true
					}
					bad = append(bad, site+" ("+fset.Position(sel.Pos()).String()+")")
					return true
				})
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: a by-path file call in a package that handles trees commands can write; use internal/hostfs, or add the site to allowed with the reason its path is out of every command's reach", b)
	}
	for site := range gaps {
		if !used[site] {
			t.Errorf("known gap %s is closed; remove it from gaps", site)
		}
	}
	for site := range allowed {
		if !used[site] {
			t.Errorf("allowed site %s no longer exists; remove it", site)
		}
	}
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

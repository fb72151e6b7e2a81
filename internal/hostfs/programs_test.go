package hostfs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// allowedPrograms are the call sites that may look a program up in the
// process's PATH, or run one by a bare name, as "package/file.go:Function
// call": each says why no command can have put that program where it is
// found. Everywhere else a host program is found with LookPath in a PATH
// without the writable roots (a session's SafePath, UserPath outside one).
var allowedPrograms = map[string]string{
	"internal/sandbox/helper/helper_linux.go:run exec.LookPath":                    "the sandbox's helper, inside the sandbox, finding the program it was told to run in the sandbox's own PATH",
	"internal/sandbox/helper/testexec_linux.go:testExec exec.LookPath":             "the test exec wrapper, inside the sandbox",
	"internal/container/supervisor_linux.go:supervise exec.LookPath":               "the container's supervisor, inside the container",
	"internal/container/supervisor_linux.go:execUndumpable exec.LookPath":          "the container's supervisor starting a shell, inside the container",
	"internal/gitsafe/gitsafe.go:Git.command exec.CommandContext git":              "the command's Path is set just after, to git as LookPath found it in SafePath",
	"internal/bench/humanevalfix/imports.go:loadStdlib exec.CommandContext go":     "an import of the HumanEvalFix dataset the user runs, before any session or grading: no command has run",
	"internal/bench/humanevalfix/humanevalfix.go:toolchain exec.CommandContext go": "the same import",
	"internal/browsertest/browsertest.go:Chromium exec.LookPath":                   "the tests' browser, for tests only",
	"internal/container/containertest/attack.go:AttackProgram exec.LookPath":       "the tests' attack programs, for tests only",
	"internal/trusscli/clitest/bench.go:gitSHA exec.Command git":                   "a test script's command, for tests only",
	"internal/testenv/testenv.go:pinGo exec.Command go":                            "the tests' go command, for tests only",
}

// TestHostPrograms fails where a program Truss runs on the host is found
// in the process's whole PATH, which may hold a directory a command
// writes (an --add-dir root's bin put first, the workspace's activated
// .venv/bin): exec.LookPath, exec.Command or CommandContext with a bare
// name. (container.Find looks in UserPath; a session uses FindIn with its
// own.)
func TestHostPrograms(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	var bad []string
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			imports := map[string]string{}
			for _, im := range f.Imports {
				ip := strings.Trim(im.Path.Value, `"`)
				name := filepath.Base(ip)
				if im.Name != nil {
					name = im.Name.Name
				}
				imports[name] = ip
			}
			for _, decl := range f.Decls {
				funcName := "(init)"
				if fn, ok := decl.(*ast.FuncDecl); ok {
					funcName = fn.Name.Name
					if fn.Recv != nil && len(fn.Recv.List) > 0 {
						funcName = recvName(fn.Recv.List[0].Type) + "." + funcName
					}
				}
				ast.Inspect(decl, func(x ast.Node) bool {
					call, ok := x.(*ast.CallExpr)
					if !ok {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					id, ok := sel.X.(*ast.Ident)
					if !ok {
						return true
					}
					var what string
					switch ip := imports[id.Name]; {
					case ip == "os/exec" && sel.Sel.Name == "LookPath":
						what = "exec.LookPath"
					case ip == "os/exec" && (sel.Sel.Name == "Command" || sel.Sel.Name == "CommandContext"):
						arg := 0
						if sel.Sel.Name == "CommandContext" {
							arg = 1
						}
						if len(call.Args) <= arg {
							return true
						}
						lit, ok := call.Args[arg].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							return true
						}
						name, _ := strconv.Unquote(lit.Value)
						if strings.Contains(name, "/") {
							return true
						}
						what = "exec." + sel.Sel.Name + " " + name
					default:
						return true
					}
					site := rel + ":" + funcName + " " + what
					if _, ok := allowedPrograms[site]; ok {
						used[site] = true
						return true
					}
					bad = append(bad, site+" ("+fset.Position(call.Pos()).String()+")")
					return true
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: a host program found in the process's whole PATH; use hostfs.LookPath with the session's PATH (SafePath) or UserPath, or add the site to allowedPrograms with the reason no command can have put the program there", b)
	}
	for site := range allowedPrograms {
		if !used[site] {
			t.Errorf("allowed site %s no longer exists; remove it", site)
		}
	}
}

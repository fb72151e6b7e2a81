package harness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tableFile is the one file that may list the providers.
const tableFile = "internal/harness/providers.go"

// listsOfProviders returns, for the Go file src, the composite literals
// that list providers besides the table: two or more provider names (or
// aliases) making at least half of the literal's strings, or two or more
// of the providers' variables (names, or the stems of their globs:
// "OPENAI_").
func listsOfProviders(fset *token.FileSet, src []byte, name string) ([]string, error) {
	names := map[string]bool{}
	vars := map[string]bool{}
	for _, p := range providers {
		names[p.Name] = true
		for _, a := range p.Aliases {
			names[a] = true
		}
		for _, v := range append([]string{p.KeyEnv, p.BaseURLEnv, p.Detect}, p.Env...) {
			if v != "" {
				vars[v] = true
				vars[strings.TrimSuffix(v, "*")] = true
			}
		}
	}
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		cl, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		var strs []string
		for _, e := range cl.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				e = kv.Key
			}
			if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					strs = append(strs, s)
				}
			}
		}
		var ns, vs []string
		for _, s := range strs {
			if names[s] && !slices.Contains(ns, s) {
				ns = append(ns, s)
			}
			if vars[s] && !slices.Contains(vs, s) {
				vs = append(vs, s)
			}
		}
		switch {
		case len(ns) >= 2 && 2*len(ns) >= len(strs):
			found = append(found, fset.Position(cl.Pos()).String()+": providers "+strings.Join(ns, ", "))
		case len(vs) >= 2:
			found = append(found, fset.Position(cl.Pos()).String()+": provider variables "+strings.Join(vs, ", "))
		}
		return true
	})
	return found, nil
}

// TestOneProviderTable fails when a list of providers or of their
// variables exists outside the provider table: the bench's providers, the
// shell's withheld variables, the help and the profiles all read the
// table (Providers, WithheldEnv, CredentialFiles, ProviderHelp).
func TestOneProviderTable(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if base := d.Name(); rel != "." && (strings.HasPrefix(base, ".") || base == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || filepath.ToSlash(rel) == tableFile {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lists, err := listsOfProviders(fset, src, filepath.ToSlash(rel))
		for _, l := range lists {
			t.Errorf("another list of providers (read harness.Providers instead): %s", l)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestListsOfProvidersFound: the finder sees the lists that existed
// before the table was the only one, and passes lists of surfaces.
func TestListsOfProvidersFound(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{`var benchProviders = []string{"sim", "ollama", "chat", "openai", "anthropic"}`, 1},
		{`var m = map[string]int{"openai": 1, "anthropic": 2}`, 1},
		{`var prefixes = [...]string{"ANTHROPIC_", "OPENAI_", "OLLAMA_", "TRUSS_"}`, 1},
		{`var keys = []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}`, 1},
		{`var surfaces = []string{"auto", "generic", "anthropic", "openai", "codex"}`, 0},
		{`var one = []string{"anthropic", "x"}`, 0},
		{`var others = []string{"GOPATH", "OPENAI_API_KEY"}`, 0},
	} {
		got, err := listsOfProviders(token.NewFileSet(), []byte("package p\n"+tc.src+"\n"), "x.go")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.want {
			t.Errorf("%s: found %q, want %d", tc.src, got, tc.want)
		}
	}
}

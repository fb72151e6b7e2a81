package humanevalfix

import (
	"context"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// hostStd is the standard library of the host's Go.
var hostStd = sync.OnceValues(func() (*stdlib, error) { return loadStdlib(context.Background(), "") })

func testStd(t testing.TB) *stdlib {
	t.Helper()
	std, err := hostStd()
	if err != nil {
		t.Fatal(err)
	}
	return std
}

// fixImportsCases are inputs and the output of goimports for them.
var fixImportsCases = []struct{ name, in, want string }{
	{"unused import removed, parens kept",
		"package p\n\nimport (\n    \"fmt\"\n    \"os\"\n)\n\nfunc f() { fmt.Println() }\n",
		"package p\n\nimport (\n\t\"fmt\"\n)\n\nfunc f() { fmt.Println() }\n"},
	{"the only import unused",
		"package p\n\nimport \"os\"\n\n// F is f.\nfunc F() {}\n",
		"package p\n\n// F is f.\nfunc F() {}\n"},
	{"missing import added to no imports",
		"package p\n\nfunc f() { fmt.Println(strings.TrimSpace(\" \")) }\n",
		"package p\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\nfunc f() { fmt.Println(strings.TrimSpace(\" \")) }\n"},
	{"one missing import, after a comment on the package line",
		"package p // the p\n\nfunc f() { fmt.Println() }\n",
		"package p // the p\n\nimport \"fmt\"\n\nfunc f() { fmt.Println() }\n"},
	{"missing import added to a single import",
		"package p\n\nimport \"os\"\n\nfunc f() { fmt.Println(os.Args) }\n",
		"package p\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc f() { fmt.Println(os.Args) }\n"},
	{"removed and added at once: a new declaration",
		"package p\n\nimport (\n    \"math\"\n)\n\nfunc f() int { return strconv.Itoa(1) }\n",
		"package p\n\nimport \"strconv\"\n\nfunc f() int { return strconv.Itoa(1) }\n"},
	{"third-party import kept and grouped",
		"package p\n\nimport (\n    \"testing\"\n    \"github.com/stretchr/testify/assert\"\n)\n\nfunc TestX(t *testing.T) { assert.True(t, math.Abs(-1) == 1) }\n",
		"package p\n\nimport (\n\t\"math\"\n\t\"testing\"\n\n\t\"github.com/stretchr/testify/assert\"\n)\n\nfunc TestX(t *testing.T) { assert.True(t, math.Abs(-1) == 1) }\n"},
	{"runs sorted apart",
		"package p\n\nimport (\n\t\"strings\"\n\t\"fmt\"\n\n\t\"os\"\n\t\"math\"\n)\n\nvar _ = fmt.Sprint(strings.ToLower(\"\"), os.Args, math.Pi)\n",
		"package p\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n\n\t\"math\"\n\t\"os\"\n)\n\nvar _ = fmt.Sprint(strings.ToLower(\"\"), os.Args, math.Pi)\n"},
	{"blank and dot imports kept",
		"package p\n\nimport (\n\t_ \"embed\"\n\t. \"strings\"\n\t\"os\"\n)\n\nvar s string\n",
		"package p\n\nimport (\n\t_ \"embed\"\n\t. \"strings\"\n)\n\nvar s string\n"},
	{"named import: used kept, unused removed",
		"package p\n\nimport (\n\tstr \"strings\"\n\tf \"fmt\"\n)\n\nvar _ = str.ToUpper(\"\")\n",
		"package p\n\nimport (\n\tstr \"strings\"\n)\n\nvar _ = str.ToUpper(\"\")\n"},
	{"a local variable shadowing a package name is no import",
		"package p\n\ntype T struct{ Join, Max int }\n\nvar math = T{}\n\nfunc f(sort T) int {\n\tstrings := T{}\n\treturn strings.Join + sort.Max + math.Max\n}\n",
		"package p\n\ntype T struct{ Join, Max int }\n\nvar math = T{}\n\nfunc f(sort T) int {\n\tstrings := T{}\n\treturn strings.Join + sort.Max + math.Max\n}\n"},
	{"a name outside the standard library is left alone",
		"package p\n\nfunc f() { foo.Bar() }\n",
		"package p\n\nfunc f() { foo.Bar() }\n"},
	{"an unexported selector does not use a package",
		"package p\n\nimport \"fmt\"\n\nvar _ = fmt.x\n",
		"package p\n\nvar _ = fmt.x\n"},
	{"import declarations merged",
		"package p\n\nimport \"strings\"\nimport \"fmt\"\n\nvar _ = fmt.Sprint(strings.ToLower(\"\"))\n",
		"package p\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\nvar _ = fmt.Sprint(strings.ToLower(\"\"))\n"},
	{"duplicates dropped, comments kept",
		"package p\n\nimport (\n\t\"strings\" // lower\n\t\"fmt\"\n\t\"fmt\"\n)\n\nvar _ = fmt.Sprint(strings.ToLower(\"\"))\n",
		"package p\n\nimport (\n\t\"fmt\"\n\t\"strings\" // lower\n)\n\nvar _ = fmt.Sprint(strings.ToLower(\"\"))\n"},
	{"rand.Read is crypto/rand's",
		"package p\n\nfunc f(b []byte) { rand.Read(b) }\n",
		"package p\n\nimport \"crypto/rand\"\n\nfunc f(b []byte) { rand.Read(b) }\n"},
	{"rand.IntN is math/rand/v2's",
		"package p\n\nfunc f() int { return rand.IntN(3) }\n",
		"package p\n\nimport \"math/rand/v2\"\n\nfunc f() int { return rand.IntN(3) }\n"},
	{"no package has all the names",
		"package p\n\nfunc f() int { return rand.IntN(3) + rand.Intn(3) + fmt.Nothing }\n",
		"package p\n\nfunc f() int { return rand.IntN(3) + rand.Intn(3) + fmt.Nothing }\n"},
	{"rand.Intn is math/rand's",
		"package p\n\nfunc f() int { return rand.Intn(3) }\n",
		"package p\n\nimport \"math/rand\"\n\nfunc f() int { return rand.Intn(3) }\n"},
	{"rand imported stays",
		"package p\n\nimport \"math/rand/v2\"\n\nfunc f() int { return rand.IntN(3) }\n",
		"package p\n\nimport \"math/rand/v2\"\n\nfunc f() int { return rand.IntN(3) }\n"},
}

func TestFixImports(t *testing.T) {
	for _, tc := range fixImportsCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fixImports("p.go", []byte(tc.in), testStd(t))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			again, err := fixImports("p.go", got, testStd(t))
			if err != nil || string(again) != string(got) {
				t.Errorf("not idempotent: %v\n%s", err, again)
			}
		})
	}
}

func TestFixImportsErrors(t *testing.T) {
	for _, in := range []string{
		"package p\n\nfunc f() {\n",
		"func f() {}\n",
		"package p\n\nimport \"fmt\n",
		"",
	} {
		if got, err := fixImports("p.go", []byte(in), testStd(t)); err == nil {
			t.Errorf("%q: no error, got %q", in, got)
		}
	}
}

func TestParseStdlib(t *testing.T) {
	dir := t.TempDir()
	for f, c := range map[string]string{
		"a/rand/rand.go":      "package rand\n\nfunc Intn(int) int\nfunc helper() {}\n\nvar Reader, other int\n\ntype (\n\tRand struct{}\n\tsource int\n)\n",
		"a/rand/rand_test.go": "package rand\n\nfunc TestOnly() {}\n",
		"a/rand/gen.go":       "//go:build ignore\n\npackage main\n\nfunc Generated() {}\n",
		"a/rand/bad.go":       "package rand\n\nfunc Broken( {}\n",
		"b/rand/rand.go":      "package rand\n\nfunc Read([]byte) (int, error)\nfunc Intn(int) int\n",
		"c/rand/v2/rand.go":   "package rand\n\nfunc IntN(int) int\n\nconst Max = 1\n",
		"fmt/print.go":        "package fmt\n\nfunc Println(...any)\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list := strings.NewReplacer("DIR", dir).Replace(`fmt fmt DIR/fmt
rand math/rand DIR/a/rand
rand crypto/rand DIR/b/rand
rand math/rand/v2 DIR/c/rand/v2
template text/template DIR/none
template html/template DIR/none
bytealg internal/bytealg DIR/none
cpu vendor/golang.org/x/sys/cpu DIR/none
main cmd/go DIR/none
`)
	std, err := parseStdlib([]byte(list))
	if err != nil {
		t.Fatal(err)
	}
	if got := std.paths["rand"]; !slices.Equal(got, []string{"crypto/rand", "math/rand/v2", "math/rand"}) {
		t.Errorf("rand: %v", got)
	}
	if got := std.paths["template"]; !slices.Equal(got, []string{"html/template", "text/template"}) {
		t.Errorf("template: %v", got)
	}
	for _, name := range []string{"bytealg", "cpu", "main"} {
		if p, ok := std.paths[name]; ok {
			t.Errorf("%s: %v (internal, vendored and cmd/ packages are left out)", name, p)
		}
	}
	want := map[string]bool{"Intn": true, "Reader": true, "Rand": true}
	if got := std.exported("math/rand"); !maps.Equal(got, want) {
		t.Errorf("math/rand exports %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name, want string
		syms       []string
	}{
		{"rand", "crypto/rand", []string{"Read"}},
		{"rand", "crypto/rand", []string{"Intn"}},
		{"rand", "math/rand/v2", []string{"IntN", "Max"}},
		{"rand", "math/rand", []string{"Intn", "Rand"}},
		{"rand", "", []string{"Intn", "IntN"}},
		{"rand", "", []string{"helper"}},
		{"rand", "", []string{"TestOnly"}},
		{"rand", "", []string{"Generated"}},
		{"fmt", "fmt", []string{"Println"}},
		{"fmt", "", []string{"Printx"}},
		{"template", "", []string{"New"}},
		{"nosuch", "", []string{"X"}},
	} {
		syms := map[string]bool{}
		for _, s := range tc.syms {
			syms[s] = true
		}
		if got := std.lookup(tc.name, syms); got != tc.want {
			t.Errorf("%s.%v: %q, want %q", tc.name, tc.syms, got, tc.want)
		}
	}
	for _, in := range []string{"", "fmt fmt\n", "justone\n"} {
		if _, err := parseStdlib([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// TestLoadStdlib runs the host's go list std.
func TestLoadStdlib(t *testing.T) {
	std, err := loadStdlib(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, sym, want string }{
		{"fmt", "Println", "fmt"},
		{"rand", "Intn", "math/rand"},
		{"rand", "IntN", "math/rand/v2"},
		{"rand", "Read", "crypto/rand"},
		{"utf8", "RuneLen", "unicode/utf8"},
		{"fmt", "Nothing", ""},
		{"assert", "True", ""},
	} {
		if got := std.lookup(tc.name, map[string]bool{tc.sym: true}); got != tc.want {
			t.Errorf("%s.%s: %q, want %q", tc.name, tc.sym, got, tc.want)
		}
	}
	if got := std.pathName("math/rand/v2"); got != "rand" {
		t.Errorf("math/rand/v2 is named %q", got)
	}
}

// FuzzFixImports checks that fixImports never panics, and that a file
// that parses comes out parsing, its imports fixed for good.
func FuzzFixImports(f *testing.F) {
	for _, tc := range fixImportsCases {
		f.Add(tc.in)
	}
	f.Add("package p\n\nimport \"C\"\n\nfunc f() { fmt.Println() }\n")
	f.Add("package p\n\nimport ()\n\nfunc f() { fmt.Println() }\n")
	std := testStd(f)
	f.Fuzz(func(t *testing.T, in string) {
		out, err := fixImports("p.go", []byte(in), std)
		if _, perr := parser.ParseFile(token.NewFileSet(), "p.go", in, parser.ParseComments); perr != nil {
			return
		}
		if err != nil {
			t.Fatalf("the input parses, fixImports fails: %v", err)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "p.go", out, parser.ParseComments); err != nil {
			t.Fatalf("the output does not parse: %v\n%s", err, out)
		}
		again, err := fixImports("p.go", out, std)
		if err != nil || string(again) != string(out) {
			t.Fatalf("fixed twice: %v\n%s\nonce:\n%s", err, again, strings.TrimSpace(string(out)))
		}
	})
}

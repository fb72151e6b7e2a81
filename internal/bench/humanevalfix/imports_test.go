package humanevalfix

import (
	"context"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// testStd is a part of the standard library as go list std prints it.
var testStd = func() stdlib {
	std, err := parseStdlib([]byte(`fmt fmt
math math
rand crypto/rand
rand math/rand
rand math/rand/v2
os os
sort sort
strconv strconv
strings strings
testing testing
template html/template
template text/template
embed embed
bytealg internal/bytealg
cpu vendor/golang.org/x/sys/cpu
main cmd/go
`))
	if err != nil {
		panic(err)
	}
	return std
}()

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
	{"rand is math/rand",
		"package p\n\nfunc f() int { return rand.Intn(3) }\n",
		"package p\n\nimport \"math/rand\"\n\nfunc f() int { return rand.Intn(3) }\n"},
	{"rand imported stays",
		"package p\n\nimport \"math/rand/v2\"\n\nfunc f() int { return rand.IntN(3) }\n",
		"package p\n\nimport \"math/rand/v2\"\n\nfunc f() int { return rand.IntN(3) }\n"},
}

func TestFixImports(t *testing.T) {
	for _, tc := range fixImportsCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fixImports("p.go", []byte(tc.in), testStd)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			again, err := fixImports("p.go", got, testStd)
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
		if got, err := fixImports("p.go", []byte(in), testStd); err == nil {
			t.Errorf("%q: no error, got %q", in, got)
		}
	}
}

func TestParseStdlib(t *testing.T) {
	if got := testStd["rand"]; !slices.Equal(got, []string{"math/rand", "crypto/rand", "math/rand/v2"}) {
		t.Errorf("rand: %v", got)
	}
	for _, name := range []string{"bytealg", "cpu", "main"} {
		if p, ok := testStd[name]; ok {
			t.Errorf("%s: %v (internal, vendored and cmd/ packages are left out)", name, p)
		}
	}
	if got := testStd.lookup("template"); got != "html/template" {
		t.Errorf("template: %s", got)
	}
	for _, in := range []string{"", "fmt\n", "justone\n"} {
		if _, err := parseStdlib([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// TestLoadStdlib runs the host's go list std.
func TestLoadStdlib(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list std")
	}
	std, err := loadStdlib(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"fmt": "fmt", "rand": "math/rand", "assert": "", "utf8": "unicode/utf8", "md5": "crypto/md5"} {
		if got := std.lookup(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
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
	f.Fuzz(func(t *testing.T, in string) {
		out, err := fixImports("p.go", []byte(in), testStd)
		if _, perr := parser.ParseFile(token.NewFileSet(), "p.go", in, parser.ParseComments); perr != nil {
			return
		}
		if err != nil {
			t.Fatalf("the input parses, fixImports fails: %v", err)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "p.go", out, parser.ParseComments); err != nil {
			t.Fatalf("the output does not parse: %v\n%s", err, out)
		}
		again, err := fixImports("p.go", out, testStd)
		if err != nil || string(again) != string(out) {
			t.Fatalf("fixed twice: %v\n%s\nonce:\n%s", err, again, strings.TrimSpace(string(out)))
		}
	})
}

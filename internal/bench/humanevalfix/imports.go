package humanevalfix

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// stdlib is the standard library of a Go toolchain: its packages by name,
// and their exported names, read from their source when first needed. It
// is safe for concurrent use.
type stdlib struct {
	paths map[string][]string // package name → import paths, preferred first
	dirs  map[string]string   // import path → source directory

	mu      sync.Mutex
	exports map[string]map[string]bool // import path → exported names
}

// loadStdlib lists the standard library of the go command found in PATH
// (`go list std`, run in dir), leaving out internal, vendored and cmd/
// packages.
func loadStdlib(ctx context.Context, dir string) (*stdlib, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-f", "{{.Name}} {{.ImportPath}} {{.Dir}}", "std")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list std: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	std, err := parseStdlib(out)
	if err != nil {
		return nil, fmt.Errorf("go list std: %w", err)
	}
	return std, nil
}

// parseStdlib reads the lines "NAME IMPORTPATH DIR" of go list. Of the
// paths that share a name, the shorter comes first, then the lexically
// smaller; rand is crypto/rand, then math/rand/v2, then math/rand, the
// order in which goimports tries them.
func parseStdlib(out []byte) (*stdlib, error) {
	std := &stdlib{paths: map[string][]string{}, dirs: map[string]string{}, exports: map[string]map[string]bool{}}
	for l := range strings.Lines(string(out)) {
		f := strings.SplitN(strings.TrimRight(l, "\r\n"), " ", 3)
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return nil, fmt.Errorf("unexpected line %q (want NAME IMPORTPATH DIR)", strings.TrimSpace(l))
		}
		name, p := f[0], f[1]
		if p == "internal" || strings.HasPrefix(p, "internal/") || strings.Contains(p, "/internal/") ||
			strings.HasSuffix(p, "/internal") || strings.HasPrefix(p, "vendor/") || strings.HasPrefix(p, "cmd/") || name == "main" {
			continue
		}
		std.paths[name] = append(std.paths[name], p)
		std.dirs[p] = f[2]
	}
	if len(std.paths) == 0 {
		return nil, fmt.Errorf("no packages")
	}
	rank := map[string]int{"crypto/rand": -3, "math/rand/v2": -2, "math/rand": -1}
	for _, ps := range std.paths {
		slices.SortFunc(ps, func(a, b string) int {
			if rank[a] != rank[b] {
				return rank[a] - rank[b]
			}
			if len(a) != len(b) {
				return len(a) - len(b)
			}
			return strings.Compare(a, b)
		})
	}
	return std, nil
}

// lookup returns the import path of the first package named name (in the
// order of parseStdlib) that exports all of syms, or "".
func (s *stdlib) lookup(name string, syms map[string]bool) string {
next:
	for _, p := range s.paths[name] {
		ex := s.exported(p)
		for sym := range syms {
			if !ex[sym] {
				continue next
			}
		}
		return p
	}
	return ""
}

// exported returns the names the package at import path p declares at its
// top level and exports, read from the Go files of its directory (tests
// left out; files of every platform in).
func (s *stdlib) exported(p string) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ex, ok := s.exports[p]; ok {
		return ex
	}
	ex := map[string]bool{}
	s.exports[p] = ex
	name := path.Base(p)
	if n := s.pathName(p); n != "" {
		name = n
	}
	entries, _ := os.ReadDir(s.dirs[p])
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(s.dirs[p], e.Name()), nil, parser.SkipObjectResolution)
		if err != nil || f.Name.Name != name {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					ex[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						if sp.Name.IsExported() {
							ex[sp.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							if n.IsExported() {
								ex[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return ex
}

// pathName returns the name of the standard library package at path p, or
// "".
func (s *stdlib) pathName(p string) string {
	name := path.Base(p)
	if strings.HasPrefix(name, "v") {
		if _, err := strconv.Atoi(name[1:]); err == nil {
			name = path.Base(path.Dir(p))
		}
	}
	if slices.Contains(s.paths[name], p) {
		return name
	}
	return ""
}

// assumedName is the name a package at import path p is assumed to have
// when it is not in the standard library: its last element without a
// major version suffix, a "go-" prefix and anything from the first
// character that cannot be in an identifier (as goimports assumes).
func assumedName(p string) string {
	base := path.Base(p)
	if strings.HasPrefix(base, "v") {
		if _, err := strconv.Atoi(base[1:]); err == nil {
			if dir := path.Dir(p); dir != "." {
				base = path.Base(dir)
			}
		}
	}
	base = strings.TrimPrefix(base, "go-")
	if i := strings.IndexFunc(base, func(r rune) bool {
		return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}); i >= 0 {
		base = base[:i]
	}
	return base
}

// importGroup is 1 for an import path whose first element holds a dot (a
// module outside the standard library), else 0.
func importGroup(p string) int {
	first, _, _ := strings.Cut(p, "/")
	if strings.Contains(first, ".") {
		return 1
	}
	return 0
}

// spec is one import of a file: its source text and comments.
type spec struct {
	name, path string // name is "" when the import names none
	text       string // `name "path"` or `"path"` as in the source
	doc        string // the comment lines before it, or ""
	comment    string // the comment on its line, or ""
	line       int    // the line it begins on (0 for an added import)
	endLine    int    // the line it ends on
}

// importDecl is an import declaration: its specs in runs of successive
// lines (sorted separately, as gofmt does).
type importDecl struct {
	gen    *ast.GenDecl // nil for a declaration added
	parens bool
	runs   [][]*spec
	extra  []string // comments in it that belong to no spec
}

func (d *importDecl) count() int {
	n := 0
	for _, r := range d.runs {
		n += len(r)
	}
	return n
}

// fixImports normalises the imports of a Go source file as goimports
// does for files whose packages are all in the standard library or
// imported already: it removes the imports whose name the file does not
// use (keeping "_", "." and "C" imports), adds a standard library import
// for each package name used but not imported and not declared in the file
// (the first package of that name that exports all the names the file uses
// of it, in the order of parseStdlib), merges the import
// declarations into the first one, sorts each run of import lines with
// the standard library first and a blank line before the others, and
// formats the file as gofmt does. The name of an import outside the
// standard library is assumed from its path (see assumedName); it is not
// looked up. A file that does not parse is an error.
func fixImports(filename string, src []byte, std *stdlib) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	tf := fset.File(f.FileStart)
	off := func(p token.Pos) int { return tf.Offset(p) }
	text := func(from, to token.Pos) string { return string(src[off(from):off(to)]) }

	// The package names used: X of X.Sel, X not declared in the file and
	// Sel exported.
	used := map[string]map[string]bool{} // package name → exported names used
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil && ast.IsExported(sel.Sel.Name) {
				if used[x.Name] == nil {
					used[x.Name] = map[string]bool{}
				}
				used[x.Name][sel.Sel.Name] = true
			}
		}
		return true
	})
	localName := func(s *spec) string {
		if s.name != "" {
			return s.name
		}
		if n := std.pathName(s.path); n != "" {
			return n
		}
		return assumedName(s.path)
	}

	// The import declarations, "C" ones aside (they stay as they are).
	var decls []*importDecl
	var lastC *ast.GenDecl // the last import "C"
	for _, d := range f.Decls {
		gen, ok := d.(*ast.GenDecl)
		if !ok || gen.Tok != token.IMPORT {
			break
		}
		if slices.ContainsFunc(gen.Specs, func(s ast.Spec) bool { return s.(*ast.ImportSpec).Path.Value == `"C"` }) {
			lastC = gen
			continue
		}
		d := &importDecl{gen: gen, parens: gen.Lparen.IsValid()}
		owned := map[*ast.CommentGroup]bool{}
		var prev *spec
		for _, s := range gen.Specs {
			is := s.(*ast.ImportSpec)
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: import path %s: %w", fset.Position(is.Path.Pos()), is.Path.Value, err)
			}
			sp := &spec{path: p, text: text(is.Pos(), is.End()), line: tf.Line(is.Pos()), endLine: tf.Line(is.End())}
			if is.Name != nil {
				sp.name = is.Name.Name
			}
			if is.Doc != nil {
				sp.doc = text(is.Doc.Pos(), is.Doc.End())
				owned[is.Doc] = true
			}
			if is.Comment != nil {
				sp.comment = text(is.Comment.Pos(), is.Comment.End())
				owned[is.Comment] = true
			}
			if prev == nil || sp.line > prev.endLine+1 {
				d.runs = append(d.runs, nil)
			}
			d.runs[len(d.runs)-1] = append(d.runs[len(d.runs)-1], sp)
			prev = sp
		}
		for _, c := range f.Comments {
			if c.Pos() > gen.Pos() && c.End() < gen.End() && !owned[c] {
				d.extra = append(d.extra, text(c.Pos(), c.End()))
			}
		}
		decls = append(decls, d)
	}

	// Remove the unused imports.
	imported := map[string]bool{}
	for _, d := range decls {
		for i, r := range d.runs {
			d.runs[i] = slices.DeleteFunc(r, func(s *spec) bool {
				n := localName(s)
				if n == "_" || n == "." || used[n] != nil {
					imported[n] = true
					return false
				}
				return true
			})
		}
		d.runs = slices.DeleteFunc(d.runs, func(r []*spec) bool { return len(r) == 0 })
	}
	// A declaration left empty goes (an empty one from the start may take
	// an import added).
	var edits []edit
	decls = slices.DeleteFunc(decls, func(d *importDecl) bool {
		if d.count() == 0 && len(d.gen.Specs) > 0 {
			edits = append(edits, edit{off(d.gen.Pos()), off(d.gen.End()), ""})
			return true
		}
		return false
	})

	// Add the missing ones, after the import sharing the most path
	// elements (the first one when none does).
	var added []string
	for n, syms := range used {
		if p := std.lookup(n, syms); p != "" && !imported[n] {
			added = append(added, p)
		}
	}
	slices.Sort(added)
	for _, p := range added {
		best, bestDecl, bestRun, bestIdx := -1, (*importDecl)(nil), 0, -1
		for _, d := range decls {
			if d.count() == 0 && best == -1 {
				bestDecl = d
			}
			for ri, r := range d.runs {
				for si, s := range r {
					if n := matchLen(s.path, p); n > best {
						best, bestDecl, bestRun, bestIdx = n, d, ri, si
					}
				}
			}
		}
		sp := &spec{path: p, text: strconv.Quote(p)}
		switch {
		case bestDecl == nil:
			bestDecl = &importDecl{runs: [][]*spec{{sp}}}
			decls = append(decls, bestDecl)
		case bestIdx < 0:
			bestDecl.runs = append(bestDecl.runs, []*spec{sp})
		default:
			bestDecl.runs[bestRun] = slices.Insert(bestDecl.runs[bestRun], bestIdx+1, sp)
		}
		bestDecl.parens = bestDecl.count() > 1
	}
	decls = slices.DeleteFunc(decls, func(d *importDecl) bool {
		if d.count() == 0 {
			edits = append(edits, edit{off(d.gen.Pos()), off(d.gen.End()), ""})
			return true
		}
		return false
	})

	// Merge the declarations into the first one (the others join its last
	// run), sort and deduplicate each run.
	var first *importDecl
	for _, d := range decls {
		if first == nil {
			first = d
			continue
		}
		for _, r := range d.runs {
			first.runs[len(first.runs)-1] = append(first.runs[len(first.runs)-1], r...)
		}
		first.extra = append(first.extra, d.extra...)
		first.parens = true
		if d.gen != nil {
			edits = append(edits, edit{off(d.gen.Pos()), off(d.gen.End()), ""})
		}
	}
	if first != nil {
		for i, r := range first.runs {
			first.runs[i] = sortRun(r)
		}
		var b strings.Builder
		for _, c := range first.extra {
			b.WriteString(c + "\n")
		}
		switch {
		case !first.parens:
			s := first.runs[0][0]
			if s.doc != "" {
				b.WriteString(s.doc + "\n")
			}
			b.WriteString("import " + s.text)
			if s.comment != "" {
				b.WriteString(" " + s.comment)
			}
		default:
			b.WriteString("import (\n")
			for i, r := range first.runs {
				if i > 0 {
					b.WriteString("\n")
				}
				for j, s := range r {
					if j > 0 && importGroup(s.path) != importGroup(r[j-1].path) {
						b.WriteString("\n")
					}
					if s.doc != "" {
						b.WriteString(s.doc + "\n")
					}
					b.WriteString(s.text)
					if s.comment != "" {
						b.WriteString(" " + s.comment)
					}
					b.WriteString("\n")
				}
			}
			b.WriteString(")")
		}
		switch {
		case first.gen != nil:
			edits = append(edits, edit{off(first.gen.Pos()), off(first.gen.End()), b.String()})
		case lastC != nil:
			at := off(lastC.End())
			edits = append(edits, edit{at, at, "\n\n" + b.String() + "\n"})
		default:
			// After the package clause and a comment on its line.
			at := off(f.Name.End())
			for _, c := range f.Comments {
				if tf.Line(c.Pos()) > tf.Line(f.Name.End()) {
					break
				}
				if c.Pos() > f.Name.End() {
					at = off(c.End())
				}
			}
			edits = append(edits, edit{at, at, "\n\n" + b.String() + "\n"})
		}
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.from - b.from })
	var out []byte
	last := 0
	for _, e := range edits {
		out = append(out, src[last:e.from]...)
		out = append(out, e.text...)
		last = e.to
	}
	out = append(out, src[last:]...)
	res, err := format.Source(out)
	if err != nil {
		return nil, fmt.Errorf("the file with its imports fixed does not parse: %w", err)
	}
	return res, nil
}

// edit replaces src[from:to] with text.
type edit struct {
	from, to int
	text     string
}

// matchLen is the number of path separators in the common prefix of x
// and y.
func matchLen(x, y string) int {
	n := 0
	for i := 0; i < len(x) && i < len(y) && x[i] == y[i]; i++ {
		if x[i] == '/' {
			n++
		}
	}
	return n
}

// sortRun sorts a run of imports by group, path, name and comment, and
// drops an import the next one repeats (if it has no comment).
func sortRun(r []*spec) []*spec {
	slices.SortStableFunc(r, func(a, b *spec) int {
		if ga, gb := importGroup(a.path), importGroup(b.path); ga != gb {
			return ga - gb
		}
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.comment, b.comment)
	})
	return slices.CompactFunc(r, func(a, b *spec) bool {
		return a.path == b.path && a.name == b.name && a.comment == "" && b.comment == "" && a.doc == "" && b.doc == ""
	})
}

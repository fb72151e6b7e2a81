package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// reflectMethodPackages may not be linked into truss. text/template (and
// html/template, built on it) calls reflect.Value.MethodByName with a
// name known only at run time; when a binary can do that, the linker must
// keep every exported method of every reachable type, because any of them
// might be called. With the provider SDKs' many types that made truss 144.7
// MB instead of 85.5 MB and raised the resident memory of truss --version
// from about 31 to 52 MB (docs/bench.md, "The HTML page").
var reflectMethodPackages = []string{"text/template", "html/template"}

// listedPackage is one package of `go list -deps -json`.
type listedPackage struct {
	ImportPath string
	Imports    []string
}

// importersOf returns, for each of banned in the listing, the packages of
// the listing that import it directly ("P imports B").
func importersOf(pkgs []listedPackage, banned []string) []string {
	var found []string
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if slices.Contains(banned, imp) && !slices.Contains(banned, p.ImportPath) {
				found = append(found, p.ImportPath+" imports "+imp)
			}
		}
	}
	return found
}

func readListing(r io.Reader) ([]listedPackage, error) {
	var pkgs []listedPackage
	dec := json.NewDecoder(r)
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

// TestTrussLinksNoTemplatePackage fails when the truss command depends on
// text/template or html/template, naming the packages that import them.
func TestTrussLinksNoTemplatePackage(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(goCmd, "list", "-deps", "-json=ImportPath,Imports", "github.com/trussdev/truss/cmd/truss")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs, err := readListing(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("reading go list's output: %v", err)
	}
	if len(pkgs) < 10 || pkgs[len(pkgs)-1].ImportPath != "github.com/trussdev/truss/cmd/truss" {
		t.Fatalf("go list listed %d packages, not ending with cmd/truss", len(pkgs))
	}
	var linked []string
	for _, p := range pkgs {
		if slices.Contains(reflectMethodPackages, p.ImportPath) {
			linked = append(linked, p.ImportPath)
		}
	}
	if len(linked) > 0 {
		t.Errorf("truss links %s (%s). text/template calls reflect.Value.MethodByName with a name known only at run time, "+
			"which makes the linker keep every exported method of every reachable type: the binary grows by about 60 MB "+
			"and truss --version's resident memory by about 20 MB. Write the output without the template packages "+
			"(as internal/bench/report's pageWriter does).",
			strings.Join(linked, ", "), strings.Join(importersOf(pkgs, reflectMethodPackages), "; "))
	}
}

// TestImportersOf: the check names the package that brings a template
// package in, not the template packages' own imports of each other.
func TestImportersOf(t *testing.T) {
	pkgs := []listedPackage{
		{ImportPath: "text/template", Imports: []string{"reflect"}},
		{ImportPath: "html/template", Imports: []string{"text/template"}},
		{ImportPath: "example.com/a", Imports: []string{"fmt", "html/template"}},
		{ImportPath: "example.com/b", Imports: []string{"text/template"}},
		{ImportPath: "example.com/c", Imports: []string{"example.com/a"}},
	}
	got := fmt.Sprint(importersOf(pkgs, reflectMethodPackages))
	if want := "[example.com/a imports html/template example.com/b imports text/template]"; got != want {
		t.Errorf("importersOf = %s, want %s", got, want)
	}
	if got := importersOf(pkgs[4:], reflectMethodPackages); got != nil {
		t.Errorf("importersOf without a template package = %v", got)
	}
}

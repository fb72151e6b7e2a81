package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the module's path; the rules name packages relative to it.
const module = "github.com/trussdev/truss/"

// pkg is one package of the module as go list describes it: its direct
// imports and all its dependencies, relative to the module.
type pkg struct {
	Imports, Deps []string
}

// Package kinds of the dependency rules (docs/architecture.md,
// "Dependency rules").
func isProvider(p string) bool { return strings.HasPrefix(p, "internal/provider/") }
func isSurface(p string) bool  { return strings.HasPrefix(p, "internal/surface/") }
func isExecutor(p string) bool {
	return strings.HasPrefix(p, "internal/tool/") || p == "internal/validate" || p == "internal/subagent" || p == "internal/mcp/client"
}

// aboveLoop are the executors that run agent loops or make bindings by
// nature: they may import the loop and the provider and surface
// interfaces, never a concrete provider or surface.
func aboveLoop(p string) bool { return p == "internal/subagent" || p == "internal/mcp/client" }

// rule is one dependency rule: it returns a violation of package p, or "".
type rule struct {
	name  string
	check func(p string, k pkg) string
}

// first returns the first of names that f accepts, or "".
func first(names []string, f func(string) bool) string {
	if i := slices.IndexFunc(names, f); i >= 0 {
		return names[i]
	}
	return ""
}

var rules = []rule{
	{"no executor depends on a provider or a surface", func(p string, k pkg) string {
		if !isExecutor(p) {
			return ""
		}
		if d := first(k.Deps, func(d string) bool { return isProvider(d) || isSurface(d) }); d != "" {
			return d
		}
		if aboveLoop(p) {
			return ""
		}
		return first(k.Deps, func(d string) bool {
			return d == "internal/provider" || d == "internal/surface" || d == "internal/agent"
		})
	}},
	{"no surface depends on an executor", func(p string, k pkg) string {
		if !isSurface(p) && p != "internal/surface" {
			return ""
		}
		return first(k.Deps, isExecutor)
	}},
	{"no provider depends on an executor, a surface or the loop", func(p string, k pkg) string {
		if !isProvider(p) && p != "internal/provider" {
			return ""
		}
		return first(k.Deps, func(d string) bool {
			return isExecutor(d) || isSurface(d) || d == "internal/surface" || d == "internal/agent"
		})
	}},
	{"the loop knows only interfaces", func(p string, k pkg) string {
		if p != "internal/agent" {
			return ""
		}
		// internal/plural is a leaf (no package of the module below it):
		// the counts of the loop's and the tools' texts.
		allowed := []string{"internal/model", "internal/provider", "internal/surface", "internal/tool", "internal/compact", "internal/hostfs", "internal/plural"}
		return first(k.Deps, func(d string) bool { return strings.HasPrefix(d, "internal/") && !slices.Contains(allowed, d) })
	}},
	{"compaction knows only the transcript and the provider interface", func(p string, k pkg) string {
		if p != "internal/compact" {
			return ""
		}
		allowed := []string{"internal/model", "internal/provider"}
		return first(k.Deps, func(d string) bool { return strings.HasPrefix(d, "internal/") && !slices.Contains(allowed, d) })
	}},
	{"the simulated model depends on neither the loop nor an executor", func(p string, k pkg) string {
		if p != "internal/sim" && !strings.HasPrefix(p, "internal/sim/") {
			return ""
		}
		return first(k.Deps, func(d string) bool { return d == "internal/agent" || isExecutor(d) })
	}},
	{"the truss command (cmd/truss, internal/trusscli) composes sessions only through the harness", func(p string, k pkg) string {
		if p != "cmd/truss" && p != "internal/trusscli" {
			return ""
		}
		return first(k.Imports, func(d string) bool {
			return isProvider(d) || isSurface(d) || isExecutor(d) || strings.HasPrefix(d, "internal/mcp/") || d == "internal/sim"
		})
	}},
}

// violations checks every package against the rules.
func violations(pkgs map[string]pkg) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		for _, r := range rules {
			if d := r.check(p, pkgs[p]); d != "" {
				out = append(out, fmt.Sprintf("%s imports %s: %s", p, d, r.name))
			}
		}
	}
	return out
}

// listModule reads the module's packages with go list.
func listModule(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Deps,Standard", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	rel := func(names []string) []string {
		var r []string
		for _, n := range names {
			if s, ok := strings.CutPrefix(n, module); ok {
				r = append(r, s)
			}
		}
		return r
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath    string
			Imports, Deps []string
			Standard      bool
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if s, ok := strings.CutPrefix(p.ImportPath, module); ok && !p.Standard {
			pkgs[s] = pkg{Imports: rel(p.Imports), Deps: rel(p.Deps)}
		}
	}
	return pkgs
}

// TestDependencyRules fails on an import that breaks the dependency rules
// of docs/architecture.md.
func TestDependencyRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	pkgs := listModule(t)
	for _, p := range []string{"internal/agent", "internal/harness", "cmd/truss", "internal/trusscli", "internal/sim", "internal/mcp/client"} {
		if _, ok := pkgs[p]; !ok {
			t.Fatalf("go list did not list %s", p)
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestDependencyRulesCatch checks that each rule catches what it forbids.
func TestDependencyRulesCatch(t *testing.T) {
	for _, tc := range []struct {
		pkg  string
		deps []string
	}{
		{"internal/tool/fs", []string{"internal/provider/openai"}},
		{"internal/tool/shell", []string{"internal/surface"}},
		{"internal/subagent", []string{"internal/surface/generic"}},
		{"internal/mcp/client", []string{"internal/provider/anthropic"}},
		{"internal/surface/anthropic", []string{"internal/tool/memory"}},
		{"internal/provider/chatcompat", []string{"internal/tool/shell"}},
		{"internal/provider", []string{"internal/agent"}},
		{"internal/agent", []string{"internal/ledger"}},
		{"internal/sim", []string{"internal/agent"}},
		{"cmd/truss", []string{"internal/tool/fs"}},
		{"cmd/truss", []string{"internal/mcp/server"}},
	} {
		got := violations(map[string]pkg{tc.pkg: {Imports: tc.deps, Deps: tc.deps}})
		if len(got) == 0 {
			t.Errorf("%s importing %v: no violation", tc.pkg, tc.deps)
		}
	}
	ok := map[string]pkg{
		"internal/subagent":   {Deps: []string{"internal/agent", "internal/provider", "internal/surface", "internal/tool"}},
		"internal/mcp/client": {Deps: []string{"internal/provider", "internal/surface", "internal/tool"}},
		"cmd/truss":           {Imports: []string{"internal/harness", "internal/ledger", "internal/tool"}},
	}
	if got := violations(ok); len(got) != 0 {
		t.Errorf("allowed imports flagged: %v", got)
	}
}

// binaryLeavesOut names the packages the truss binary must not link, with
// the reason: an import path, or a module's prefix ending in "/".
var binaryLeavesOut = []struct{ prefix, why string }{
	{"text/template", "it calls reflect.Value.MethodByName with a computed name, which makes the linker keep every exported method of every reachable type: the binary grew from 85 to 145 MB and the peak RSS of `truss --version` from 31 to 52 MB"},
	{"html/template", "it imports text/template (see there)"},
	{"github.com/getkin/kin-openapi/", "the OpenAPI validation of the simulated model's requests is for the tests (-tags apispec): its JSON Schema compiler costs every start about 4 ms and 1.7 MB"},
	{"github.com/santhosh-tekuri/jsonschema/", "kin-openapi's JSON Schema compiler (see there)"},
	{"github.com/trussdev/truss/internal/benchcli", "truss bench is the program truss-bench: the benchmark's packages (the NATS server, the grader, the report, the importers) added 8 MB to the peak RSS of every truss start"},
	{"github.com/trussdev/truss/internal/bench", "the benchmark is truss-bench's (see internal/benchcli)"},
	{"github.com/trussdev/truss/internal/bench/", "the benchmark is truss-bench's (see internal/benchcli)"},
	{"github.com/trussdev/truss/internal/queue", "the benchmark's work queue is truss-bench's (see internal/benchcli)"},
	{"github.com/nats-io/", "the benchmark's work queue is truss-bench's (see internal/benchcli)"},
	{"google.golang.org/genai", "Google's Gen AI SDK imports cloud.google.com/go/auth/httptransport, and through s2a-go gRPC, protobuf and OpenCensus (417 packages, about 6,100 allocations in package initialization at every start); internal/provider/gemini speaks the REST wire itself and the SDK is the tests' reference"},
	{"google.golang.org/grpc", "gRPC is what the Gen AI SDK would bring (see google.golang.org/genai)"},
	{"golang.org/x/tools/internal/", "goimports' machinery (go/types, the standard library's symbol table): 0.9 ms and 770 KB at every start; internal/bench/humanevalfix fixes imports itself"},
}

// TestBinaryLeavesOut fails when the default build of cmd/truss links a
// package that costs every start of truss what binaryLeavesOut says.
func TestBinaryLeavesOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	// -tags= overrides a GOFLAGS that sets tags: the shipped build is meant.
	cmd := exec.Command("go", "list", "-tags=", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./cmd/truss")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		path, _, _ := strings.Cut(l, " ")
		for _, f := range binaryLeavesOut {
			if path != f.prefix && !(strings.HasSuffix(f.prefix, "/") && strings.HasPrefix(path, f.prefix)) {
				continue
			}
			var by []string
			for _, o := range lines {
				p, imports, _ := strings.Cut(o, " ")
				if slices.Contains(strings.Fields(imports), path) {
					by = append(by, p)
				}
			}
			t.Errorf("cmd/truss links %s (imported by %s): %s", path, strings.Join(by, ", "), f.why)
		}
	}
}

// Package humanevalfix turns HumanEvalFix-Go (the Go part of
// HumanEvalPack) into benchmark instances in SWE-bench's format, each with
// a local git repository.
//
// For each problem, the repository is a module mymain whose mymain.go
// holds the package clause, the problem's prompt (its imports, the helper
// functions the solution calls, the doc comment and the declaration) and
// its buggy solution, committed once (base_commit); go.mod and go.sum require
// github.com/stretchr/testify, which the hidden tests use. The hidden test
// file mymain_test.go (test_setup plus test, its imports normalised as
// goimports does, with the standard library of the host's Go) is only in test_patch; the gold fix (the canonical
// solution) only in patch. FAIL_TO_PASS is the test function; the
// problem statement is the docstring with the bug's symptom.
package humanevalfix

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/gitsafe"
)

// Problem is one line of humanevalpack.jsonl (the fields used).
type Problem struct {
	TaskID            string `json:"task_id"`
	Prompt            string `json:"prompt"`
	Import            string `json:"import"`
	Declaration       string `json:"declaration"`
	Docstring         string `json:"docstring"`
	BuggySolution     string `json:"buggy_solution"`
	CanonicalSolution string `json:"canonical_solution"`
	BugType           string `json:"bug_type"`
	FailureSymptoms   string `json:"failure_symptoms"`
	TestSetup         string `json:"test_setup"`
	Test              string `json:"test"`
	EntryPoint        string `json:"entry_point"`
	Signature         string `json:"signature"`
}

// Unusable are the problems without a usable gold fix: their canonical
// solution does not pass their own test, or the test names another
// function than the entry point.
var Unusable = []string{"Go/38", "Go/41", "Go/50", "Go/83", "Go/84", "Go/160", "Go/66", "Go/114", "Go/129", "Go/146"}

// Options configure an import.
type Options struct {
	// Out is the directory written: tasks.jsonl and repos/ID/.
	Out string
	// IncludeUnusable imports the Unusable problems too.
	IncludeUnusable bool
	// Only, when set, limits the import to these task ids.
	Only []string
}

// Summary says what an import wrote.
type Summary struct {
	Tasks    int
	Skipped  []string
	TaskFile string
}

var testFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)

// Import reads humanevalpack.jsonl from r and writes the instances under
// opts.Out (which must not hold a tasks.jsonl yet). go.mod and go.sum come
// from one `go mod tidy` of a module that imports testify, run with the
// host's Go and module proxy.
func Import(ctx context.Context, r io.Reader, name string, opts Options) (*Summary, error) {
	probs, err := parse(r, name)
	if err != nil {
		return nil, err
	}
	taskFile := filepath.Join(opts.Out, "tasks.jsonl")
	if _, err := os.Stat(taskFile); err == nil {
		return nil, fmt.Errorf("%s exists: import into an empty directory", taskFile)
	}
	if err := os.MkdirAll(filepath.Join(opts.Out, "repos"), 0o755); err != nil {
		return nil, err
	}
	gomod, gosum, std, err := toolchain(ctx)
	if err != nil {
		return nil, err
	}
	sum := &Summary{TaskFile: taskFile}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, p := range probs {
		if len(opts.Only) > 0 && !slices.Contains(opts.Only, p.TaskID) {
			continue
		}
		if !opts.IncludeUnusable && slices.Contains(Unusable, p.TaskID) {
			sum.Skipped = append(sum.Skipped, p.TaskID)
			continue
		}
		t, err := build(ctx, p, opts.Out, gomod, gosum, std)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.TaskID, err)
		}
		if err := enc.Encode(t); err != nil {
			return nil, err
		}
		sum.Tasks++
	}
	if err := bench.WriteFileAtomic(taskFile, buf.Bytes()); err != nil {
		return nil, err
	}
	return sum, nil
}

// parse reads the problems, checking the fields an instance needs.
func parse(r io.Reader, name string) ([]Problem, error) {
	var out []Problem
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var p Problem
		if err := json.Unmarshal(line, &p); err != nil {
			return nil, &bench.LineError{File: name, Line: n, Err: err}
		}
		for f, v := range map[string]string{"task_id": p.TaskID, "declaration": p.Declaration, "buggy_solution": p.BuggySolution,
			"canonical_solution": p.CanonicalSolution, "test_setup": p.TestSetup, "test": p.Test, "entry_point": p.EntryPoint} {
			if strings.TrimSpace(v) == "" {
				return nil, &bench.LineError{File: name, Line: n, Err: fmt.Errorf("%s is missing or empty", f)}
			}
		}
		if !testFunc.MatchString(p.Test) {
			return nil, &bench.LineError{File: name, Line: n, Err: errors.New("test holds no func TestX(t *testing.T)")}
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// InstanceID is a task id as an instance id: "Go/12" → "Go__12".
func InstanceID(taskID string) string { return strings.ReplaceAll(taskID, "/", "__") }

// build writes one problem's repository and returns its instance.
func build(ctx context.Context, p Problem, out string, gomod, gosum []byte, std *stdlib) (*bench.Task, error) {
	id := InstanceID(p.TaskID)
	rel := filepath.Join("repos", id)
	dir := filepath.Join(out, rel)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The prompt holds the imports, the helper functions the solution
	// calls, the doc comment and the declaration; without one, the
	// imports and the declaration.
	head := p.Prompt
	if !strings.HasSuffix(strings.TrimRight(head, "\n"), strings.TrimSpace(p.Declaration)) {
		head = p.Import + p.Declaration
		if imp := strings.TrimSpace(p.Import); imp != "" {
			head = imp + "\n" + p.Declaration
		}
	}
	// Both versions of the file get their imports normalised as goimports
	// does (fixImports): a prompt may import what the solution no longer
	// uses, and a canonical solution use what the prompt does not import.
	source := func(body string) (string, error) {
		b, err := fixImports("mymain.go", []byte("package main\n\n"+head+body), std)
		if err != nil {
			// A buggy body may not parse; it is committed as it is.
			return "package main\n\n" + head + body, nil
		}
		return string(b), nil
	}
	buggy, _ := source(p.BuggySolution)
	fixed, _ := source(p.CanonicalSolution)
	testSrc, err := fixImports("mymain_test.go", []byte(p.TestSetup+"\n"+p.Test), std)
	if err != nil {
		return nil, fmt.Errorf("the test file: %w", err)
	}
	files := map[string]string{"mymain.go": buggy, "go.mod": string(gomod), "go.sum": string(gosum)}
	for f, c := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
			return nil, err
		}
	}
	g := gitsafe.Git{Dir: dir}
	steps := [][]string{
		{"init", "-q", "--initial-branch=main"},
		{"add", "mymain.go", "go.mod", "go.sum"},
		{"-c", "user.name=HumanEvalFix", "-c", "user.email=humanevalfix@invalid", "commit", "-q", "--no-verify",
			"--date=2023-08-14T00:00:00Z", "-m", p.TaskID + ": " + p.EntryPoint + " (buggy)"},
	}
	for _, s := range steps {
		if _, err := g.Output(ctx, s...); err != nil {
			return nil, err
		}
	}
	base, err := bench.Head(ctx, dir)
	if err != nil {
		return nil, err
	}
	// The gold patch: the working tree's diff with the canonical solution
	// in place, then the buggy file back (no object is written).
	if err := os.WriteFile(filepath.Join(dir, "mymain.go"), []byte(fixed), 0o644); err != nil {
		return nil, err
	}
	gold, err := g.Output(ctx, "diff", "--no-color", "--", "mymain.go")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "mymain.go"), []byte(buggy), 0o644); err != nil {
		return nil, err
	}
	name := testFunc.FindStringSubmatch(p.Test)[1]
	statement := fmt.Sprintf("The function `%s` in mymain.go has a bug (%s). Fix it without changing its signature. It should do this:\n\n%s\n",
		p.EntryPoint, orDefault(p.FailureSymptoms, "it gives wrong results"), strings.TrimSpace(p.Docstring))
	return &bench.Task{
		InstanceID: id, Repo: "./" + filepath.ToSlash(rel), BaseCommit: base, ProblemStatement: statement,
		Patch: gold, TestPatch: newFilePatch("mymain_test.go", string(testSrc)),
		FailToPass: bench.TestList{name}, PassToPass: bench.TestList{}, Version: "humanevalpack-e17a8f64",
	}, nil
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// newFilePatch is a git patch that adds a file with content.
func newFilePatch(path, content string) string {
	lines := strings.SplitAfter(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
	return b.String()
}

// toolchain runs `go mod tidy` once on a module mymain whose test imports
// testify's assert, and returns its go.mod and go.sum, and the standard
// library of the Go that ran it (for fixImports).
func toolchain(ctx context.Context) (gomod, gosum []byte, std *stdlib, err error) {
	dir, err := os.MkdirTemp("", "truss-humanevalfix-")
	if err != nil {
		return nil, nil, nil, err
	}
	defer os.RemoveAll(dir)
	files := map[string]string{
		"go.mod":         "module mymain\n",
		"mymain.go":      "package main\n",
		"mymain_test.go": "package main\n\nimport (\n\t\"testing\"\n\n\t\"github.com/stretchr/testify/assert\"\n)\n\nfunc TestX(t *testing.T) { assert.True(t, true) }\n",
	}
	for f, c := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
			return nil, nil, nil, err
		}
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "tidy")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, nil, fmt.Errorf("go mod tidy for testify: %v: %s", err, out)
	}
	if gomod, err = os.ReadFile(filepath.Join(dir, "go.mod")); err != nil {
		return nil, nil, nil, err
	}
	if gosum, err = os.ReadFile(filepath.Join(dir, "go.sum")); err != nil {
		return nil, nil, nil, err
	}
	if std, err = loadStdlib(ctx, dir); err != nil {
		return nil, nil, nil, err
	}
	return gomod, gosum, std, nil
}

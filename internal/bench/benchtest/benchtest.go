// Package benchtest builds small benchmark task sets for tests: Go
// repositories whose later history holds the hidden tests (as a real
// project's does), with gold and wrong patches.
package benchtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/gitsafe"
)

// Set is a generated task set.
type Set struct {
	TaskFile string
	Tasks    []bench.Task
	// Wrong are patches that apply but do not fix each task; NotApplying
	// patches that do not apply; FutureCommit the commit after the base
	// that holds the hidden tests, by instance.
	Wrong        map[string]string
	NotApplying  map[string]string
	FutureCommit map[string]string
}

// Problem is one generated task: a function with a bug.
type Problem struct {
	ID string
	// Func is the function's name; Buggy and Fixed its expression.
	Func, Buggy, Fixed, Wrong string
	// Cases are the hidden test's "input, want" pairs (Go expressions of
	// two ints and an int).
	Cases [][3]int
	// Fill adds files to the repository (path → content), for size.
	Fill map[string]string
}

// Problems are the default problems.
func Problems() []Problem {
	return []Problem{
		{ID: "calc-add", Func: "Add", Buggy: "a - b", Fixed: "a + b", Wrong: "a * b", Cases: [][3]int{{1, 2, 3}, {2, 2, 4}, {0, 5, 5}}},
		{ID: "calc-max", Func: "Max", Buggy: "min(a, b)", Fixed: "max(a, b)", Wrong: "a", Cases: [][3]int{{1, 2, 2}, {5, 3, 5}, {-1, -2, -1}}},
	}
}

func run(ctx context.Context, dir string, args ...string) (string, error) {
	if args[0] == "commit" {
		// An identity, for the commits of the generated history only
		// (gitsafe adds --no-ext-diff only when the command comes first).
		args = append([]string{"-c", "user.name=Bench", "-c", "user.email=bench@invalid"}, args...)
	}
	return gitsafe.Git{Dir: dir}.Output(ctx, args...)
}

// Make writes each problem's repository under dir/repos and the tasks to
// dir/tasks.jsonl (repositories relative to it).
func Make(ctx context.Context, dir string, problems []Problem) (*Set, error) {
	set := &Set{TaskFile: filepath.Join(dir, "tasks.jsonl"), Wrong: map[string]string{}, NotApplying: map[string]string{}, FutureCommit: map[string]string{}}
	var lines []string
	for _, p := range problems {
		repo := filepath.Join(dir, "repos", p.ID)
		if err := os.MkdirAll(repo, 0o755); err != nil {
			return nil, err
		}
		src := func(expr string) string {
			return fmt.Sprintf("package calc\n\n// %s is the function under test.\nfunc %s(a, b int) int {\n\treturn %s\n}\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }\n", p.Func, p.Func, expr)
		}
		files := map[string]string{
			"go.mod":       "module example.com/calc\n\ngo 1.22\n",
			"calc.go":      src(p.Buggy),
			"sub_test.go":  "package calc\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(3, 1) != 2 {\n\t\tt.Fatal(\"Sub\")\n\t}\n}\n",
			"README.md":    "A calculator.\n",
			"cmd/.gitkeep": "",
		}
		for k, v := range p.Fill {
			files[k] = v
		}
		for f, c := range files {
			full := filepath.Join(repo, filepath.FromSlash(f))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				return nil, err
			}
		}
		for _, s := range [][]string{{"init", "-q", "--initial-branch=main"}, {"add", "-A"}, {"commit", "-q", "-m", "base"}} {
			if _, err := run(ctx, repo, s...); err != nil {
				return nil, err
			}
		}
		base, err := bench.Head(ctx, repo)
		if err != nil {
			return nil, err
		}
		// The hidden test: a new file, and a change to the existing test
		// file (which the test patch's version wins over).
		var cases strings.Builder
		for _, c := range p.Cases {
			fmt.Fprintf(&cases, "\tif got := %s(%d, %d); got != %d {\n\t\tt.Errorf(\"%s(%d, %d) = %%d, want %d\", got)\n\t}\n", p.Func, c[0], c[1], c[2], p.Func, c[0], c[1], c[2])
		}
		hidden := fmt.Sprintf("package calc\n\nimport \"testing\"\n\nfunc Test%s(t *testing.T) {\n%s}\n", p.Func, cases.String())
		if err := os.WriteFile(filepath.Join(repo, "hidden_test.go"), []byte(hidden), 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(repo, "sub_test.go"), []byte("package calc\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(3, 1) != 2 || Sub(1, 3) != -2 {\n\t\tt.Fatal(\"Sub\")\n\t}\n}\n"), 0o644); err != nil {
			return nil, err
		}
		if _, err := run(ctx, repo, "add", "-A"); err != nil {
			return nil, err
		}
		testPatch, err := run(ctx, repo, "diff", "--cached", "--no-color")
		if err != nil {
			return nil, err
		}
		// The fix and its tests land later on main, as in a real project.
		if err := os.WriteFile(filepath.Join(repo, "calc.go"), []byte(src(p.Fixed)), 0o644); err != nil {
			return nil, err
		}
		gold, err := run(ctx, repo, "diff", "--no-color", "--", "calc.go")
		if err != nil {
			return nil, err
		}
		os.WriteFile(filepath.Join(repo, "calc.go"), []byte(src(p.Wrong)), 0o644)
		wrong, err := run(ctx, repo, "diff", "--no-color", "--", "calc.go")
		if err != nil {
			return nil, err
		}
		os.WriteFile(filepath.Join(repo, "calc.go"), []byte(src(p.Fixed)), 0o644)
		for _, s := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "fix " + p.Func + " with tests"}} {
			if _, err := run(ctx, repo, s...); err != nil {
				return nil, err
			}
		}
		future, err := bench.Head(ctx, repo)
		if err != nil {
			return nil, err
		}
		set.FutureCommit[p.ID] = future
		set.Wrong[p.ID] = wrong
		set.NotApplying[p.ID] = strings.Replace(gold, "return "+p.Buggy, "return something else entirely", 1)
		t := bench.Task{InstanceID: p.ID, Repo: "repos/" + p.ID, BaseCommit: base,
			ProblemStatement: fmt.Sprintf("%s gives wrong results; fix it.", p.Func), Patch: gold, TestPatch: testPatch,
			FailToPass: bench.TestList{"Test" + p.Func}, PassToPass: bench.TestList{"TestSub"}}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(set.TaskFile, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	tasks, err := bench.LoadTasks(set.TaskFile, "")
	if err != nil {
		return nil, err
	}
	set.Tasks = tasks
	return set, nil
}

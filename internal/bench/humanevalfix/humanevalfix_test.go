package humanevalfix_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/humanevalfix"
	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/testenv"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.RunHelper()
	}
	os.Exit(testenv.Run(m))
}

// testdata/sample.jsonl holds four problems of HumanEvalPack's Go part
// (MIT licence), one of them (Go/38) without a usable gold fix.
func TestImportAndGrade(t *testing.T) {
	f, err := os.Open("testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := t.TempDir()
	sum, err := humanevalfix.Import(context.Background(), f, "sample.jsonl", humanevalfix.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Tasks != 3 || len(sum.Skipped) != 1 || sum.Skipped[0] != "Go/38" {
		t.Fatalf("%+v", sum)
	}
	tasks, err := bench.LoadTasks(sum.TaskFile, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, task := range tasks {
		// The repository holds one commit, and nothing of the tests.
		g := gitsafe.Git{Dir: task.RepoDir}
		if log, _ := g.Output(ctx, "log", "--all", "--oneline"); strings.Count(log, "\n") != 1 {
			t.Errorf("%s: history %q", task.InstanceID, log)
		}
		all, _ := g.Output(ctx, "cat-file", "--batch-all-objects", "--batch-check")
		reachable, _ := g.Output(ctx, "rev-list", "--objects", "--all")
		if n, m := strings.Count(all, "\n"), strings.Count(reachable, "\n"); n != m || n == 0 {
			t.Errorf("%s: %d objects, %d of them the commit's:\n%s\n%s", task.InstanceID, n, m, all, reachable)
		}
		if _, err := os.Stat(filepath.Join(task.RepoDir, "mymain_test.go")); err == nil {
			t.Errorf("%s: the test file is in the repository", task.InstanceID)
		}
		if !strings.Contains(task.TestPatch, "+++ b/mymain_test.go") || !strings.Contains(task.Patch, "+++ b/mymain.go") ||
			len(task.FailToPass) != 1 || !strings.HasPrefix(task.FailToPass[0], "Test") || !strings.Contains(task.ProblemStatement, "mymain.go") {
			t.Errorf("%s: %+v", task.InstanceID, task)
		}
	}
	gr := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	// The gold patch, its first removed line changed: it does not apply.
	lines := strings.Split(tasks[0].Patch, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---") {
			lines[i] = "-\tno such line"
			break
		}
	}
	notApplying := strings.Join(lines, "\n")
	for _, tc := range []struct {
		task              int
		name, patch       string
		resolved, applied bool
	}{
		{0, "gold", tasks[0].Patch, true, true},
		{1, "gold", tasks[1].Patch, true, true},
		{2, "gold", tasks[2].Patch, true, true},
		{0, "empty (the bug stays)", "", false, true},
		{2, "empty (the bug stays)", "", false, true},
		{0, "not applying", notApplying, false, false},
	} {
		task := tasks[tc.task]
		v, err := gr.Grade(ctx, &task, tc.patch)
		if err != nil {
			t.Fatalf("%s %s: %v", task.InstanceID, tc.name, err)
		}
		if v.Resolved != tc.resolved || v.PatchApplied != tc.applied {
			t.Errorf("%s %s: %s\n%s", task.InstanceID, tc.name, v, v.Log)
		}
	}
}

func TestImportErrors(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{`{"task_id":"Go/1"}`, "sample:1: "},
		{`not json`, "sample:1: "},
		{`{"task_id":"Go/1","declaration":"d","buggy_solution":"b","canonical_solution":"c","test_setup":"s","test":"no test func","entry_point":"E"}`, "no func TestX"},
	} {
		_, err := humanevalfix.Import(context.Background(), strings.NewReader(tc.in), "sample", humanevalfix.Options{Out: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err = %v", tc.in, err)
		}
	}
}

package multiswe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/multiswe"
)

// testdata/records.jsonl holds four records written for these tests in
// the shape of the published dataset's (the fields of Multi-SWE-bench's
// harness/dataset.py, instance_id and hints): a Go one with f2p, s2p and
// n2p tests, two resolved issues and a string hint; a Java one without
// instance_id, lang or resolved issues, a null body and hints as an
// array; one with only p2p tests (left out); a Rust one whose first issue
// has a null body.
func TestImport(t *testing.T) {
	f, err := os.Open("testdata/records.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := t.TempDir()
	sum, err := multiswe.Import(context.Background(), f, "testdata/records.jsonl", multiswe.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Tasks != 3 || !slices.Equal(sum.Skipped, []string{"acme__rocket-43"}) || sum.TaskFile != filepath.Join(out, "tasks.jsonl") {
		t.Fatalf("%+v", sum)
	}
	data, err := os.ReadFile(sum.TaskFile)
	if err != nil {
		t.Fatal(err)
	}
	var langs []string
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var task multiswe.Task
		if err := json.Unmarshal(line, &task); err != nil {
			t.Fatal(err)
		}
		langs = append(langs, task.Language)
	}
	if !slices.Equal(langs, []string{"go", "", ""}) {
		t.Errorf("languages %q", langs)
	}

	// The tasks load as SWE-bench's, their repositories under --repos.
	repos := t.TempDir()
	for _, d := range []string{"acme/rocket", "Acme__Json.Lib", "ferris-labs/crab"} {
		if err := os.MkdirAll(filepath.Join(repos, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tasks, err := bench.LoadTasks(sum.TaskFile, repos)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id, repo, repoDir, base, statement, hints, image string
		f2p, p2p                                         []string
		patch, testPatch                                 string
	}{
		{
			"acme__rocket-42", "acme/rocket", "acme/rocket", "3f9c2a1d5e7b8c0f4a6d2e1b9c8a7f6e5d4c3b2a",
			"Launch hangs on a negative countdown\nCalling `Launch(-1)` never returns.\n\nExpected: an error.",
			"Launch returns the new error ErrNegative (launch/errors.go).",
			"mswebench/acme_m_rocket:pr-42",
			[]string{"TestCountdownZero", "TestLaunch", "TestLaunch/abort"},
			[]string{"TestCountdown", "TestOrbit"},
			"+++ b/launch/launch.go", "+++ b/launch/launch_test.go",
		},
		{
			"Acme__Json.Lib-7", "Acme/Json.Lib", "Acme__Json.Lib", "0a1b2c3d",
			"Parser: empty input throws ParseException\n",
			"ParseException(String) is new\nParser.parse checks isEmpty",
			"mswebench/acme_m_json.lib:pr-7",
			[]string{"com.acme.json.ParserTest"}, nil,
			"+++ b/src/main/java/com/acme/json/Parser.java", "+++ b/src/test/java/com/acme/json/ParserTest.java",
		},
		{
			"ferris-labs__crab-1234", "ferris-labs/crab", "ferris-labs/crab", "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00",
			"claw closes on EOF\n", "",
			"mswebench/ferris-labs_m_crab:pr-1234",
			[]string{"eof_keeps_open", "shell::tests::read_empty"},
			[]string{"claw::tests::close", "claw::tests::open"},
			"+++ b/src/shell.rs", "+++ b/tests/shell.rs",
		},
	}
	if len(tasks) != len(want) {
		t.Fatalf("%d tasks, want %d", len(tasks), len(want))
	}
	for i, w := range want {
		got := tasks[i]
		if got.InstanceID != w.id || got.Repo != w.repo || got.RepoDir != filepath.Join(repos, w.repoDir) || got.BaseCommit != w.base {
			t.Errorf("%s: id %q repo %q dir %q base %q", w.id, got.InstanceID, got.Repo, got.RepoDir, got.BaseCommit)
		}
		if got.ProblemStatement != w.statement || got.HintsText != w.hints || got.Image != w.image || got.Workdir != "/home/"+got.Repo[strings.Index(got.Repo, "/")+1:] {
			t.Errorf("%s: statement %q hints %q image %q workdir %q", w.id, got.ProblemStatement, got.HintsText, got.Image, got.Workdir)
		}
		if !slices.Equal(got.FailToPass, w.f2p) || !slices.Equal(got.PassToPass, w.p2p) {
			t.Errorf("%s: FAIL_TO_PASS %q PASS_TO_PASS %q", w.id, got.FailToPass, got.PassToPass)
		}
		if !strings.Contains(got.Patch, w.patch) || !strings.Contains(got.TestPatch, w.testPatch) || got.Line != i+1 {
			t.Errorf("%s: patch %q test_patch %q line %d", w.id, got.Patch, got.TestPatch, got.Line)
		}
	}
}

// record is a valid record's line with changes: set's keys replace the
// record's fields (a nil value removes the field).
func record(t testing.TB, set map[string]any) string {
	t.Helper()
	r := map[string]any{
		"org": "acme", "repo": "rocket", "number": 42, "state": "closed", "title": "pr title", "body": "pr body",
		"base":            map[string]any{"label": "acme:main", "ref": "main", "sha": "abc123"},
		"resolved_issues": []any{map[string]any{"number": 40, "title": "issue", "body": "it breaks"}},
		"fix_patch":       "diff --git a/x b/x\n", "test_patch": "diff --git a/x_test b/x_test\n",
		"fixed_tests": map[string]any{"TestA": map[string]any{"run": "NONE", "test": "FAIL", "fix": "PASS"}},
		"f2p_tests":   map[string]any{"TestA": map[string]any{"run": "NONE", "test": "FAIL", "fix": "PASS"}},
		"p2p_tests":   map[string]any{"TestB": map[string]any{"run": "PASS", "test": "PASS", "fix": "PASS"}},
		"s2p_tests":   map[string]any{}, "n2p_tests": map[string]any{},
		"instance_id": "acme__rocket-42",
	}
	for k, v := range set {
		if v == nil {
			delete(r, k)
		} else {
			r[k] = v
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestImportOptions(t *testing.T) {
	two := record(t, nil) + "\n" + record(t, map[string]any{"number": 43, "instance_id": "acme__rocket-43"}) + "\n"
	tests := []struct {
		name, in, file string
		opts           multiswe.Options
		ids            []string
		lang, image    string
		err            string
	}{
		{"all", two, "r.jsonl", multiswe.Options{}, []string{"acme__rocket-42", "acme__rocket-43"}, "", "mswebench/acme_m_rocket:pr-42", ""},
		{"only an instance id", two, "r.jsonl", multiswe.Options{Only: []string{"acme__rocket-43"}}, []string{"acme__rocket-43"}, "", "mswebench/acme_m_rocket:pr-43", ""},
		{"only Multi-SWE-bench's id", two, "r.jsonl", multiswe.Options{Only: []string{"acme/rocket:pr-42"}}, []string{"acme__rocket-42"}, "", "", ""},
		{"only an unknown id", two, "r.jsonl", multiswe.Options{Only: []string{"acme__rocket-42", "acme__rocket-9"}}, nil, "", "", "r.jsonl has no instance acme__rocket-9"},
		{"language given", two, "r.jsonl", multiswe.Options{Language: "go"}, []string{"acme__rocket-42", "acme__rocket-43"}, "go", "", ""},
		{"language of the record wins", record(t, map[string]any{"lang": "java"}), "r.jsonl", multiswe.Options{Language: "go"}, []string{"acme__rocket-42"}, "java", "", ""},
		{"language of the directory", two, "data/ts/acme__rocket_dataset.jsonl", multiswe.Options{}, []string{"acme__rocket-42", "acme__rocket-43"}, "ts", "", ""},
		{"not a language directory", two, "data/acme__rocket_dataset.jsonl", multiswe.Options{}, []string{"acme__rocket-42", "acme__rocket-43"}, "", "", ""},
		{"image prefix", two, "r.jsonl", multiswe.Options{ImagePrefix: "registry.local:5000/MSB"}, []string{"acme__rocket-42", "acme__rocket-43"}, "", "registry.local:5000/msb/acme_m_rocket:pr-42", ""},
		{"no instance_id", record(t, map[string]any{"instance_id": nil, "org": "Big-Org", "repo": "Repo.js"}), "r.jsonl", multiswe.Options{}, []string{"Big-Org__Repo.js-42"}, "", "mswebench/big-org_m_repo.js:pr-42", ""},
		{"empty instance_id", record(t, map[string]any{"instance_id": " "}), "r.jsonl", multiswe.Options{}, []string{"acme__rocket-42"}, "", "", ""},
		{"nothing to pass", record(t, map[string]any{"f2p_tests": map[string]any{}}), "r.jsonl", multiswe.Options{}, nil, "", "", "r.jsonl: no record lists a test that must turn to passing (1 left out)"},
		{"empty input", "\n\n", "r.jsonl", multiswe.Options{}, nil, "", "", "r.jsonl holds no record"},
		{"bad record", record(t, nil) + "\n" + record(t, map[string]any{"base": map[string]any{"sha": ""}}), "r.jsonl", multiswe.Options{}, nil, "", "", "r.jsonl:2: instance acme__rocket-42: base.sha is missing or empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "set")
			sum, err := multiswe.Import(context.Background(), strings.NewReader(tc.in), tc.file, multiswe.Options{
				Out: out, Only: tc.opts.Only, Language: tc.opts.Language, ImagePrefix: tc.opts.ImagePrefix})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the output was made: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tasks := readTasks(t, sum.TaskFile)
			var ids []string
			for _, task := range tasks {
				ids = append(ids, task.InstanceID)
				if task.Language != tc.lang {
					t.Errorf("%s: language %q, want %q", task.InstanceID, task.Language, tc.lang)
				}
			}
			if !slices.Equal(ids, tc.ids) || sum.Tasks != len(tc.ids) {
				t.Errorf("instances %q (%d), want %q", ids, sum.Tasks, tc.ids)
			}
			if tc.image != "" && tasks[0].Image != tc.image {
				t.Errorf("image %q, want %q", tasks[0].Image, tc.image)
			}
		})
	}
}

func readTasks(t *testing.T, file string) []multiswe.Task {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bench.ParseTasks(bytes.NewReader(data), file); err != nil {
		t.Fatalf("the tasks do not parse: %v", err)
	}
	var tasks []multiswe.Task
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var task multiswe.Task
		if err := json.Unmarshal(line, &task); err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	return tasks
}

func TestImportIntoAnUsedDirectory(t *testing.T) {
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "tasks.jsonl"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := multiswe.Import(context.Background(), strings.NewReader(record(t, nil)), "r", multiswe.Options{Out: out})
	if err == nil || !strings.Contains(err.Error(), "exists: import into an empty directory") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "tasks.jsonl")); string(b) != "old\n" {
		t.Errorf("tasks.jsonl overwritten: %q", b)
	}
	if _, err := multiswe.Import(context.Background(), strings.NewReader(record(t, nil)), "r", multiswe.Options{}); err == nil {
		t.Error("no error without an output directory")
	}
}

func TestParseRecords(t *testing.T) {
	tests := []struct{ name, in, err string }{
		{"valid", record(t, nil), ""},
		{"null bodies", record(t, map[string]any{"body": nil, "resolved_issues": []any{map[string]any{"number": 1, "title": "t", "body": nil}}}), ""},
		{"hints null", `{"hints":null,` + record(t, nil)[1:], ""},
		{"extra fields", record(t, map[string]any{"run_result": map[string]any{"passed_count": 1, "passed_tests": []string{"TestB"}}, "tag": "v1", "number_interval": "1-50"}), ""},
		{"not json", "not json", "x:1: not a JSON object"},
		{"cut", record(t, nil)[:40], "x:1: invalid JSON"},
		{"two values", record(t, nil) + " {}", "x:1: more than one JSON value"},
		{"number as string", record(t, map[string]any{"number": "42"}), "x:1: field number: want int64, not a JSON string"},
		{"number zero", record(t, map[string]any{"number": 0}), "x:1: number 0 is not a pull request's"},
		{"no org", record(t, map[string]any{"org": nil}), `x:1: org "" is not a GitHub name`},
		{"repo with a slash", record(t, map[string]any{"repo": "a/b"}), `x:1: repo "a/b" is not a GitHub name`},
		{"repo dot dot", record(t, map[string]any{"repo": ".."}), `x:1: repo ".." is not a GitHub name`},
		{"no base", record(t, map[string]any{"base": nil}), "x:1: instance acme__rocket-42: base.sha is missing or empty"},
		{"option sha", record(t, map[string]any{"base": map[string]any{"sha": "--upload-pack=x"}}), "is not a revision"},
		{"sha with a colon", record(t, map[string]any{"base": map[string]any{"sha": "HEAD:x"}}), "is not a revision"},
		{"base not an object", record(t, map[string]any{"base": "abc"}), "x:1: field base: want multiswe.Base"},
		{"slash id", record(t, map[string]any{"instance_id": "a/b"}), "cannot name a file"},
		{"no statement", record(t, map[string]any{"resolved_issues": []any{}, "title": " ", "body": nil}), "no problem statement"},
		{"empty test name", record(t, map[string]any{"n2p_tests": map[string]any{" ": map[string]any{}}}), "an empty test name"},
		{"tests not a map", record(t, map[string]any{"f2p_tests": []string{"TestA"}}), "x:1: field f2p_tests: want map"},
		{"hints a number", record(t, map[string]any{"hints": 3}), "x:1: field hints: want a string or an array of strings"},
		{"duplicate", record(t, nil) + "\n\n" + record(t, nil), "x:3: instance acme__rocket-42 again (first on line 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := multiswe.ParseRecords(strings.NewReader(tc.in), "x")
			if tc.err == "" {
				if err != nil || len(recs) != 1 {
					t.Fatalf("%v %+v", err, recs)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			var le *bench.LineError
			if !errors.As(err, &le) {
				t.Fatalf("not a LineError: %T", err)
			}
		})
	}
}

func TestRecordMapping(t *testing.T) {
	st := func(test string) map[string]any { return map[string]any{"run": "NONE", "test": test, "fix": "PASS"} }
	recs, err := multiswe.ParseRecords(strings.NewReader(record(t, map[string]any{
		"f2p_tests": map[string]any{"b": st("FAIL"), "a": st("FAIL")},
		"s2p_tests": map[string]any{"c": st("SKIP")},
		"n2p_tests": map[string]any{"a": st("NONE"), "d": st("NONE")},
		"p2p_tests": map[string]any{"z": st("PASS"), "y": st("PASS")},
		"resolved_issues": []any{
			map[string]any{"number": 1, "title": "first", "body": "body one"},
			map[string]any{"number": 2, "title": "second", "body": "body two"}},
	})), "x")
	if err != nil {
		t.Fatal(err)
	}
	r := &recs[0]
	if got := r.FailToPass(); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("FailToPass %q", got)
	}
	if got := r.PassToPass(); !slices.Equal(got, []string{"y", "z"}) {
		t.Errorf("PassToPass %q", got)
	}
	if got := r.ProblemStatement(); got != "first\nbody one" {
		t.Errorf("ProblemStatement %q", got)
	}
	if r.ID() != "acme__rocket-42" || r.MultiSWEID() != "acme/rocket:pr-42" {
		t.Errorf("ids %q %q", r.ID(), r.MultiSWEID())
	}
	for _, tc := range []struct {
		org, repo, prefix, want string
		number                  int64
	}{
		{"cli", "cli", "", "mswebench/cli_m_cli:pr-10009", 10009},
		{"OpenMathLib", "OpenBLAS", "", "mswebench/openmathlib_m_openblas:pr-1", 1},
		{"cli", "cli", "ghcr.io/me", "ghcr.io/me/cli_m_cli:pr-2", 2},
	} {
		if got := multiswe.Image(tc.org, tc.repo, tc.number, tc.prefix); got != tc.want {
			t.Errorf("Image(%s, %s, %d, %q) = %q, want %q", tc.org, tc.repo, tc.number, tc.prefix, got, tc.want)
		}
	}
}

// FuzzParseRecords checks that every record ParseRecords accepts makes a
// task bench.ParseTasks accepts, or is left out for want of a test to
// pass, and that an error names its line.
func FuzzParseRecords(f *testing.F) {
	data, err := os.ReadFile("testdata/records.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f.Add(line)
	}
	f.Add(record(f, map[string]any{"instance_id": nil, "hints": []string{"a"}}))
	f.Add(`{"org":"a","repo":"b","number":1,"base":{"sha":"c"},"title":"t","f2p_tests":{"x":{}}}`)
	f.Add(record(f, nil) + "\n\n" + record(f, map[string]any{"number": 7, "instance_id": nil}) + "\n")
	f.Add("{}\n{")
	f.Fuzz(func(t *testing.T, in string) {
		recs, err := multiswe.ParseRecords(strings.NewReader(in), "f")
		if err != nil {
			var le *bench.LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		for i := range recs {
			task, ok := multiswe.Convert(&recs[i], "", "")
			if task.InstanceID != recs[i].ID() {
				t.Fatalf("instance %q of %q", task.InstanceID, recs[i].ID())
			}
			if !ok {
				if len(recs[i].F2PTests)+len(recs[i].S2PTests)+len(recs[i].N2PTests) != 0 {
					t.Fatalf("left out with tests to pass: %+v", recs[i])
				}
				continue
			}
			b, err := json.Marshal(task)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(append(b, '\n'))
		}
		if buf.Len() == 0 {
			return
		}
		if _, err := bench.ParseTasks(&buf, "tasks"); err != nil {
			t.Fatalf("an accepted record makes a task that ParseTasks refuses: %v\n%s", err, in)
		}
	})
}

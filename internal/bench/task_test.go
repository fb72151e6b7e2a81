package bench

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseTasks(t *testing.T) {
	ok := `{"instance_id":"a","repo":"r","base_commit":"abc","FAIL_TO_PASS":%s,"PASS_TO_PASS":%s}`
	tests := []struct {
		name, in string
		f2p, p2p []string
		err      string
	}{
		{"arrays", fmtLine(ok, `["t1","t2"]`, `["t3"]`), []string{"t1", "t2"}, []string{"t3"}, ""},
		{"strings", fmtLine(ok, `"[\"t1\"]"`, `"[]"`), []string{"t1"}, nil, ""},
		{"empty string list", fmtLine(ok, `"[\"t1\"]"`, `""`), []string{"t1"}, nil, ""},
		{"blank lines", "\n\n" + fmtLine(ok, `["x"]`, `[]`) + "\n\n", []string{"x"}, nil, ""},
		{"unknown fields kept out", `{"instance_id":"a","repo":"r","base_commit":"abc","FAIL_TO_PASS":["t"],"created_at":"2023","difficulty":"easy"}`, []string{"t"}, nil, ""},
		{"bad list string", fmtLine(ok, `"not json"`, `[]`), nil, nil, "x:1: field FAIL_TO_PASS: the string does not hold a JSON array"},
		{"bad list type", fmtLine(ok, `3`, `[]`), nil, nil, "x:1: field FAIL_TO_PASS: want a JSON array"},
		{"bad setup", `{"instance_id":"a","repo":"r","base_commit":"abc","FAIL_TO_PASS":["t"],"setup_cmd":3}`, nil, nil, "x:1: field setup_cmd: want a command string"},
		{"no id", `{"repo":"r","base_commit":"abc","FAIL_TO_PASS":["t"]}`, nil, nil, "x:1: instance_id is missing"},
		{"no repo", `{"instance_id":"a","base_commit":"abc","FAIL_TO_PASS":["t"]}`, nil, nil, "x:1: instance a: repo is missing"},
		{"no commit", `{"instance_id":"a","repo":"r","FAIL_TO_PASS":["t"]}`, nil, nil, "x:1: instance a: base_commit is missing"},
		{"option commit", `{"instance_id":"a","repo":"r","base_commit":"--upload-pack=x","FAIL_TO_PASS":["t"]}`, nil, nil, "is not a revision"},
		{"no tests", fmtLine(ok, `[]`, `["t"]`), nil, nil, "FAIL_TO_PASS lists no test"},
		{"slash id", `{"instance_id":"a/b","repo":"r","base_commit":"abc","FAIL_TO_PASS":["t"]}`, nil, nil, "cannot name a file"},
		{"duplicate", fmtLine(ok, `["t"]`, `[]`) + "\n" + fmtLine(ok, `["t"]`, `[]`), nil, nil, "x:2: instance a again (first on line 1)"},
		{"syntax", `{"instance_id":"a",}`, nil, nil, "x:1: invalid JSON at column"},
		{"cut", `{"instance_id":"a"`, nil, nil, "x:1: invalid JSON"},
		{"not object", `["a"]`, nil, nil, "x:1: not a JSON object"},
		{"two values", fmtLine(ok, `["t"]`, `[]`) + ` {}`, nil, nil, "more than one JSON value"},
		{"wrong type", `{"instance_id":3,"repo":"r","base_commit":"abc","FAIL_TO_PASS":["t"]}`, nil, nil, "field instance_id: want string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tasks, err := ParseTasks(strings.NewReader(tc.in), "x")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				var le *LineError
				if !errors.As(err, &le) {
					t.Fatalf("not a LineError: %T", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tasks) != 1 || !slices.Equal(tasks[0].FailToPass, tc.f2p) || !slices.Equal(tasks[0].PassToPass, tc.p2p) {
				t.Fatalf("%+v", tasks)
			}
		})
	}
}

func TestParseTasksForeignFormats(t *testing.T) {
	msb := `{"org":"cli","repo":"cli","number":10009,"state":"closed","title":"t","body":"b",` +
		`"base":{"label":"cli:trunk","ref":"trunk","sha":"0123abcd"},"resolved_issues":[{"number":1,"title":"i","body":null}],` +
		`"fix_patch":"diff","test_patch":"diff","f2p_tests":{"TestX":{"run":"NONE","test":"FAIL","fix":"PASS"}},` +
		`"p2p_tests":{},"s2p_tests":{},"n2p_tests":{},"instance_id":"cli__cli-10009"}`
	hef := `{"task_id":"Go/0","prompt":"p","declaration":"d","buggy_solution":"b","canonical_solution":"c","test":"t","entry_point":"E"}`
	tests := []struct{ name, in, err string }{
		{"multi-swe-bench", msb, "x:1: not a task in SWE-bench's format: this looks like a Multi-SWE-bench record (org, repo, number, base.sha): import it first with `truss bench import multi-swe-bench FILE --out DIR`"},
		{"multi-swe-bench without instance_id", strings.Replace(msb, `,"instance_id":"cli__cli-10009"`, "", 1), "looks like a Multi-SWE-bench record"},
		{"multi-swe-bench second line", `{"instance_id":"a","repo":"r","base_commit":"abc","FAIL_TO_PASS":["t"]}` + "\n" + msb, "x:2: not a task in SWE-bench's format: this looks like a Multi-SWE-bench"},
		{"humanevalfix", hef, "x:1: not a task in SWE-bench's format: this looks like a HumanEvalFix/HumanEvalPack record (task_id, buggy_solution): import it with `truss bench import humanevalfix FILE --out DIR`"},
		{"prediction", `{"instance_id":"a","model_name_or_path":"m","model_patch":"diff"}`, "x:1: not a task: this is a predictions file (instance_id, model_patch, model_name_or_path): pass it as --predictions"},
		{"prediction null patch", `{"instance_id":"a","model_patch":null}`, "this is a predictions file"},
		{"prediction wrong type", `{"instance_id":3,"model_name_or_path":"m","model_patch":"diff"}`, "this is a predictions file"},
		{"unknown object", `{"id":"a","source":"s"}`, "x:1: not a task in SWE-bench's format: missing instance_id, repo, base_commit, FAIL_TO_PASS"},
		{"empty object", `{}`, "missing instance_id, repo, base_commit, FAIL_TO_PASS"},
		{"id and repo only", `{"instance_id":"a","repo":"r"}`, "x:1: not a task in SWE-bench's format: missing base_commit, FAIL_TO_PASS"},
		// A line with one of SWE-bench's own fields is a task: its own errors stand.
		{"task without base_commit", `{"instance_id":"a","repo":"r","FAIL_TO_PASS":["t"],"org":"o","number":1,"base":{}}`, "x:1: instance a: base_commit is missing or empty"},
		{"task without instance_id", `{"repo":"r","base_commit":"abc","FAIL_TO_PASS":["t"],"model_patch":"d"}`, "x:1: instance_id is missing or empty"},
		{"task with a bad list", `{"task_id":"Go/0","buggy_solution":"b","FAIL_TO_PASS":3}`, "x:1: field FAIL_TO_PASS: want a JSON array"},
		{"syntax", `{"org":"cli","number":1,"base":`, "x:1: invalid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTasks(strings.NewReader(tc.in), "x")
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("not a LineError: %T", err)
			}
		})
	}
}

func fmtLine(f string, a, b string) string {
	return strings.Replace(strings.Replace(f, "%s", a, 1), "%s", b, 1)
}

func TestLoadTasksRepos(t *testing.T) {
	dir := t.TempDir()
	repos := filepath.Join(dir, "repos")
	for _, d := range []string{"sets/local", "repos/django/django", "repos/psf__requests", "abs"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	abs := filepath.Join(dir, "abs")
	lines := []string{
		`{"instance_id":"1","repo":"local","base_commit":"c","FAIL_TO_PASS":["t"]}`,
		`{"instance_id":"2","repo":"django/django","base_commit":"c","FAIL_TO_PASS":["t"]}`,
		`{"instance_id":"3","repo":"psf/requests","base_commit":"c","FAIL_TO_PASS":["t"]}`,
		`{"instance_id":"4","repo":"` + abs + `","base_commit":"c","FAIL_TO_PASS":["t"]}`,
		`{"instance_id":"5","repo":"../repos/django/django","base_commit":"c","FAIL_TO_PASS":["t"]}`,
	}
	file := filepath.Join(dir, "sets", "tasks.jsonl")
	os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644)
	tasks, err := LoadTasks(file, repos)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "sets/local"), filepath.Join(repos, "django/django"), filepath.Join(repos, "psf__requests"), abs, filepath.Join(repos, "django/django")}
	for i, tk := range tasks {
		if tk.RepoDir != want[i] {
			t.Errorf("%s: %s, want %s", tk.InstanceID, tk.RepoDir, want[i])
		}
	}
	os.WriteFile(file, []byte(lines[0]+"\n"+`{"instance_id":"x","repo":"owner/missing","base_commit":"c","FAIL_TO_PASS":["t"]}`), 0o644)
	if _, err := LoadTasks(file, ""); err == nil || !strings.Contains(err.Error(), "tasks.jsonl:2: instance x: repository \"owner/missing\" not found") || !strings.Contains(err.Error(), "--repos") {
		t.Fatalf("err = %v", err)
	}
}

func TestParsePredictions(t *testing.T) {
	in := `{"instance_id":"a","model_name_or_path":"m","model_patch":"diff"}
{"instance_id":"b","model_name_or_path":"m","model_patch":null}
`
	ps, err := ParsePredictions(strings.NewReader(in), "p")
	if err != nil || len(ps) != 2 || ps[1].ModelPatch != "" || ps[1].Line != 2 {
		t.Fatalf("%v %+v", err, ps)
	}
	for _, bad := range []string{
		`{"model_name_or_path":"m"}`, `{"instance_id":"a"}`,
		`{"instance_id":"a","model_name_or_path":"m"}` + "\n" + `{"instance_id":"a","model_name_or_path":"m"}`,
	} {
		if _, err := ParsePredictions(strings.NewReader(bad), "p"); err == nil {
			t.Errorf("no error for %s", bad)
		}
	}
}

func FuzzParseTasks(f *testing.F) {
	f.Add(`{"instance_id":"a","repo":"r","base_commit":"abc","FAIL_TO_PASS":["t1"],"PASS_TO_PASS":"[\"t2\"]","setup_cmd":["x"]}`)
	f.Add(`{"instance_id":"a","repo":"r","base_commit":"abc","FAIL_TO_PASS":"[\"t\"]"}` + "\n" + `{}`)
	f.Add("\n\n{")
	f.Fuzz(func(t *testing.T, in string) {
		tasks, err := ParseTasks(strings.NewReader(in), "f")
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, tk := range tasks {
			if tk.InstanceID == "" || tk.BaseCommit == "" || len(tk.FailToPass) == 0 || seen[tk.InstanceID] || tk.Line < 1 {
				t.Fatalf("accepted %+v", tk)
			}
			seen[tk.InstanceID] = true
		}
	})
}

func TestArms(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"typed=sim:sim-claude:anthropic", "typed=sim:sim-claude:anthropic", ""},
		{"g=openai:gpt-5", "g=openai:gpt-5", ""},
		{"noequals", "", "want NAME="},
		{"a b=x:y", "", "the name"},
		{"a=x", "", "want NAME="},
		{"a=x:y:", "", "empty surface"},
		{"a=x::anthropic", "", "want NAME="},
		// A model that holds ':' (Bedrock's ids, Ollama's tags); the last
		// field is the surface only when it names one.
		{"b=bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", "b=bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", ""},
		{"b=bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0:anthropic", "b=bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0:anthropic", ""},
		{"o=ollama:llama3.1:latest", "", `unknown surface "latest"`},
		{"o=ollama:llama3.1:latest:auto", "o=ollama:llama3.1:latest:auto", ""},
		{"a=sim:m:weird", "", `unknown surface "weird"`},
	} {
		a, err := ParseArm(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v", tc.in, err)
			}
			continue
		}
		if err != nil || a.String() != tc.want {
			t.Errorf("%s: %v %v", tc.in, a, err)
		}
	}
	arms, err := CrossArms([]string{"sim:sim-claude", "openai:gpt-5"}, []string{"generic", "auto"})
	if err != nil || len(arms) != 4 || arms[0].Name != "sim-claude.generic" || arms[3].String() != "gpt-5.auto=openai:gpt-5:auto" {
		t.Fatalf("%v %v", arms, err)
	}
	if _, err := CrossArms([]string{"nomodel"}, nil); err == nil {
		t.Error("no error for a model without a provider")
	}
}

func TestJournalCutsTornLine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ResultsName)
	os.WriteFile(p, []byte(`{"instance_id":"a","arm":"x","repeat":1,"resolved":true}`+"\n"+`{"instance_id":"b","ar`), 0o644)
	rf, err := OpenResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rf.Done(RunKey{"a", "x", 1}); !ok || len(rf.Results()) != 1 {
		t.Fatal("the whole line was not read")
	}
	if err := rf.Add(Result{InstanceID: "b", Arm: "x", Repeat: 1}); err != nil {
		t.Fatal(err)
	}
	if err := rf.Add(Result{InstanceID: "b", Arm: "x", Repeat: 1}); err == nil {
		t.Fatal("a run added twice")
	}
	rf.Close()
	b, _ := os.ReadFile(p)
	if n := strings.Count(string(b), "\n"); n != 2 || strings.Contains(string(b), `"ar`+"\n") {
		t.Fatalf("file:\n%s", b)
	}
	if PredictionsName("a/b c", 1) != "predictions-a_b_c.jsonl" || PredictionsName("x", 3) != "predictions-x.repeat3.jsonl" {
		t.Fatal(PredictionsName("a/b c", 1))
	}
}

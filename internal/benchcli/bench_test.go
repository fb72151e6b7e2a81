package benchcli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/toolcache"
)

// run runs a truss command line, which must be a bench command, as truss
// would: through Main.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "bench" {
		panic("not a bench command: " + strings.Join(args, " "))
	}
	return Main(args[1:], stdout, stderr)
}

// scriptCache is the build and package cache the sandboxed commands of
// all the tests of this binary share: under its temporary directory
// (testenv.Run), removed when the tests end.
func scriptCache() string { return filepath.Join(os.TempDir(), "sandbox-cache") }

func TestBenchUsage(t *testing.T) {
	t.Setenv("NATS_URL", "")
	t.Setenv("NATS_TOKEN", "")
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"bench"}, 2, "usage: truss bench run|grade|import"},
		{[]string{"bench", "nope"}, 2, "truss: unknown bench command \"nope\" (truss bench --help lists the commands)\n"},
		{[]string{"bench", "grade", "--tasks", "x"}, 2, "--predictions is required"},
		{[]string{"bench", "grade", "--predictions", "p"}, 2, "--tasks and --out are required"},
		{[]string{"bench", "run", "--tasks", "x", "--out", "o"}, 2, "give --arm"},
		{[]string{"bench", "run", "--arm", "a=nope:m", "--tasks", "x", "--out", "o"}, 2, `unknown provider "nope"`},
		{[]string{"bench", "run", "--arm", "a=antropic:m", "--tasks", "x", "--out", "o"}, 2, `arm a: unknown provider "antropic": choose chat, openai`},
		{[]string{"bench", "run", "--arm", "a=antropic:m", "--tasks", "x", "--out", "o"}, 2, `; did you mean anthropic?`},
		{[]string{"bench", "run", "--arm", "a=sim:m:weird", "--tasks", "x", "--out", "o"}, 2, `unknown surface "weird"`},
		{[]string{"bench", "run", "--arm", "a=sim:m", "--arm", "a=sim:n", "--tasks", "x", "--out", "o"}, 2, "two arms named a"},
		{[]string{"bench", "run", "--models", "m", "--tasks", "x", "--out", "o"}, 2, "want PROVIDER:MODEL"},
		{[]string{"bench", "run", "--arm", "a=sim:m", "--provider-cap", "sim=0", "--tasks", "x", "--out", "o"}, 2, "--provider-cap"},
		{[]string{"bench", "import", "other"}, 2, "usage: truss bench import humanevalfix"},
		{[]string{"bench", "import", "other"}, 2, "truss bench import multi-swe-bench FILE"},
		{[]string{"bench", "import", "humanevalfix", "f"}, 2, "--out is required"},
		{[]string{"bench", "grade", "-h"}, 0, "-predictions"},
		{[]string{"bench", "grade", "--tasks", "x", "--predictions", "p", "--out", "o", "--image-template", "swebench"}, 2, "it goes with --env task"},
		{[]string{"bench", "grade", "--tasks", "x", "--predictions", "p", "--out", "o", "--pull", "sometimes"}, 2, `--pull "sometimes": want missing or never`},
		{[]string{"bench", "worker", "--nats", "nats://127.0.0.1:1", "--pull", "sometimes"}, 2, `--pull "sometimes"`},
		{[]string{"bench", "grade", "--tasks", "x", "--logs", "l", "--predictions", "p", "--out", "o"}, 2, "cannot go together"},
		{[]string{"bench", "import", "multi-swe-bench", "f"}, 2, "--out is required"},
		{[]string{"bench", "worker"}, 2, "--nats URL (or NATS_URL) is required"},
		{[]string{"bench", "version"}, 0, " grader/"},
		{[]string{"bench", "run", "--arm", "a=sim:m", "--replicas", "7", "--tasks", "x", "--out", "o"}, 2, "--replicas must be 1 to 5"},
		{[]string{"bench", "worker", "--nats", "nats://127.0.0.1:1", "--parallel", "0"}, 2, "--parallel must be at least 1"},
		{[]string{"bench", "status"}, 2, "usage: truss bench status DIR|--nats URL"},
		{[]string{"bench", "status", t.TempDir()}, 1, "has no queue description"},
		{[]string{"bench", "run", "--arm", "a=sim:m", "--nats", "nats://x", "--nats-listen", "127.0.0.1:0", "--tasks", "x", "--out", "o"}, 2, "exclude each other"},
		{[]string{"bench", "run", "--arm", "a=sim:m", "--trust-key", "@/nonexistent/key", "--tasks", "x", "--out", "o"}, 2, "--trust-key"},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.out) {
			t.Errorf("%v: %d %q %q", tc.args, code, out.String(), errb.String())
		}
	}
}

// bench import, then bench grade of gold, empty, broken and unknown
// predictions; again, nothing left to grade.
func TestBenchImportAndGrade(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TRUSS_HOME", filepath.Join(dir, "home"))
	// The agents' cache: the gradings keep their own all the same (over
	// the host's warm build cache), and say nothing of sharing.
	t.Setenv(toolcache.SharedEnv, scriptCache())
	var out, errb bytes.Buffer
	set := filepath.Join(dir, "set")
	if code := run([]string{"bench", "import", "humanevalfix", "../../internal/bench/humanevalfix/testdata/sample.jsonl", "--out", set, "--only", "Go/0,Go/12"}, &out, &errb); code != 0 {
		t.Fatalf("import: %d %s %s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "2 instances in ") {
		t.Fatalf("import said %q", out.String())
	}
	f, err := os.Open(filepath.Join(set, "tasks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := bench.ParseTasks(f, "tasks")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var preds bytes.Buffer
	enc := json.NewEncoder(&preds)
	for _, p := range []bench.Prediction{
		{InstanceID: tasks[0].InstanceID, ModelNameOrPath: "gold", ModelPatch: tasks[0].Patch},
		{InstanceID: tasks[1].InstanceID, ModelNameOrPath: "gold", ModelPatch: tasks[1].Patch},
		{InstanceID: tasks[0].InstanceID, ModelNameOrPath: "empty"},
		{InstanceID: tasks[1].InstanceID, ModelNameOrPath: "broken", ModelPatch: "--- a/mymain.go\n+++ b/mymain.go\n@@ -1 +1 @@\n-nothing like this\n+x\n"},
		{InstanceID: "Go__999", ModelNameOrPath: "gold", ModelPatch: ""},
	} {
		enc.Encode(p)
	}
	pf := filepath.Join(dir, "preds.jsonl")
	os.WriteFile(pf, preds.Bytes(), 0o644)
	res := filepath.Join(dir, "graded")
	out.Reset()
	errb.Reset()
	code := run([]string{"bench", "grade", "--tasks", filepath.Join(set, "tasks.jsonl"), "--predictions", pf, "--out", res, "--parallel", "2"}, &out, &errb)
	if code != 1 { // the unknown instance is an error
		t.Fatalf("grade: %d %s %s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "5 of 5 finished") || !strings.Contains(out.String(), "resolved: gold 2; errors: 1") {
		t.Fatalf("summary %q", out.String())
	}
	if !strings.Contains(errb.String(), "[5/5]") || !strings.Contains(errb.String(), "not resolved: patch failed") {
		t.Fatalf("progress %q", errb.String())
	}
	if strings.Contains(errb.String(), "--grade-cache shared") {
		t.Fatalf("own caches warned of sharing: %q", errb.String())
	}
	b, _ := os.ReadFile(filepath.Join(res, bench.ResultsName))
	var n int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r bench.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		n++
		if r.InstanceID == "Go__999" {
			if r.Error == "" || r.Resolved {
				t.Errorf("%+v", r)
			}
			continue
		}
		want := r.Arm == "gold"
		if r.Resolved != want || (r.Arm == "broken") == r.PatchApplied || r.Ledger.Root == "" {
			t.Errorf("%+v", r)
		}
	}
	if n != 5 {
		t.Fatalf("%d results", n)
	}
	// The verdicts' ledger verifies.
	out.Reset()
	lds, _ := filepath.Glob(filepath.Join(res, "ledgers", "*", "*", "r1"))
	if len(lds) != 4 {
		t.Fatalf("ledgers %v", lds)
	}
	_, vkey, err := ledger.InstallationKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lds {
		if _, _, err := ledger.Verify(l, vkey); err != nil {
			t.Fatalf("ledger verify %s: %v", l, err)
		}
	}
	out.Reset()
	errb.Reset()
	code = run([]string{"bench", "grade", "--tasks", filepath.Join(set, "tasks.jsonl"), "--predictions", pf, "--out", res, "--grade-cache", "shared"}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "(0 now, 5 before)") {
		t.Fatalf("again: %d %q", code, out.String())
	}
	if !strings.Contains(errb.String(), "warning: --grade-cache shared") || !strings.Contains(errb.String(), "a failing test passes") {
		t.Fatalf("shared caches without a warning: %q", errb.String())
	}
}

// --env task needs every task's own image: a task set without them is a
// usage error that names them, before anything runs.
func TestBenchEnvTaskNeedsImages(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "base"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	tasks := filepath.Join(dir, "tasks.jsonl")
	line := `{"instance_id":"x-1","repo":"repo","base_commit":"HEAD","problem_statement":"p","FAIL_TO_PASS":["t"],"PASS_TO_PASS":[]}` + "\n"
	with := `{"instance_id":"x-2","repo":"repo","base_commit":"HEAD","problem_statement":"p","FAIL_TO_PASS":["t"],"PASS_TO_PASS":[],"image":"example.com/x:2"}` + "\n"
	if err := os.WriteFile(tasks, []byte(line+with), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"bench", "run", "--arm", "a=sim:m", "--env", "task", "--tasks", tasks, "--out", filepath.Join(dir, "out")}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "1 of 2 tasks have none") || !strings.Contains(errb.String(), "x-1") {
		t.Errorf("%d %q", code, errb.String())
	}
}

// --work must be a directory of this user's that no one else can write.
func TestMakeWorkDir(t *testing.T) {
	dir := t.TempDir()
	if err := makeWorkDir(filepath.Join(dir, "a", "b")); err != nil {
		t.Errorf("a new directory: %v", err)
	}
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if err := makeWorkDir(open); err == nil || !strings.Contains(err.Error(), "may be written by other users") {
		t.Errorf("a world-writable directory: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	if err := makeWorkDir(file); err == nil {
		t.Errorf("a file: no error")
	}
}

// bench status answers within its timeout from what it can read: the
// results file's record, and that the queue could not be reached.
func TestBenchStatusUnreachable(t *testing.T) {
	dir := t.TempDir()
	qi, _ := json.Marshal(map[string]string{"url": "nats://127.0.0.1:1", "name": "bench-x"})
	if err := os.WriteFile(filepath.Join(dir, "queue.json"), qi, 0o600); err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(bench.Result{InstanceID: "i", Arm: "a", Repeat: 1, Error: "boom"})
	if err := os.WriteFile(filepath.Join(dir, bench.ResultsName), append(line, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"bench", "status", dir, "--timeout", "2s"}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "results: 1 recorded in results.jsonl (1 failed)") || !strings.Contains(errb.String(), "the queue") {
		t.Errorf("status: %d %q %q", code, out.String(), errb.String())
	}
}

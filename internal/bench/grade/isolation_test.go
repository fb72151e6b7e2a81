package grade_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/validate"
)

// newFile is a diff that adds name with content.
func newFile(name, content string) string {
	lines := strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", name, name, name, len(lines))
	for _, l := range lines {
		b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}

// others lays out, under base (outside /tmp, as a --work and --out on a
// disk are), what a benchmark has beside a grading: --out with every
// run's predictions and verdicts, another run's agent workspace under
// --work, and another grading in the grader's directory with its
// patch, its checkout and its private build cache. It returns the
// directories and the files a graded patch must not read.
func others(t *testing.T, base string) (work, out, graderDir string, secrets []string) {
	t.Helper()
	work, out = filepath.Join(base, "work"), filepath.Join(base, "out")
	graderDir = filepath.Join(work, "truss-bench-grading-1")
	files := map[string]string{
		filepath.Join(out, "predictions.jsonl"):                                    `{"instance_id":"t1","model_patch":"diff --git a/calc.go ... (a resolving patch)"}` + "\n",
		filepath.Join(out, "results.jsonl"):                                        `{"instance_id":"t1","resolved":true}` + "\n",
		filepath.Join(work, "truss-bench-run-2", "repo", "fix.go"):                 "package calc // another agent's work in progress\n",
		filepath.Join(graderDir, "grade-t1-3", "model.patch"):                      "diff --git a/calc.go b/calc.go\n",
		filepath.Join(graderDir, "grade-t1-3", "repo", "calc.go"):                  "package calc // another grading's checkout\n",
		filepath.Join(graderDir, "grade-t1-3", "tmp-4", "cache", "go-build", "zz"): "another grading's build cache entry\n",
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, p)
	}
	// The directories too: listing them would name the files.
	secrets = append(secrets, filepath.Join(graderDir, "grade-t1-3"), filepath.Join(work, "truss-bench-run-2"))
	return work, out, graderDir, secrets
}

// probes is a patch that, from inside the grading, tries to read each of
// secrets before the tests load: a Go TestMain (the tests then fail) and
// a Python script the test command runs first (the tests then do not
// run). Each exits non-zero naming what it read.
func probes(secrets []string) string {
	var goList, pyList strings.Builder
	for _, s := range secrets {
		fmt.Fprintf(&goList, "\t\t%q,\n", s)
		fmt.Fprintf(&pyList, "    %q,\n", s)
	}
	goProbe := `package calc

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	for _, p := range []string{
` + goList.String() + `	} {
		if _, err := os.ReadFile(p); err == nil {
			fmt.Println("TestMain read", p)
			os.Exit(3)
		}
		if ents, err := os.ReadDir(p); err == nil && len(ents) > 0 {
			fmt.Println("TestMain listed", p)
			os.Exit(3)
		}
	}
	os.Exit(m.Run())
}
`
	pyProbe := `import os
import sys

for p in [
` + pyList.String() + `]:
    try:
        if os.path.isdir(p):
            if os.listdir(p):
                print("probe.py listed", p)
                sys.exit(3)
        else:
            with open(p) as f:
                f.read()
            print("probe.py read", p)
            sys.exit(3)
    except OSError:
        pass
`
	return newFile("main_test.go", goProbe) + newFile("probe.py", pyProbe)
}

// python is a Python 3 the sandbox runs without the user's home (not a
// pyenv shim), or "".
func python() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	if p, err := exec.LookPath("python3"); err == nil && !strings.Contains(p, "shims") {
		return p
	}
	return ""
}

// A grading sees only its own checkout: a graded patch's code (TestMain, a
// script the test command runs) reads nothing of --out, of another run's
// workspace under --work, or of another grading's checkout, patch or
// build cache in the grader's directory, all outside /tmp; the honest
// tests then pass. Without the covers (a Shells that cannot hide) the
// same patch reads them and is not resolved: the probe works.
func TestGradeSeesOnlyItsOwnCheckout(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	set := generated(t)
	ctx := context.Background()
	// Not under /tmp, which a grading's sandbox replaces with its own:
	// directories on a disk, as $HOME/bench/work and $HOME/bench/out are.
	base, err := os.MkdirTemp(".", ".iso-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if base, err = filepath.Abs(base); err != nil {
		t.Fatal(err)
	}
	work, out, graderDir, secrets := others(t, base)
	task := set.Tasks[0]
	task.TestCmd = "go test -json ./..."
	if py := python(); py != "" {
		task.TestCmd = py + " probe.py && " + task.TestCmd
	} else {
		t.Log("no python3 outside a shim: the Go probe alone")
	}
	patch := task.Patch + probes(secrets)
	for _, tc := range []struct {
		name     string
		shells   grade.Shells
		resolved bool
	}{
		{"covered", &grade.Sandboxed{Covered: []string{work, out}}, true},
		{"not covered", openOnly{&grade.Sandboxed{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &grade.Grader{Shells: tc.shells, Dir: graderDir}
			v, err := g.Grade(ctx, &task, patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.Resolved != tc.resolved {
				t.Fatalf("resolved %v, want %v (%v)\n%s", v.Resolved, tc.resolved, v.Tests, v.Log)
			}
			if !tc.resolved && !strings.Contains(string(v.Log), " read ") && !strings.Contains(string(v.Log), " listed ") {
				t.Fatalf("not resolved, but no probe read anything:\n%s", v.Log)
			}
		})
	}
	// The host still has every file: the covers hid them, nothing
	// removed them.
	for _, s := range secrets {
		if _, err := os.Stat(s); err != nil {
			t.Fatal(err)
		}
	}
}

// A shell's own checkout, temporary directory and caches stay writable
// under a cover; what a command writes beside them (in the covered
// directory) goes nowhere.
func TestCoveredKeepsOwnDirectories(t *testing.T) {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 || !host.Seccomp {
		t.Skip("this host cannot enforce the sandbox")
	}
	base, err := os.MkdirTemp(".", ".iso-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if base, err = filepath.Abs(base); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(base, "g", "grade-x-1", "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	var sh validate.Shell
	if sh, err = (&grade.Sandboxed{}).OpenHiding(repo, nil, nil, []string{filepath.Join(base, "g")}, nil); err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	r := sh.Run(context.Background(), `set -e; echo own > own.txt; echo tmp > "$TMPDIR/t"; cat "$TMPDIR/t"; ls ..; if echo x > ../beside 2>/dev/null; then echo wrote-beside; fi`, 0)
	if r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("exit %v: %s %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout, "wrote-beside") {
		t.Fatalf("a command wrote beside its checkout: %s", r.Stdout)
	}
	if b, err := os.ReadFile(filepath.Join(repo, "own.txt")); err != nil || string(b) != "own\n" {
		t.Fatalf("own.txt = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(base, "g", "grade-x-1", "beside")); err == nil {
		t.Fatal("a command wrote beside its checkout")
	}
}

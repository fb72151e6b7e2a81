package grade

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/validate"
)

// writeTree writes files (slash path: content; "->target" makes a
// symbolic link) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The scan sees test code and configuration at any depth, compares go.mod
// by its go, toolchain and replace lines (a dependency bump is not test
// configuration) unless it is the detected-from file, and skips .git.
func TestConfigChanges(t *testing.T) {
	const mod = "module example.com/m\n\ngo 1.22\n\nrequire golang.org/x/text v0.1.0\n"
	base := map[string]string{
		"go.mod": mod, "sub/go.mod": mod, "Makefile": "test:\n\tgo test ./...\n", "a_test.go": "package m\n",
		"setup.cfg": "[metadata]\n", "README.md": "x\n",
	}
	for _, tc := range []struct {
		name    string
		change  map[string]string
		remove  []string
		marker  string
		inPatch []string
		config  []string
		tests   []string
		notes   []string
	}{
		{name: "nothing"},
		{name: "a dependency bump", change: map[string]string{"sub/go.mod": strings.Replace(mod, "v0.1.0", "v0.2.0", 1)}},
		{name: "the marker's dependency bump", change: map[string]string{"go.mod": strings.Replace(mod, "v0.1.0", "v0.2.0", 1)}, marker: "go.mod",
			config: []string{"go.mod"}, notes: []string{"the model's patch changed go.mod, which the test command (go test -json ./...) was detected from"}},
		{name: "a replace line", change: map[string]string{"sub/go.mod": mod + "replace golang.org/x/text => ./text\n"},
			config: []string{"sub/go.mod"}, notes: []string{"the model's patch changed sub/go.mod, which configures the tests"}},
		{name: "a toolchain line", change: map[string]string{"go.mod": mod + "toolchain go1.99.0\n"}, marker: "Makefile",
			config: []string{"go.mod"}, notes: []string{"the model's patch changed go.mod, which configures the tests"}},
		{name: "a nested pytest.ini", change: map[string]string{"pkg/pytest.ini": "[pytest]\naddopts = -p x\n"},
			config: []string{"pkg/pytest.ini"}, notes: []string{"the model's patch added pkg/pytest.ini, which configures the tests"}},
		// Under tests/ it is test code, set aside: not flagged as well.
		{name: "a pytest.ini under tests", change: map[string]string{"tests/pytest.ini": "[pytest]\naddopts = -p x\n"},
			tests: []string{"tests/pytest.ini"}},
		{name: "a plugin's entry point", change: map[string]string{"src/x.egg-info/entry_points.txt": "[pytest11]\nforged = forged\n", "src/sitecustomize.py": "import forged\n"},
			config: []string{"src/sitecustomize.py", "src/x.egg-info/entry_points.txt"}, notes: []string{
				"the model's patch added src/sitecustomize.py, which configures the tests",
				"the model's patch added src/x.egg-info/entry_points.txt, which configures the tests"}},
		{name: "setup.cfg deleted", remove: []string{"setup.cfg"},
			config: []string{"setup.cfg"}, notes: []string{"the model's patch deleted setup.cfg, which configures the tests"}},
		{name: "setup.cfg in the test patch", change: map[string]string{"setup.cfg": "[tool:pytest]\naddopts = -p x\n"}, inPatch: []string{"setup.cfg"}},
		{name: "the Makefile", change: map[string]string{"Makefile": "test:\n\ttrue\n"}, marker: "Makefile",
			config: []string{"Makefile"}, notes: []string{"the model's patch changed Makefile, which the test command (go test -json ./...) was detected from"}},
		{name: "a Makefile not detected from", change: map[string]string{"Makefile": "test:\n\ttrue\n"}},
		{name: "test code made a link", change: map[string]string{"a_test.go": "->/etc/passwd", "b/conftest.py": "x\n", ".git/x_test.go": "x"},
			tests: []string{"a_test.go", "b/conftest.py"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := scanTree(writeTree(t, base))
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]string{}
			for k, v := range base {
				if !slices.Contains(tc.remove, k) {
					files[k] = v
				}
			}
			for k, v := range tc.change {
				files[k] = v
			}
			after, err := scanTree(writeTree(t, files))
			if err != nil {
				t.Fatal(err)
			}
			p := &Prepared{tree: before}
			p.env.Test = detectedGoTest
			for _, f := range tc.inPatch {
				p.restore = append(p.restore, baseFile{path: f})
			}
			config, notes := p.configChanges(after, tc.marker)
			if !slices.Equal(config, tc.config) || !slices.Equal(notes, tc.notes) {
				t.Errorf("config %q notes %q, want %q %q", config, notes, tc.config, tc.notes)
			}
			if tests := changed(before, after, validate.IsTestCode, false); !slices.Equal(tests, tc.tests) {
				t.Errorf("test code changed %q, want %q", tests, tc.tests)
			}
		})
	}
}

// fakeShell answers each go test command with canned output, by whether it
// asks for the absent test or the listed ones.
type fakeShell struct {
	absent, listed string
	// canary is the action the binaries report for the grader's failing
	// test ("fail" when honest, "" for none); inRun is the canary written
	// before the full run (in m/a), the others' is any other name asked.
	canary, inRun string
	// listFails: go list prints nothing (a go.mod broken after the run).
	listFails bool
	cmds      []string
}

// runPattern is a go test command's -run pattern's names.
var runPattern = regexp.MustCompile(`-run '\^\(([^)]*)\)\$'`)

func (f *fakeShell) Run(_ context.Context, cmd string, _ time.Duration) tool.Result {
	f.cmds = append(f.cmds, cmd)
	zero := 0
	out := ""
	switch {
	case strings.Contains(cmd, "TestTrussAbsent"):
		out = f.absent
	case strings.HasPrefix(cmd, "go list ") && f.listFails:
		out = ""
	case strings.HasPrefix(cmd, "go list "):
		out = "m/a\t/ws/a\ta\nm/b\t/ws/b\tb\n"
	case runPattern.MatchString(cmd):
		out = f.listed
		for _, name := range strings.Split(runPattern.FindStringSubmatch(cmd)[1], "|") {
			if name == "TestA" || name == "TestB" || f.canary == "" {
				continue
			}
			for _, pkg := range []string{"m/a", "m/b"} {
				if (pkg == "m/a" && f.inRun != "") == (name == f.inRun) {
					out += ev("run", pkg, name) + ev(f.canary, pkg, name)
				}
			}
		}
	}
	return tool.Result{Stdout: out, ExitCode: &zero}
}

func (f *fakeShell) Close() error { return nil }

// ev is a test2json line.
func ev(action, pkg, test string) string {
	if test == "" {
		return `{"Action":"` + action + `","Package":"` + pkg + `"}` + "\n"
	}
	return `{"Action":"` + action + `","Package":"` + pkg + `","Test":"` + test + `"}` + "\n"
}

func TestGoCheck(t *testing.T) {
	full := ev("run", "m/a", "TestA") + ev("pass", "m/a", "TestA") + ev("run", "m/a", "TestA/sub") + ev("pass", "m/a", "TestA/sub") +
		ev("pass", "m/b", "TestB") + ev("fail", "m/b", "TestC") + ev("pass", "m/a", "") + ev("fail", "m/b", "")
	honestAbsent := ev("start", "m/a", "") + ev("pass", "m/a", "") + ev("pass", "m/b", "")
	honestListed := ev("run", "m/a", "TestA") + ev("run", "m/a", "TestA/sub") + ev("pass", "m/a", "TestA/sub") + ev("pass", "m/a", "TestA") +
		ev("pass", "m/b", "TestB") + ev("pass", "m/a", "") + ev("pass", "m/b", "")
	listed := map[string]string{"TestA": bench.TestPassed, "TestA/sub": bench.TestPassed, "m/b.TestB": bench.TestPassed, "TestC": bench.TestFailed}
	const inRun = "TestAEmpty"
	for _, tc := range []struct {
		name             string
		absent, listed   string
		untrusted, fails []string
		canary           string
		listFails        bool
		// full: the full run's canary events in m/a, written before it
		// ("" for none written).
		full string
	}{
		// The canary written before the full run in m/a (a package of the
		// test patch), and after it in m/b.
		{"honest, with the canary in the full run", honestAbsent, honestListed, nil, nil, "fail", false, "fail"},
		// A forger that records its binary's tests on their first run
		// (the full run) and turns their failures into passes.
		{"passes the canary in the full run", honestAbsent, honestListed, []string{"m/a"}, []string{"TestA", "TestA/sub"}, "fail", false, "pass"},
		{"does not report the canary in the full run", honestAbsent, honestListed, []string{"m/a"}, []string{"TestA", "TestA/sub"}, "fail", false, "none"},
		// A forger that spares the canary when asked again.
		{"passes the canary asked again", honestAbsent, honestListed, []string{"m/a", "m/b"}, []string{"TestA", "TestA/sub", "m/b.TestB"}, "pass", false, "fail"},
		{"honest", honestAbsent, honestListed, nil, nil, "fail", false, ""},
		// A forger that re-runs its binary and turns every failure into
		// a pass needs no test's name: the grader's failing test passes.
		{"passes the grader's failing test", honestAbsent, honestListed, []string{"m/a", "m/b"}, []string{"TestA", "TestA/sub", "m/b.TestB"}, "pass", false, ""},
		{"does not report the grader's failing test", honestAbsent, honestListed, []string{"m/a", "m/b"}, []string{"TestA", "TestA/sub", "m/b.TestB"}, "", false, ""},
		{"reports the absent test", ev("run", "m/a", "TestTrussAbsentX") + ev("pass", "m/a", "") + ev("pass", "m/b", ""), honestListed,
			[]string{"m/a"}, []string{"TestA", "TestA/sub"}, "fail", false, ""},
		{"reports a listed test when asked for none", ev("pass", "m/b", "TestB") + ev("pass", "m/a", "") + ev("pass", "m/b", ""), honestListed,
			[]string{"m/b"}, []string{"m/b.TestB"}, "fail", false, ""},
		{"does not pass when asked for none", ev("pass", "m/a", ""), honestListed, []string{"m/b"}, []string{"m/b.TestB"}, "fail", false, ""},
		{"reports a test not asked for", honestAbsent, honestListed + ev("pass", "m/b", "TestC"), []string{"m/b"}, []string{"m/b.TestB"}, "fail", false, ""},
		{"a package not asked for", honestAbsent, honestListed + ev("pass", "m/c", "TestA"), []string{"m/a", "m/b"}, []string{"TestA", "TestA/sub", "m/b.TestB"}, "fail", false, ""},
		// A forger that breaks go list after the full run leaves the
		// grader's failing test unasked: the packages are not trusted.
		{"go list fails", honestAbsent, honestListed, []string{"m/a", "m/b"}, []string{"TestA", "TestA/sub", "m/b.TestB"}, "fail", true, ""},
		{"fails alone", honestAbsent, strings.Replace(honestListed, ev("pass", "m/a", "TestA/sub"), ev("fail", "m/a", "TestA/sub"), 1), nil, []string{"TestA/sub"}, "fail", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := &fakeShell{absent: tc.absent, listed: tc.listed, canary: tc.canary, listFails: tc.listFails}
			tests := map[string]string{}
			for k, v := range listed {
				tests[k] = v
			}
			var can goCanary
			out := full
			if tc.full != "" {
				can = goCanary{name: inRun, inRun: []string{"m/a"}}
				sh.inRun = inRun
				if tc.full != "none" {
					out += ev("run", "m/a", inRun) + ev(tc.full, "m/a", inRun)
				}
			}
			res, err := goCheck(context.Background(), sh, out, tests, goHomes{}, can, func() time.Duration { return time.Minute })
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(res.failed)
			if !slices.Equal(res.untrusted, tc.untrusted) || !slices.Equal(res.failed, tc.fails) {
				t.Errorf("untrusted %q failed %q, want %q %q (notes %q)", res.untrusted, res.failed, tc.untrusted, tc.fails, res.notes)
			}
			// The absent test; go list (for the packages without the
			// canary) and the listed tests with the canaries, written
			// beside their code and removed after, in one command.
			if len(sh.cmds) != 3 || !strings.Contains(sh.cmds[0], "-count=1") || !strings.Contains(sh.cmds[0], "TestTrussAbsent") ||
				!strings.HasPrefix(sh.cmds[1], "go list ") || !runPattern.MatchString(sh.cmds[2]) || !strings.Contains(sh.cmds[2], "$' m/a m/b") {
				t.Fatalf("commands %q", sh.cmds)
			}
			names := strings.Split(runPattern.FindStringSubmatch(sh.cmds[2])[1], "|")
			want := 3
			switch {
			case tc.listFails:
				want = 2
			case tc.full != "":
				want = 4
			}
			if !slices.Contains(names, "TestA") || !slices.Contains(names, "TestB") || len(names) != want || tc.full != "" && !slices.Contains(names, inRun) {
				t.Errorf("asked for %q", names)
			}
			_, rm, _ := strings.Cut(sh.cmds[2], "; rm -f ")
			if !tc.listFails && (!strings.Contains(sh.cmds[2], "> '/ws/b/") || !strings.Contains(rm, "'/ws/b/") ||
				(tc.full == "") != strings.Contains(sh.cmds[2], "> '/ws/a/")) {
				t.Errorf("the grader's failing test: commands %q", sh.cmds)
			}
		})
	}
	// Nothing listed passed: nothing is asked.
	sh := &fakeShell{}
	if res, err := goCheck(context.Background(), sh, full, map[string]string{"TestC": bench.TestFailed}, goHomes{}, goCanary{}, nil); err != nil || len(sh.cmds) != 0 || len(res.failed) != 0 {
		t.Errorf("%v %q %+v", err, sh.cmds, res)
	}
}

// goCheck reads what the graded code printed: whatever it is, it does not
// panic, and a listed test it keeps passed passed in the full run and is
// not in an untrusted package.
func FuzzGoCheck(f *testing.F) {
	f.Add(ev("pass", "m/a", "TestA")+ev("pass", "m/a", ""), ev("pass", "m/a", ""), ev("pass", "m/a", "TestA"))
	f.Add(ev("pass", "m a;rm", "TestA"), "", "")
	f.Add(ev("pass", "m/a", "TestA"), ev("run", "m/a", "TestZ"), "{")
	f.Fuzz(func(t *testing.T, full, absent, listed string) {
		tests := map[string]string{"TestA": bench.TestPassed, "m/a.TestB": bench.TestPassed}
		res, err := goCheck(context.Background(), &fakeShell{absent: absent, listed: listed}, full, tests, goHomes{}, goCanary{name: "TestAEmpty", inRun: []string{"m/a"}}, func() time.Duration { return time.Minute })
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range res.failed {
			if _, ok := tests[name]; !ok {
				t.Fatalf("failed %q, not listed", name)
			}
		}
	})
}

func FuzzReadBatchObject(f *testing.F) {
	f.Add("abc blob 3\nxyz\n")
	f.Add("abc blob -1\n")
	f.Add("abc blob 3\nxyzq")
	f.Fuzz(func(t *testing.T, in string) {
		data, err := readBatchObject(bufio.NewReader(strings.NewReader(in)))
		if err == nil && !strings.Contains(in, string(data)) {
			t.Fatalf("read %q from %q", data, in)
		}
	})
}

func FuzzModDirectives(f *testing.F) {
	f.Add("module m\n\ngo 1.22\n\nreplace a => ./b\n")
	f.Add("module m\ntoolchain go1.30\n")
	f.Add("not a go.mod {")
	f.Fuzz(func(t *testing.T, in string) {
		d := validate.ModDirectives("go.mod", []byte(in))
		// A go.mod that parses is reduced to its directives, each a line
		// of its own; one that does not is taken whole.
		if rest, ok := strings.CutPrefix(d, "unparsed\x00"); ok {
			if rest != in {
				t.Fatalf("unparsed %q is not the input %q", rest, in)
			}
			return
		}
		for _, l := range strings.Split(strings.TrimSuffix(d, "\n"), "\n") {
			if l != "" && !strings.HasPrefix(l, "go ") && !strings.HasPrefix(l, "toolchain ") && !strings.HasPrefix(l, "replace ") {
				t.Fatalf("line %q of %q", l, d)
			}
		}
	})
}

// BenchmarkScanTree scans a checkout of 1,000 files, 200 of them test code
// of 4 KiB, as Prepare (on the base) and Grade (after the model's patch)
// each do once.
func BenchmarkScanTree(b *testing.B) {
	dir := b.TempDir()
	body := strings.Repeat("x", 4096)
	for i := range 1000 {
		name := fmt.Sprintf("pkg%02d/file%03d.go", i%50, i)
		if i%5 == 0 {
			name = fmt.Sprintf("pkg%02d/file%03d_test.go", i%50, i)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		s, err := scanTree(dir)
		if err != nil || len(s) != 200 {
			b.Fatalf("%v %d", err, len(s))
		}
	}
}

// BenchmarkScanTreeGoSource scans a real repository's tree, the Go
// distribution's own src (11,000 files, a quarter of them test code or
// testdata, which the scan reads whole), as a grading does twice.
func BenchmarkScanTreeGoSource(b *testing.B) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skip("no go:", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "src")
	if _, err := os.Stat(dir); err != nil {
		b.Skip("no Go source:", err)
	}
	n := 0
	for b.Loop() {
		s, err := scanTree(dir)
		if err != nil {
			b.Fatal(err)
		}
		n = len(s)
	}
	b.ReportMetric(float64(n), "watched")
}

// TestCanaryFileIsBuilt: the canary's file name never ends in a GOOS or
// GOARCH word, which would leave it out of the build (a listed TestWasm
// gave equal_wasm_test.go, and an honest fix was graded untrusted).
func TestCanaryFileIsBuilt(t *testing.T) {
	for file, want := range map[string]bool{
		"equal_wasm_test.go": true, "add_linux_test.go": true, "sub_arm64_test.go": true,
		"wasm_test.go": false, "add_empty_test.go": false, "linux_add_test.go": false,
	} {
		if got := buildConstrained(file); got != want {
			t.Errorf("buildConstrained(%q) = %v, want %v", file, got, want)
		}
	}
	for range 500 {
		name := newCanaryName([]string{"TestWasm", "TestLinux", "TestArm64"}, func(string) bool { return false })
		if f := canaryFile(name); buildConstrained(f) {
			t.Fatalf("canary %s in %s: built for one platform only", name, f)
		}
	}
}

// TestGoVerdictsEveryHome: a bare name declared in two of the test patch's
// packages passes only if it passed in both; missing in one (its package
// did not build) is failed, whatever the other says. A name no test-patch
// package declares passes only if it passed in every home that ran it: a
// home that did not build, or ran and did not report it, fails it; one
// that could not run it (an unbuilt file, a nested module outside the run)
// is no evidence. A qualified name and a name without homes read as
// before.
func TestGoVerdictsEveryHome(t *testing.T) {
	ev := func(action, pkg, test string) string {
		return fmt.Sprintf(`{"Action":%q,"Package":%q,"Test":%q}`+"\n", action, pkg, test)
	}
	homes := goHomes{
		patch: map[string][]string{"TestSub": {"m/calc", "m/other"}},
		tree: map[string][]treeHome{"TestNew": {
			{pkg: "m/a", built: true, root: true},
			{pkg: "m/b", built: true, root: true},
			{pkg: "m/tagged", root: true},
			{pkg: "n/tools", built: true},
		}},
	}
	listed := []string{"TestSub", "m/calc.TestMul", "TestElse", "TestNew", "TestNew/x"}
	both := ev("pass", "m/a", "TestNew") + ev("pass", "m/a", "TestNew/x") + ev("pass", "m/b", "TestNew") + ev("pass", "m/b", "TestNew/x")
	// other's TestMain runs no test unless asked; tagged's has none.
	mainHomes := goHomes{tree: map[string][]treeHome{"TestNew": {
		{pkg: "m/a", built: true, root: true},
		{pkg: "m/other", built: true, root: true, testMain: true},
	}}}
	for _, tc := range []struct {
		name  string
		out   string
		whole bool
		want  Verdicts
		homes *goHomes
		note  string
	}{
		{"a TestMain that ran no test", both + ev("pass", "m/other", ""), true, Verdicts{"TestNew": "passed", "TestNew/x": "passed"}, &mainHomes, ""},
		{"a TestMain's package that failed", both + ev("fail", "m/other", ""), true, Verdicts{"TestNew": "failed", "TestNew/x": "failed"}, &mainHomes,
			"TestNew failed in the packages whose test files declare it: m/other (its package failed without reporting it"},
		{"a TestMain's package that ran other tests", both + ev("pass", "m/other", "TestOther") + ev("pass", "m/other", ""), true, Verdicts{"TestNew": "failed", "TestNew/x": "failed"}, &mainHomes,
			"m/other (it ran with the declaring file built and did not report it)"},
		{"passed in both", ev("pass", "m/calc", "TestSub") + ev("pass", "m/other", "TestSub"), false, Verdicts{"TestSub": "passed"}, nil, ""},
		{"missing in one", ev("fail", "m/calc", "") + ev("pass", "m/other", "TestSub"), false, Verdicts{"TestSub": "failed"}, nil, ""},
		{"failed in one", ev("fail", "m/calc", "TestSub") + ev("pass", "m/other", "TestSub"), false, Verdicts{"TestSub": "failed"}, nil, ""},
		{"elsewhere only", ev("pass", "m/third", "TestSub"), false, Verdicts{}, nil, ""},
		{"qualified and unhomed", ev("pass", "m/calc", "TestMul") + ev("pass", "m/x", "TestElse"), false, Verdicts{"m/calc.TestMul": "passed", "TestElse": "passed"}, nil, ""},

		{"in every home that ran", both + ev("pass", "m/tagged", "TestOther"), true, Verdicts{"TestNew": "passed", "TestNew/x": "passed"}, nil, ""},
		{"a home that did not build", ev("fail", "m/a", "") + ev("pass", "m/b", "TestNew") + ev("pass", "m/b", "TestNew/x"), true, Verdicts{"TestNew": "failed", "TestNew/x": "failed"}, nil, ""},
		{"a home that ran without it", ev("pass", "m/a", "TestOther") + ev("pass", "m/a", "") + ev("pass", "m/b", "TestNew") + ev("pass", "m/b", "TestNew/x"), false,
			Verdicts{"TestNew": "failed", "TestNew/x": "failed"}, nil, ""},
		{"a root home kept out of the whole run", ev("pass", "m/b", "TestNew") + ev("pass", "m/b", "TestNew/x") + ev("pass", "m/b", ""), true, Verdicts{"TestNew": "failed", "TestNew/x": "failed"}, nil, ""},
		{"a home the task's command did not ask", ev("pass", "m/b", "TestNew") + ev("pass", "m/b", "TestNew/x") + ev("pass", "m/b", ""), false, Verdicts{"TestNew": "passed", "TestNew/x": "passed"}, nil, ""},
		// Its TestNew failed without reporting the subtest x: it may have
		// stopped before it, so it fails TestNew/x too.
		{"a nested module run and failed", both + ev("fail", "n/tools", "TestNew"), true, Verdicts{"TestNew": "failed", "TestNew/x": "failed"}, nil, ""},
		// The P2P subtest's home failed its parent test before the
		// subtest ran; a namesake elsewhere passed it.
		{"a home whose parent test failed", ev("pass", "m/a", "TestNew") + ev("pass", "m/a", "TestNew/x") + ev("fail", "m/b", "TestNew") + ev("fail", "m/b", ""), true,
			Verdicts{"TestNew": "failed", "TestNew/x": "failed"}, nil, ""},
		{"a home whose parent test skipped", ev("pass", "m/a", "TestNew") + ev("pass", "m/a", "TestNew/x") + ev("skip", "m/b", "TestNew") + ev("pass", "m/b", ""), true,
			Verdicts{"TestNew": "failed", "TestNew/x": "failed"}, nil, ""},
		{"a namesake without the subtest", both + ev("pass", "n/tools", "TestNew") + ev("pass", "n/tools", ""), true, Verdicts{"TestNew": "passed", "TestNew/x": "passed"}, nil, ""},
		{"a failed package whose file is not built", both + ev("fail", "m/tagged", "TestOther") + ev("fail", "m/tagged", ""), true, Verdicts{"TestNew": "failed", "TestNew/x": "failed"}, nil, ""},
		{"a non-home's pass", ev("pass", "m/c", "TestNew"), false, Verdicts{}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := homes
			if tc.homes != nil {
				h = *tc.homes
			}
			got, notes := goVerdicts(tc.out, listed, h, tc.whole)
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if tc.note != "" && !strings.Contains(strings.Join(notes, "\n"), tc.note) {
				t.Errorf("notes %q, want one with %q", notes, tc.note)
			}
		})
	}
}

// TestFindTreeHomes: a name's homes are the packages whose test files
// declare it as a test, with their import paths in the root module or a
// nested one; a file go test does not build here (a build constraint, a
// GOOS in its name) is marked so, and one under a path go.mod's ignore
// directive names is not in the root module's run; a function of that
// name that is not a test, a method, a comment, testdata and vendor are
// not homes.
func TestFindTreeHomes(t *testing.T) {
	test := func(pkg, name string) string {
		return "package " + pkg + "\n\nimport \"testing\"\n\nfunc " + name + "(t *testing.T) {}\n"
	}
	ws := writeTree(t, map[string]string{
		"go.mod":                        "module m\n",
		"root_test.go":                  test("m", "TestNew"),
		"a/a_test.go":                   test("a_test", "TestNew"),
		"b/b_test.go":                   "package b\n\nimport tt \"testing\"\n\nfunc TestNew(t *tt.T) {}\n",
		"c/c_test.go":                   "package c\n\nimport . \"testing\"\n\nfunc TestNew(t *T) {}\n",
		"win/x_windows_test.go":         test("win", "TestNew"),
		"tag/x_test.go":                 "//go:build integration\n\n" + test("tag", "TestNew"),
		"both/x_windows_test.go":        test("both", "TestNew"),
		"both/x_linux_test.go":          test("both", "TestNew"),
		"helper/h_test.go":              "package helper\n\n// func TestNew(t *testing.T) {}\nfunc TestNew() {}\n\ntype S struct{}\n\nfunc (S) TestNew(t *S) {}\n",
		"broken/x_test.go":              "package broken\n\nfunc TestNew(t *testing.T) {\n",
		"tools/go.mod":                  "module example.com/tools\n",
		"tools/lint/lint_test.go":       test("lint", "TestNew"),
		"tools/lint/testdata/x_test.go": test("x", "TestNew"),
		"vendor/v/v_test.go":            test("v", "TestNew"),
		"_old/o_test.go":                test("o", "TestNew"),
		"d/d_test.go":                   test("d", "TestOther"),
		"web/node_modules/x/x_test.go":  test("x", "TestNew"),
		"integ/x_test.go":               test("integ", "TestNew"),
		"integ/main_test.go":            "package integ\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tif os.Getenv(\"INTEGRATION\") != \"\" {\n\t\tos.Exit(m.Run())\n\t}\n}\n",
	})
	files := []string{"root_test.go", "a/a_test.go", "b/b_test.go", "c/c_test.go", "win/x_windows_test.go", "tag/x_test.go",
		"both/x_windows_test.go", "both/x_linux_test.go", "helper/h_test.go", "broken/x_test.go", "tools/lint/lint_test.go",
		"tools/lint/testdata/x_test.go", "vendor/v/v_test.go", "_old/o_test.go", "d/d_test.go", "web/node_modules/x/x_test.go",
		"integ/x_test.go", "integ/main_test.go"}
	got := findTreeHomes(ws, "m", files, []string{"go.mod", "tools/go.mod"}, modIgnores([]byte("module m\n\nignore (\n\tnode_modules\n\t./old\n)\n")), []string{"TestNew"})
	want := []treeHome{
		{pkg: "m", built: true, root: true},
		{pkg: "m/a", built: true, root: true},
		{pkg: "m/b", built: true, root: true},
		{pkg: "m/c", built: true, root: true},
		{pkg: "m/win", root: true},
		{pkg: "m/tag", root: true},
		{pkg: "m/both", built: runtime.GOOS == "linux" || runtime.GOOS == "windows", root: true},
		{pkg: "m/broken", built: true, root: true},
		{pkg: "example.com/tools/lint", built: true},
		// Under a path the root go.mod ignores: not in go test ./....
		{pkg: "m/web/node_modules/x", built: true},
		// Its TestMain may run no test.
		{pkg: "m/integ", built: true, root: true, testMain: true},
	}
	if runtime.GOOS == "windows" {
		want[4].built = true
	}
	if !slices.Equal(got["TestNew"], want) || len(got) != 1 {
		t.Errorf("homes %+v,\nwant %+v", got, want)
	}
}

// TestRestoreFileAndDirectory: the model deleted a base test file and
// added a test file beneath a directory of the same name; restoring the
// base's test code leaves the base file, in either order of the list.
func TestRestoreFileAndDirectory(t *testing.T) {
	for _, reversed := range []bool{false, true} {
		ws := t.TempDir()
		if err := os.MkdirAll(filepath.Join(ws, "calc", "x_test.go"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "calc", "x_test.go", "y_test.go"), []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files := []baseFile{
			{path: "calc/x_test.go", present: true, data: []byte("package calc\n"), perm: 0o644},
			{path: "calc/x_test.go/y_test.go"},
		}
		if reversed {
			files[0], files[1] = files[1], files[0]
		}
		if err := restore(ws, files); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(ws, "calc", "x_test.go"))
		if err != nil || string(data) != "package calc\n" {
			t.Errorf("reversed %v: the base file is %q (%v)", reversed, data, err)
		}
	}
}

// TestPlantCanaryAppends: the canary goes at the end of the test patch's
// own test file when that file imports testing and is built everywhere
// (no file of its own to tell it by), else into a file of its own; the
// removal gives the test file back as it was.
func TestPlantCanaryAppends(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		appended  bool
	}{
		{"plain", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {}\n", true},
		{"import block", "package calc\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\nfunc TestAdd(t *testing.T) { fmt.Sprint() }\n", true},
		{"constrained", "//go:build integration\n\npackage calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {}\n", false},
		{"aliased", "package calc\n\nimport tt \"testing\"\n\nfunc TestAdd(t *tt.T) {}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if err := os.MkdirAll(filepath.Join(ws, "calc"), 0o755); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(ws, "calc", "calc_test.go")
			if err := os.WriteFile(file, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			dirs := []goTestDir{{dir: "calc", importPath: "m/calc", pkgName: "calc", declared: []string{"TestAdd"}, testFile: "calc_test.go"}}
			c, remove := plantCanary(ws, dirs, []string{"TestAdd"})
			if len(c.inRun) != 1 {
				t.Fatalf("canary in %v", c.inRun)
			}
			data, _ := os.ReadFile(file)
			ents, _ := os.ReadDir(filepath.Join(ws, "calc"))
			if got := strings.Contains(string(data), "func "+c.name+"("); got != tc.appended || tc.appended && len(ents) != 1 || !tc.appended && len(ents) != 2 {
				t.Fatalf("appended %v (want %v), %d files in the package\n%s", got, tc.appended, len(ents), data)
			}
			if tc.appended {
				if out, err := exec.Command("gofmt", "-l", file).CombinedOutput(); err == nil && len(out) > 0 {
					t.Errorf("the test file with the canary is not gofmt's: %s", out)
				}
			}
			remove()
			data, _ = os.ReadFile(file)
			ents, _ = os.ReadDir(filepath.Join(ws, "calc"))
			if string(data) != tc.src || len(ents) != 1 {
				t.Errorf("after the removal: %d files, test file %q", len(ents), data)
			}
		})
	}
}

// The setup commands run after the test code is put in place: what they
// change of it is found by scanning before and after them. A file the test
// patch touches counts whatever its kind (a golden file), a test file
// anywhere counts when changed or deleted, and a new one where the test
// patch's files are; a build's copy of the tests elsewhere does not.
func TestSetupTouchedTests(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup map[string]string // written by the "setup commands"; "" removes
		want  []string
	}{
		{"nothing", nil, nil},
		{"a build's output", map[string]string{"build/lib/tests/test_calc.py": "x", "calc.so": "x", "calc.egg-info/entry_points.txt": "x"}, nil},
		{"the test patch's golden file", map[string]string{"pkg/testdata_golden.json": "{}"}, []string{"pkg/testdata_golden.json"}},
		{"the test patch's test file", map[string]string{"pkg/x_test.go": "package pkg\n"}, []string{"pkg/x_test.go"}},
		{"another test file", map[string]string{"other/y_test.go": "package other\n"}, []string{"other/y_test.go"}},
		{"a deleted test file", map[string]string{"other/y_test.go": ""}, []string{"other/y_test.go"}},
		{"a new test file beside the test patch's", map[string]string{"pkg/sub/conftest.py": "x", "pkg/z_test.go": "x"}, []string{"pkg/sub/conftest.py", "pkg/z_test.go"}},
		{"a conftest.py in the root", map[string]string{"conftest.py": "x"}, []string{"conftest.py"}},
		{"a build's copy of a conftest.py", map[string]string{"build/lib/conftest.py": "x", "build/lib/pkg/conftest.py": "x"}, nil},
		{"test configuration above the tests", map[string]string{"pytest.ini": "[pytest]\naddopts = -p evil\n", "go.work": "go 1.26\n", "pkg/tox.ini": "x"}, []string{"go.work", "pkg/tox.ini", "pytest.ini"}},
		{"a go.mod's directives, not its requirements", map[string]string{"go.mod": "module m\n\ngo 1.26\n\nrequire example.com/x v1.0.0\n"}, nil},
		{"a go.mod's replace line", map[string]string{"go.mod": "module m\n\ngo 1.26\n\nreplace example.com/x => ./x\n"}, []string{"go.mod"}},
		{"test configuration elsewhere", map[string]string{"other/pytest.ini": "x", "build/lib/pytest.ini": "x"}, nil},
		{"an install's entry points", map[string]string{"entry_points.txt": "[console_scripts]\ncalc = calc:main\n", "calc.egg-info/entry_points.txt": "[console_scripts]\ncalc = calc:main\n"}, nil},
		{"a pytest plugin's entry points", map[string]string{"entry_points.txt": "[pytest11]\nevil = evil\n"}, []string{"entry_points.txt"}},
		{"a pytest plugin in an install's egg-info", map[string]string{"calc.egg-info/entry_points.txt": "[pytest11]\nevil = calc._plugin\n"}, []string{"calc.egg-info/entry_points.txt"}},
		{"a conftest.py beside the tests", map[string]string{"calc/conftest.py": "x"}, []string{"calc/conftest.py"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := writeTree(t, map[string]string{
				"pkg/x_test.go":            "package pkg\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n",
				"pkg/testdata_golden.json": "[]",
				"other/y_test.go":          "package other\n\nimport \"testing\"\n\nfunc TestY(t *testing.T) {}\n",
				"go.mod":                   "module m\n\ngo 1.26\n",
			})
			p := &Prepared{ws: ws, restore: []baseFile{{path: "pkg/x_test.go"}, {path: filepath.FromSlash("pkg/testdata_golden.json")}}}
			before, err := p.testScan()
			if err != nil {
				t.Fatal(err)
			}
			for name, content := range tc.setup {
				f := filepath.Join(ws, filepath.FromSlash(name))
				if content == "" {
					if err := os.Remove(f); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := p.setupTouchedTests(before); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

//go:build heavy

package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// probeTest is a test of package b, run by the boundary's go test, that
// tries what code of the model's can try from inside a test binary to
// change what the go command builds or runs after it — in an init of
// non-test code as well as here: rewrite another package's source in the
// workspace, put a file in the go command's work directory (where the
// other packages' test binaries wait to be run) and in the build cache.
// It prints what each try did, and also tries what an honest test does:
// write its TMPDIR and the private /tmp, and run a go build of its own.
const probeTest = `package b

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func try(t *testing.T, what, path string) {
	err := os.WriteFile(path, []byte("package a\n\nfunc Answer() int { return 42 }\n"), 0o644)
	if err == nil {
		t.Logf("PROBE %s: wrote %s", what, path)
		return
	}
	t.Logf("PROBE %s: refused (%v)", what, err)
}

func TestProbe(t *testing.T) {
	try(t, "workspace", "../a/a.go")
	work := filepath.Dir(filepath.Dir(os.Args[0]))
	try(t, "work", filepath.Join(work, "planted"))
	try(t, "exe", os.Args[0]+".new")
	checks := filepath.Dir(filepath.Dir(filepath.Dir(os.TempDir()))) // <checks>/tmp/test-N/tmp
	try(t, "cache", filepath.Join(checks, "caches", "planted"))
	t.Logf("PROBE goflags: %s", os.Getenv("GOFLAGS"))
	try(t, "tmpdir", filepath.Join(os.TempDir(), "x"))
	try(t, "tmp", "/tmp/probe-x")
	out, err := exec.Command("go", "build", "-o", filepath.Join(os.TempDir(), "abin"), "example.com/r/a").CombinedOutput()
	t.Logf("PROBE gobuild: %v %s", err, out)
}
`

// TestBoundaryConfinesTestBinaries: a test binary run by the verification
// boundary's go test can write neither the workspace (a later package's
// sources), nor the go command's work directory (another package's test
// binary), nor the checks' build cache; it can write its own TMPDIR and
// the private /tmp, and a go build it runs works. The buggy package's
// source is unchanged, its test fails, and the verdict and the ledger say
// the test binaries were confined.
func TestBoundaryConfinesTestBinaries(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go")
	}
	// The workspace and Truss's directories outside /tmp, as they are
	// for a user: then the private /tmp is the test binaries' to write.
	d, err := os.MkdirTemp("/var/tmp", "truss-testexec-")
	if err != nil {
		t.Skip("no /var/tmp:", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	t.Setenv("TMPDIR", d)
	// The helper, too: one under /tmp would be bound back in the private
	// /tmp.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(d, "helper")
	if err := os.WriteFile(helper, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRUSS_SANDBOX_HELPER", helper)
	o := fixture(t, `{"steps": [`+runStep(t, "go vet ./... && echo vetted", nil)+`, {"say": "Done."}]}`)
	files := map[string]string{
		"go.mod":      "module example.com/r\n\ngo 1.22\n",
		"a/a.go":      "package a\n\nfunc Answer() int { return 41 }\n",
		"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestAnswer(t *testing.T) {\n\tif Answer() != 42 {\n\t\tt.Fatal(\"not 42\")\n\t}\n}\n",
		"b/b.go":      "package b\n",
		"b/b_test.go": probeTest,
	}
	writeFiles(t, o.Root, files)
	t.Setenv("GOTOOLCHAIN", "local")
	o.ShellTimeout = 10 * time.Minute
	o.Validation.TestCmd = "go test -v -count=1 ./..."
	s := openSandboxed(t, o)
	if s.w.sandbox.Plan().Mechanisms.Landlock < 1 {
		t.Skip("no Landlock: the test binaries are not confined")
	}
	out, err := s.Run(context.Background(), "look")
	if err != nil {
		t.Fatal(err)
	}
	v := out.Verdict
	if v == nil {
		t.Fatal("no verdict")
	}
	probe := map[string]string{}
	for l := range strings.SplitSeq(v.Log, "\n") {
		if _, rest, ok := strings.Cut(l, "PROBE "); ok {
			name, what, _ := strings.Cut(rest, ": ")
			probe[name] = what
		}
	}
	wants := map[string]string{"workspace": "refused", "work": "refused", "exe": "refused", "cache": "refused", "tmpdir": "wrote", "tmp": "wrote", "gobuild": "<nil>"}
	if strings.Contains(probe["goflags"], "sockets:/tmp") {
		// The host's /tmp holds a path the checks keep (a HOME or
		// TMPDIR under /tmp, and the caches in it): there test binaries
		// may make sockets, and write nothing else.
		wants["tmp"] = "refused"
	}
	for name, want := range wants {
		if !strings.HasPrefix(probe[name], want) {
			t.Errorf("probe %s: %q, want %s\n%s", name, probe[name], want, v.Log)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(o.Root, "a", "a.go")); !strings.Contains(string(b), "41") {
		t.Errorf("a.go was changed: %s", b)
	}
	if v.OK || !strings.Contains(v.Log, "--- FAIL: TestAnswer") {
		t.Errorf("the buggy package's test did not fail: %s", v.Log)
	}
	if !v.TestBinariesConfined {
		t.Error("the verdict does not say the test binaries were confined")
	}
	entries, err := os.ReadFile(filepath.Join(out.LedgerDir, "entries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(entries), `"test_binaries_confined":true`) {
		t.Error("the ledger's validation entry does not say the test binaries were confined")
	}
}

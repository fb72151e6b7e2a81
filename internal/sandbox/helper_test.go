//go:build linux

package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
	sbhelper "github.com/trussdev/truss/internal/sandbox/helper"
)

// buildHelper builds cmd/truss-sandbox into a temporary directory.
func buildHelper(t testing.TB) string {
	return buildBinary(t, "github.com/trussdev/truss/cmd/truss-sandbox")
}

// buildBinary builds a command of this module into a temporary directory.
func buildBinary(t testing.TB, pkg string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain")
	}
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// TestSmallHelper runs the sandbox through truss-sandbox, the helper
// binary of its own, and checks that it confines as the built-in one does.
func TestSmallHelper(t *testing.T) {
	helper := buildHelper(t)
	t.Setenv("TRUSS_SANDBOX_HELPER", helper)
	b := newBox(t, sandbox.WorkspaceWrite, false)
	if b.sb.Helper() != helper {
		t.Fatalf("helper %q, want %q", b.sb.Helper(), helper)
	}
	if r := b.run(t, "echo ok > inside.txt && cat inside.txt", 0); r.Err != nil || r.Stdout != "ok\n" {
		t.Fatalf("inside: %+v", r)
	}
	if r := b.run(t, "echo x > "+b.outside+"/x.txt", 0); r.Err == nil || exists(filepath.Join(b.outside, "x.txt")) {
		t.Errorf("a write outside the workspace was not contained: %+v", r)
	}
	if r := b.run(t, "echo x > .git/HEAD", 0); r.Err == nil {
		t.Errorf("a write into .git was not contained: %+v", r)
	}
	if r := b.run(t, "echo $$; cat /proc/1/cmdline | tr '\\0' ' '", 0); r.Err != nil || !strings.Contains(r.Stdout, "bash") {
		t.Errorf("the shell is not PID 1 of its own namespace: %+v", r)
	}
}

// TestHelperSpecFormat: a helper refuses a spec of another format, naming
// both, and runs nothing.
func TestHelperSpecFormat(t *testing.T) {
	helper := buildHelper(t)
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command(helper, sandbox.HelperArg)
	cmd.Env = append(os.Environ(), `TRUSS_SANDBOX_SPEC={"format":99,"argv":["/bin/touch","`+marker+`"]}`)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("reads sandbox spec format %d, but was sent format 99", sbhelper.Format)) {
		t.Fatalf("err %v, output %s", err, out)
	}
	if exists(marker) {
		t.Error("the helper ran the program")
	}
	// Run by hand, it says what it is.
	out, err = exec.Command(helper).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "it is not run by hand") {
		t.Errorf("by hand: %v %s", err, out)
	}
}

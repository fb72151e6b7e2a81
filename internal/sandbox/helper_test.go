//go:build linux

package sandbox_test

import (
	"fmt"
	"io"
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
	if r := b.run(t, "echo $$", 0); r.Err != nil || r.Stdout != "1\n" {
		t.Errorf("the shell is not PID 1 of its own namespace: %+v", r)
	}
	// The shell's own /dev/fd/N works (process substitution at its top
	// level), and so does its commands' view of it, unless it is hidden.
	if r := b.run(t, "while read l; do echo got $l; done < <(echo hi); cat /proc/1/cmdline | tr '\\0' ' '", 0); r.Err != nil || !strings.HasPrefix(r.Stdout, "got hi\n") || !strings.Contains(r.Stdout, "bash") {
		t.Errorf("the shell's own /dev/fd/N or /proc/1: %+v", r)
	}
}

// TestHiddenShell: with HideShell (a grading's shell), the shell's
// commands reach nothing of it through /proc: not the pipe it reads its
// commands from, not its memory; a command that writes a command into
// the shell's input gets no line run after it.
func TestHiddenShell(t *testing.T) {
	helper := buildHelper(t)
	t.Setenv("TRUSS_SANDBOX_HELPER", helper)
	b := newBoxWith(t, sandbox.WorkspaceWrite, false, func(p *sandbox.Policy) { p.HideShell = true })
	if r := b.run(t, `for f in /proc/1/cmdline /proc/1/mem /proc/1/fd/0 /proc/1/fd/10; do if : < $f; then echo "opened $f"; fi; done 2>/dev/null; ls /proc/1 | wc -l`, 0); r.Err != nil || r.Stdout != "0\n" {
		t.Errorf("the shell's /proc/1 is open to its commands: %+v", r)
	}
	b.run(t, `for fd in 0 10 255; do echo 'echo INJECTED' > /proc/1/fd/$fd; done 2>/dev/null; true`, 0)
	if r := b.run(t, "echo next", 0); r.Stdout != "next\n" {
		t.Errorf("a command wrote into the shell's input: %+v", r)
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

// TestStartReady starts programs the way the shell does: through a helper
// confined ahead of need. Each start gets a helper, and namespaces, of its
// own; the program gets its arguments, environment and directory; a
// program that cannot run says why.
func TestStartReady(t *testing.T) {
	b := newBox(t, sandbox.WorkspaceWrite, false)
	start := func(dir string, argv ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "MARK=m1"}
		cmd.Dir = dir
		started, stdin, out, errOut, err := b.sb.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		stdin.Close()
		o, _ := io.ReadAll(out)
		e, _ := io.ReadAll(errOut)
		started.Wait()
		return string(o), string(e), started.ProcessState.ExitCode()
	}
	script := `echo $$ $MARK $TRUSS_SANDBOX_NETWORK_DISABLED "$PWD" "$0"; echo x > "$1/x.txt"; echo y > y.txt; exit 3`
	for i := 0; i < 3; i++ {
		if i > 0 && !b.sb.Ready() {
			t.Fatalf("start %d: no helper ready", i)
		}
		out, errOut, code := start(b.ws, "sh", "-c", script, "arg0", b.outside)
		if want := "1 m1 1 " + b.ws + " arg0\n"; out != want || code != 3 {
			t.Fatalf("start %d: %q (stderr %q), status %d; want %q, status 3", i, out, errOut, code, want)
		}
		if !strings.Contains(errOut, "x.txt") || exists(filepath.Join(b.outside, "x.txt")) {
			t.Fatalf("start %d: a write outside the workspace was not contained (stderr %q)", i, errOut)
		}
		if !exists(filepath.Join(b.ws, "y.txt")) {
			t.Fatalf("start %d: no write in the workspace", i)
		}
	}
	if _, errOut, code := start(b.ws, "no-such-program-4711"); code != 126 || !strings.Contains(errOut, "no-such-program-4711") {
		t.Errorf("a missing program: status %d, %q", code, errOut)
	}
	// Prepare, for a caller that starts the command itself, confines the
	// same way.
	cmd := exec.Command("sh", "-c", `echo $$ > pid.txt; echo "$MARK" > mark.txt; echo x > "$0/x.txt"`, b.outside)
	cmd.Dir = b.ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "MARK=m2"}
	if err := b.sb.Prepare(cmd); err != nil {
		t.Fatal(err)
	}
	// The helper starts with the spec alone in its environment: the
	// loader reads LD_PRELOAD and the like before it is confined.
	if len(cmd.Env) != 1 || !strings.HasPrefix(cmd.Env[0], "TRUSS_SANDBOX_SPEC=") {
		t.Errorf("prepared: the helper starts with %d variables, want the spec alone", len(cmd.Env))
	}
	out, _ := cmd.CombinedOutput()
	if mark, _ := os.ReadFile(filepath.Join(b.ws, "mark.txt")); string(mark) != "m2\n" {
		t.Errorf("prepared: the program's environment did not reach it: MARK=%q", mark)
	}
	if !strings.Contains(string(out), "x.txt") || exists(filepath.Join(b.outside, "x.txt")) {
		t.Fatalf("prepared: a write outside the workspace was not contained: %s", out)
	}
	if pid, _ := os.ReadFile(filepath.Join(b.ws, "pid.txt")); string(pid) != "1\n" {
		t.Errorf("prepared: pid %q, want 1 in a namespace of its own", pid)
	}
	// Close stops the helper kept ready; no start works after it.
	b.sb.Close()
	if b.sb.Ready() {
		t.Error("a helper is still ready after Close")
	}
	if _, _, _, _, err := b.sb.Start(exec.Command("true")); err == nil {
		t.Error("Start after Close worked")
	}
}

// TestStartHelperFails: a helper that cannot confine itself is reported
// by the program's start with what it said, and nothing runs.
func TestStartHelperFails(t *testing.T) {
	helper := filepath.Join(t.TempDir(), "refusing-helper")
	os.WriteFile(helper, []byte("#!/bin/sh\necho 'truss sandbox: mount /proc: operation not permitted' >&2\nexit 126\n"), 0o755)
	t.Setenv("TRUSS_SANDBOX_HELPER", helper)
	b := newBox(t, sandbox.WorkspaceWrite, false)
	marker := filepath.Join(b.ws, "ran")
	cmd := exec.Command("touch", marker)
	started, stdin, out, errOut, err := b.sb.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if b.sb.Ready() {
		t.Error("a helper that ended is reported ready")
	}
	stdin.Close()
	io.Copy(io.Discard, out)
	msg, _ := io.ReadAll(errOut)
	started.Wait()
	if code := started.ProcessState.ExitCode(); code != 126 || !strings.Contains(string(msg), "mount /proc: operation not permitted") {
		t.Errorf("status %d, stderr %q", code, msg)
	}
	if exists(marker) {
		t.Error("the program ran")
	}
	// Through the shell, the same message reaches the model.
	if r := b.run(t, "echo ran", 0); r.Err == nil || !strings.Contains(r.Err.Message, "mount /proc: operation not permitted") {
		t.Errorf("shell: %+v", r)
	}
}

// TestHelperNotFromWritableRoot: a helper the sandboxed commands could
// replace is never run. truss built into the workspace, with a
// truss-sandbox beside it (as a command could leave one), runs itself
// as the helper; TRUSS_SANDBOX_HELPER in a writable root is refused.
func TestHelperNotFromWritableRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds truss")
	}
	b := newBox(t, sandbox.WorkspaceWrite, false)
	truss := buildBinary(t, "github.com/trussdev/truss/cmd/truss")
	inWS := filepath.Join(b.ws, "truss")
	copyFile(t, truss, inWS, 0o755)
	marker := filepath.Join(b.outside, "helper-ran")
	os.WriteFile(filepath.Join(b.ws, sandbox.HelperName), []byte("#!/bin/sh\ntouch "+marker+"\nshift\nexec \"$@\"\n"), 0o755)
	cmd := exec.Command(inWS, "tool", "call", "--root", b.ws, "--tool", "bash", "--input", `{"command":"echo confined > ../outside/escaped || echo refused"}`)
	cmd.Env = append(os.Environ(), "TRUSS_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if exists(marker) {
		t.Error("the truss-sandbox in the workspace ran")
	}
	if exists(filepath.Join(b.outside, "escaped")) || !strings.Contains(string(out), "refused") {
		t.Errorf("the command was not confined: %v %s", err, out)
	}
	// A helper named by the environment inside a writable root.
	t.Setenv("TRUSS_SANDBOX_HELPER", filepath.Join(b.ws, sandbox.HelperName))
	if _, err := sandbox.New(b.sb.Plan()); err == nil || !strings.Contains(err.Error(), "which sandboxed commands can write") {
		t.Errorf("a helper in the workspace was accepted: %v", err)
	}
}

// TestChooseHelper: the small helper next to truss is used only when
// neither it nor its directory is writable by commands, symlinks
// resolved.
func TestChooseHelper(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	self := filepath.Join(bin, "truss")
	os.WriteFile(self, []byte("x"), 0o755)
	small := filepath.Join(bin, sandbox.HelperName)
	os.WriteFile(small, []byte("x"), 0o755)
	link := filepath.Join(dir, "link")
	os.Symlink(bin, link)
	cases := []struct {
		name     string
		writable []string
		want     string
	}{
		{"outside", []string{filepath.Join(dir, "ws")}, small},
		{"in a writable root", []string{bin}, self},
		{"below a writable root", []string{dir}, self},
		{"writable through a symlink", []string{link}, self},
		{"full access", sandbox.HelperRoots(sandbox.Policy{Mode: sandbox.FullAccess, Workspace: filepath.Join(dir, "ws")}), self},
		{"workspace-write", sandbox.HelperRoots(sandbox.Policy{Mode: sandbox.WorkspaceWrite, Workspace: filepath.Join(dir, "ws")}), small},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("TRUSS_SANDBOX_HELPER", "")
			if got := sandbox.ChooseHelperFor(self, c.writable); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

// TestHelperReplacedAfterStart: the helper is started through the
// descriptor the sandbox opened; a file put at its path later does not
// run.
func TestHelperReplacedAfterStart(t *testing.T) {
	helper := buildHelper(t)
	t.Setenv("TRUSS_SANDBOX_HELPER", helper)
	b := newBox(t, sandbox.WorkspaceWrite, false)
	marker := filepath.Join(b.outside, "replacement-ran")
	repl := helper + ".new"
	os.WriteFile(repl, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	if err := os.Rename(repl, helper); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the first shell's helper, and one started after
		if r := b.run(t, "echo ok; exit 7", 0); r.Stdout != "ok\n" {
			t.Fatalf("run %d: %+v", i, r)
		}
		b.sh.Restart()
	}
	if exists(marker) {
		t.Error("the file put at the helper's path ran")
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

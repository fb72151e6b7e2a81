package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/container"
	"github.com/trussdev/truss/internal/container/containertest"
	"github.com/trussdev/truss/internal/tool"
)

// testImage finds a working engine and makes the test image
// (containertest): a tool, imgtool, exists only in it. Without an engine
// the test is skipped, except under CI=true.
var testImageOnce = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := container.Find(ctx, os.Getenv("TRUSS_TEST_ENGINE"))
	if err != nil {
		return "", err
	}
	if _, err := e.Check(ctx); err != nil {
		return "", err
	}
	return containertest.Image(ctx, e)
})

func testImage(t testing.TB) (*container.Engine, string) {
	t.Helper()
	ref, err := testImageOnce()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("task-environment tests need a working engine under CI: %v", err)
		}
		t.Skipf("skipped: %v (install podman and runc, busybox-static and bash-static)", err)
	}
	e, err := container.Find(context.Background(), os.Getenv("TRUSS_TEST_ENGINE"))
	if err != nil {
		t.Fatal(err)
	}
	return e, ref
}

// noContainers fails when a container of the session is left.
func noContainers(t testing.TB, e *container.Engine, session string) {
	t.Helper()
	ids, err := e.Containers(context.Background(), container.LabelSession+"="+session)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) > 0 {
		e.Remove(context.Background(), ids...)
		t.Errorf("containers of session %s left: %v", session, ids)
	}
}

// imageTask is a task whose tests pass only inside the image: imgtool
// checks that app.txt says "fixed". The model runs the image's tool in
// its shell, validates (failing), edits the file through Anthropic's
// editor by its path in the container, and validates again (passing).
const imageTask = `{"steps": [
 {"actions": [{"kind": "run", "command": "pwd; imgtool; echo made > made.txt; id -u"}]},
 {"actions": [{"kind": "run", "command": "x", "tool": "validate", "raw_input": "{}"}]},
 {"actions": [{"kind": "replace", "path": "app.txt", "old": "broken", "new": "fixed"}]},
 {"actions": [{"kind": "run", "command": "x", "tool": "validate", "raw_input": "{}"}]},
 {"say": "Fixed, and the image's tests pass."}
]}`

// TestImageSession runs a whole session in the test image: the shell
// runs the image's tool (absent on the host) in the mounted workspace,
// the editor takes the container's path, validate and the verification
// boundary pass only inside the image, the ledger names the image ID,
// and no container is left after Close.
func TestImageSession(t *testing.T) {
	e, ref := testImage(t)
	if _, err := exec.LookPath("imgtool"); err == nil {
		t.Fatal("imgtool is on the host's PATH: the test would prove nothing")
	}
	o := fixture(t, imageTask)
	o.SimDialect, o.Surface, o.SimRoot = "anthropic", "", "/testbed"
	if err := os.WriteFile(filepath.Join(o.Root, "app.txt"), []byte("broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Env, o.Validation.TestCmd = "image:"+ref, "imgtool check app.txt"
	var system string
	var results []string
	o.Observers = []agent.Observer{agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type == agent.EventCallCompleted {
			results = append(results, ev.FullText)
		}
	})}
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	session := s.Info().SessionID
	defer noContainers(t, e, session)
	system = s.systemPrompt()
	if !strings.Contains(system, "The workspace root is /testbed, in a container from the image "+ref) {
		t.Errorf("the system prompt does not name the container's workspace:\n%s", system)
	}
	if env := s.Info().Environment; !strings.Contains(env, ref) || !strings.Contains(env, "/testbed") {
		t.Errorf("Info().Environment = %q", env)
	}
	out, err := s.Run(ctx, "Fix app.txt so that imgtool passes.")
	if err != nil {
		t.Fatal(err)
	}
	if out.Agent.Status != agent.StatusCompleted {
		t.Fatalf("status %s: %v\nresults: %q", out.Agent.Status, out.Agent.Err, results)
	}
	if len(results) != 4 {
		t.Fatalf("want 4 results, got %q", results)
	}
	for _, want := range []string{"/testbed", "imgtool-ok", fmt.Sprint(os.Getuid())} {
		if !strings.Contains(results[0], want) {
			t.Errorf("the shell's result lacks %q: %q", want, results[0])
		}
	}
	if !strings.Contains(results[1], "failed") || !strings.Contains(results[3], "passed") {
		t.Errorf("validate: before %q, after %q", results[1], results[3])
	}
	if out.Verdict == nil || !out.Verdict.OK {
		t.Fatalf("the boundary's verdict: %+v", out.Verdict)
	}
	if b, _ := os.ReadFile(filepath.Join(o.Root, "app.txt")); string(b) != "fixed\n" {
		t.Errorf("app.txt holds %q", b)
	}
	if fi, err := os.Stat(filepath.Join(o.Root, "made.txt")); err != nil {
		t.Errorf("the file the container's shell wrote: %v", err)
	} else if uid := fileUID(fi); uid != os.Getuid() {
		t.Errorf("made.txt belongs to uid %d, not the host user %d", uid, os.Getuid())
	}
	id, err := e.ImageID(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	noContainers(t, e, session)

	_, entries := verified(t, o.KeyDir, out.LedgerDir)
	var startEnv, boundaryEnv map[string]any
	for _, en := range entries {
		d, _ := en.Data.(map[string]any)
		switch {
		case en.Type == "session.start":
			startEnv, _ = d["environment"].(map[string]any)
		case en.Type == "validation" && d["boundary"] == true:
			boundaryEnv, _ = d["environment"].(map[string]any)
		}
	}
	if startEnv == nil || startEnv["image_id"] != id || startEnv["image"] != ref || startEnv["engine"] != e.Name || startEnv["engine_version"] == "" {
		t.Errorf("session.start's environment: %v (want image %s, id %s)", startEnv, ref, id)
	}
	if boundaryEnv == nil || boundaryEnv["image_id"] != id {
		t.Errorf("the boundary's entry does not name the image: %v", boundaryEnv)
	}
}

// TestImageProtectsGit: the repository's .git and the project's .truss
// are read-only inside the container, as in the host sandbox.
func TestImageProtectsGit(t *testing.T) {
	e, ref := testImage(t)
	o := fixture(t, `{"steps": [{"say": "none"}]}`)
	for _, d := range []string{".git", config.Dir} {
		if err := os.MkdirAll(filepath.Join(o.Root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o.Env, o.NoModel = "image:"+ref, true
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer noContainers(t, e, s.Info().SessionID)
	defer s.Close()
	r := s.w.shell.Run(context.Background(), "touch .git/hook .truss/x 2>&1; touch ok && echo wrote", time.Minute)
	if !strings.Contains(r.Stdout, "wrote") || strings.Count(r.Stdout, "Read-only") != 2 {
		t.Errorf("want .git and .truss read-only and the rest writable: %q %q", r.Stdout, r.Stderr)
	}
	// The file tools take the container's path of the workspace (the
	// model sees it in the shell; Anthropic's editor names files by
	// absolute path), and the host's.
	for _, p := range []string{"/testbed/a.txt", filepath.Join(o.Root, "a.txt"), "a.txt"} {
		res := s.Execute(context.Background(), tool.Call{ID: "v", Op: tool.OpView, Args: &tool.ViewArgs{Path: p}})
		if res.Err != nil || !strings.Contains(res.Output, "one") {
			t.Errorf("view %s: %v %q", p, res.Err, res.Output)
		}
	}
	res := s.Execute(context.Background(), tool.Call{ID: "v", Op: tool.OpView, Args: &tool.ViewArgs{Path: "/etc/passwd"}})
	if res.Err == nil || res.Err.Kind != tool.ErrOutsideRoot {
		t.Errorf("a path outside the workspace: %v", res.Err)
	}
}

// TestEnvChoice: the options over the configuration; an untrusted
// configuration's image is not obeyed (config.Load clears it); bad
// values are configuration errors.
func TestEnvChoice(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		cfg      config.Env
		image    string
		workdir  string
		errMatch string
	}{
		{name: "default host"},
		{name: "flag", opts: Options{Env: "image:busybox:1", EnvWorkdir: "/testbed"}, image: "busybox:1", workdir: "/testbed"},
		{name: "config", cfg: config.Env{Image: "python:3.9", Workdir: "/src"}, image: "python:3.9", workdir: "/src"},
		{name: "host flag over config", opts: Options{Env: "host"}, cfg: config.Env{Image: "python:3.9"}},
		{name: "bad spec", opts: Options{Env: "docker:x"}, errMatch: "unknown environment"},
		{name: "bad ref", opts: Options{Env: "image:UPPER"}, errMatch: "lower case"},
		{name: "bad engine", opts: Options{Env: "image:x", Engine: "lxc"}, errMatch: "podman or docker"},
		{name: "relative workdir", opts: Options{Env: "image:x", EnvWorkdir: "src"}, errMatch: "absolute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Session{opts: tc.opts}
			c, err := s.chooseEnv(&config.Config{Env: tc.cfg})
			if tc.errMatch != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errMatch) || !IsConfigError(err) {
					t.Fatalf("err = %v, want a ConfigError with %q", err, tc.errMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.spec.Image != tc.image || c.workdir != tc.workdir {
				t.Errorf("got image %q workdir %q", c.spec.Image, c.workdir)
			}
		})
	}
}

// TestImageMissing: an image the engine does not have is a configuration
// error that says to pull it, and nothing is left.
func TestImageMissing(t *testing.T) {
	testImage(t)
	o := fixture(t, `{"steps": [{"say": "none"}]}`)
	o.Env = "image:localhost/truss-absent:never"
	_, err := Open(context.Background(), o)
	if err == nil || !IsConfigError(err) || !strings.Contains(err.Error(), "pull") {
		t.Fatalf("err = %v, want a configuration error saying to pull", err)
	}
}

func fileUID(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// TestImageIsolatedChild: an isolated sub-agent's copy of the workspace
// gets a container of its own from the same image, mounted at the same
// workdir; its shell sees the copy, its file tools take the container's
// path, and the container goes when the sub-agent ends.
func TestImageIsolatedChild(t *testing.T) {
	e, ref := testImage(t)
	o := fixture(t, `{"steps": [{"say": "none"}]}`)
	o.Env, o.NoModel = "image:"+ref, true
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer noContainers(t, e, s.Info().SessionID)
	defer s.Close()
	copyDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(copyDir, "a.txt"), []byte("copy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	child, err := s.w.childEnv(copyDir, s.compose)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := child.Exec.Execute(ctx, tool.Call{ID: "c", Op: tool.OpExec, Args: &tool.ExecArgs{Command: "pwd; cat a.txt; imgtool"}})
	if r.Err != nil || r.Stdout != "/testbed\ncopy\nimgtool-ok\n" {
		t.Errorf("the child's shell: %v %q %q", r.Err, r.Stdout, r.Stderr)
	}
	r = child.Exec.Execute(ctx, tool.Call{ID: "v", Op: tool.OpView, Args: &tool.ViewArgs{Path: "/testbed/a.txt"}})
	if r.Err != nil || !strings.Contains(r.Output, "copy") {
		t.Errorf("the child's view: %v %q", r.Err, r.Output)
	}
	// The session's own shell still sees the workspace.
	if r := s.w.shell.Run(ctx, "cat a.txt", time.Minute); r.Stdout != "one\n" {
		t.Errorf("the session's shell: %q %q", r.Stdout, r.Stderr)
	}
	ids, _ := e.Containers(ctx, container.LabelSession+"="+s.Info().SessionID)
	if len(ids) != 2 {
		t.Errorf("want the session's and the child's containers, got %v", ids)
	}
	child.Close()
	ids, _ = e.Containers(ctx, container.LabelSession+"="+s.Info().SessionID)
	if len(ids) != 1 {
		t.Errorf("after the child ended, want the session's container only, got %v", ids)
	}
}

// TestGradingContainer: a grader's test command runs in a fresh container
// from the image on the grading checkout — passing with the fix, failing
// without it — the shell reports the image's facts, and closing it leaves
// no container.
func TestGradingContainer(t *testing.T) {
	e, ref := testImage(t)
	for _, tc := range []struct {
		content string
		pass    bool
	}{{"fixed\n", true}, {"broken\n", false}} {
		ws := t.TempDir()
		if err := os.WriteFile(filepath.Join(ws, "app.txt"), []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		session := "grade-" + filepath.Base(ws)
		sh, err := OpenGradingContainer(context.Background(), e, GradingContainer{Image: ref, Dir: ws, Session: session})
		if err != nil {
			t.Fatal(err)
		}
		res := sh.Run(context.Background(), "imgtool check app.txt", time.Minute)
		if (res.Err == nil) != tc.pass || !strings.Contains(res.Stdout, "imgtool:") {
			t.Errorf("%q: %v %q", tc.content, res.Err, res.Stdout)
		}
		if f := sh.Facts(); f.Image != ref || f.ImageID == "" || f.Workdir != "/testbed" || !strings.Contains(sh.Enforced(), ref) {
			t.Errorf("facts: %+v, %q", f, sh.Enforced())
		}
		if err := sh.Close(); err != nil {
			t.Error(err)
		}
		noContainers(t, e, session)
	}
}

// TestImageEscalationStaysInContainer: an approved escalation in a
// session whose tools run in an image runs in the container too (the
// image's tool, absent on the host, is there), never on the host.
func TestImageEscalationStaysInContainer(t *testing.T) {
	e, ref := testImage(t)
	o := fixture(t, escalationScript(t, "imgtool; pwd"))
	o.Validation.Off = true
	o.Env = "image:" + ref
	o.Approval = approval.OnRequest
	o.Approver = approval.ApproverFunc(func(context.Context, approval.Request) (approval.Decision, error) { return approval.Approve, nil })
	rs := shellResults(&o)
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer noContainers(t, e, s.Info().SessionID)
	defer s.Close()
	if _, err := s.Run(ctx, "run it escalated"); err != nil {
		t.Fatal(err)
	}
	if len(*rs) != 1 {
		t.Fatalf("want one shell result, got %d", len(*rs))
	}
	r := (*rs)[0]
	if r.Approval == nil {
		t.Fatalf("the command was not escalated: %+v", r)
	}
	if !strings.Contains(r.Stdout, "imgtool-ok") || !strings.Contains(r.Stdout, "/testbed") {
		t.Errorf("the escalated command did not run in the container: %q %q", r.Stdout, r.Stderr)
	}
}

// TestImageBoundaryRunsAlone: a command leaves a detached process in the
// task environment's container that keeps writing to the workspace (as
// one that forges the checks' answer or changes files under them would).
// The verification boundary kills it first: its check, which fails when
// the file grows while it reads it, passes, and the process is gone.
func TestImageBoundaryRunsAlone(t *testing.T) {
	e, ref := testImage(t)
	o := fixture(t, `{"steps": [
 {"actions": [{"kind": "run", "command": "busybox setsid sh -c 'while :; do echo x >>ticks; busybox usleep 5000; done' >/dev/null 2>&1 </dev/null & busybox usleep 50000; echo started"}]},
 {"say": "Done."}
]}`)
	o.SimDialect, o.Surface, o.SimRoot = "anthropic", "", "/testbed"
	o.Env = "image:" + ref
	o.Validation.TestCmd = `a=$(busybox wc -c <ticks); busybox usleep 300000; b=$(busybox wc -c <ticks); echo "ticks $a then $b"; [ "$a" = "$b" ]`
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer noContainers(t, e, s.Info().SessionID)
	defer s.Close()
	out, err := s.Run(ctx, "Start the ticker.")
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict == nil || !out.Verdict.OK {
		t.Fatalf("a process the model left ran during the boundary's checks: %+v", out.Verdict)
	}
}

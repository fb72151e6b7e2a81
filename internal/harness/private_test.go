package harness

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/tool"
)

// The attacks of this file are a sandboxed command's on what Truss keeps
// for later: an escalated shell's saved variables, which the next
// escalated shell sources, and an isolated sub-agent's copy, which Truss
// diffs. Both live in the session's private directory, which no command
// of the session can write (privateDir, childBox).

// runStep is a script step that runs cmd on the generic surface with the
// given extra shell arguments (sandbox_permissions, timeout_ms).
func runStep(t *testing.T, cmd string, extra map[string]any) string {
	t.Helper()
	in := map[string]any{"command": cmd}
	for k, v := range extra {
		in[k] = v
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	step, err := json.Marshal(map[string]any{"actions": []map[string]any{{"kind": "run", "command": cmd, "raw_input": string(raw)}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(step)
}

// callResults keeps the results of every call of op the session runs.
func callResults(o *Options, op tool.Op) *[]tool.Result {
	var rs []tool.Result
	o.Observers = append(o.Observers, resultsOf(op, &rs, nil))
	return &rs
}

// childResults keeps the results of every call of op the session's
// sub-agents run.
func childResults(o *Options, op tool.Op) *[]tool.Result {
	var rs []tool.Result
	var mu sync.Mutex
	o.ObserveChild = func(string) agent.Observer { return resultsOf(op, &rs, &mu) }
	return &rs
}

func resultsOf(op tool.Op, rs *[]tool.Result, mu *sync.Mutex) agent.Observer {
	return agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type != agent.EventCallCompleted {
			return
		}
		if mu != nil {
			mu.Lock()
			defer mu.Unlock()
		}
		for _, r := range ev.Results {
			if r.Op == op {
				*rs = append(*rs, r)
			}
		}
	})
}

// TestEscalatedVariablesOutOfReach: a sandboxed command appends a payload
// to every escalated shell's saved variables it can find; the escalated
// shell is then killed by a timeout, and the next approved escalation
// starts a new one from its saved variables. The payload must not run
// (it would run outside the sandbox).
func TestEscalatedVariablesOutOfReach(t *testing.T) {
	pwned := filepath.Join(t.TempDir(), "pwned")
	esc := map[string]any{"sandbox_permissions": "require_escalated", "justification": "May I?"}
	plant := `for f in "$TMPDIR"/escalated-*/env.sh "$TMPDIR"/*/escalated-*/env.sh "$TMPDIR"/../truss-private-*/escalated-*/env.sh; do
	  [ -e "$f" ] && printf 'echo pwned > %s\n' "$PWNED" >> "$f" && echo "planted $f"
	done; true`
	script := `{"steps": [` + strings.Join([]string{
		runStep(t, "export A=1", esc),
		runStep(t, plant, nil),
		runStep(t, "sleep 30", map[string]any{"sandbox_permissions": "require_escalated", "justification": "May I?", "timeout_ms": 300}),
		runStep(t, "echo $A", esc),
	}, ",") + `, {"say": "Done."}]}`
	o := fixture(t, script)
	o.Validation.Off = true
	o.Approval = approval.OnRequest
	o.Approver = approval.ApproverFunc(func(context.Context, approval.Request) (approval.Decision, error) { return approval.Approve, nil })
	t.Setenv("PWNED", pwned)
	rs := shellResults(&o)
	s := openSandboxed(t, o)
	if _, err := s.Run(context.Background(), "escalate"); err != nil {
		t.Fatal(err)
	}
	if len(*rs) != 4 {
		t.Fatalf("%d shell results, want 4: %+v", len(*rs), *rs)
	}
	if out := (*rs)[1].Stdout; strings.Contains(out, "planted") {
		t.Errorf("a sandboxed command wrote an escalated shell's saved variables: %q", out)
	}
	if !(*rs)[2].TimedOut {
		t.Errorf("the third command did not time out: %+v", (*rs)[2])
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("the payload a sandboxed command planted ran in the escalated shell")
	}
}

// TestIsolatedCopyOutOfReach: an isolated sub-agent's command swaps its
// own copy for a link to a directory it should not reach and changes a
// file; the diff Truss makes of the copy must show the change the child
// made in its copy, never the linked directory's content. A parent's
// command that plants $TMPDIR/agents as a link to a directory of its
// choosing must not get the copies made there.
func TestIsolatedCopyOutOfReach(t *testing.T) {
	attacks := map[string]struct{ parent, child string }{
		"swap the copy": {
			parent: "true",
			child: `echo changed > a.txt; d=$(pwd -P); top=$(git rev-parse --show-toplevel 2>/dev/null || echo "$d"); cd / &&
	mv "$top" "$top.moved" && ln -s "$SECRET" "$top" && echo swapped; true`,
		},
		"link the copies' directory": {
			parent: `rm -rf "$TMPDIR/agents"; ln -s "$OUTSIDE" "$TMPDIR/agents"; true`,
			child:  `echo changed > a.txt; ls -A "$OUTSIDE"; true`,
		},
	}
	for _, withGit := range []bool{false, true} {
		for name, a := range attacks {
			if withGit {
				name += ", worktree"
			}
			t.Run(name, func(t *testing.T) { isolatedCopyAttack(t, withGit, a.parent, a.child) })
		}
	}
}

func isolatedCopyAttack(t *testing.T, withGit bool, parent, child string) {
	if _, err := exec.LookPath("git"); withGit && err != nil {
		t.Skip("no git")
	}
	secret, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(secret, "a.txt"), []byte("THE-SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spawn, _ := json.Marshal(map[string]any{"task": "ISO change a.txt", "isolated": true})
	script := `{"steps": [` + runStep(t, parent, nil) + `,
	  {"actions": [{"kind": "spawn", "raw_input": ` + string(mustJSON(t, string(spawn))) + `}]},
	  {"say": "Done."}],
	 "agents": {"ISO": {"steps": [` + runStep(t, child, nil) + `, {"say": "changed"}]}}}`
	o := fixture(t, script)
	o.Validation.Off = true
	t.Setenv("SECRET", secret)
	t.Setenv("OUTSIDE", outside)
	if withGit {
		commitAll(t, o.Root)
	}
	shells := childResults(&o, tool.OpExec)
	spawns := callResults(&o, tool.OpSpawn)
	s := openSandboxed(t, o)
	if _, err := s.Run(context.Background(), "delegate"); err != nil {
		t.Fatal(err)
	}
	if len(*spawns) != 1 {
		t.Fatalf("%d spawn results, want 1", len(*spawns))
	}
	sp := (*spawns)[0]
	all := sp.Output + sp.Stdout
	if sp.Agent != nil {
		all += sp.Agent.Diff
	}
	if sp.Err != nil {
		all += sp.Err.Message
	}
	if strings.Contains(all, "THE-SECRET") {
		t.Errorf("the linked directory's content reached the spawn result:\n%s", all)
	}
	if !strings.Contains(all, "+changed") {
		t.Errorf("the child's change is not in the diff:\n%s", all)
	}
	for _, r := range *shells {
		if strings.Contains(r.Stdout, "swapped") {
			t.Errorf("the child's command swapped its copy for a link: %q", r.Stdout)
		}
		if strings.Contains(r.Stdout, "agent-") {
			t.Errorf("the copy was made in the directory a command linked $TMPDIR/agents to: %q", r.Stdout)
		}
	}
	if b, err := os.ReadFile(filepath.Join(secret, "a.txt")); err != nil || string(b) != "THE-SECRET\n" {
		t.Errorf("the linked directory's file: %q, %v", b, err)
	}
}

// mustJSON is s as a JSON string.
func mustJSON(t *testing.T, s string) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOtherProjectsHidden: commands read neither another project's
// memories nor another workspace's caches in Truss's directories, and
// still write their own workspace's caches.
func TestOtherProjectsHidden(t *testing.T) {
	// Outside /tmp, which the sandbox replaces with its own.
	home, err := os.MkdirTemp("/var/tmp", "truss-home-")
	if err != nil {
		t.Skip("no /var/tmp:", err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	secrets := map[string]string{
		"memories/other-1234/notes.md":         "MEMORY-4711",
		"cache/workspaces/other-abcd/go/build": "CACHE-4711",
	}
	for rel, v := range secrets {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := fixture(t, `{"steps": [`+runStep(t, `cat "$H"/memories/*/* "$H"/cache/workspaces/*/*/* 2>/dev/null; echo; d=$(go env GOCACHE 2>/dev/null || echo "$GOCACHE"); touch "$d/mine" && echo wrote-own-cache`, nil)+`, {"say": "Done."}]}`)
	o.Validation.Off = true
	t.Setenv("TRUSS_HOME", home)
	t.Setenv("H", home)
	o.MemoryDir = ""
	rs := shellResults(&o)
	s := openSandboxed(t, o)
	if _, err := s.Run(context.Background(), "look"); err != nil {
		t.Fatal(err)
	}
	if len(*rs) != 1 {
		t.Fatalf("%d shell results", len(*rs))
	}
	out := (*rs)[0].Stdout
	for _, v := range secrets {
		if strings.Contains(out, v) {
			t.Errorf("a command read %s: %q", v, out)
		}
	}
	if !strings.Contains(out, "wrote-own-cache") {
		t.Errorf("a command could not write its own workspace's cache: %q %q", out, (*rs)[0].Stderr)
	}
}

// TestIsolatedChildKeepsOffTheWorkspace: with an extra writable root that
// holds the workspace (--add-dir of its parent), an isolated sub-agent's
// commands still write neither the parent's workspace nor its .git.
func TestIsolatedChildKeepsOffTheWorkspace(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := t.TempDir()
	proj := filepath.Join(base, "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("one\n"), 0o644)
	commitAll(t, proj)
	child := `for f in "$PROJ/a.txt" "$PROJ/.git/config" "$PROJ/new.txt"; do echo x >> "$f" 2>/dev/null && echo "wrote $f"; done; echo tried`
	spawn, _ := json.Marshal(map[string]any{"task": "ISO try", "isolated": true})
	script := `{"steps": [{"actions": [{"kind": "spawn", "raw_input": ` + string(mustJSON(t, string(spawn))) + `}]}, {"say": "Done."}],
	 "agents": {"ISO": {"steps": [` + runStep(t, child, nil) + `, {"say": "tried"}]}}}`
	o := fixture(t, script)
	o.Root, o.SimRoot = proj, proj
	o.WritableDirs = []string{base}
	o.Validation.Off = true
	t.Setenv("PROJ", proj)
	shells := childResults(&o, tool.OpExec)
	s := openSandboxed(t, o)
	if _, err := s.Run(context.Background(), "delegate"); err != nil {
		t.Fatal(err)
	}
	if len(*shells) != 1 || !strings.Contains((*shells)[0].Stdout, "tried") {
		t.Fatalf("the child's command: %+v", *shells)
	}
	if out := (*shells)[0].Stdout; strings.Contains(out, "wrote") {
		t.Errorf("an isolated child's command wrote the parent's workspace: %q", out)
	}
}

// TestEscalatedShellOwnsItsPlaces: an approved escalation's temporary
// directory and caches are none of the places the session's sandboxed
// commands write (a command could plant a wheel in the pip cache, a
// package in the npx cache, a file in TMPDIR, for the approved command to
// take).
func TestEscalatedShellOwnsItsPlaces(t *testing.T) {
	show := `for v in TMPDIR XDG_CACHE_HOME GOCACHE npm_config_cache PIP_CACHE_DIR GOMODCACHE; do eval "echo $v=\${$v}"; done`
	// The sandbox's places are those its commands can write (offline,
	// its GOMODCACHE is the host's own, which it only reads).
	writable := `for v in TMPDIR XDG_CACHE_HOME GOCACHE npm_config_cache PIP_CACHE_DIR GOMODCACHE; do eval "p=\${$v}"; [ -n "$p" ] && mkdir -p "$p" 2>/dev/null && [ -w "$p" ] && echo "$v=$p"; done; true`
	esc := map[string]any{"sandbox_permissions": "require_escalated", "justification": "May I?"}
	script := `{"steps": [` + runStep(t, writable, nil) + `,` + runStep(t, show, esc) + `, {"say": "Done."}]}`
	o := fixture(t, script)
	o.Validation.Off = true
	o.Approval = approval.OnRequest
	o.Approver = approval.ApproverFunc(func(context.Context, approval.Request) (approval.Decision, error) { return approval.Approve, nil })
	rs := shellResults(&o)
	s := openSandboxed(t, o)
	if _, err := s.Run(context.Background(), "show"); err != nil {
		t.Fatal(err)
	}
	if len(*rs) != 2 || (*rs)[1].Approval == nil || !(*rs)[1].Approval.Escalated {
		t.Fatalf("results: %+v", *rs)
	}
	sandboxed := map[string]bool{}
	for _, l := range strings.Split((*rs)[0].Stdout, "\n") {
		if _, v, _ := strings.Cut(l, "="); v != "" {
			sandboxed[v] = true
		}
	}
	for _, l := range strings.Split((*rs)[1].Stdout, "\n") {
		name, v, _ := strings.Cut(l, "=")
		if v == "" {
			continue
		}
		for d := range sandboxed {
			if within(v, d) {
				t.Errorf("the escalated shell's %s is %s, in the sandbox's %s", name, v, d)
			}
		}
	}
}

// TestBoundaryRunsAlone: a job the model's command leaves running (a
// daemon in a session of its own) does not outlive the run into the
// verification boundary, where it could make the checks pass while they
// read the workspace and fail again after.
func TestBoundaryRunsAlone(t *testing.T) {
	job := `setsid nohup sh -c 'sleep 1; echo late > late.txt' >/dev/null 2>&1 & echo started`
	o := fixture(t, `{"steps": [`+runStep(t, job, nil)+`, {"say": "Done."}]}`)
	s := openSandboxed(t, o)
	out, err := s.Run(context.Background(), "leave a job")
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict == nil {
		t.Fatal("no verification boundary")
	}
	time.Sleep(1500 * time.Millisecond) // past the job's own sleep
	if _, err := os.Stat(filepath.Join(o.Root, "late.txt")); err == nil {
		t.Error("the model's background job outlived the run and the verification boundary")
	}
}

// TestHostProgramsNotFromWritableDirs: with the workspace's virtual
// environment activated (its bin directory first in PATH), a command
// writes a git and a bash there; the git Truss runs for an isolated
// sub-agent's worktree and the bash of an approved escalation are the
// host's, never those.
func TestHostProgramsNotFromWritableDirs(t *testing.T) {
	t.Run("workspace", func(t *testing.T) { hostProgramsAttack(t, false) })
	t.Run("add-dir", func(t *testing.T) { hostProgramsAttack(t, true) })
}

func hostProgramsAttack(t *testing.T, addDir bool) {
	for _, p := range []string{"git", "bash"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skip("no " + p)
		}
	}
	mark := filepath.Join(t.TempDir(), "ran")
	plant := `mkdir -p "$BIN" && for p in git bash; do real=$(command -v $p); printf '#!/bin/sh\necho %s "$*" >> %s\nexec %s "$@"\n' $p "$MARK" "$real" > "$BIN/$p"; chmod +x "$BIN/$p"; done; echo planted`
	esc := map[string]any{"sandbox_permissions": "require_escalated", "justification": "May I?"}
	spawn, _ := json.Marshal(map[string]any{"task": "ISO look", "isolated": true})
	script := `{"steps": [` + runStep(t, plant, nil) + `,
	  {"actions": [{"kind": "spawn", "raw_input": ` + string(mustJSON(t, string(spawn))) + `}]},
	  ` + runStep(t, "git --version >/dev/null; echo escalated", esc) + `,
	  {"say": "Done."}],
	 "agents": {"ISO": {"steps": [{"say": "nothing to do"}]}}}`
	o := fixture(t, script)
	o.Validation.Off = true
	o.Approval = approval.OnRequest
	o.Approver = approval.ApproverFunc(func(context.Context, approval.Request) (approval.Decision, error) { return approval.Approve, nil })
	commitAll(t, o.Root)
	t.Setenv("MARK", mark)
	bin := filepath.Join(o.Root, ".venv", "bin")
	if addDir {
		extra := t.TempDir()
		o.WritableDirs = []string{extra}
		bin = filepath.Join(extra, "bin")
	}
	t.Setenv("BIN", bin)
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	rs := shellResults(&o)
	s := openSandboxed(t, o)
	if _, err := s.Run(context.Background(), "plant"); err != nil {
		t.Fatal(err)
	}
	if len(*rs) != 2 || !strings.Contains((*rs)[0].Stdout, "planted") || !strings.Contains((*rs)[1].Stdout, "escalated") {
		t.Fatalf("results: %+v", *rs)
	}
	if b, err := os.ReadFile(mark); err == nil {
		t.Errorf("Truss ran programs a command wrote into a PATH directory of the workspace: %q", b)
	}
}

// TestExtraRootGitReadOnly: an --add-dir that is a git repository keeps
// its .git read-only to commands, as the workspace does.
func TestExtraRootGitReadOnly(t *testing.T) {
	extra := t.TempDir()
	os.MkdirAll(filepath.Join(extra, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(extra, ".git", "config"), []byte("[core]\n"), 0o644)
	o := fixture(t, `{"steps": [`+runStep(t, `echo x >> "$EXTRA/.git/config" 2>/dev/null && echo wrote-config; echo x > "$EXTRA/.git/hooks/pre-commit" 2>/dev/null && echo wrote-hook; echo y > "$EXTRA/file.txt" && echo wrote-file`, nil)+`, {"say": "Done."}]}`)
	o.WritableDirs = []string{extra}
	o.Validation.Off = true
	t.Setenv("EXTRA", extra)
	rs := shellResults(&o)
	s := openSandboxed(t, o)
	if _, err := s.Run(context.Background(), "write"); err != nil {
		t.Fatal(err)
	}
	out := (*rs)[0].Stdout
	if strings.Contains(out, "wrote-config") || strings.Contains(out, "wrote-hook") || !strings.Contains(out, "wrote-file") {
		t.Errorf("an extra root's .git: %q", out)
	}
}

// TestSecretValuesWithheld: credentials in variables with neutral names
// (an API key, a token, a private key) do not reach commands; the rest of
// the environment does.
func TestSecretValuesWithheld(t *testing.T) {
	secrets := map[string]string{
		"UPSTREAM":   "sk-proj-" + strings.Repeat("Ab3x", 12),
		"HUB":        "ghp_" + strings.Repeat("Zq9", 12),
		"DEPLOY_PEM": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
		"CLOUD":      "AKIAIOSFODNN7EXAMPLE",
		"HEADERS":    "Authorization: Bearer glpat-" + strings.Repeat("x1", 12),
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("PLAIN_SETTING", "kept-4711")
	o := fixture(t, `{"steps": [`+runStep(t, "env", nil)+`, {"say": "Done."}]}`)
	o.Validation.Off = true
	rs := shellResults(&o)
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Run(context.Background(), "env"); err != nil {
		t.Fatal(err)
	}
	out := (*rs)[0].Stdout
	for k := range secrets {
		if strings.Contains(out, k+"=") {
			t.Errorf("%s reached the command", k)
		}
	}
	if !strings.Contains(out, "PLAIN_SETTING=kept-4711") {
		t.Errorf("an ordinary variable did not reach the command")
	}
}

// TestChecksTakeNoCachedResults: the validation runs' Go tests are never
// taken from the build cache, which commands write (a command could plant
// an "ok" for a failing package).
func TestChecksTakeNoCachedResults(t *testing.T) {
	o := fixture(t, `{"steps": [{"say": "Done."}]}`)
	o.Validation.TestCmd = `echo "flags=$GOFLAGS"`
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Run(context.Background(), "check")
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict == nil || !strings.Contains(out.Verdict.Log, "-count=1") {
		t.Errorf("the boundary's GOFLAGS: %+v", out.Verdict)
	}
}

// TestPrivateDirHidden: with TMPDIR outside /tmp (where the sandbox's own
// /tmp does not hide it), commands see nothing of the session's private
// directory; an approved escalation still works in its own.
func TestPrivateDirHidden(t *testing.T) {
	tmp, err := os.MkdirTemp("/var/tmp", "truss-tmpdir-")
	if err != nil {
		t.Skip("no /var/tmp:", err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	esc := map[string]any{"sandbox_permissions": "require_escalated", "justification": "May I?"}
	look := `ls -A "$(dirname "$TMPDIR")"/truss-private-*/ 2>&1 | head -5; echo looked`
	o := fixture(t, `{"steps": [`+runStep(t, "export X=1; echo escalated", esc)+`,`+runStep(t, look, nil)+`,`+runStep(t, "echo again $X", esc)+`, {"say": "Done."}]}`)
	t.Setenv("TMPDIR", tmp)
	o.Validation.Off = true
	o.Approval = approval.OnRequest
	o.Approver = approval.ApproverFunc(func(context.Context, approval.Request) (approval.Decision, error) { return approval.Approve, nil })
	rs := shellResults(&o)
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.w.sandbox.Plan().Active() || !s.w.sandbox.Plan().Mechanisms.Namespaces {
		t.Skip("no namespaces: nothing is hidden")
	}
	if _, err := s.Run(context.Background(), "look"); err != nil {
		t.Fatal(err)
	}
	if len(*rs) != 3 {
		t.Fatalf("results: %+v", *rs)
	}
	if out := (*rs)[1].Stdout; strings.Contains(out, "escalated-") || strings.Contains(out, "env.sh") {
		t.Errorf("a command listed the private directory: %q", out)
	}
	if out := (*rs)[2].Stdout; !strings.Contains(out, "again 1") {
		t.Errorf("the escalated shell lost its saved variables: %q %q", out, (*rs)[2].Stderr)
	}
}

// commitAll makes dir a git repository with everything in it committed.
func commitAll(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

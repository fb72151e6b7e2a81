package subagent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/gitsafe"
)

// isolateNow isolates ws as a session that began now would: its
// repository, if any, is the one found now.
func isolateNow(t *testing.T, ws string) (*isolation, error) {
	t.Helper()
	repo, err := gitsafe.Find(ws)
	if err != nil {
		t.Fatal(err)
	}
	return isolate(context.Background(), ws, repo, t.TempDir(), "s", copyLimits{bytes: 1 << 20, entries: 1000})
}

// gitIn runs the test's own git (no system or global configuration) in
// dir.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// programs is a configuration naming a program, which creates a file in
// marks, for every place git runs one: filter x (clean, smudge and the
// long-running process), diff driver x (textconv and command), the
// external diff, fsmonitor, a hooks directory and a pager.
func programs(t *testing.T, marks string) string {
	t.Helper()
	hooks := filepath.Join(t.TempDir(), "hooks")
	os.MkdirAll(hooks, 0o755)
	for _, h := range []string{"post-checkout", "reference-transaction", "pre-commit", "post-index-change"} {
		os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\ntouch "+filepath.Join(marks, "hook-"+h)+"\n"), 0o755)
	}
	m := func(n string) string { return "touch " + filepath.Join(marks, n) }
	return "[filter \"x\"]\n\tclean = " + m("clean") + "; cat\n\tsmudge = " + m("smudge") + "; cat\n\tprocess = " + m("process") + "\n\trequired = true\n" +
		"[diff \"x\"]\n\ttextconv = " + m("textconv") + "; cat\n\tcommand = " + m("diffcmd") + "\n" +
		"[diff]\n\texternal = " + m("external") + "\n" +
		"[core]\n\tfsmonitor = " + m("fsmonitor") + "\n\thooksPath = " + hooks + "\n\tpager = " + m("pager") + "; cat\n"
}

// hostileRepo makes a workspace repository whose files all have filter
// and diff driver x (.gitattributes, committed), a tracked a.txt with an
// uncommitted change, and the configuration that configure writes (given
// the repository's .git and the programs' configuration).
func hostileRepo(t *testing.T, configure func(dotgit, progs string)) (ws, marks string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws, marks = t.TempDir(), t.TempDir()
	gitIn(t, ws, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(ws, ".gitattributes"), []byte("* filter=x diff=x\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "b.txt"), []byte("bee\n"), 0o644)
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "commit", "-qm", "init")
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("two\n"), 0o644)
	configure(filepath.Join(ws, ".git"), programs(t, marks))
	return ws, marks
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

func noMarks(t *testing.T, marks string) {
	t.Helper()
	if ents, _ := os.ReadDir(marks); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("programs of the repository ran on the host: %v", names)
	}
}

// Every way a repository's configuration can name a program only under a
// condition, or only later, that Truss's git would meet while making an
// isolated worktree and its diff: none of them runs, and the worktree and
// the diff are still right.
func TestIsolationRunsNoConditionalPrograms(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(t *testing.T, dotgit, progs string) (later func())
	}{
		{"includeIf gitdir worktrees", func(t *testing.T, dotgit, progs string) func() {
			inc := filepath.Join(t.TempDir(), "inc")
			os.WriteFile(inc, []byte(progs), 0o644)
			appendFile(t, filepath.Join(dotgit, "config"), "[includeIf \"gitdir:**/worktrees/**\"]\n\tpath = "+inc+"\n")
			return nil
		}},
		{"includeIf onbranch", func(t *testing.T, dotgit, progs string) func() {
			inc := filepath.Join(t.TempDir(), "inc")
			os.WriteFile(inc, []byte(progs), 0o644)
			appendFile(t, filepath.Join(dotgit, "config"), "[includeIf \"onbranch:**\"]\n\tpath = "+inc+"\n")
			return nil
		}},
		{"includeIf gitdir/i", func(t *testing.T, dotgit, progs string) func() {
			inc := filepath.Join(t.TempDir(), "inc")
			os.WriteFile(inc, []byte(progs), 0o644)
			appendFile(t, filepath.Join(dotgit, "config"), "[includeIf \"gitdir/i:"+strings.ToUpper(filepath.Dir(dotgit))+"/**\"]\n\tpath = "+inc+"\n")
			return nil
		}},
		{"include written later", func(t *testing.T, dotgit, progs string) func() {
			inc := filepath.Join(filepath.Dir(dotgit), "later.cfg")
			appendFile(t, filepath.Join(dotgit, "config"), "[include]\n\tpath = "+inc+"\n")
			return func() { os.WriteFile(inc, []byte(progs), 0o644) }
		}},
		{"hooks", func(t *testing.T, dotgit, progs string) func() {
			for _, h := range []string{"post-checkout", "reference-transaction", "post-index-change"} {
				os.WriteFile(filepath.Join(dotgit, "hooks", h), []byte("#!/bin/sh\ntouch "+filepath.Join(filepath.Dir(strings.SplitN(progs, "touch ", 2)[1]), "repo-hook-"+h)+"\n"), 0o755)
			}
			return nil
		}},
		{"plain configuration", func(t *testing.T, dotgit, progs string) func() {
			appendFile(t, filepath.Join(dotgit, "config"), progs)
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var later func()
			ws, marks := hostileRepo(t, func(dotgit, progs string) { later = tc.configure(t, dotgit, progs) })
			iso, err := isolateNow(t, ws)
			if err != nil {
				t.Fatal(err)
			}
			defer iso.remove()
			if iso.repo == nil {
				t.Fatal("no worktree: the test proves nothing")
			}
			if later != nil {
				later()
			}
			if b, _ := os.ReadFile(filepath.Join(iso.dir, "a.txt")); string(b) != "two\n" {
				t.Errorf("the worktree's a.txt is %q, want the workspace's uncommitted %q", b, "two\n")
			}
			os.WriteFile(filepath.Join(iso.dir, "a.txt"), []byte("three\n"), 0o644)
			os.WriteFile(filepath.Join(iso.dir, "new.txt"), []byte("new\n"), 0o644)
			os.Remove(filepath.Join(iso.dir, "b.txt"))
			diff, err := iso.diff(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			noMarks(t, marks)
			for _, want := range []string{"-two\n+three\n", "+new\n", "-bee\n", "diff --git a/new.txt b/new.txt"} {
				if !strings.Contains(diff, want) {
					t.Errorf("the diff lacks %q:\n%s", want, diff)
				}
			}
			// What the parent applies is the child's change only.
			if strings.Contains(diff, "-one") {
				t.Errorf("the diff is against HEAD, not the workspace's state:\n%s", diff)
			}
		})
	}
}

// A repository that appeared during the session is not used: the copy is
// a plain one, and none of the repository's programs runs, the ones it
// names under includeIf gitdir worktrees included.
func TestIsolationIgnoresRepositoryMadeDuringSession(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws, marks := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644)
	s := New(Config{Workspace: ws})
	// A command makes the repository.
	gitIn(t, ws, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(ws, ".gitattributes"), []byte("* filter=x diff=x\n"), 0o644)
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "commit", "-qm", "init")
	inc := filepath.Join(t.TempDir(), "inc")
	os.WriteFile(inc, []byte(programs(t, marks)), 0o644)
	appendFile(t, filepath.Join(ws, ".git", "config"), "[includeIf \"gitdir:**/worktrees/**\"]\n\tpath = "+inc+"\n")
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("two\n"), 0o644)

	iso, err := isolate(context.Background(), ws, s.cfg.repo, t.TempDir(), "s", copyLimits{bytes: 1 << 20, entries: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer iso.remove()
	if iso.repo != nil {
		t.Error("a repository made during the session was used for the isolated copy")
	}
	if _, err := os.Lstat(filepath.Join(iso.dir, ".git")); err == nil {
		t.Error("the plain copy holds the repository's .git")
	}
	os.WriteFile(filepath.Join(iso.dir, "a.txt"), []byte("three\n"), 0o644)
	diff, err := iso.diff(context.Background(), []string{"a.txt"})
	if err != nil {
		t.Fatal(err)
	}
	noMarks(t, marks)
	if !strings.Contains(diff, "-two\n+three\n") {
		t.Errorf("diff:\n%s", diff)
	}
}

// A tracked file whose directory the model swapped for a link to a
// directory outside the workspace holding a secret: the worktree does not
// receive the secret (git would have hashed it through the link).
func TestIsolatedWorktreeDoesNotFollowSwappedDirectory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "d"), 0o755)
	os.WriteFile(filepath.Join(ws, "d", "ledger.key"), []byte("placeholder\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	gitIn(t, ws, "init", "-q")
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "commit", "-qm", "init")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "ledger.key"), []byte(secret+"\n"), 0o600)
	os.RemoveAll(filepath.Join(ws, "d"))
	os.Symlink(outside, filepath.Join(ws, "d"))
	// And a tracked file replaced by a link to the secret.
	os.Remove(filepath.Join(ws, "a.txt"))
	os.Symlink(filepath.Join(outside, "ledger.key"), filepath.Join(ws, "a.txt"))

	iso, err := isolateNow(t, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer iso.remove()
	if iso.repo == nil {
		t.Fatal("no worktree: the test proves nothing")
	}
	filepath.WalkDir(iso.top, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
				t.Errorf("the worktree's %s holds the secret", p)
			}
		}
		return nil
	})
	if l, err := os.Readlink(filepath.Join(iso.dir, "a.txt")); err != nil || l != filepath.Join(outside, "ledger.key") {
		t.Errorf("a.txt in the worktree: %q, %v; want the link", l, err)
	}
	out := gitIn(t, ws, "cat-file", "-p", iso.base+":a.txt")
	if strings.Contains(out, secret) {
		t.Errorf("the snapshot commit holds the secret")
	}
}

// A FIFO in the workspace (untracked, and in place of a tracked file)
// neither hangs the copy nor is copied; it is reported.
func TestIsolationSkipsFIFOs(t *testing.T) {
	for _, withGit := range []bool{false, true} {
		ws, _ := setup(t, withGit)
		if withGit {
			os.WriteFile(filepath.Join(ws, "tracked"), []byte("x\n"), 0o644)
			gitIn(t, ws, "add", "tracked")
			gitIn(t, ws, "commit", "-qm", "tracked")
			os.Remove(filepath.Join(ws, "tracked"))
			if err := unix.Mkfifo(filepath.Join(ws, "tracked"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var iso *isolation
		var err error
		go func() { iso, err = isolateNow(t, ws); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("git %v: the copy hangs on a FIFO", withGit)
		}
		if err != nil {
			t.Fatalf("git %v: %v", withGit, err)
		}
		if fi, err := os.Lstat(filepath.Join(iso.dir, "fifo")); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
			t.Errorf("git %v: the FIFO was copied", withGit)
		}
		if !withGit && !strings.Contains(strings.Join(iso.skipped, " "), "fifo") {
			t.Errorf("the FIFO is not reported: %v", iso.skipped)
		}
		if withGit && !strings.Contains(strings.Join(iso.skipped, " "), "tracked") {
			t.Errorf("the tracked FIFO is not reported: %v", iso.skipped)
		}
		iso.remove()
	}
}

// A plain copy of a workspace with a link to a secret outside holds the
// link, not the secret's bytes.
func TestPlainCopyKeepsLinks(t *testing.T) {
	ws, key := setup(t, false)
	os.Symlink(key, filepath.Join(ws, "AGENTS.md"))
	os.Symlink(filepath.Dir(key), filepath.Join(ws, "keys"))
	iso, err := isolateNow(t, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer iso.remove()
	if l, err := os.Readlink(filepath.Join(iso.dir, "AGENTS.md")); err != nil || l != key {
		t.Errorf("AGENTS.md: %q %v", l, err)
	}
	if fi, err := os.Lstat(filepath.Join(iso.dir, "keys")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("keys: %v %v", fi, err)
	}
}

// A workspace over the copy's bounds is an error, not a partial copy.
func TestPlainCopyBounded(t *testing.T) {
	ws, _ := setup(t, false)
	os.WriteFile(filepath.Join(ws, "big"), make([]byte, 4096), 0o644)
	_, err := isolate(context.Background(), ws, gitsafe.Repo{}, t.TempDir(), "s", copyLimits{bytes: 1000, entries: 100})
	if err == nil || !strings.Contains(err.Error(), "at most 1000 bytes") {
		t.Errorf("err = %v", err)
	}
}

// The write-lease attack: the command holds a lease on a file the copy
// reaches first, and when the copy's open breaks it, swaps a directory
// listed but not yet copied for a link to the secret's directory. The
// copy neither waits for the lease nor follows the link.
func TestPlainCopyLeaseSwap(t *testing.T) {
	ws, key := setup(t, false)
	os.MkdirAll(filepath.Join(ws, "a"), 0o755)
	os.WriteFile(filepath.Join(ws, "a", "f"), []byte("f\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "b"), 0o755)
	os.WriteFile(filepath.Join(ws, "b", "ledger.key"), []byte("harmless\n"), 0o644)

	fd, err := unix.Open(filepath.Join(ws, "a", "f"), unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGIO)
	defer signal.Stop(sig)
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		t.Skipf("no write lease here: %v", err)
	}
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		select {
		case <-sig:
		case <-time.After(30 * time.Second):
			return
		}
		os.Rename(filepath.Join(ws, "b"), filepath.Join(ws, "b.old"))
		os.Symlink(filepath.Dir(key), filepath.Join(ws, "b"))
		unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	}()
	start := time.Now()
	iso, err := isolateNow(t, ws)
	<-swapped
	if time.Since(start) > 20*time.Second {
		t.Errorf("the copy waited %v for the lease", time.Since(start))
	}
	if err == nil {
		defer iso.remove()
		filepath.WalkDir(iso.top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
					t.Errorf("the copy's %s holds the secret", p)
				}
			}
			return nil
		})
	} else if !strings.Contains(err.Error(), "lease") && !strings.Contains(err.Error(), "replaced") {
		t.Errorf("err = %v, want the lease refused", err)
	}
}

// TestIsolatedCopyStreams: a large (sparse) file, tracked and changed in
// the workspace, then changed again in the copy, is copied, hashed and
// diffed as a stream: what Truss allocates for the copy and the diff is a
// small part of the file's size, not the file (a command can make a
// 1 GiB sparse file in a moment; each spawn would hold it in memory).
func TestIsolatedCopyStreams(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	const size = 64 << 20
	ws := t.TempDir()
	big := filepath.Join(ws, "big.bin")
	os.WriteFile(big, []byte("start\n"), 0o644)
	gitIn(t, ws, "init", "-q")
	gitIn(t, ws, "add", ".")
	gitIn(t, ws, "commit", "-qm", "init")
	if err := os.Truncate(big, size); err != nil { // uncommitted: its blob is written
		t.Fatal(err)
	}
	repo, err := gitsafe.Find(ws)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	iso, err := isolate(context.Background(), ws, repo, t.TempDir(), "s", copyLimits{bytes: 1 << 30, entries: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer iso.remove()
	f, err := os.OpenFile(filepath.Join(iso.top, "big.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("changed"), size/2)
	f.Close()
	diff, err := iso.diff(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if !strings.Contains(diff, "GIT binary patch") && !strings.Contains(diff, "Binary files") {
		t.Errorf("the diff of the changed file:\n%.500s", diff)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Errorf("copying and diffing a %d MiB file allocated %d MiB", size>>20, alloc>>20)
	}
}

// TestIsolatedDiffBounded: a child that rewrites many large text files
// of a copy (plain, or a worktree) gets a diff of bounded size (the rest
// named as differing, or the changed paths listed), not one Truss holds,
// returns and stores whole.
func TestIsolatedDiffBounded(t *testing.T) {
	for _, withGit := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "worktree"}[withGit], func(t *testing.T) {
			if _, err := exec.LookPath("git"); withGit && err != nil {
				t.Skip("no git")
			}
			ws := t.TempDir()
			const files = 12
			a := strings.Repeat("a\n", 512<<10) // 1 MiB of lines
			for i := range files {
				os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d.txt", i)), []byte(a), 0o644)
			}
			if withGit {
				gitIn(t, ws, "init", "-q")
				gitIn(t, ws, "add", ".")
				gitIn(t, ws, "commit", "-qm", "init")
			}
			iso, err := isolateNowLimits(t, ws, copyLimits{bytes: 1 << 30, entries: 1000})
			if err != nil {
				t.Fatal(err)
			}
			defer iso.remove()
			var changed []string
			b := strings.Repeat("b\n", 512<<10)
			for i := range files {
				name := fmt.Sprintf("f%02d.txt", i)
				os.WriteFile(filepath.Join(iso.dir, name), []byte(b), 0o644)
				changed = append(changed, name)
			}
			diff, err := iso.diff(context.Background(), changed)
			if err != nil {
				t.Fatal(err)
			}
			if len(diff) > maxDiff+(4<<20) {
				t.Errorf("the diff of %d rewritten 1 MiB files is %d MiB", files, len(diff)>>20)
			}
			if !strings.Contains(diff, "not shown") || !strings.Contains(diff, "f11.txt") {
				t.Errorf("the diff does not say what it leaves out:\n%.300s", diff)
			}
		})
	}
}

// isolateNowLimits is isolateNow with the given bounds.
func isolateNowLimits(t *testing.T, ws string, l copyLimits) (*isolation, error) {
	t.Helper()
	repo, err := gitsafe.Find(ws)
	if err != nil {
		t.Fatal(err)
	}
	return isolate(context.Background(), ws, repo, t.TempDir(), "s", l)
}

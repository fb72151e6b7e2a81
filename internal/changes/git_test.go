//go:build linux

package changes

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/tool"
)

// gitSpy puts a git first on PATH that logs each invocation's arguments
// to the returned file and runs the real git. While a `git config`
// lookup runs, the file hide (if not "") is moved aside and put back after:
// every lookup of the configuration misses what hide holds and every other
// command sees it, as when an include is written between a lookup and the
// command that follows it.
func gitSpy(t *testing.T, hide string) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '" + log + "'\n"
	if hide != "" {
		script += "case \" $* \" in *' config '*)\n" +
			"  mv '" + hide + "' '" + hide + ".aside' 2>/dev/null; '" + real + "' \"$@\"; rc=$?\n" +
			"  mv '" + hide + ".aside' '" + hide + "' 2>/dev/null; exit $rc;;\nesac\n"
	}
	script += "exec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

// gitCalls returns the git subcommands logged (the first argument that
// follows git's own options).
func gitCalls(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		for i := 0; i < len(f); i++ {
			if f[i] == "-C" {
				i++
				continue
			}
			if !strings.HasPrefix(f[i], "-") {
				cmds = append(cmds, f[i])
				break
			}
		}
	}
	return cmds
}

// TestGitProgramsOfTheConfiguration: a workspace repository whose
// configuration defines, under a condition (includeIf "onbranch:"), a
// clean filter for every file and an fsmonitor hook — in an include that
// the filter-name lookup misses (written after it), or present all along.
// The tracker's git runs neither, before or after a command changes a
// tracked file whose stat no longer matches the index (git's work-tree
// commands would run the clean filter on it), and it runs only the
// commands that read no work-tree file; the before content still comes
// from the repository.
func TestGitProgramsOfTheConfiguration(t *testing.T) {
	for _, raced := range []bool{true, false} {
		t.Run(map[bool]string{true: "include written after the lookup", false: "include present"}[raced], func(t *testing.T) {
			root := t.TempDir()
			layout(t, root, map[string]string{"a.txt": "alpha\n", "d/b.txt": "bravo\n"})
			gitInit(t, root)
			marker := filepath.Join(t.TempDir(), "ran")
			inc := filepath.Join(root, ".git", "evil.inc")
			evil := "[filter \"evil\"]\n\tclean = touch '" + marker + ".filter'; cat\n\trequired = true\n" +
				"[core]\n\tfsmonitor = touch '" + marker + ".fsmonitor'\n"
			if err := os.WriteFile(inc, []byte(evil), 0o644); err != nil {
				t.Fatal(err)
			}
			sh(t, root, `printf '[includeIf "onbranch:**"]\n\tpath = evil.inc\n' >> .git/config
				echo '* filter=evil' > .gitattributes
				touch -d '2020-01-02 03:04:05' a.txt d/b.txt`)
			hide := ""
			if raced {
				hide = inc
			}
			log := gitSpy(t, hide)
			tr := open(t, []string{root}, Options{NoWatch: true})
			for _, rel := range []string{"a.txt", "d/b.txt"} {
				if e := tr.roots[0].lookup(rel); e == nil || e.src != srcGit {
					t.Errorf("%s (its content the index's blob, its stat not) is not taken from the repository: %+v", rel, e)
				}
			}
			sh(t, root, `echo changed > a.txt; touch -d '2020-01-03 03:04:05' d/b.txt`)
			got, err := tr.Scan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			check(t, got, []want{{path: "a.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), after: b("changed\n")}})
			for _, m := range []string{marker + ".filter", marker + ".fsmonitor"} {
				if _, err := os.Lstat(m); err == nil {
					t.Errorf("git ran the repository's program: %s exists", filepath.Base(m))
				}
			}
			for _, c := range gitCalls(t, log) {
				if c != "rev-parse" && c != "ls-files" && c != "cat-file" {
					t.Errorf("the tracker ran git %s, which is not one of the commands that read no work-tree file", c)
				}
			}
		})
	}
}

// TestGitReplacedRepository: once a command has put another .git in
// the place of the one recorded (the same contents, another inode), the
// tracker runs no git on it: a change to a file whose before content was
// the repository's is reported without it, saying why.
func TestGitReplacedRepository(t *testing.T) {
	root := t.TempDir()
	layout(t, root, map[string]string{"a.txt": "alpha\n"})
	gitInit(t, root)
	log := gitSpy(t, "")
	tr := open(t, []string{root}, Options{NoWatch: true})
	if e := tr.roots[0].lookup("a.txt"); e == nil || e.src != srcGit {
		t.Fatalf("a.txt is not taken from the repository: %+v", e)
	}
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	sh(t, root, `mv .git .git.orig && cp -a .git.orig .git && echo changed > a.txt`)
	got, err := tr.Scan(context.Background())
	if err != nil && !strings.Contains(err.Error(), "no longer the one recorded") {
		t.Fatal(err)
	}
	if c := gitCalls(t, log); len(c) != 0 {
		t.Errorf("the tracker ran git on the replaced .git: %v", c)
	}
	var a *tool.FileChange
	for i := range got {
		if got[i].Path == "a.txt" {
			a = &got[i]
		}
	}
	if a == nil || a.Kind != tool.ChangeUpdate || a.BeforeData != nil || !strings.Contains(a.BeforeUnavailable, "no longer the one recorded") {
		t.Fatalf("a.txt's change: %+v", a)
	}
}

// TestGitRepositoryAppeared: a workspace that had no repository when the
// session began gets no git from a tracker opened later in it, though a
// command has made it a repository meanwhile (whose configuration is the
// command's own): every file is copied into the store.
func TestGitRepositoryAppeared(t *testing.T) {
	root := t.TempDir()
	layout(t, root, map[string]string{"a.txt": "alpha\n"})
	at, err := gitsafe.Find(root)
	if err != nil || at.DotGit != "" {
		t.Skipf("the temporary directory is in a repository: %+v %v", at, err)
	}
	gitInit(t, root) // a command's `git init`, during the session
	log := gitSpy(t, "")
	tr := open(t, []string{root}, Options{NoWatch: true, Repo: &at})
	if e := tr.roots[0].lookup("a.txt"); e == nil || e.src != srcSHA || !e.kept {
		t.Fatalf("a.txt is not copied: %+v", e)
	}
	sh(t, root, `echo changed > a.txt`)
	got, err := tr.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, []want{{path: "a.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), after: b("changed\n")}})
	if c := gitCalls(t, log); len(c) != 0 {
		t.Errorf("the tracker ran git on a repository that appeared during the session: %v", c)
	}
}

// TestParseLsFilesStat: the stat data of `ls-files --stage --debug -z`
// is read field by field, and an entry is trusted only when recorded
// before the index was written.
func TestParseLsFilesStat(t *testing.T) {
	oid := strings.Repeat("ab", 20)
	out := "100755 " + oid + " 0\tx y\nz\x00  ctime: 11:12\n  mtime: 13:14\n  dev: 15\tino: 16\n  uid: 0\tgid: 0\n  size: 17\tflags: 4000\n" +
		"100644 " + oid + " 0\tnew\x00  ctime: 20:0\n  mtime: 20:0\n  dev: 15\tino: 18\n  uid: 0\tgid: 0\n  size: 1\tflags: 0\n"
	idx, err := parseLsFiles(out, 20e9)
	if err != nil {
		t.Fatal(err)
	}
	e := idx["x y\nz"]
	if e.mode != 0o100755 || e.stat != (indexStat{ctimeSec: 11, ctimeNsec: 12, mtimeSec: 13, mtimeNsec: 14, dev: 15, ino: 16, size: 17}) || !e.trusted {
		t.Errorf("x y\\nz: %+v", e)
	}
	if n, ok := idx["new"]; !ok || n.trusted {
		t.Errorf("an entry as recent as the index is trusted: %+v", n)
	}
	if _, err := parseLsFiles("100644 "+oid+" 0\ta\x00  ctime: 1:2\n", 1); err == nil {
		t.Error("stat data cut short is accepted")
	}
}

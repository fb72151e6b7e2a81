package subagent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const secret = "PRIVATE KEY 0123456789"

// setup makes a workspace (a git repository when withGit) with a.txt, and
// a secret outside it.
func setup(t *testing.T, withGit bool) (ws, secretPath string) {
	t.Helper()
	ws = t.TempDir()
	secretPath = filepath.Join(t.TempDir(), "ledger.key")
	os.WriteFile(secretPath, []byte(secret+"\n"), 0o600)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	if withGit {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("no git")
		}
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
			cmd := exec.Command("git", append([]string{"-C", ws}, args...)...)
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	return ws, secretPath
}

// A sub-agent that replaces a file with a symbolic link to a secret
// outside its copy (or adds one) shows the link in its diff, never the
// secret.
func TestIsolatedDiffDoesNotFollowLinks(t *testing.T) {
	for _, withGit := range []bool{false, true} {
		ws, key := setup(t, withGit)
		ctx := context.Background()
		iso, err := isolateNow(t, ws)
		if err != nil {
			t.Fatal(err)
		}
		defer iso.remove()
		if (iso.repo != nil) != withGit {
			t.Fatalf("git %v: repo %v", withGit, iso.repo)
		}
		a := filepath.Join(iso.dir, "a.txt")
		os.Remove(a)
		if err := os.Symlink(key, a); err != nil {
			t.Fatal(err)
		}
		os.Symlink(filepath.Dir(key), filepath.Join(iso.dir, "dir"))
		diff, err := iso.diff(ctx, []string{"a.txt", "dir/ledger.key"})
		if err != nil {
			t.Fatalf("git %v: %v", withGit, err)
		}
		if strings.Contains(diff, secret) {
			t.Errorf("git %v: the diff shows the secret:\n%s", withGit, diff)
		}
		if !strings.Contains(diff, key) {
			t.Errorf("git %v: the diff does not show the link:\n%s", withGit, diff)
		}
	}
}

// A sub-agent that rewrites its worktree's .git file to point at a git
// directory of its own, with an fsmonitor hook, does not make Truss run
// it; nor does a filter it adds through .gitattributes and the repository
// configuration it may write in a workspace with no protected .git.
func TestIsolatedDiffRunsNoRepositoryPrograms(t *testing.T) {
	ws, _ := setup(t, true)
	ctx := context.Background()
	iso, err := isolateNow(t, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer iso.remove()
	marks := t.TempDir()
	evil := filepath.Join(t.TempDir(), "evil.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", evil).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	os.WriteFile(filepath.Join(evil, "config"), []byte("[core]\n\tbare = false\n\tfsmonitor = touch "+filepath.Join(marks, "fsmonitor")+"\n"), 0o644)
	os.WriteFile(filepath.Join(iso.top, ".git"), []byte("gitdir: "+evil+"\n"), 0o644)
	// A filter in the repository's own configuration (writable to
	// commands when the repository appeared during the session).
	cfg := exec.Command("git", "-C", ws, "config", "filter.x.clean", "touch "+filepath.Join(marks, "clean")+"; cat")
	if out, err := cfg.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	os.WriteFile(filepath.Join(iso.dir, ".gitattributes"), []byte("* filter=x\n"), 0o644)
	os.WriteFile(filepath.Join(iso.dir, "a.txt"), []byte("b\n"), 0o644)
	diff, err := iso.diff(ctx, []string{"a.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(marks); len(ents) > 0 {
		t.Errorf("a program of the repository ran: %s", ents[0].Name())
	}
	if !strings.Contains(diff, "-a\n+b\n") {
		t.Errorf("diff:\n%s", diff)
	}
}

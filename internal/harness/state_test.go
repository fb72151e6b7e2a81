package harness

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/tool/shell"
)

// TestStateOutsideWritableRoots: a workspace or an extra root that holds
// Truss's own state (a workspace that is $HOME, an --add-dir above
// ~/.config/truss, a link to it, a bind mount of it, a directory inside
// the state) is refused before anything runs, with the way out; one
// beside the state opens.
func TestStateOutsideWritableRoots(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("TRUSS_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	if err := os.MkdirAll(filepath.Join(home, ".config", "truss"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".local", "share"), 0o700); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "h")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	// A bind mount of HOME is another path to it that no link shows.
	bound := filepath.Join(t.TempDir(), "b")
	if err := os.Mkdir(bound, 0o755); err != nil {
		t.Fatal(err)
	}
	mounted := exec.Command("mount", "--bind", home, bound).Run() == nil
	if mounted {
		t.Cleanup(func() { exec.Command("umount", bound).Run() })
	}
	type stateCase = struct {
		name     string
		root     string
		writable []string
		readOnly []string
		refused  string
	}
	cases := []stateCase{
		{"workspace is HOME", home, nil, nil, home},
		{"workspace is a link to HOME", link, nil, nil, "own state"},
		{"workspace is the config directory", filepath.Join(home, ".config"), nil, nil, ".config"},
		{"add-dir above the config", proj, []string{filepath.Join(home, ".config")}, nil, ".config"},
		{"add-dir-ro of the data directory's parent", proj, nil, []string{filepath.Join(home, ".local")}, ".local"},
		{"a project beside the state", proj, nil, nil, ""},
		{"TRUSS_HOME elsewhere, HOME with credentials", home, nil, nil, "credentials"},
		{"workspace inside the config directory", filepath.Join(home, ".config", "truss"), nil, nil, ".config"},
	}
	if mounted {
		cases = append(cases,
			stateCase{"workspace is a bind mount of HOME", bound, nil, nil, "own state"},
			stateCase{"add-dir is a bind mount of HOME", proj, []string{bound}, nil, "own state"},
			stateCase{"a project beside the bind mount's state", filepath.Join(bound, "proj"), nil, nil, ""})
	} else {
		t.Log("mount --bind is not permitted here: the bind mount cases are left out")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.refused == "credentials" {
				t.Setenv("TRUSS_HOME", t.TempDir())
				t.Setenv("XDG_CACHE_HOME", t.TempDir())
				if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(filepath.Join(home, ".ssh"))
			}
			o := Options{Version: "test", Provider: "sim", Script: DemoScript, SimDialect: "chat", Surface: "generic",
				Root: tc.root, WritableDirs: tc.writable, ReadOnlyDirs: tc.readOnly, NoSession: true, NoLedger: true,
				Validation: ValidationOptions{Off: true}, MCP: MCPOptions{Off: true}, Spawn: SpawnOptions{Off: true}}
			s, err := Open(context.Background(), o)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				s.Close()
				return
			}
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "must not reach") || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("error %v", err)
			}
		})
	}
}

// TestUserConfiguration: the user's configuration, beside the key, sets
// the environment's exceptions, the hidden paths and the approval policy;
// a malformed one is a clear error.
func TestUserConfiguration(t *testing.T) {
	o := fixture(t, twoRuns)
	o.Validation.Off = true
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(o.KeyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "approval = \"untrusted\"\n[shell_environment]\ninclude = [\"DATABASE_*\"]\nexclude = [\"CORP_*\"]\n[sandbox]\nhidden = [\"~/private\"]\nrelease = [\"~/.npmrc\"]\n"
	if err := os.WriteFile(filepath.Join(o.KeyDir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.approvalPolicy(); got != "untrusted" {
		t.Errorf("approval %s", got)
	}
	hidden := s.w.sandbox.Plan().Policy.Hidden
	has := func(p string) bool {
		for _, h := range hidden {
			if h == p {
				return true
			}
		}
		return false
	}
	if !has(filepath.Join(home, "private")) || has(filepath.Join(home, ".npmrc")) || !has(filepath.Join(home, ".ssh")) {
		t.Errorf("hidden %v", hidden)
	}
	env := shellEnv(s, []string{"DATABASE_URL=postgres://u:pw@db/x", "CORP_PROXY=http://p", "PATH=/bin", "PGPASSWORD=x"})
	if strings.Join(env, " ") != "DATABASE_URL=postgres://u:pw@db/x PATH=/bin" {
		t.Errorf("environment %q", env)
	}

	if err := os.WriteFile(filepath.Join(o.KeyDir, "config.toml"), []byte("[shell_environment]\nincluded = []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s2, err := Open(context.Background(), o); err == nil {
		s2.Close()
		t.Fatal("a malformed user configuration was accepted")
	} else if !strings.Contains(err.Error(), "config.toml") || !strings.Contains(err.Error(), "included") {
		t.Errorf("error %v", err)
	}
}

// shellEnv is what the session's commands would get of env.
func shellEnv(s *Session, env []string) []string {
	return shell.ScrubEnvOwn(env, s.w.allowEnv, s.w.withholdEnv, s.w.ownEnv)
}

// TestWarnsOfNewRepository: a .git a command made during the session (in
// a workspace that had none) is named to the user at the end of the run,
// since git run there would obey the model's configuration.
func TestWarnsOfNewRepository(t *testing.T) {
	o := fixture(t, `{"steps": [{"actions": [{"kind": "run", "command": "git init -q . && git config core.fsmonitor false"}]}, {"say": "done"}]}`)
	o.Validation.Off = true
	var warnings []string
	o.OnWarning = func(m string) { warnings = append(warnings, m) }
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Run(context.Background(), "make a repository"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(o.Root, ".git", "config")); err != nil {
		t.Skipf("the command made no repository here: %v", err)
	}
	found := false
	for _, w := range warnings {
		if strings.Contains(w, "during the session") && strings.Contains(w, ".git") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no warning of the new repository: %q", warnings)
	}
}

// TestWarnsOfNestedRepository: in a workspace that is a repository, a
// command makes another repository below it — a .git directory, a .git
// file naming a git directory elsewhere, a git directory by another name
// made file by file — and sets core.fsmonitor there; the end of the run
// says so, naming it.
func TestWarnsOfNestedRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, tc := range []struct{ name, cmd, warned string }{
		{"directory", "git init -q sub && git -C sub config core.fsmonitor 'touch /tmp/x'", "sub/.git during the session"},
		{"gitdir file", "git init -q --separate-git-dir=gdata sub && git -C sub config core.fsmonitor 'touch /tmp/x'", "sub/.git during the session"},
		{"git directory by another name", "mkdir -p gd/objects gd/refs && printf 'ref: refs/heads/main\\n' > gd/HEAD && printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' > gd/config", "the git directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(tc.cmd)
			o := fixture(t, `{"steps": [{"actions": [{"kind": "run", "command": `+string(in)+`}]}, {"say": "done"}]}`)
			o.Validation.Off = true
			commitAll(t, o.Root)
			var warnings []string
			o.OnWarning = func(m string) { warnings = append(warnings, m) }
			s, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Run(context.Background(), "make a nested repository"); err != nil {
				t.Fatal(err)
			}
			for _, w := range warnings {
				if strings.Contains(w, tc.warned) {
					return
				}
			}
			t.Fatalf("no warning of the nested repository: %q", warnings)
		})
	}
}

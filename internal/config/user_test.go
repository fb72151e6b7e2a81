package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadUser(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, UserFile)
	if u, err := LoadUser(file); err != nil || u.Approval != "" {
		t.Fatalf("missing file: %+v, %v", u, err)
	}
	good := "approval = \"on-request\"\napproval_edits = \"ask\"\n[shell_environment]\ninclude = [\"DATABASE_URL\", \"AWS_*\"]\nexclude = [\"CORP_*\"]\n[sandbox]\nhidden = [\"~/secrets\"]\nrelease = [\"~/.npmrc\"]\n"
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := LoadUser(file)
	if err != nil {
		t.Fatal(err)
	}
	if u.Approval != "on-request" || u.ApprovalEdits != "ask" || len(u.ShellEnvironment.Include) != 2 || u.ShellEnvironment.Exclude[0] != "CORP_*" ||
		u.Sandbox.Hidden[0] != "~/secrets" || u.Sandbox.Release[0] != "~/.npmrc" {
		t.Fatalf("%+v", u)
	}
	for body, want := range map[string]string{
		"approval = \"sometimes\"\n":               "approval \"sometimes\"",
		"approval_edits = \"always\"\n":            "approval_edits \"always\": use ask",
		"[shell_environment]\ninclud = [\"X\"]\n":  "unknown setting \"shell_environment.includ\"",
		"[shell_environment]\ninclude = [\"[\"]\n": "bad pattern",
		"approval = \n":                            "line 1",
	} {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadUser(file); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), file) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	if got := ExpandHome("~/x/y", "/h"); got != "/h/x/y" {
		t.Errorf("ExpandHome: %s", got)
	}
}

// A project cannot set what belongs to the user, trusted or not.
func TestProjectCannotSetUserSettings(t *testing.T) {
	for _, body := range []string{
		"approval = \"never\"\n",
		"approval_edits = \"accept\"\n",
		"[shell_environment]\ninclude = [\"*\"]\n",
		"[sandbox]\nrelease = [\"~/.ssh\"]\n",
		"[sandbox]\nhidden = []\n",
	} {
		_, err := Parse(t.TempDir(), []byte(body))
		if err == nil || !strings.Contains(err.Error(), "user's configuration") || !strings.Contains(err.Error(), "a project cannot set") {
			t.Errorf("%q: %v", body, err)
		}
	}
}

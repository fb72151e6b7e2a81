//go:build linux

package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/sandbox"
)

// TestNoSetIDFiles: a command cannot leave a set-user-ID or set-group-ID
// file in the workspace, by chmod, install or a create with the bits in
// its mode, nor a program with a file capability; ordinary modes still
// work.
func TestNoSetIDFiles(t *testing.T) {
	b := newBox(t, sandbox.WorkspaceWrite, false)
	if r := b.run(t, "cp /bin/sh s && chmod 755 s && chmod +x a.txt && mkdir d && chmod 1777 d", 0); r.Err != nil {
		t.Fatalf("ordinary modes: %+v", r)
	}
	refused := []struct{ name, cmd, file string }{
		{"chmod 4755", "chmod 4755 s", "s"},
		{"chmod u+s", "chmod u+s s", "s"},
		{"chmod g+s", "chmod g+s s", "s"},
		{"chmod g+s on a directory", "chmod g+s d", "d"},
		{"install -m 4755", "install -m 4755 s s2", "s2"},
		{"setcap", "setcap cap_setuid+ep s", "s"},
		{"create with the mode", `perl -MFcntl -e 'sysopen(my $f, "s3", O_CREAT|O_WRONLY, 04755) or die "$!\n"'`, "s3"},
	}
	for _, c := range refused {
		if prog, _, _ := strings.Cut(c.cmd, " "); prog == "perl" || prog == "setcap" {
			if _, err := exec.LookPath(prog); err != nil {
				t.Logf("no %s: %s not tried", prog, c.name)
				continue
			}
		}
		r := b.run(t, c.cmd, 0)
		if r.Err == nil {
			t.Errorf("%s: succeeded (%q)", c.name, r.Stdout)
		}
		if fi, err := os.Lstat(filepath.Join(b.ws, c.file)); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s: %s is %v", c.name, c.file, fi.Mode())
		}
		if n, err := unix.Lgetxattr(filepath.Join(b.ws, c.file), "security.capability", make([]byte, 64)); err == nil || n > 0 {
			t.Errorf("%s: %s has a file capability", c.name, c.file)
		}
	}
	if fi, err := os.Stat(filepath.Join(b.ws, "s")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("s after the refusals: %v, %v", fi, err)
	}
}

package hostfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestRemoveAllReadOnly: a tree with read-only directories (a Go module
// cache's), an unreadable one and a link to a read-only directory
// outside is removed, and the directory outside is left as it was. Root
// removes read-only trees anyway, so as root the test runs itself again
// as nobody, in a directory handed to it by descriptor (its ancestors
// are root's alone).
func TestRemoveAllReadOnly(t *testing.T) {
	if d := os.Getenv("HOSTFS_REMOVE_TEST"); d != "" {
		removeReadOnly(t, d)
		return
	}
	if os.Geteuid() != 0 {
		removeReadOnly(t, t.TempDir())
		return
	}
	base := t.TempDir()
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("/proc/self/exe", "-test.run=^TestRemoveAllReadOnly$", "-test.v")
	cmd.Env = append(os.Environ(), "HOSTFS_REMOVE_TEST=/proc/self/fd/3")
	cmd.ExtraFiles = []*os.File{f}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	t.Logf("as nobody:\n%s", out)
}

func removeReadOnly(t *testing.T, base string) {
	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(outside, 0o755) })
	dir := filepath.Join(base, "tmp")
	for _, d := range []string{"mod/golang.org/x/mod@v0.1.0/zip", "locked/inner"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "f.go"), []byte("package x\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "mod", "out")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"mod/golang.org/x/mod@v0.1.0/zip", "mod/golang.org/x/mod@v0.1.0", "mod/golang.org", "mod"} {
		if err := os.Chmod(filepath.Join(dir, d), 0o555); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "locked"), 0o000); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err == nil {
		t.Fatalf("os.RemoveAll removed the read-only tree as uid %d: the test tests nothing", os.Geteuid())
	}
	if err := RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", dir, err)
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("the directory outside: %v, %v; want it 0555 as it was", fi.Mode(), err)
	}
	t.Log("removed as uid " + strconv.Itoa(os.Geteuid()))
}

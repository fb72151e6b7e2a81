//go:build linux

package hostfs

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLongName: names longer than PATH_MAX resolve part by part, with
// the same refusal of links at every part.
func TestLongName(t *testing.T) {
	dir := t.TempDir()
	part := strings.Repeat("d", 250)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if err := unix.Mkdirat(fd, part, 0o755); err != nil {
			t.Fatal(err)
		}
		nfd, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		fd = nfd
	}
	if err := unix.Mkdirat(fd, "real", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Symlinkat("real", fd, "link"); err != nil {
		t.Fatal(err)
	}
	wfd, err := unix.Openat(fd, "real/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	unix.Write(wfd, []byte("deep\n"))
	unix.Close(wfd)
	unix.Close(fd)
	deep := strings.Repeat(part+"/", 20)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, tc := range []struct {
		name    string
		wantErr bool
	}{
		{deep + "real/f", false},
		{deep + "link/f", true},
		{deep + strings.Repeat("x", 300) + "/f", true},
	} {
		data, err := r.ReadFile(tc.name, 100)
		if (err != nil) != tc.wantErr || (err == nil && string(data) != "deep\n") {
			t.Errorf("ReadFile(…%s) = %q, %v; want error %v", tc.name[len(deep):], data, err, tc.wantErr)
		}
	}
	d, err := r.OpenDir(deep + "real")
	if err != nil {
		t.Fatalf("OpenDir: %v", err)
	}
	d.Close()
	if i, err := r.Lstat(deep + "real/f"); err != nil || i.Size != 5 {
		t.Errorf("Lstat: %+v %v", i, err)
	}
}

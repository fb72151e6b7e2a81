package trust

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestStore(t *testing.T) {
	st := &Store{Path: filepath.Join(t.TempDir(), "sub", FileName)}
	ws := t.TempDir()
	files := Files{".truss/config.toml": []byte("a"), ".truss/agents/r.md": []byte("b")}
	for _, tc := range []struct {
		name  string
		files Files
		want  State
	}{
		{"nothing to trust", nil, None},
		{"never trusted", files, Untrusted},
	} {
		d, err := st.Check(ws, tc.files)
		if err != nil || d.State != tc.want {
			t.Errorf("%s: %v %+v, want %s", tc.name, err, d, tc.want)
		}
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := st.Trust(ws, files, now); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(st.Path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("store file: %v %v", err, fi)
	}
	if d, err := st.Check(ws, Files{".truss/agents/r.md": []byte("b"), ".truss/config.toml": []byte("a")}); err != nil || d.State != Trusted || !d.Since.Equal(now) {
		t.Errorf("same files: %v %+v", err, d)
	}
	// Through a symbolic link to the workspace: the same key.
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(ws, link)
	if d, _ := st.Check(link, files); d.State != Trusted {
		t.Errorf("through a link: %+v", d)
	}
	for _, tc := range []struct {
		name    string
		files   Files
		changed []string
	}{
		{"edited", Files{".truss/config.toml": []byte("a2"), ".truss/agents/r.md": []byte("b")}, []string{".truss/config.toml"}},
		{"added", Files{".truss/config.toml": []byte("a"), ".truss/agents/r.md": []byte("b"), ".truss/agents/s.md": nil}, []string{".truss/agents/s.md"}},
		{"removed", Files{".truss/config.toml": []byte("a")}, []string{".truss/agents/r.md"}},
	} {
		d, err := st.Check(ws, tc.files)
		if err != nil || d.State != Changed || !reflect.DeepEqual(d.Changed, tc.changed) {
			t.Errorf("%s: %v %+v, want changed %v", tc.name, err, d, tc.changed)
		}
	}
	// Another workspace is not trusted by this one's record.
	if d, _ := st.Check(t.TempDir(), files); d.State != Untrusted {
		t.Errorf("other workspace: %+v", d)
	}
	if ok, err := st.Revoke(ws); !ok || err != nil {
		t.Errorf("revoke: %v %v", ok, err)
	}
	if d, _ := st.Check(ws, files); d.State != Untrusted {
		t.Errorf("after revoke: %+v", d)
	}
	if ok, err := st.Revoke(ws); ok || err != nil {
		t.Errorf("second revoke: %v %v", ok, err)
	}
}

func TestStoreCorrupt(t *testing.T) {
	st := &Store{Path: filepath.Join(t.TempDir(), FileName)}
	os.WriteFile(st.Path, []byte("{"), 0o600)
	if _, err := st.Check(t.TempDir(), Files{"x": nil}); err == nil {
		t.Error("a corrupt store was read as empty")
	}
	os.WriteFile(st.Path, []byte(`{"format": 9}`), 0o600)
	if _, err := st.Check(t.TempDir(), Files{"x": nil}); err == nil {
		t.Error("a store of another format was read")
	}
}

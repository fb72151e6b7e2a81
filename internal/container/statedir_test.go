package container

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateDirOutsideWorkspace: the state directory, which the host reads
// and removes in, is never made where the container's workspace mount
// reaches: a TMPDIR inside the workspace, a link to it or a bind mount
// of it is passed over for $XDG_RUNTIME_DIR, and with no directory
// outside left the start fails with the way out.
func TestStateDirOutsideWorkspace(t *testing.T) {
	ws := t.TempDir()
	inWS := filepath.Join(ws, "tmp")
	if err := os.Mkdir(inWS, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "l")
	if err := os.Symlink(inWS, link); err != nil {
		t.Fatal(err)
	}
	outside, runtime := t.TempDir(), t.TempDir()
	type stateCase struct {
		name, tmp, runtime string
		want               string // the base it is made in; "" = refused
	}
	cases := []stateCase{
		{"TMPDIR outside", outside, runtime, outside},
		{"TMPDIR inside", inWS, runtime, runtime},
		{"TMPDIR is the workspace", ws, runtime, runtime},
		{"TMPDIR a link into the workspace", link, runtime, runtime},
		{"nothing outside", inWS, "", ""},
		{"both inside", inWS, ws, ""},
	}
	bound := filepath.Join(t.TempDir(), "b")
	if err := os.Mkdir(bound, 0o755); err != nil {
		t.Fatal(err)
	}
	if exec.Command("mount", "--bind", ws, bound).Run() == nil {
		t.Cleanup(func() { exec.Command("umount", bound).Run() })
		cases = append(cases, stateCase{"TMPDIR inside a bind mount of the workspace", filepath.Join(bound, "tmp"), runtime, runtime})
	} else {
		t.Log("mount --bind is not permitted here: the bind mount case is left out")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", tc.tmp)
			t.Setenv("XDG_RUNTIME_DIR", tc.runtime)
			d, err := makeStateDir(ws)
			if tc.want == "" {
				if err == nil {
					os.Remove(d)
					t.Fatalf("made %s", d)
				}
				if !strings.Contains(err.Error(), "outside the workspace") || !strings.Contains(err.Error(), "TMPDIR") {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer os.Remove(d)
			if filepath.Dir(d) != tc.want {
				t.Fatalf("made %s, want it in %s", d, tc.want)
			}
		})
	}
}

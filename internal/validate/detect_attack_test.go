package validate

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDetectPlantedMarkers plants the markers test detection reads as a
// command in the sandbox could: FIFOs (which a blocking open waits on
// forever), links to files outside the workspace or to /dev/zero, a
// marker far larger than any real one. Each counts as absent; none hangs
// Detect. Beside them a regular marker still counts.
func TestDetectPlantedMarkers(t *testing.T) {
	outside := t.TempDir()
	outMake := filepath.Join(outside, "Makefile")
	if err := os.WriteFile(outMake, []byte("test:\n\ttrue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := func(name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	link := func(target, name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	file := func(name, body string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "test_a.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mkdir := func(name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name  string
		plant []func(t *testing.T, dir string)
		test  string
	}{
		{"FIFO Makefile", []func(*testing.T, string){fifo("Makefile")}, ""},
		{"FIFO package.json", []func(*testing.T, string){fifo("package.json")}, ""},
		{"FIFO pyproject.toml", []func(*testing.T, string){fifo("pyproject.toml")}, ""},
		{"FIFO go.mod", []func(*testing.T, string){fifo("go.mod")}, ""},
		{"FIFO setup.cfg beside a Makefile", []func(*testing.T, string){fifo("setup.cfg"), file("Makefile", "test:\n\ttrue\n")}, "make test"},
		{"Makefile linked outside", []func(*testing.T, string){link(outMake, "Makefile")}, ""},
		{"Makefile linked to /dev/zero", []func(*testing.T, string){link("/dev/zero", "Makefile")}, ""},
		{"tox.ini linked to /dev/zero", []func(*testing.T, string){link("/dev/zero", "tox.ini")}, ""},
		{"tests linked to a directory", []func(*testing.T, string){file("setup.py", ""), link(outside, "tests")}, ""},
		{"tests linked to a directory of Python tests", []func(*testing.T, string){link(outside, "tests")}, ""},
		{"test linked to a directory of Python tests", []func(*testing.T, string){link(outside, "test")}, ""},
		{"a test file linked inside tests", []func(*testing.T, string){mkdir("tests"), link(filepath.Join(outside, "test_a.py"), "tests/test_a.py")}, ""},
		{"a FIFO named as a test file", []func(*testing.T, string){mkdir("tests"), fifo("tests/test_a.py")}, ""},
		{"test target beyond the cap", []func(*testing.T, string){file("Makefile", strings.Repeat("#\n", MaxMarker/2+1)+"test:\n\ttrue\n")}, ""},
		{"test target within the cap", []func(*testing.T, string){file("Makefile", strings.Repeat("#\n", 100)+"test:\n\ttrue\n")}, "make test"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, p := range tc.plant {
				p(t, dir)
			}
			type res struct {
				env Env
				ok  bool
			}
			done := make(chan res, 1)
			go func() { env, ok := Detect(dir); done <- res{env, ok} }()
			var r res
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Detect hangs on a planted marker") // a hang detector, not a timing assertion
			}
			if r.env.Test != tc.test || r.ok != (tc.test != "") {
				t.Errorf("Detect = %q %v, want %q", r.env.Test, r.ok, tc.test)
			}
		})
	}
}

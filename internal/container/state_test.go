package container

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStateDirectoryPlants: what a command in the container could plant
// in the state directory were it writable (it is mounted read-only; an
// engine might ignore that) and what it can plant in its rw
// subdirectory: where the host writes a shell's start script, opens its
// FIFOs and reads its status. Nothing
// outside is written, nothing but a FIFO is opened as one, and a FIFO in
// place of the status file does not make the host wait.
func TestStateDirectoryPlants(t *testing.T) {
	state, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(state, "1")

	// The start script: links at its name and at the old fixed
	// temporary name.
	for _, l := range []string{base + ".env", base + ".env.tmp"} {
		if err := os.Symlink(victim, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeAtomic(base+".env", []byte("export A=1\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Fatalf("the host wrote through a planted link: %q", b)
	}
	if fi, err := os.Lstat(base + ".env"); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the start script: %v %v", fi, err)
	}

	// The FIFOs: a link to a host FIFO, a regular file, a socket's place.
	hostFIFO := filepath.Join(outside, "fifo")
	if err := syscall.Mkfifo(hostFIFO, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostFIFO, base+".in"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".out", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openFIFO(base+".in", os.O_RDWR); err == nil {
		t.Error("opened a link to a FIFO outside")
	}
	if _, err := openFIFO(base+".out", os.O_RDONLY); err == nil || !strings.Contains(err.Error(), "not the FIFO Truss made") {
		t.Errorf("a regular file in place of a FIFO: %v", err)
	}
	if err := os.Symlink(victim, filepath.Join(state, "ctl")); err != nil {
		t.Fatal(err)
	}
	v := &Env{state: state}
	if err := v.request("start 1"); err == nil {
		t.Error("a request went to a link in place of the control FIFO")
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Fatalf("a request wrote through a planted link: %q", b)
	}

	// A FIFO in place of the status file, which nothing ever writes.
	if err := syscall.Mkfifo(base+".status", 0o600); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	tr := &fifoTracker{env: v, id: "1", base: base, repIn: pw, ends: 1}
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- string(b)
	}()
	done := make(chan struct{})
	go func() { tr.ended(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a hang detector, not a measure
		t.Fatal("the host waits on a FIFO planted as the status file")
	}
	if s := <-got; strings.TrimSpace(s) != "137" {
		t.Errorf("status %q, want 137 (unknown: killed)", s)
	}
}

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// HelperName is the small helper binary installed next to truss (built
// from cmd/truss-sandbox); it starts faster than truss itself.
const HelperName = "truss-sandbox"

// Helper returns the program the plan's sandbox runs as its helper
// (ChooseHelper for the plan's writable roots): the one its "helper"
// protection names.
func (pl *Plan) Helper() (string, error) { return ChooseHelper(pl.Policy.helperRoots()) }

// HelperPath returns the program the sandbox of a default policy would run
// as its helper (see ChooseHelper), for display.
func HelperPath() (string, error) {
	wd, _ := os.Getwd()
	return ChooseHelper(DefaultPolicy(wd, os.TempDir()).writable())
}

// ChooseHelper returns the program a sandbox whose commands may write the
// given roots runs as its helper. The helper runs before any confinement,
// so it must never be a file those commands could have replaced:
//
//   - $TRUSS_SANDBOX_HELPER when set: an absolute path, refused when it is
//     in a writable root;
//   - else truss-sandbox next to the running executable, when it is there
//     and neither it nor its directory is in a writable root;
//   - else the running executable itself (which must call IsHelper and
//     RunHelper first thing in main), which the sandbox opens when it is
//     made and starts through that descriptor, so that a file put in its
//     place later is not what runs.
func ChooseHelper(writable []string) (string, error) {
	if p := os.Getenv("TRUSS_SANDBOX_HELPER"); p != "" {
		if !filepath.IsAbs(p) {
			return "", fmt.Errorf("TRUSS_SANDBOX_HELPER must be an absolute path, not %q", p)
		}
		if root, ok := inWritable(p, writable); ok {
			return "", fmt.Errorf("TRUSS_SANDBOX_HELPER %s is under %s, which sandboxed commands can write: a command could replace it and the next command would run unconfined; install the helper elsewhere", p, root)
		}
		return p, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the truss binary to run as the helper: %w", err)
	}
	return chooseHelper(self, writable), nil
}

// chooseHelper picks the small helper next to self, or self.
func chooseHelper(self string, writable []string) string {
	small := filepath.Join(filepath.Dir(self), HelperName)
	if filepath.Base(self) == HelperName {
		return self
	}
	fi, err := os.Stat(small)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return self
	}
	if _, ok := inWritable(small, writable); ok {
		return self // a command could have put it there
	}
	return small
}

// inWritable reports the writable root a path, or the file it resolves
// to, is in.
func inWritable(p string, writable []string) (string, bool) {
	paths := []string{filepath.Clean(p)}
	if r, err := filepath.EvalSymlinks(p); err == nil && r != paths[0] {
		paths = append(paths, r)
	}
	for _, w := range writable {
		roots := []string{filepath.Clean(w)}
		if r, err := filepath.EvalSymlinks(w); err == nil && r != roots[0] {
			roots = append(roots, r)
		}
		for _, root := range roots {
			for _, q := range paths {
				if q == root || strings.HasPrefix(q, strings.TrimSuffix(root, "/")+"/") {
					return w, true
				}
			}
		}
	}
	return "", false
}

// openHelper opens the helper program so that it is started through the
// descriptor (/proc/self/fd/N): what runs is the file as it was when the
// sandbox was made, whatever is put at its path afterwards.
func openHelper(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the helper %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		f.Close()
		return nil, fmt.Errorf("the helper %s is not an executable file", path)
	}
	return f, nil
}

// helperRoots are the places a policy's commands may write, for choosing
// the helper: everything, in full access.
func (p Policy) helperRoots() []string {
	if p.Mode == FullAccess {
		return []string{"/"}
	}
	return p.writable()
}

// helperCheck says which helper a policy's sandbox would run, and whether
// it is safe from the sandbox's commands.
func helperCheck(p Policy) (string, error) {
	h, err := ChooseHelper(p.helperRoots())
	if err != nil {
		return err.Error(), err
	}
	if me, err := os.Executable(); err == nil && me == h {
		return h + " (truss itself, started through the descriptor it was started from)", nil
	}
	return h + " (outside every writable root, started through a descriptor opened when the session starts)", nil
}

package container

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// The container's supervisor is the running program itself (see
// supervise): Start mounts it read-only at supervisorProg and makes it the
// container's entrypoint, PID 1. A program linked with the C library is
// started by the host's dynamic loader, mounted with the libraries the
// program needs at supervisorDir, so that it runs in any image, whatever
// C library the image has, or none.
const (
	supervisorDir  = "/.truss-env"
	supervisorProg = supervisorDir + "/supervisor"
)

// supervisorLaunch is how a container starts its supervisor: the mounts
// that bring the program (and its loader and libraries) into the
// container, and the entrypoint's argv (the state directory follows).
type supervisorLaunch struct {
	mounts []Mount
	argv   []string
	note   string // for the facts
}

// findSupervisor finds the running program and, when it is dynamically
// linked, the host's loader and the libraries it needs (DT_NEEDED,
// transitively), each looked up beside the loader and in the usual
// library directories, of the program's machine and class.
func findSupervisor() (supervisorLaunch, error) {
	exe, err := os.Executable()
	if err != nil {
		return supervisorLaunch{}, fmt.Errorf("find the running program, which is the container's supervisor: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	f, err := elf.Open(exe)
	if err != nil {
		return supervisorLaunch{}, fmt.Errorf("the running program %s is the container's supervisor and must be a Linux executable: %w", exe, err)
	}
	defer f.Close()
	interp, err := interpreter(f)
	if err != nil {
		return supervisorLaunch{}, fmt.Errorf("read the running program %s: %w", exe, err)
	}
	l := supervisorLaunch{mounts: []Mount{{Source: exe, Target: supervisorProg, ReadOnly: true}}}
	if interp == "" {
		l.argv = []string{supervisorProg}
		l.note = exe + " (static)"
		return l, checkCommas(l.mounts)
	}
	loader, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return supervisorLaunch{}, fmt.Errorf("the loader %s of the running program %s: %w", interp, exe, err)
	}
	dirs := libDirs(loader, interp)
	libs := map[string]string{} // name -> host file
	var names []string
	var need func(*elf.File, string) error
	need = func(ef *elf.File, who string) error {
		imported, err := ef.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("read the libraries %s needs: %w", who, err)
		}
		for _, name := range imported {
			if _, ok := libs[name]; ok || strings.Contains(name, "/") {
				continue
			}
			p, lf, err := findLib(name, dirs, f.Machine, f.Class)
			if err != nil {
				return fmt.Errorf("the library %s that %s needs: %w", name, who, err)
			}
			libs[name] = p
			names = append(names, name)
			err = need(lf, name)
			lf.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := need(f, exe); err != nil {
		return supervisorLaunch{}, err
	}
	l.mounts = append(l.mounts, Mount{Source: loader, Target: supervisorDir + "/ld.so", ReadOnly: true})
	// The loader reads /etc/ld.so.preload before the supervisor runs a
	// line of its own: a command (root in the container) that wrote one
	// would have its library's constructor run as the next supervisor,
	// PID 1, before it makes itself undumpable. The container's file is
	// an empty, read-only one instead.
	l.mounts = append(l.mounts, Mount{Source: os.DevNull, Target: "/etc/ld.so.preload", ReadOnly: true})
	for _, n := range names {
		l.mounts = append(l.mounts, Mount{Source: libs[n], Target: supervisorDir + "/lib/" + n, ReadOnly: true})
	}
	l.argv = []string{supervisorDir + "/ld.so", "--library-path", supervisorDir + "/lib", supervisorProg}
	l.note = fmt.Sprintf("%s, started by the host's loader %s with %s", exe, interp, strings.Join(names, ", "))
	return l, checkCommas(l.mounts)
}

// interpreter is the program's PT_INTERP, "" for a static program.
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", err
		}
		return string(bytes.TrimRight(b, "\x00")), nil
	}
	return "", nil
}

// libDirs are where a library is looked for: beside the loader (as
// resolved and as named), then the usual directories.
func libDirs(loader, interp string) []string {
	dirs := []string{filepath.Dir(loader), filepath.Dir(interp)}
	for _, pat := range []string{"/lib/*-linux-*", "/usr/lib/*-linux-*"} {
		m, _ := filepath.Glob(pat)
		dirs = append(dirs, m...)
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// findLib finds the library name in dirs, of the program's machine and
// class; the file it resolves to, opened.
func findLib(name string, dirs []string, m elf.Machine, c elf.Class) (string, *elf.File, error) {
	for _, d := range dirs {
		p, err := filepath.EvalSymlinks(filepath.Join(d, name))
		if err != nil {
			continue
		}
		lf, err := elf.Open(p)
		if err != nil {
			continue
		}
		if lf.Machine == m && lf.Class == c {
			return p, lf, nil
		}
		lf.Close()
	}
	return "", nil, fmt.Errorf("not found in %s", strings.Join(dirs, ", "))
}

// parseRequest reads a line of the control FIFO: "start ID" or "kill
// ID", ID a shell's number. ok is false for anything else, which the
// supervisor ignores.
func parseRequest(line string) (op, id string, ok bool) {
	op, id, _ = strings.Cut(line, " ")
	if op != "start" && op != "kill" || id == "" || len(id) > 18 {
		return "", "", false
	}
	for _, r := range id {
		if r < '0' || r > '9' {
			return "", "", false
		}
	}
	return op, id, true
}

// checkCommas refuses a mount whose source a --mount value cannot name.
func checkCommas(ms []Mount) error {
	for _, m := range ms {
		if strings.Contains(m.Source, ",") || !path.IsAbs(m.Target) {
			return fmt.Errorf("the supervisor's file %s has a comma in its path, which a bind mount cannot name", m.Source)
		}
	}
	return nil
}

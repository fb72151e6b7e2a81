package container

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// init turns the process into the container's supervisor when it is one:
// PID 1 of a container, started as supervisorProg with the state
// directory as its one argument (Start mounts the running executable
// there and makes it the container's entrypoint). Any program that links
// this package can so be the supervisor, without a hook in its main; in
// every other process this does nothing.
func init() {
	if len(os.Args) == 2 && os.Args[0] == supervisorProg && os.Getpid() == 1 {
		os.Exit(supervise(os.Args[1]))
	}
	if len(os.Args) >= 3 && os.Args[0] == supervisorProg && os.Args[1] == undumpableFlag {
		os.Exit(execUndumpable(os.Args[2:]))
	}
}

// undumpableFlag, after supervisorProg, runs execUndumpable: the way the
// supervisor's shells start.
const undumpableFlag = "--exec-undumpable"

// execUndumpable runs argv (its program looked up in PATH) in this
// process so that it is not dumpable: /proc/PID/fd, mem, environ and the
// like of the shell are then open only to a process with CAP_SYS_PTRACE,
// which none of the container's has, so a command cannot read the shell's
// input (the host's script, the token that ends each command's output)
// or write into it through /proc, as it could of a shell of its own user.
// A process made non-dumpable stays so only until its next execve, which
// makes it dumpable again unless its effective group differs from its
// real one then: so the effective group is set apart from the real one
// just before the exec (setresgid, which takes CAP_SETGID: a container
// whose user is root), and bash, finding them apart, sets them equal
// again at its start, which leaves it not dumpable (the kernel resets
// dumpability on every change of credentials). The commands bash runs
// exec with equal groups and are dumpable as any program. Without
// CAP_SETGID (a container of another user) the shell starts as before,
// reachable by its commands, and a line on standard error says so.
func execUndumpable(argv []string) int {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "truss-env: %v\n", err)
		return 127
	}
	rg := syscall.Getgid()
	eg := rg + 1
	if eg < 0 || eg > 1<<31-2 {
		eg = rg - 1
	}
	if err := unix.Setresgid(rg, eg, rg); err != nil {
		fmt.Fprintf(os.Stderr, "truss-env: the shell stays dumpable (its commands can reach its input through /proc): %v\n", err)
	}
	err = syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "truss-env: %s: %v\n", path, err)
	return 126
}

// undumpableLauncher is how the supervisor runs a program through
// execUndumpable: itself, by the loader it was started with where it was
// (Start mounts it at supervisorDir/ld.so). Which is asked of the kernel
// (the running executable), not of the file system: in a static
// supervisor's container, supervisorDir is the image's, and a command
// could put an ld.so there.
func undumpableLauncher() []string {
	if exe, err := os.Readlink("/proc/self/exe"); err == nil && exe == supervisorDir+"/ld.so" {
		return []string{supervisorDir + "/ld.so", "--library-path", supervisorDir + "/lib", supervisorProg, undumpableFlag}
	}
	return []string{supervisorProg, undumpableFlag}
}

// supervise is the supervisor's life: PID 1 of the container, it starts
// the shells the host asks for on the control FIFO, waits for them,
// writes their exit statuses, and reaps every orphan of the container.
// The protocol is the one documented at stateRW:
//
//	start ID   run ID.env's commands (cd, exports, `set -- ARGV`) and then
//	           ARGV, with standard streams on the FIFOs ID.in, ID.out and
//	           ID.err, in a process group of its own; its exit status goes
//	           to rw/ID.status (written before the supervisor's copies of
//	           the FIFOs are closed)
//	kill ID    kill ID's process group
//
// A shell ID starts once: a second "start ID" is ignored.
//
// What keeps the container's commands (the same user, the same
// capabilities) from taking it over:
//
//   - it is not dumpable (PR_SET_DUMPABLE 0), so /proc/1/mem, environ,
//     fd, maps and the like are open only to a process with
//     CAP_SYS_PTRACE, which no process of the container has (the
//     engine's lockdown drops it); the kernel makes the check on every
//     open, whatever the file's mode;
//   - it is PID 1 of the container's PID namespace: the kernel does not
//     deliver SIGKILL or SIGSTOP from inside the namespace to it, and it
//     catches every other signal (and ignores it, but SIGCHLD);
//   - it waits for the shells itself, so there is no other process of
//     Truss's in the container; the shells' process groups are held in
//     its memory, not in a file a command could rewrite.
func supervise(state string) int {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "truss-env: make the supervisor not dumpable: %v\n", err)
		return 125
	}
	// Every signal that can be caught is, and dropped; SIGCHLD has a
	// channel of its own, so that no flood of others crowds it out.
	others, chld := make(chan os.Signal, 16), make(chan os.Signal, 16)
	signal.Notify(others)
	signal.Notify(chld, syscall.SIGCHLD)
	go func() {
		for range others {
		}
	}()
	bash, err := exec.LookPath("bash")
	if err != nil {
		fmt.Fprintln(os.Stderr, "truss-env: bash: not found on the image's PATH")
		return 127
	}
	ctl, err := os.OpenFile(filepath.Join(state, "ctl"), os.O_RDWR, 0) // never reaches its end
	if err != nil {
		fmt.Fprintf(os.Stderr, "truss-env: open the control FIFO: %v\n", err)
		return 125
	}
	s := &supervisor{state: state, bash: bash, groups: map[string]int{}, waiting: map[int]chan syscall.WaitStatus{}, started: map[string]bool{}}
	go s.reap(chld)
	sc := bufio.NewScanner(ctl)
	for sc.Scan() {
		op, id, ok := parseRequest(sc.Text())
		if !ok {
			continue
		}
		switch op {
		case "start":
			s.mu.Lock()
			again := s.started[id]
			s.started[id] = true
			s.mu.Unlock()
			if !again {
				go s.start(id)
			}
		case "kill":
			s.kill(id)
		}
	}
	// The FIFO is held open read-write: a read error is all that ends it.
	fmt.Fprintf(os.Stderr, "truss-env: read the control FIFO: %v\n", sc.Err())
	return 125
}

// supervisor is the state of the container's supervisor.
type supervisor struct {
	state, bash string

	mu sync.Mutex
	// groups are the shells' process groups by shell ID. A group stays
	// after its leader exits (what it started may still run) until its
	// number is reused by a new process.
	groups map[string]int
	// waiting are the started shells not reaped yet, by pid.
	waiting map[int]chan syscall.WaitStatus
	// started are the shell IDs asked for so far: each starts once. A
	// second "start ID" (any process of the container can write to the
	// control FIFO) would start another shell reading the same input.
	started map[string]bool
}

// start runs shell id (see supervise) and writes its exit status.
func (s *supervisor) start(id string) {
	base := filepath.Join(s.state, id)
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	// In the order the host opens the other ends: each open waits for it.
	for _, o := range []struct {
		suffix string
		flag   int
	}{{".in", os.O_RDONLY}, {".out", os.O_WRONLY}, {".err", os.O_WRONLY}} {
		f, err := os.OpenFile(base+o.suffix, o.flag|syscall.O_NOFOLLOW, 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "truss-env: shell %s: %v\n", id, err)
			return
		}
		files = append(files, f)
	}
	// The env file ends with `set -- ARGV`; ARGV runs not dumpable
	// (execUndumpable).
	script := `. "$0" && exec`
	for _, w := range undumpableLauncher() {
		script += " '" + w + "'"
	}
	argv := []string{"bash", "-c", script + ` "$@"`, base + ".env"}
	wd, _ := os.Getwd()
	done := make(chan syscall.WaitStatus, 1)
	s.mu.Lock() // the reaper must not take the child before it is waited for
	pid, err := syscall.ForkExec(s.bash, argv, &syscall.ProcAttr{
		Dir:   wd,
		Env:   os.Environ(),
		Files: []uintptr{files[0].Fd(), files[1].Fd(), files[2].Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err == nil {
		s.waiting[pid] = done
		for other, g := range s.groups {
			if g == pid {
				delete(s.groups, other) // that group's number is this one's now
			}
		}
		s.groups[id] = pid
	}
	s.mu.Unlock()
	status := 126
	if err != nil {
		fmt.Fprintf(os.Stderr, "truss-env: start shell %s: %v\n", id, err)
	} else {
		ws := <-done
		switch {
		case ws.Exited():
			status = ws.ExitStatus()
		case ws.Signaled():
			status = 128 + int(ws.Signal())
		}
	}
	s.writeStatus(id, status)
}

// writeStatus writes rw/ID.status: a new file under a name of its own,
// renamed over the old name, so that nothing planted there (a FIFO, a
// link) is opened.
func (s *supervisor) writeStatus(id string, status int) {
	final := filepath.Join(s.state, stateRW, id+".status")
	tmp := filepath.Join(s.state, stateRW, "."+id+".status."+newTag())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "truss-env: shell %s's status: %v\n", id, err)
		return
	}
	_, err = f.WriteString(strconv.Itoa(status) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		fmt.Fprintf(os.Stderr, "truss-env: shell %s's status: %v\n", id, err)
	}
}

// kill kills shell id's process group.
func (s *supervisor) kill(id string) {
	s.mu.Lock()
	g, ok := s.groups[id]
	s.mu.Unlock()
	if ok && g > 1 {
		syscall.Kill(-g, syscall.SIGKILL)
	}
}

// reap waits for every child that ends, the shells and the orphans the
// kernel gives PID 1, at each SIGCHLD; a shell's status goes to its
// start.
func (s *supervisor) reap(chld <-chan os.Signal) {
	for range chld {
		s.mu.Lock()
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if pid <= 0 || err != nil {
				break
			}
			if done, ok := s.waiting[pid]; ok {
				delete(s.waiting, pid)
				done <- ws
			}
		}
		s.mu.Unlock()
	}
}

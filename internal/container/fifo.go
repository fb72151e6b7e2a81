package container

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trussdev/truss/internal/hostfs"
)

// The container's supervisor (supervise, PID 1) starts shells on
// request, so that a shell's start and its round trips need no engine
// command. Requests come as lines on the control FIFO in the state
// directory, which is mounted at the same path in the container,
// read-only: only the host writes there (the FIFOs, which a read-only
// mount still carries, and the start scripts). What the container writes
// goes to its subdirectory rw (stateRW), mounted writable: each shell's
// exit status, rw/ID.status, and the shells' saved state.

// stateRW is the state directory's subdirectory that the container can
// write: the shells' process groups and exit statuses, and their saved
// environments.
const stateRW = "rw"

// fifoLauncher starts shells through the supervisor.
type fifoLauncher struct{ env *Env }

// shellStartTimeout bounds the wait for the supervisor to start a shell.
const shellStartTimeout = 20 * time.Second

// Prepare is not supported: a container shell is started by Start.
func (l *fifoLauncher) Prepare(*exec.Cmd) error {
	return errors.New("a container's shell starts through its launcher's Start")
}

// Start asks the supervisor for a shell running cmd's program with cmd's
// variables (less the host's own) in cmd's directory (mapped into the
// container), and connects the shell's standard streams through FIFOs.
//
// The returned command is a host process that stands for the shell: it
// waits, in its own process group, until told the shell's exit status
// and exits with it. Killing it (the shell package kills a timed-out
// shell's process group) asks the supervisor to kill the container
// shell's process group, so everything the command started ends; when the
// container shell ends by itself, its status is handed to it.
func (l *fifoLauncher) Start(cmd *exec.Cmd) (*exec.Cmd, io.WriteCloser, io.ReadCloser, io.ReadCloser, error) {
	v := l.env
	n := v.nextShell()
	id := strconv.Itoa(n)
	base := filepath.Join(v.state, id)
	for _, s := range []string{".in", ".out", ".err"} {
		if err := syscall.Mkfifo(base+s, 0o600); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("make the shell's FIFO: %w", err)
		}
	}
	if err := writeAtomic(base+".env", []byte(envScript(l.dirOf(cmd.Dir), cmd.Env, cmd.Args))); err != nil {
		return nil, nil, nil, nil, err
	}
	if err := v.own(base+".in", base+".out", base+".err", base+".env"); err != nil {
		return nil, nil, nil, nil, err
	}
	if err := v.request("start " + id); err != nil {
		return nil, nil, nil, nil, err
	}
	in, out, errOut, err := openFIFOs(base)
	if err != nil {
		v.request("kill " + id)
		return nil, nil, nil, nil, err
	}
	// Both ends are open: the names go, so that no process of the
	// container (which sees the state directory, read-only, and may open
	// a FIFO there for writing all the same) can open the shell's input
	// to write commands into it or read the host's script from it, nor
	// its output to forge the end of a command's.
	for _, s := range []string{".in", ".out", ".err"} {
		os.Remove(base + s)
	}
	// The stand-in: a host shell that exits with the status it is told.
	host := cmd.Path
	if !filepath.IsAbs(host) {
		if host, err = hostfs.LookPath("sh", v.engine.lookPath()); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	rep := exec.Command(host, "-c", `read -r s; exit "${s:-137}"`)
	rep.Env = []string{}
	rep.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	repIn, err := rep.StdinPipe()
	if err != nil {
		in.Close()
		out.Close()
		errOut.Close()
		return nil, nil, nil, nil, err
	}
	deadR, deadW, err := os.Pipe()
	if err != nil {
		in.Close()
		out.Close()
		errOut.Close()
		return nil, nil, nil, nil, err
	}
	rep.Stdout = deadW
	if err := rep.Start(); err != nil {
		v.request("kill " + id)
		in.Close()
		out.Close()
		errOut.Close()
		deadR.Close()
		deadW.Close()
		return nil, nil, nil, nil, fmt.Errorf("start the shell's stand-in: %w", err)
	}
	deadW.Close()
	t := &fifoTracker{env: v, id: id, base: base, rw: filepath.Join(v.state, stateRW, id), repIn: repIn}
	t.outs = [2]*fifoReader{{f: out, t: t}, {f: errOut, t: t}}
	go func() {
		// The stand-in's stdout ends when it exits: killed, or told.
		io.Copy(io.Discard, deadR)
		deadR.Close()
		t.standInGone()
	}()
	return rep, in, t.outs[0], t.outs[1], nil
}

// dirOf maps the shell's directory into the container.
func (l *fifoLauncher) dirOf(d string) string { return (&launcher{env: l.env}).dir(d) }

// envScript is the shell's ID.env: its directory, variables and argv.
func envScript(dir string, env, argv []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cd -- %s || exit 126\n", shellQuote(dir))
	for _, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || hostOnly(name) || !validName(name) {
			continue
		}
		fmt.Fprintf(&b, "export %s=%s\n", name, shellQuote(val))
	}
	prog := "bash"
	if len(argv) > 0 {
		prog = filepath.Base(argv[0])
	}
	b.WriteString("set -- " + shellQuote(prog))
	for _, a := range argv[min(1, len(argv)):] {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	return b.String()
}

func validName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// openFIFOs opens the shell's FIFOs in the order the supervisor's child
// does (in, out, err); each open waits for the other end. When the other
// side does not come within shellStartTimeout, the opens are released and
// an error returned.
func openFIFOs(base string) (in, out, errOut *os.File, err error) {
	type res struct {
		in, out, errOut *os.File
		err             error
	}
	ch := make(chan res, 1)
	go func() {
		var r res
		if r.in, r.err = openFIFO(base+".in", os.O_WRONLY); r.err != nil {
			ch <- r
			return
		}
		if r.out, r.err = openFIFO(base+".out", os.O_RDONLY); r.err != nil {
			r.in.Close()
			ch <- r
			return
		}
		if r.errOut, r.err = openFIFO(base+".err", os.O_RDONLY); r.err != nil {
			r.in.Close()
			r.out.Close()
		}
		ch <- r
	}()
	timer := time.NewTimer(shellStartTimeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r.in, r.out, r.errOut, r.err
	case <-timer.C:
	}
	// Release whichever open is waiting: opening the other end never
	// blocks with O_RDWR.
	var held []*os.File
	for _, s := range []string{".in", ".out", ".err"} {
		if f, err := openFIFO(base+s, os.O_RDWR); err == nil {
			held = append(held, f)
		}
	}
	r := <-ch
	for _, f := range append(held, r.in, r.out, r.errOut) {
		if f != nil {
			f.Close()
		}
	}
	return nil, nil, nil, fmt.Errorf("the container did not start a shell within %s (is the container running?)", shellStartTimeout)
}

// request sends a line to the supervisor. The container's supervisor
// may not have opened its control FIFO yet right after the start: the
// request is retried until it has, for shellStartTimeout.
func (v *Env) request(line string) error {
	deadline := time.Now().Add(shellStartTimeout)
	for {
		f, err := openFIFO(filepath.Join(v.state, "ctl"), os.O_WRONLY|syscall.O_NONBLOCK)
		if err == nil {
			_, err = f.Write([]byte(line + "\n")) // under PIPE_BUF: one atomic write
			f.Close()
			return err
		}
		if !errors.Is(err, syscall.ENXIO) || time.Now().After(deadline) {
			return fmt.Errorf("the container's supervisor does not answer (is the container running?): %w", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// fifoTracker ties a container shell to its stand-in.
type fifoTracker struct {
	env   *Env
	id    string
	base  string // the host's files of the shell: base.in, base.env, …
	rw    string // the container's: rw.pid, rw.status
	repIn io.WriteCloser
	outs  [2]*fifoReader // the shell's standard output and error

	mu   sync.Mutex
	ends int
}

// drainGrace is how long the host still reads a killed shell's output
// for: a process that left the shell's process group (setsid) can hold
// the FIFOs open for as long as it likes, and the host never waits on it.
const drainGrace = 2 * time.Second

// standInGone: the stand-in exited; make sure the container shell's
// process group is gone too, and stop reading its output after
// drainGrace if something in the container still holds it open.
func (t *fifoTracker) standInGone() {
	t.mu.Lock()
	done := t.ends == 2
	t.mu.Unlock()
	if done {
		return
	}
	t.env.request("kill " + t.id)
	time.AfterFunc(drainGrace, func() {
		t.mu.Lock()
		done := t.ends == 2
		t.mu.Unlock()
		if done {
			return // both ended within the grace, as they do unless held
		}
		for _, r := range t.outs {
			r.Close() // a blocked Read returns: the FIFO's end for the host
		}
	})
}

// ended is called when one of the shell's output FIFOs ends; after both,
// the stand-in gets the shell's exit status (137 when it was killed) and
// the shell's files are removed.
func (t *fifoTracker) ended() {
	t.mu.Lock()
	t.ends++
	last := t.ends == 2
	t.mu.Unlock()
	if !last {
		return
	}
	status := "137"
	// The status is written before the supervisor's child closes the
	// FIFOs, so it is there now unless the shell was killed.
	if b, err := hostfs.ReadFile(t.rw+".status", 64); err == nil {
		status = strings.TrimSpace(string(b))
	}
	fmt.Fprintln(t.repIn, status)
	t.repIn.Close()
	for _, s := range []string{".in", ".out", ".err", ".env"} {
		os.Remove(t.base + s)
	}
	for _, s := range []string{".pid", ".status"} {
		os.Remove(t.rw + s)
	}
}

// fifoReader reports the end of a shell's output FIFO.
type fifoReader struct {
	f    *os.File
	t    *fifoTracker
	once sync.Once
}

func (r *fifoReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err != nil {
		r.once.Do(r.t.ended)
	}
	return n, err
}

func (r *fifoReader) Close() error { return r.f.Close() }

// nextShell numbers the environment's shells.
func (v *Env) nextShell() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.nshells++
	return v.nshells
}

// writeAtomic replaces the file at path, in the state directory, without
// ever writing through what a container (one whose engine ignored the
// read-only mount) planted there: a new file made O_EXCL|O_NOFOLLOW under
// a random name, then renamed over path (hostfs.WriteFileAtomic).
func writeAtomic(path string, data []byte) error {
	return hostfs.WriteFileAtomic(path, data, 0o600)
}

// openFIFO opens the FIFO at path, one Truss made in the state directory,
// with flag: never through a symbolic link put in its place (the
// directory is read-only to the container; this holds should an engine
// mount it writable), and only a FIFO (a regular file or a socket there
// is refused). A blocking open still waits for the other end, as the
// protocol needs.
func openFIFO(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Mode()&os.ModeNamedPipe == 0 {
		f.Close()
		return nil, fmt.Errorf("%s is not the FIFO Truss made (%v): something in the container replaced it", path, fi.Mode().Type())
	}
	return f, nil
}

// StatDir implements the shell's DirStater.
func (l *fifoLauncher) StatDir(dir string) error { return l.env.statDir(dir) }

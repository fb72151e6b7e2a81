package container

import (
	"bufio"
	"context"
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

	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/shell"
)

// Launcher returns the shell's launcher for this environment: the
// container's supervisor starts the shell's program (bash) in the
// directory the shell asks for (a host path inside the workspace is mapped
// to the container's), with the shell's variables except the host's own
// (PATH, HOME and the like, which the image sets), its standard streams on
// FIFOs in the state directory. No engine command runs for a shell's
// start or its commands. See fifoLauncher.Start for how a kill reaches
// the container.
func (v *Env) Launcher() shell.Starter { return &fifoLauncher{env: v} }

// ExecLauncher returns a launcher that starts each shell through the
// engine's `exec -i` instead: slower to start (an engine command per
// shell), for engines whose bind mounts do not carry FIFOs between host
// and container (an engine in a virtual machine).
//
// Killing the engine's exec client does not end what it started in the
// container, so when the shell's streams end (the shell exited or was
// killed, at a timeout or a restart) the launcher kills the in-container
// shell's process group before the session sees the end: nothing a
// timed-out command started keeps running.
func (v *Env) ExecLauncher() shell.Starter { return &launcher{env: v} }

type launcher struct{ env *Env }

// hostOnly reports whether name is a variable of the host's environment
// that the container's image defines for itself. (A switch, not a map: a
// map literal is built at every start of the program.)
func hostOnly(name string) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD",
		"SHLVL", "TMPDIR", "HOSTNAME", "_", "MAIL", "XDG_RUNTIME_DIR",
		"DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK", "DISPLAY", "GOROOT", "GOPATH",
		"VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "LD_LIBRARY_PATH":
		return true
	}
	return false
}

// execArgs are the engine's arguments that run argv in the container with
// env in dir.
func (l *launcher) execArgs(cmd *exec.Cmd, script string) []string {
	v := l.env
	args := append(v.engine.globals(v.engine.Settings()), "exec", "-i")
	args = append(args, "-w", l.dir(cmd.Dir))
	for _, kv := range cmd.Env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "" || hostOnly(name) {
			continue
		}
		args = append(args, "--env", kv)
	}
	prog := "bash"
	if len(cmd.Args) > 0 {
		prog = filepath.Base(cmd.Args[0])
	}
	rest := []string{}
	if len(cmd.Args) > 1 {
		rest = cmd.Args[1:]
	}
	args = append(args, v.id, "bash", "-c", script, prog)
	return append(args, rest...)
}

// dir maps the shell's directory to the container.
func (l *launcher) dir(d string) string {
	if d == "" || d == "." {
		return l.env.workdir
	}
	if p, ok := l.env.ContainerPath(d); ok {
		return p
	}
	if filepath.IsAbs(d) {
		return d
	}
	return l.env.workdir
}

// Prepare rewrites cmd to run in the container. A shell started this way
// is not cleaned up after in the container when it is killed; the shell
// package uses Start, which is.
func (l *launcher) Prepare(cmd *exec.Cmd) error {
	args := l.execArgs(cmd, `exec "$0" "$@"`)
	cmd.Path = l.env.engine.Path
	cmd.Args = append([]string{l.env.engine.Path}, args...)
	cmd.Dir = ""
	cmd.Env = l.env.engine.environ()
	return nil
}

// Start starts the shell in the container. The in-container bash first
// reports its pid on standard error (the launcher takes that line out of
// the stream) and then becomes the shell: it leads its own process group,
// which is what the launcher kills when the streams end.
func (l *launcher) Start(cmd *exec.Cmd) (*exec.Cmd, io.WriteCloser, io.ReadCloser, io.ReadCloser, error) {
	tag := "__TRUSS_PID_" + newTag()
	script := fmt.Sprintf(`printf '%%s %%s\n' %s "$$" >&2; exec "$0" "$@"`, tag)
	c := exec.Command(l.env.engine.Path, l.execArgs(cmd, script)...)
	c.Env = l.env.engine.environ()
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, nil, err
	}
	c.Stdout, c.Stderr = outW, errW
	if err := c.Start(); err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return nil, nil, nil, nil, err
	}
	outW.Close()
	errW.Close()
	t := &tracker{env: l.env}
	return c, stdin, &endReader{r: outR, t: t}, &endReader{r: &pidReader{br: bufio.NewReader(errR), tag: tag, t: t}, c: errR, t: t}, nil
}

// tracker kills the in-container shell's process group once both of its
// streams have ended.
type tracker struct {
	env  *Env
	mu   sync.Mutex
	pid  int
	ends int
}

func (t *tracker) setPID(pid int) {
	t.mu.Lock()
	t.pid = pid
	t.mu.Unlock()
}

// ended is called when a stream ends; the second call kills the group.
func (t *tracker) ended() {
	t.mu.Lock()
	t.ends++
	last, pid := t.ends == 2, t.pid
	t.mu.Unlock()
	if !last || pid <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t.env.engine.output(ctx, "exec", t.env.id, "bash", "-c", "kill -KILL -- -"+strconv.Itoa(pid)+" "+strconv.Itoa(pid)+" 2>/dev/null; exit 0")
}

// endReader reports the end of a stream to its tracker, once.
type endReader struct {
	r    io.Reader
	c    io.Closer // closed by Close when r is not itself a Closer
	t    *tracker
	once sync.Once
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(e.t.ended)
	}
	return n, err
}

func (e *endReader) Close() error {
	if e.c != nil {
		return e.c.Close()
	}
	if c, ok := e.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// pidReader takes the tagged pid line off the front of standard error.
type pidReader struct {
	br   *bufio.Reader
	tag  string
	t    *tracker
	done bool
	head []byte // bytes of a first line that was not the tag line
}

func (p *pidReader) Read(b []byte) (int, error) {
	if !p.done {
		p.done = true
		line, err := p.br.ReadString('\n')
		if rest, ok := strings.CutPrefix(line, p.tag+" "); ok {
			if pid, perr := strconv.Atoi(strings.TrimSpace(rest)); perr == nil {
				p.t.setPID(pid)
			}
		} else {
			p.head = []byte(line) // the engine's own error: pass it on
		}
		if err != nil && len(p.head) == 0 {
			return 0, err
		}
	}
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.br.Read(b)
}

// ShellConfig completes a shell configuration for this environment: the
// launcher, the workdir when Dir is empty or the workspace's host path, an
// environment without the host's variables (only SetEnv and the shell's
// own go in) when Env is nil, and a new directory for the shell's saved
// state inside StateDir (mounted at the same path in the container, which
// is where the shell writes it) when TmpDir is empty. The Env removes that
// directory at Close. A validation's fresh shell is a new shell.Session
// with a config from here.
func (v *Env) ShellConfig(cfg shell.Config) (shell.Config, error) {
	cfg.Launcher = v.Launcher()
	if cfg.Dir == "" || cfg.Dir == v.ws {
		cfg.Dir = v.workdir
	} else if p, ok := v.ContainerPath(cfg.Dir); ok {
		cfg.Dir = p
	}
	if cfg.Env == nil {
		cfg.Env = []string{}
	}
	if cfg.Bash == "" || filepath.IsAbs(cfg.Bash) {
		cfg.Bash = "bash"
	}
	if cfg.TmpDir == "" {
		v.mu.Lock()
		closed := v.closed
		v.nshells++
		n := v.nshells
		v.mu.Unlock()
		if closed {
			return cfg, errors.New("the environment is closed")
		}
		d := filepath.Join(v.state, stateRW, "shell-"+strconv.Itoa(n))
		if err := os.Mkdir(d, 0o700); err != nil {
			return cfg, err
		}
		if err := v.own(d); err != nil {
			return cfg, err
		}
		cfg.TmpDir = d
	}
	cfg.Guard = nil // the container's pids and memory limits bound it
	return cfg, nil
}

// NewShell is shell.New with ShellConfig's completion.
func (v *Env) NewShell(cfg shell.Config) (*shell.Session, error) {
	c, err := v.ShellConfig(cfg)
	if err != nil {
		return nil, err
	}
	return shell.New(c), nil
}

// RunFresh runs command once in a fresh container from cfg's image, in a
// fresh shell (bash) in the workdir, and removes the container: a
// grader's run, never in the agent's container. The result is the shell's
// (exit status, output, timeout); facts say where it ran. A command that
// ran and failed is a result with an error, not an error: err is for an
// environment that could not be had.
func (e *Engine) RunFresh(ctx context.Context, cfg Config, command string, timeout time.Duration) (res tool.Result, facts Facts, err error) {
	env, err := e.Start(ctx, cfg)
	if err != nil {
		return tool.Result{}, Facts{}, err
	}
	defer func() {
		if cerr := env.Close(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	sh, err := env.NewShell(shell.Config{Timeout: timeout})
	if err != nil {
		return tool.Result{}, env.Facts(), err
	}
	defer sh.Close()
	return sh.Run(ctx, command, timeout), env.Facts(), nil
}

// statDir tells whether dir exists in the container, as far as the host
// can see: a path in the workdir is looked up through the workspace; any
// other is taken as missing (a shell then starts in the workdir).
func (v *Env) statDir(dir string) error {
	h, ok := v.HostPath(dir)
	if !ok {
		return fmt.Errorf("%s is outside the workspace's mount", dir)
	}
	fi, err := os.Stat(h)
	if err == nil && !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return err
}

// StatDir implements the shell's DirStater.
func (l *launcher) StatDir(dir string) error { return l.env.statDir(dir) }

// Package shell runs commands in a persistent bash session.
//
// One Session is one bash process, started lazily with pipes for its stdin,
// stdout and stderr, in a process group of its own. A command is sent as
//
//	eval '<command, single-quoted>' </dev/null; <report status and $PWD>
//
// followed by a sentinel line on stdout and on stderr whose random token is
// new for every call, so no output can forge the end of a command, a syntax
// error in the command cannot swallow the sentinel, and a command that reads
// standard input reads /dev/null instead of the session's control stream.
// A status of 0 comes with a second random word, the proof, printed only
// when the command succeeded: a process the command left can reopen the
// shell's standard output (its own) for reading and race the host for the
// sentinel line, and write it back with another status, but it never saw
// the proof (which is only in the script, on the shell's input, which no
// command reaches), so a failure cannot be made a success; a status of 0
// without it is an error.
// The working directory and exported variables persist between calls.
//
// A call that outlives its timeout, or whose context is cancelled, has the
// session's whole process group killed (grandchildren included). The session
// then restarts by itself in the last known working directory with the
// exported variables of the last completed call, and the Result says so.
//
// Output is captured per stream up to a cap; beyond it the head and the tail
// are kept with a marker between them.
package shell

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/tool"
)

// Launcher prepares the command that starts the shell, before it is started.
// A sandbox implements it to wrap the shell in its own helper; every process
// the shell starts inherits what the launcher set up.
type Launcher interface {
	Prepare(cmd *exec.Cmd) error
}

// A Starter is a Launcher that starts the shell process itself: it starts
// cmd's program (Path, Args, Env, Dir) and returns the started command —
// whose Process and Wait the session uses — and the parent's ends of its
// standard input, output and error. A sandbox that keeps a confined helper
// ready implements it, so that a shell's start does not wait for a helper's.
type Starter interface {
	Launcher
	Start(cmd *exec.Cmd) (started *exec.Cmd, stdin io.WriteCloser, stdout, stderr io.ReadCloser, err error)
}

// A DirStater is a Launcher whose shell sees another file system than the
// host's (a container's): StatDir tells whether dir exists there, so that
// a restarted shell goes back to the last working directory.
type DirStater interface {
	StatDir(dir string) error
}

// LauncherFunc adapts a function to Launcher.
type LauncherFunc func(cmd *exec.Cmd) error

// Prepare calls f.
func (f LauncherFunc) Prepare(cmd *exec.Cmd) error { return f(cmd) }

// Config configures a Session.
type Config struct {
	// Dir is the initial working directory.
	Dir string
	// Env is the base environment (os.Environ() when nil). The variables
	// Withheld names — the harness's own configuration and secret-looking
	// names — and those OwnEnv names are removed from it unless named in
	// AllowEnv.
	Env      []string
	AllowEnv []string
	// OwnEnv names (or globs) the variables of the model providers the
	// harness talks to (ANTHROPIC_*, AWS_*, ...), withheld as Withheld's
	// are: a name or glob in AllowEnv passes one.
	OwnEnv []string
	// WithholdEnv names (or globs) more variables to remove, those of
	// the user's configuration; an exact name in AllowEnv still passes.
	WithholdEnv []string
	// SetEnv are variables set on purpose (NAME=VALUE, the project's
	// configuration): added after the scrubbing, so never withheld.
	SetEnv []string
	// Timeout is the default per-call timeout; 0 means 120 s.
	Timeout time.Duration
	// MaxOutput caps each captured stream in bytes; 0 means 1 MiB.
	MaxOutput int
	// Bash is the shell binary; "" means bash from PATH.
	Bash string
	// Launcher, when set, prepares the shell process (the sandbox seam).
	Launcher Launcher
	// Guard, when set, is asked after each command whether it broke a limit
	// of the session's environment (a sandbox's process limit). When it
	// returns an error, the shell is killed with everything it started,
	// the next command starts a new one, and the result carries the error.
	Guard func() error
	// TmpDir, when set, is the directory for the session's own files (its
	// saved environment); the caller owns it. By default the session makes
	// one and removes it on Close.
	TmpDir string
}

// DefaultTimeout is the per-call timeout when Config.Timeout is zero.
const DefaultTimeout = 120 * time.Second

// Session is a persistent shell. Calls are serialized: a Session runs one
// command at a time.
type Session struct {
	cfg Config

	mu      sync.Mutex
	proc    *process
	cwd     string
	envFile string // exported variables of the last completed call
	tmpDir  string
	closed  bool
}

// New returns a session; the shell starts on the first call.
func New(cfg Config) *Session {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxOutput == 0 {
		cfg.MaxOutput = 1 << 20
	}
	if cfg.Bash == "" {
		cfg.Bash = "bash"
	}
	return &Session{cfg: cfg, cwd: cfg.Dir, tmpDir: cfg.TmpDir}
}

// Prewarm starts the shell in the background if it is not running, so
// that the first command does not wait for it (a sandboxed shell starts
// through a helper process). A failure to start is reported by the next
// command.
func (s *Session) Prewarm() {
	go func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.proc == nil && !s.closed {
			s.start()
		}
	}()
}

// Close kills the shell and removes the session's temporary files.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.kill()
	if s.tmpDir != "" && s.tmpDir != s.cfg.TmpDir {
		os.RemoveAll(s.tmpDir)
		s.tmpDir = ""
	}
	return nil
}

// maxTimeout bounds the timeout a call may ask for.
const maxTimeout = 24 * time.Hour

// Ops lists the operations the session executes.
var Ops = []tool.Op{tool.OpExec, tool.OpRestart}

// Execute implements tool.Executor for OpExec and OpRestart.
func (s *Session) Execute(ctx context.Context, call tool.Call) tool.Result {
	switch a := call.Args.(type) {
	case *tool.ExecArgs:
		cmd := a.Command
		if a.Dir != "" && strings.TrimSpace(cmd) != "" {
			// A subshell: the session keeps its own directory.
			cmd = fmt.Sprintf("( cd -- %s || exit; eval %s )", quote(a.Dir), quote(cmd))
		}
		// A timeout past a day is a day (and never overflows a Duration).
		r := s.Run(ctx, cmd, time.Duration(min(a.TimeoutMS, maxTimeout.Milliseconds()))*time.Millisecond)
		r.CallID, r.Op = call.ID, call.Op
		return r
	default:
		if call.Op == tool.OpRestart {
			if err := s.Restart(); err != nil {
				return tool.Failed(call, &tool.Error{Kind: tool.ErrShell, Message: "the shell could not be restarted: " + err.Error(), Err: err})
			}
			return tool.Result{CallID: call.ID, Op: call.Op, Output: "shell restarted"}
		}
		return tool.Failed(call, tool.Errorf(tool.ErrInvalidInput, "operation %s got arguments of type %T", call.Op, call.Args))
	}
}

// Restart kills the shell; the next call starts a fresh one in the
// configured directory with the configured environment.
func (s *Session) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
	s.cwd = s.cfg.Dir
	// The saved variables are left where they are, never removed by
	// path: the directory may be one commands can replace (a container's
	// state). The next shell does not read them, and the next command
	// overwrites them.
	s.envFile = ""
	return nil
}

// KillOthers ends every process of the shell's PID namespace but the
// shell and the namespace's first process: whatever earlier commands left
// running (background jobs, daemons that left the process group). The
// working directory and the exported variables stay. The kill is one
// kill(2) of every process at once, which a fork in flight cannot
// escape, and a process sent SIGKILL runs none of its code again. It
// returns once every process killed has ended (is gone or a zombie): until
// the kernel has run a killed process's exit, it still holds its ports,
// locks and memory and shows in /proc, and a busy one on a loaded machine
// can wait a while for a CPU to do it on. Only for a shell in a PID
// namespace of its own (a sandbox's, a container's, whose /proc is the
// namespace's): elsewhere it would signal every process the user may, so
// the caller must know which it is.
func (s *Session) KillOthers(ctx context.Context) error {
	deadline := time.Now().Add(killOthersTimeout)
	cmd := "kill -KILL -1 2>/dev/null; " + othersAlive
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		r := s.Run(ctx, cmd, time.Until(deadline))
		if r.Err != nil {
			return fmt.Errorf("ending the processes left running: %s", r.Err.Message)
		}
		left := strings.TrimSpace(r.Stdout)
		if left == "" {
			return nil
		}
		if time.Now().Add(pause).After(deadline) {
			return fmt.Errorf("ending the processes left running: %s did not end within %v of SIGKILL (pid and state: %s)",
				plural.Count(strings.Count(left, "\n")+1, "process"), killOthersTimeout, strings.ReplaceAll(left, "\n", ", "))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ending the processes left running: %w", ctx.Err())
		case <-time.After(pause):
		}
		cmd = othersAlive
	}
}

// othersAlive prints the pid and state of each process of the shell's
// PID namespace, but the shell and the first, that has not ended (is
// neither gone nor a zombie), a line each; builtins only, so it starts
// no process of its own to list. The state is read from the State line
// of /proc/PID/status, which the kernel writes after the Name line with
// the name escaped (stat's line holds the name as it is: a name with a
// newline or ") " in it would cut it).
const othersAlive = `for __truss_p in /proc/[0-9]*; do __truss_p=${__truss_p#/proc/}; { [ "$__truss_p" = $$ ] || [ "$__truss_p" = 1 ]; } && continue; __truss_s=; { while read -r __truss_k __truss_s __truss_r; do [ "$__truss_k" = State: ] && break; __truss_s=; done </proc/$__truss_p/status; } 2>/dev/null; case $__truss_s in ""|Z|X) ;; *) echo "$__truss_p $__truss_s" ;; esac; done; unset __truss_p __truss_k __truss_s __truss_r`

// killOthersTimeout bounds KillOthers, the kill and the wait for its end.
const killOthersTimeout = time.Minute

// Run runs command with the given timeout (0 = the session default). A
// command that exits non-zero gets an ErrExit error; one that times out an
// ErrTimeout error with TimedOut set and the output gathered so far.
func (s *Session) Run(ctx context.Context, command string, timeout time.Duration) tool.Result {
	start := time.Now()
	r := s.run(ctx, command, timeout)
	r.Wall = time.Since(start)
	if r.TimedOut {
		// The shell was killed with the command: its successor starts now,
		// while the model reads the result, not when the next command comes.
		defer s.Prewarm()
	}
	if s.cfg.Guard != nil {
		if err := s.cfg.Guard(); err != nil {
			s.mu.Lock()
			s.kill()
			s.mu.Unlock()
			msg := err.Error() + "; everything the command started was killed, and the shell restarts with the next command"
			if r.Err != nil && r.Err.Kind != tool.ErrExit && r.Err.Kind != tool.ErrShell {
				msg = r.Err.Message + "; " + msg // a timeout, a cancel; the shell's end is the limit's doing
			}
			r.Err = &tool.Error{Kind: tool.ErrShell, Message: msg, Err: err}
		}
	}
	return r
}

func (s *Session) run(ctx context.Context, command string, timeout time.Duration) tool.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.TrimSpace(command) == "" {
		return tool.Result{Err: tool.Errorf(tool.ErrInvalidInput, "the command is empty")}
	}
	if timeout <= 0 {
		timeout = s.cfg.Timeout
	}
	restored := ""
	if s.proc == nil {
		if err := s.start(); err != nil {
			return tool.Result{Err: &tool.Error{Kind: tool.ErrShell, Message: "the shell could not be started: " + err.Error(), Err: err}}
		}
	}
	p := s.proc
	token, proof := newToken(), newToken()
	script := fmt.Sprintf("eval %s </dev/null\n__truss_ec=$?; export -p >%s 2>/dev/null; "+
		"if [ \"$__truss_ec\" = 0 ]; then printf '%%s 0 %%s %%s\\n' %s %s \"$PWD\"; else printf '%%s %%d %%s\\n' %s \"$__truss_ec\" \"$PWD\"; fi; printf '%%s\\n' %s >&2\n",
		quote(command), quote(s.envPath()), token, proof, token, token)
	p.begin(token, proof, s.cfg.MaxOutput, tool.OutputOf(ctx))
	if _, err := io.WriteString(p.stdin, script); err != nil {
		s.kill()
		return tool.Result{Err: &tool.Error{Kind: tool.ErrShell, Message: "the shell is gone and was restarted; run the command again", Err: err}}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var res tool.Result
	select {
	case <-p.done:
		out, errOut, status, cwd, ok := p.collect()
		res = tool.Result{Stdout: out.String(), Stderr: errOut.String(), Truncated: out.truncated() || errOut.truncated()}
		if ok && status == forgedStatus {
			// The shell stays: its state is its own. The record of its
			// directory is not taken from a line that was rewritten. The
			// command ran and did not succeed: an exit status of -1 (none
			// known), so that a grader counts a failed test run, not a
			// shell that could not run it.
			unknown := -1
			res.ExitCode = &unknown
			res.Err = &tool.Error{Kind: tool.ErrExit, Message: "the command's end-of-output line claimed success without the shell's proof: a process the command started rewrote the shell's output; the command is taken as failed"}
			return res
		}
		if !ok {
			code := p.exitCode()
			s.kill()
			res.ExitCode = &code
			res.Err = &tool.Error{Kind: tool.ErrShell, Message: fmt.Sprintf("the command ended the shell session with status %d; a new session starts with the next command, keeping the working directory and exported variables", code)}
			return res
		}
		s.cwd = cwd
		s.envFile = s.envPath()
		res.ExitCode = &status
		if status != 0 {
			res.Err = &tool.Error{Kind: tool.ErrExit, Message: fmt.Sprintf("the command exited with status %d", status)}
		}
		return res
	case <-timer.C:
		restored = fmt.Sprintf("the command timed out after %s and was killed with its process group; the shell was restarted in %s", timeout, s.cwd)
		res = s.abort(p)
		res.TimedOut = true
		res.Err = &tool.Error{Kind: tool.ErrTimeout, Message: restored}
	case <-ctx.Done():
		res = s.abort(p)
		res.Err = &tool.Error{Kind: tool.ErrCanceled, Message: "the command was canceled and killed with its process group", Err: ctx.Err()}
	}
	return res
}

// abort kills the running command's process group and returns what it had
// written. The next call starts a new shell with the saved state.
func (s *Session) abort(p *process) tool.Result {
	s.kill()
	<-p.exited
	out, errOut, _, _, _ := p.collect()
	return tool.Result{Stdout: out.String(), Stderr: errOut.String(), Truncated: out.truncated() || errOut.truncated()}
}

func (s *Session) envPath() string { return filepath.Join(s.tmpDir, "env.sh") }

func (s *Session) start() error {
	if s.tmpDir == "" {
		d, err := os.MkdirTemp("", "truss-shell-")
		if err != nil {
			return err
		}
		s.tmpDir = d
	}
	cmd := exec.Command(s.cfg.Bash, "--noprofile", "--norc")
	cmd.Dir = s.cwd
	if cmd.Dir == "" {
		cmd.Dir = "."
	}
	stat := func(dir string) error { _, err := os.Stat(dir); return err }
	if ds, ok := s.cfg.Launcher.(DirStater); ok {
		stat = ds.StatDir
	}
	if err := stat(cmd.Dir); err != nil {
		cmd.Dir = s.cfg.Dir
	}
	base := s.cfg.Env
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = append(append(ScrubEnvOwn(base, s.cfg.AllowEnv, s.cfg.WithholdEnv, s.cfg.OwnEnv), s.cfg.SetEnv...), "PS1=", "PS2=", "TERM=dumb", "PAGER=cat", "GIT_PAGER=cat", "HISTFILE=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The shell must answer before it is used: a command's timeout then
	// counts the command, not the shell's start (a sandboxed shell starts
	// through a helper), and a shell that cannot start says why.
	token, proof := newToken(), newToken()
	var p *process
	if st, ok := s.cfg.Launcher.(Starter); ok {
		started, stdin, stdout, stderr, err := st.Start(cmd)
		if err != nil {
			return fmt.Errorf("start shell: %w", err)
		}
		p = runProcess(started, stdin, stdout, stderr, token, proof)
	} else {
		if s.cfg.Launcher != nil {
			if err := s.cfg.Launcher.Prepare(cmd); err != nil {
				return fmt.Errorf("prepare shell: %w", err)
			}
		}
		var err error
		if p, err = startProcess(cmd, token, proof); err != nil {
			return err
		}
	}
	fmt.Fprintf(p.stdin, "printf '%%s 0 %%s %%s\\n' %s %s \"$PWD\"; printf '%%s\\n' %s >&2\n", token, proof, token)
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case <-p.done:
		if _, errOut, _, _, ok := p.collect(); !ok {
			s.proc = p
			s.kill()
			msg := strings.TrimSpace(errOut.String())
			if msg == "" {
				msg = fmt.Sprintf("it exited with status %d", p.exitCode())
			}
			return errors.New(msg)
		}
	case <-t.C:
		s.proc = p
		s.kill()
		return fmt.Errorf("it did not answer within %s", startTimeout)
	}
	s.proc = p
	if s.envFile != "" {
		// Bring back the exported variables of the last completed call.
		fmt.Fprintf(p.stdin, ". %s >/dev/null 2>&1\n", quote(s.envFile))
	}
	return nil
}

func (s *Session) kill() {
	if s.proc == nil {
		return
	}
	p := s.proc
	s.proc = nil
	if p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.cmd.Process.Kill()
	}
	p.stdin.Close()
	<-p.exited
}

// ScrubEnv returns env without the variables Withheld names or whose
// value WithheldValue refuses, except those allow names (names or globs,
// path.Match).
func ScrubEnv(env, allow []string) []string { return ScrubEnvWith(env, allow, nil) }

// ScrubEnvWith is ScrubEnv that also withholds the variables exclude names
// (names or globs), unless allow names them exactly.
func ScrubEnvWith(env, allow, exclude []string) []string {
	return ScrubEnvOwn(env, allow, exclude, nil)
}

// ScrubEnvOwn is ScrubEnvWith that also withholds the variables own names
// (upper-case names or globs, which a name matches in any case) as
// Withheld's are: unless allow names or globs them.
func ScrubEnvOwn(env, allow, exclude, own []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if contains(allow, name) {
			out = append(out, kv)
			continue
		}
		if matches(exclude, name) || (Withheld(name) || matches(own, strings.ToUpper(name)) || WithheldValue(value)) && !matches(allow, name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// matches reports whether a name or glob of pats matches name.
func matches(pats []string, name string) bool {
	for _, p := range pats {
		if ok, _ := path.Match(p, name); ok || p == name {
			return true
		}
	}
	return false
}

// Withheld reports whether a command's environment leaves out the variable
// name. Names are compared in upper case; a name's words are its parts
// between underscores (and other characters that are not letters or
// digits). Withheld are:
//
//   - the configuration of Truss: names starting with TRUSS_ (the model
//     providers' variables are the harness's to name: Config.OwnEnv);
//   - names containing KEY, SECRET, TOKEN, PASSWORD, PASSWD, PASSPHRASE or
//     CREDENTIAL anywhere (APIKEY, DBPASSWORD, GOOGLE_CREDENTIALS);
//   - names with a word PASS, PWD, PW, PAT, AUTH, AUTHORIZATION, BEARER,
//     CRED, CREDS, DSN, COOKIE, SESSION, PRIVATE, JWT, WEBHOOK, SK,
//     MNEMONIC, OTP, TOTP, MFA, OAUTH, OAUTH2, PASSCODE, SAS or SALT, a
//     last word LOGIN (SMTP_LOGIN; LOGIN_URL passes), a word ending in
//     PASS (PGPASS, XPASS, MYSQL_PWD, GITHUB_PAT, NPM_AUTH, T_OAUTH,
//     SENTRY_DSN, SESSION_COOKIE, WALLET_MNEMONIC, LDAP_BIND_CRED,
//     SIGNING_SALT), or a word that spells PASSWORD short or misspelt, or
//     ends so (PSWD, PWRD, PASSWRD, ADMIN_PASSWRD, ROOTPWD: passwordLike),
//     which as mere substrings would take PATH, PYTHONPATH or COMPASS too
//     (COMPASS, BYPASS, SURPASS, PASSTHROUGH pass);
//   - Bundler's credentials for a gem server, BUNDLE_ and the host with
//     its dots as "__" (BUNDLE_GEMS__CONTRIBSYS__COM=user:pass), but not
//     Bundler's own settings of that form (BUNDLE_BUILD__*,
//     BUNDLE_MIRROR__*, BUNDLE_LOCAL__*, BUNDLE_GEM__TEST,
//     BUNDLE_GITHUB__HTTPS);
//   - a Kubernetes configuration given whole (KUBECONFIG_DATA,
//     KUBE_CONFIG_DATA; KUBECONFIG, a list of paths, passes);
//
// except the few well-known names with such a word that hold no secret:
// PWD and OLDPWD (the working directory), DBUS_SESSION_BUS_ADDRESS,
// SESSION_MANAGER, DESKTOP_SESSION and XDG_SESSION_*.
func Withheld(name string) bool {
	u := strings.ToUpper(name)
	if strings.HasPrefix(u, "TRUSS_") {
		return true
	}
	switch {
	case u == "PWD", u == "OLDPWD", u == "DBUS_SESSION_BUS_ADDRESS", u == "SESSION_MANAGER",
		u == "DESKTOP_SESSION", strings.HasPrefix(u, "XDG_SESSION_"):
		return false
	}
	for _, sub := range [...]string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL"} {
		if strings.Contains(u, sub) {
			return true
		}
	}
	if bundlerCredential(u) || strings.HasPrefix(u, "KUBECONFIG_") || strings.HasPrefix(u, "KUBE_CONFIG") {
		return true
	}
	words := strings.FieldsFunc(u, func(r rune) bool {
		return !('A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
	for i, w := range words {
		switch w {
		case "PASS", "PWD", "PW", "PAT", "AUTH", "AUTHORIZATION", "BEARER", "CRED", "CREDS", "DSN", "COOKIE", "SESSION", "PRIVATE", "JWT",
			"WEBHOOK", "SK", "MNEMONIC", "OTP", "TOTP", "MFA", "OAUTH", "OAUTH2", "PASSCODE", "SAS", "SALT":
			return true
		case "LOGIN":
			if i == len(words)-1 && i > 0 {
				return true
			}
			continue
		case "COMPASS", "BYPASS", "SURPASS", "PASSTHROUGH", "PASSTHRU":
			continue
		}
		// PASS fused with its system's name: PGPASS, XPASS, SMTPPASS.
		if strings.HasSuffix(w, "PASS") || passwordSuffix(w) {
			return true
		}
	}
	// Git configuration passed in the environment carries credentials
	// (http.extraHeader) as easily as settings.
	return strings.HasPrefix(u, "GIT_CONFIG_PARAMETERS") || strings.HasPrefix(u, "GIT_CONFIG_KEY_") || strings.HasPrefix(u, "GIT_CONFIG_VALUE_")
}

// bundlerCredential reports whether the upper-case name u is Bundler's
// setting of a gem server's credentials: BUNDLE_ and a host name whose
// dots are written "__", none of Bundler's own dotted settings.
func bundlerCredential(u string) bool {
	k, ok := strings.CutPrefix(u, "BUNDLE_")
	if !ok || !strings.Contains(k, "__") {
		return false
	}
	for _, own := range [...]string{"BUILD__", "MIRROR__", "LOCAL__"} {
		if strings.HasPrefix(k, own) {
			return false
		}
	}
	// gem.coc, gem.test, ... (bundle gem's defaults), github.https.
	return !(strings.HasPrefix(k, "GEM__") && strings.Count(k, "__") == 1) && k != "GITHUB__HTTPS"
}

// WithheldValue reports whether a variable's value carries a secret: a
// credential recognizable by its form (an API key or access token of a
// known service, a JWT, a private key, an Azure account key: secretForm);
// a URL with a password, read from the text so that what a URL parser
// refuses or cuts short counts too (postgres://u:pa#ss@db,
// redis://:s3cr%t@h, amqp://guest:Gu3st/pw@h), any of the URLs of a list
// (PIP_EXTRA_INDEX_URL="https://x/simple https://u:p@y/simple");
// user:password@host without a scheme (HTTP_PROXY=u:p@proxy:3128); or a
// secret-named key set anywhere in it, in a URL's query or fragment, a
// connection string, options or JSON (?user=u&password=p,
// ?next=1&token=t, Password = p;, "password": "p": secretParam). Such a
// variable is withheld whatever its name.
func WithheldValue(v string) bool {
	return secretForm(v) || urlPassword(v) || bareCredentials(v) || secretParam(v)
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// quote single-quotes s for bash.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return "__TRUSS_" + hex.EncodeToString(b[:])
}

// process is one running bash with its two reader goroutines.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}

	mu      sync.Mutex
	token   []byte
	proof   string // the word a status of 0 must come with
	out     *capBuf
	errOut  *capBuf
	outDone bool
	errDone bool
	status  int
	cwd     string
	done    chan struct{} // closed when both sentinels were seen, or the shell exited
	closed  bool
	eof     int
	// live is the current call's tool.OutputFunc (nil for none): what
	// goes to its buffers goes to it too, as it arrives.
	live tool.OutputFunc
}

// startTimeout bounds the wait for a new shell to answer.
const startTimeout = 30 * time.Second

// forgedStatus is the status of a sentinel line that claimed success
// without the call's proof.
const forgedStatus = -2

// startProcess starts the shell with the sentinel token ready (and its
// proof) expected first (so that nothing it writes before answering is
// lost).
func startProcess(cmd *exec.Cmd, ready, proof string) (*process, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return runProcess(cmd, stdin, stdout, stderr, ready, proof), nil
}

// runProcess reads a started shell's streams, expecting the sentinel token
// ready (and its proof) first.
func runProcess(cmd *exec.Cmd, stdin io.WriteCloser, stdout, stderr io.Reader, ready, proof string) *process {
	p := &process{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	p.begin(ready, proof, 64<<10, nil)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.read(stdout, false) }()
	go func() { defer wg.Done(); p.read(stderr, true) }()
	go func() {
		wg.Wait()
		cmd.Wait()
		for _, r := range []io.Reader{stdout, stderr} {
			if c, ok := r.(io.Closer); ok {
				c.Close() // the Starter's pipes; exec.Cmd's are closed by Wait
			}
		}
		close(p.exited)
	}()
	return p
}

func (p *process) begin(token, proof string, max int, live tool.OutputFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.token, p.proof = []byte(token), proof
	p.live = live
	p.out, p.errOut = newCapBuf(max), newCapBuf(max)
	p.outDone, p.errDone = false, false
	p.done = make(chan struct{})
	p.closed = false
	if p.eof == 2 {
		p.finish()
	}
}

func (p *process) finish() {
	if !p.closed {
		p.closed = true
		close(p.done)
	}
}

// read copies one stream into the current call's buffer until the sentinel.
func (p *process) read(r io.Reader, isErr bool) {
	br := bufio.NewReaderSize(r, 64<<10)
	var pending []byte // bytes that may be the start of a sentinel
	buf := make([]byte, 32<<10)
	for {
		n, err := br.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			pending = p.scan(pending, isErr)
		}
		if err != nil {
			p.mu.Lock()
			if len(pending) > 0 && p.out != nil {
				p.emit(isErr, pending)
			}
			p.eof++
			if p.eof == 2 && p.done != nil {
				p.finish()
			}
			p.mu.Unlock()
			return
		}
	}
}

// partialToken is the length of the longest end of b that begins token
// (shorter than token).
func partialToken(b, token []byte) int {
	for k := min(len(token)-1, len(b)); k > 0; k-- {
		if bytes.HasSuffix(b, token[:k]) {
			return k
		}
	}
	return 0
}

// emit writes b, the call's output, to its buffer and to its live
// OutputFunc; p.mu is held.
func (p *process) emit(isErr bool, b []byte) {
	if len(b) == 0 {
		return
	}
	p.target(isErr).Write(b)
	if p.live != nil {
		stream := "stdout"
		if isErr {
			stream = "stderr"
		}
		p.live(stream, b)
	}
}

func (p *process) target(isErr bool) *capBuf {
	if isErr {
		return p.errOut
	}
	return p.out
}

// scan moves complete output to the call's buffer and handles the sentinel;
// it returns the bytes it could not decide on yet.
func (p *process) scan(b []byte, isErr bool) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.out == nil {
		return nil // output between calls (a background job): dropped
	}
	for {
		if (isErr && p.errDone) || (!isErr && p.outDone) {
			return nil // written after the sentinel by a background job: dropped
		}
		i := bytes.Index(b, p.token)
		if i < 0 {
			// Keep only a tail that could be the start of the token: the
			// rest is the command's, and is shown as it comes.
			keep := partialToken(b, p.token)
			p.emit(isErr, b[:len(b)-keep])
			return append([]byte(nil), b[len(b)-keep:]...)
		}
		nl := bytes.IndexByte(b[i:], '\n')
		if nl < 0 {
			p.emit(isErr, b[:i])
			return append([]byte(nil), b[i:]...)
		}
		p.emit(isErr, b[:i])
		line := string(b[i+len(p.token) : i+nl])
		if isErr {
			p.errDone = true
		} else {
			p.outDone = true
			p.status, p.cwd = p.statusLine(strings.TrimPrefix(line, " "))
		}
		if p.outDone && p.errDone {
			p.finish()
		}
		b = b[i+nl+1:]
	}
}

// statusLine reads the sentinel line after its token: "0 PROOF PWD" for a
// success, "STATUS PWD" otherwise. A 0 without the call's proof is
// forgedStatus, its directory not taken.
func (p *process) statusLine(line string) (status int, cwd string) {
	code, rest, _ := strings.Cut(line, " ")
	status, err := strconv.Atoi(code)
	if err != nil {
		return forgedStatus, ""
	}
	if status != 0 {
		return status, rest
	}
	proof, cwd, _ := strings.Cut(rest, " ")
	if proof != p.proof {
		return forgedStatus, ""
	}
	return 0, cwd
}

// collect returns the call's buffers; ok is false when the shell ended before
// the sentinels.
func (p *process) collect() (out, errOut *capBuf, status int, cwd string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out, errOut = p.out, p.errOut
	ok = p.outDone && p.errDone
	p.out, p.errOut, p.live = nil, nil, nil
	return out, errOut, p.status, p.cwd, ok
}

func (p *process) exitCode() int {
	<-p.exited
	if p.cmd.ProcessState != nil {
		return p.cmd.ProcessState.ExitCode()
	}
	return -1
}

// capBuf keeps the first max/2 bytes written to it and the last max-max/2.
type capBuf struct {
	headMax, tailMax int
	head             []byte
	tail             []byte // ring of the last tailMax bytes after the head
	start            int    // index of the oldest byte in tail once it is full
	total            int64
}

func newCapBuf(max int) *capBuf { return &capBuf{headMax: max / 2, tailMax: max - max/2} }

func (c *capBuf) Write(b []byte) (int, error) {
	n := len(b)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(b))
		c.head = append(c.head, b[:k]...)
		b = b[k:]
	}
	if len(b) >= c.tailMax {
		c.tail = append(c.tail[:0], b[len(b)-c.tailMax:]...)
		c.start = 0
		return n, nil
	}
	for len(b) > 0 {
		if len(c.tail) < c.tailMax {
			k := min(c.tailMax-len(c.tail), len(b))
			c.tail = append(c.tail, b[:k]...)
			b = b[k:]
			continue
		}
		k := copy(c.tail[c.start:], b)
		c.start = (c.start + k) % c.tailMax
		b = b[k:]
	}
	return n, nil
}

func (c *capBuf) truncated() bool {
	return c != nil && c.total > int64(c.headMax+c.tailMax)
}

func (c *capBuf) String() string {
	if c == nil {
		return ""
	}
	tail := string(c.tail[c.start:]) + string(c.tail[:c.start])
	if !c.truncated() {
		return string(c.head) + tail
	}
	omitted := c.total - int64(len(c.head)) - int64(len(c.tail))
	return string(c.head) + fmt.Sprintf("\n[... %d bytes omitted ...]\n", omitted) + tail
}

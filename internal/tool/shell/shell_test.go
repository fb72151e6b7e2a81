package shell

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool"
)

func newSession(t *testing.T, cfg Config) *Session {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	s := New(cfg)
	t.Cleanup(func() { s.Close() })
	return s
}

func run(t *testing.T, s *Session, cmd string) tool.Result {
	t.Helper()
	return s.Run(context.Background(), cmd, 0)
}

func TestRun(t *testing.T) {
	s := newSession(t, Config{})
	tests := []struct {
		cmd, stdout, stderr string
		code                int
		kind                tool.ErrorKind
	}{
		{"echo hello", "hello\n", "", 0, ""},
		{"printf 'no newline'", "no newline", "", 0, ""},
		{"echo out; echo err >&2; exit_code=3; (exit 3)", "out\n", "err\n", 3, tool.ErrExit},
		{"false", "", "", 1, tool.ErrExit},
		{"echo 'it''s' \"$((1+2))\"", "its 3\n", "", 0, ""},
		{"if then fi", "", "", 2, tool.ErrExit}, // syntax error: reported, session intact
		{"cat", "", "", 0, ""},                  // stdin is /dev/null, not the control stream
		{"read x; echo \"[$x]\"", "[]\n", "", 0, ""},
		{"cat <<'EOF'\nline 'one'\nEOF", "line 'one'\n", "", 0, ""},
		{"echo __TRUSS_deadbeef 0 /", "__TRUSS_deadbeef 0 /\n", "", 0, ""},
	}
	for _, tt := range tests {
		r := run(t, s, tt.cmd)
		if r.Stdout != tt.stdout || r.ExitCode == nil || *r.ExitCode != tt.code {
			t.Errorf("%q: stdout %q code %v, want %q %d (stderr %q)", tt.cmd, r.Stdout, deref(r.ExitCode), tt.stdout, tt.code, r.Stderr)
		}
		if tt.stderr != "" && r.Stderr != tt.stderr {
			t.Errorf("%q: stderr %q, want %q", tt.cmd, r.Stderr, tt.stderr)
		}
		if (r.Err == nil) != (tt.kind == "") || (r.Err != nil && r.Err.Kind != tt.kind) {
			t.Errorf("%q: error %+v, want kind %q", tt.cmd, r.Err, tt.kind)
		}
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	s := newSession(t, Config{Dir: dir})
	run(t, s, "cd sub && export FOO=bar && LOCAL=x")
	r := run(t, s, "pwd; echo $FOO")
	if want := filepath.Join(dir, "sub") + "\nbar\n"; r.Stdout != want {
		t.Fatalf("got %q, want %q", r.Stdout, want)
	}
	// exit kills the shell; the next call gets a new one with the state kept.
	r = run(t, s, "exit 7")
	if r.Err == nil || r.Err.Kind != tool.ErrShell || *r.ExitCode != 7 {
		t.Fatalf("exit: %+v", r)
	}
	r = run(t, s, "pwd; echo $FOO")
	if want := filepath.Join(dir, "sub") + "\nbar\n"; r.Stdout != want {
		t.Fatalf("after exit: got %q, want %q", r.Stdout, want)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	r = run(t, s, "pwd; echo \"[$FOO]\"")
	if want := dir + "\n[]\n"; r.Stdout != want {
		t.Fatalf("after restart: got %q, want %q", r.Stdout, want)
	}
}

func TestTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	s := newSession(t, Config{Dir: dir})
	run(t, s, "export KEEP=1")
	pidFile := filepath.Join(dir, "pid")
	start := time.Now()
	r := s.Run(context.Background(), fmt.Sprintf("echo started; (sleep 60 & echo $! > %s; wait) ; echo never", pidFile), 300*time.Millisecond)
	if !r.TimedOut || r.Err == nil || r.Err.Kind != tool.ErrTimeout {
		t.Fatalf("want timeout, got %+v", r)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("the timeout was not enforced")
	}
	if r.Stdout != "started\n" {
		t.Fatalf("partial output %q", r.Stdout)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatal("grandchild pid not written")
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d outlived the timeout", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := run(t, s, "echo $KEEP"); r.Stdout != "1\n" {
		t.Fatalf("state after timeout: %q", r.Stdout)
	}
}

func TestCancel(t *testing.T) {
	s := newSession(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	r := s.Run(ctx, "sleep 30", 0)
	if r.Err == nil || r.Err.Kind != tool.ErrCanceled {
		t.Fatalf("got %+v", r.Err)
	}
	if r := run(t, s, "echo ok"); r.Stdout != "ok\n" {
		t.Fatalf("after cancel: %+v", r)
	}
}

func TestOutputCap(t *testing.T) {
	s := newSession(t, Config{MaxOutput: 1000})
	r := run(t, s, "seq 1 100000")
	if !r.Truncated {
		t.Fatal("not truncated")
	}
	if !strings.HasPrefix(r.Stdout, "1\n2\n3\n") || !strings.HasSuffix(r.Stdout, "99999\n100000\n") || !strings.Contains(r.Stdout, "bytes omitted") {
		t.Fatalf("head/tail wrong: %q...%q", r.Stdout[:20], r.Stdout[len(r.Stdout)-20:])
	}
	if len(r.Stdout) > 1100 {
		t.Fatalf("kept %d bytes", len(r.Stdout))
	}
}

func TestCapBuf(t *testing.T) {
	for _, chunk := range []int{1, 3, 7, 100, 5000} {
		var all []byte
		c := newCapBuf(64)
		for i := 0; i < 300; i++ {
			all = append(all, byte('a'+i%26))
		}
		for i := 0; i < len(all); i += chunk {
			c.Write(all[i:min(i+chunk, len(all))])
		}
		want := string(all[:32]) + fmt.Sprintf("\n[... %d bytes omitted ...]\n", 300-64) + string(all[300-32:])
		if got := c.String(); got != want {
			t.Errorf("chunk %d: got %q want %q", chunk, got, want)
		}
	}
	c := newCapBuf(64)
	c.Write([]byte("short"))
	c.Write([]byte(strings.Repeat("x", 40)))
	if c.String() != "short"+strings.Repeat("x", 40) {
		t.Errorf("untruncated: %q", c.String())
	}
}

func TestScrubEnv(t *testing.T) {
	tests := []struct {
		name string
		kept bool
	}{
		// The harness's own configuration, secrets or not (the
		// providers' through OwnEnv).
		{"ANTHROPIC_BASE_URL", false},
		{"ANTHROPIC_API_KEY", false},
		{"ANTHROPIC_AUTH_TOKEN", false},
		{"ANTHROPIC_PROFILE", false},
		{"OPENAI_BASE_URL", false},
		{"OPENAI_API_KEY", false},
		{"OPENAI_ORG_ID", false},
		{"OPENAI_PROJECT_ID", false},
		{"OLLAMA_HOST", false},
		{"OLLAMA_MODELS", false},
		{"TRUSS_HOME", false},
		{"TRUSS_MODEL", false},
		{"openai_base_url", false},
		// Secret-looking names from anywhere.
		{"GITHUB_TOKEN", false},
		{"my_secret", false},
		{"AWS_SECRET_ACCESS_KEY", false},
		{"KEYBOARD", false}, // contains KEY: withheld, as before
		// Everything else reaches commands.
		{"PATH", true},
		{"HOME", true},
		{"LANG", true},
		{"GOFLAGS", true},
		{"MY_OPENAI_NOTES", true}, // the prefix must start the name
		{"OLLAMAX", true},
		{"TRUSSED", true},
		{"HTTP_PROXY", true},
		// Whole words: secrets by another name.
		{"PGPASSWORD", false},
		{"DOCKER_PASSWORD", false},
		{"MYSQL_PWD", false},
		{"GITHUB_PAT", false},
		{"AZURE_CREDENTIALS", false},
		{"GOOGLE_APPLICATION_CREDENTIALS", false},
		{"NPM_AUTH", false},
		{"NPM_AUTH_TOKEN", false},
		{"SSH_AUTH_SOCK", false},
		{"SENTRY_DSN", false},
		{"SESSION_COOKIE", false},
		{"GPG_PRIVATE", false},
		{"ROUTER_CREDS", false},
		{"DB_PASS", false},
		{"LDAP_BIND_PW", false},
		{"CI_JOB_JWT", false},
		{"STRIPE_SK", false},
		{"SLACK_WEBHOOK", false},
		{"GIT_CONFIG_PARAMETERS", false},
		{"GIT_CONFIG_VALUE_0", false},
		{"PGPASS", false},
		{"XPASS", false},
		{"SMTP_XPASS", false},
		{"T_OAUTH", false},
		{"GH_OAUTH2", false},
		{"AZURE_SAS", false},
		// CRED, misspelt passwords, a login, a salt, a whole kubeconfig,
		// Bundler's gem server credentials.
		{"LDAP_BIND_CRED", false},
		{"ADMIN_PASSWRD", false},
		{"ADMINPASSWRD", false},
		{"DB_PSWD", false},
		{"DB_PWRD", false},
		{"DB_PASWORD", false},
		{"ROOTPWD", false},
		{"MYSQL_ROOT_PWD", false},
		{"HTPASSWD", false},
		{"SMTP_LOGIN", false},
		{"SIGNING_SALT", false},
		{"KUBECONFIG_DATA", false},
		{"KUBE_CONFIG_DATA", false},
		{"BUNDLE_GEMS__CONTRIBSYS__COM", false},
		{"BUNDLE_CONTRIBSYS__COM", false},
		{"BUNDLE_RUBYGEMS__PKG__GITHUB__COM", false},
		{"BUNDLE_GEM__FURY__IO", false},
		{"BUNDLE_PATH", true},
		{"BUNDLE_GEMFILE", true},
		{"BUNDLE_BUILD__NOKOGIRI", true},
		{"BUNDLE_MIRROR__HTTPS://RUBYGEMS__ORG/", true},
		{"BUNDLE_LOCAL__RACK", true},
		{"BUNDLE_GEM__TEST", true},
		{"BUNDLE_GITHUB__HTTPS", true},
		{"KUBECONFIG", true},
		{"LOGIN_URL", true},
		{"LOGIN", true},
		{"UPWARD_COMPAT", true},
		{"POWERED_BY", true},
		{"CROWD_URL", true},
		{"BYPASS_CACHE", true},
		{"PASSTHROUGH_ENV", true},
		{"SKIP_TESTS", true},
		{"GIT_CONFIG_NOSYSTEM", true},
		// ... and no more than words: these pass.
		{"GOPATH", true},
		{"PYTHONPATH", true},
		{"MANPATH", true},
		{"GIT_AUTHOR_NAME", true},
		{"GIT_AUTHOR_EMAIL", true},
		{"AUTHOR", true},
		{"COMPASS", true},
		{"DBUS_SESSION_BUS_ADDRESS", true},
		{"XDG_SESSION_TYPE", true},
		{"DESKTOP_SESSION", true},
		{"SESSION_MANAGER", true},
		{"PWD", true},
		{"OLDPWD", true},
		{"PATCH_LEVEL", true},
	}
	var env []string
	for _, tt := range tests {
		env = append(env, tt.name+"=v")
	}
	own := []string{"ANTHROPIC_*", "OPENAI_*", "OLLAMA_*"}
	got := map[string]bool{}
	for _, kv := range ScrubEnvOwn(env, nil, nil, own) {
		name, _, _ := strings.Cut(kv, "=")
		got[name] = true
	}
	for _, tt := range tests {
		withheld := Withheld(tt.name) || matches(own, strings.ToUpper(tt.name))
		if got[tt.name] != tt.kept || withheld == tt.kept {
			t.Errorf("%s: kept %v, withheld %v; want kept %v", tt.name, got[tt.name], withheld, tt.kept)
		}
	}
	// Without OwnEnv, a provider's variable that looks like no secret
	// passes: the shell knows no provider.
	if got := ScrubEnv([]string{"OLLAMA_HOST=h"}, nil); len(got) != 1 {
		t.Errorf("ScrubEnv without OwnEnv withheld %q", got)
	}
	// A glob in AllowEnv passes what OwnEnv withholds; WithholdEnv wins
	// over a glob.
	if got := strings.Join(ScrubEnvOwn([]string{"OPENAI_BASE_URL=u", "OLLAMA_HOST=h"}, []string{"OPENAI_*"}, []string{"OLLAMA_*"}, own), " "); got != "OPENAI_BASE_URL=u" {
		t.Errorf("allow and withhold globs: %q", got)
	}
}

// A URL with a password, a password without a scheme and a secret-named
// parameter are withheld whatever the variable's name, also where a URL
// parser would cut the password short or refuse the URL, in any URL of
// a list and in any parameter of a query; ordinary URLs, ports, image
// digests, paths and addresses pass.
func TestWithheldValue(t *testing.T) {
	digest := "sha256:" + strings.Repeat("9f86d081", 8)
	for _, tt := range []struct {
		v    string
		want bool
	}{
		{"postgres://u:hunter2@db/x", true},
		{"redis://:redispw@h:6379/0", true},
		{"https://user:pw@example/x", true},
		{" mysql://root:root@127.0.0.1", true},
		{"postgresql://db.example/app?user=u&password=QUERYPW", true},
		{"jdbc:mysql://h/db?user=u&password=JDBCPW", true},
		{"Server=x;Password=CONNPW;", true},
		{"jdbc:postgresql://u:pw@h/db", true},
		{"https://api.example/v1?api_key=QUERYKEY", true},
		{"https://h/x?a=1&access_token=AT", true},
		{"https://acct.blob.core.windows.net/c?sv=1&sig=SIG", true},
		{"https://maps.example/js?key=K", true},
		{"https://user:@example/x", true}, // an empty password is still one
		// A password a URL parser cuts short or refuses.
		{"postgres://app:pa#ss@db.internal:5432/prod", true},
		{"redis://:s3cr%t@cache:6379/0", true},
		{"postgres://app:pa ss@db/prod", true},
		{"amqp://guest:Gu3st/pw@rabbit:5672/", true},
		{"postgres://u:8/abc+def@h/db", true},
		{"postgres://u:12345@h/db", true},
		{"mongodb+srv://u:hunter2@cluster0.x.mongodb.net/?retryWrites=true", true},
		{"https://user:pw@[::1]:80/", true},
		{"%zz://a:b@c", true}, // a URL no parser takes still carries its password
		// Every URL of a list.
		{"https://x/simple https://u:p@other/simple", true},
		{"https://x/simple,https://u:p@other/simple", true},
		{"https://x/simple;https://u:p@other/simple", true},
		{"https://__token__:pypi-AgEIcHlwaS5vcmc@pypi/simple https://u:p@other", true},
		// No scheme.
		{"u:p@proxy:3128", true},
		{"--proxy=u:p@proxy:3128", true},
		{"alice:Hunter2pass@10.0.0.1", true},
		// Every parameter, not the first look-alike only.
		{"https://api.x.com/cb?next_token=a&token=SEKRETSEKRET", true},
		{"https://h/x?monkey=1&key=SEKRETSEKRET", true},
		{"https://h/cb#access_token=AT&state=s", true},
		{"https://h/x?X-Amz-Credential=AKID%2F20261206&X-Amz-Signature=abc", true},
		{"https://h/x?clientSecret=s", true},
		// key = value, key: value, white space around.
		{"Server=tcp:x.database.windows.net;User ID=u;Password = hunter2;", true},
		{"host=db user=u password=hunter2 dbname=x", true},
		{"host=db user=u\tpassword=hunter2", true},
		{"Password\t=\thunter2", true},
		{"user: u\npassword: hunter2", true},
		{`{"host":"db","password":"hunter2"}`, true},
		{"Authorization: Bearer abc", true},
		{"db_passwrd=x", true},
		{"--password=x", true},
		// These pass.
		{"--pwdfile=x", false},
		{"https://h/x?monkey=1", false},
		{"https://h/x?token=", false}, // no value
		{"password=", false},
		{"https://user@example/x", false}, // no password
		{"https://abc@o1.ingest.sentry.io/1", false},
		{"http://127.0.0.1:8080", false},
		{"http://localhost:5173/@vite/client", false},
		{"http://localhost:5173/@fs/src/x.ts", false},
		{"https://h.example:8443/x?email=a@b.example", false},
		{"https://h.example:8443/api/users/@me", false},
		{"http://localhost:8080 and me@x.example", false},
		{"https://registry.npmjs.org/@scope%2fpkg", false},
		{"git+ssh://git@github.com/o/r.git", false},
		{"ssh://git@github.com:22/o/r.git", false},
		{"git@github.com:o/r.git", false},
		{"nginx:1.25@" + digest, false},
		{"mailto:me@example.com", false},
		{"/usr/bin:/bin", false},
		{"/usr/bin:/opt/node@18/bin:/bin", false},
		{"bin:/opt/node@18/bin", false},
		{"user@host", false},
		{"localhost:8080", false},
		{"12:30:45", false},
		{"2026-12-05T12:30:45Z", false},
		{"di=01;34:ln=01;36:so=01;35", false},
		{"-mod=mod -trimpath", false},
		{"--sort-key-order=asc", false},
		{"https://h/x?sort=key:asc", false},
		{"keyboard=us", false},
		{"ssl_key_file=/etc/x.pem", false},
		{"token_type=bearer", false},
		{"", false},
	} {
		if got := WithheldValue(tt.v); got != tt.want {
			t.Errorf("WithheldValue(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
	env := ScrubEnv([]string{"DATABASE_URL=postgres://u:hunter2@db/x", "APP_URL=http://h"}, nil)
	if len(env) != 1 || env[0] != "APP_URL=http://h" {
		t.Errorf("ScrubEnv kept %q", env)
	}
	if env := ScrubEnv([]string{"DATABASE_URL=postgres://u:pw@db/x"}, []string{"DATABASE_URL"}); len(env) != 1 {
		t.Errorf("an allowed variable was withheld: %q", env)
	}
}

func TestAllowEnv(t *testing.T) {
	env := []string{"PATH=/bin", "HOME=/h", "OPENAI_BASE_URL=http://x", "OPENAI_API_KEY=sk", "ALLOWED_TOKEN=ok", "OLLAMA_HOST=h"}
	allow := []string{"ALLOWED_TOKEN", "OLLAMA_HOST"}
	own := []string{"OPENAI_*", "OLLAMA_*"}
	got := strings.Join(ScrubEnvOwn(env, allow, nil, own), " ")
	if got != "PATH=/bin HOME=/h ALLOWED_TOKEN=ok OLLAMA_HOST=h" {
		t.Fatalf("got %q", got)
	}
	s := newSession(t, Config{Env: env, AllowEnv: allow, OwnEnv: own, SetEnv: []string{"ANTHROPIC_BASE_URL=set"}})
	r := run(t, s, "echo \"[$OPENAI_API_KEY][$OPENAI_BASE_URL][$HOME][$OLLAMA_HOST][$ANTHROPIC_BASE_URL]\"")
	if r.Stdout != "[][][/h][h][set]\n" {
		t.Fatalf("shell env: %q", r.Stdout)
	}
}

func TestLauncher(t *testing.T) {
	called := false
	s := newSession(t, Config{Launcher: LauncherFunc(func(cmd *exec.Cmd) error {
		called = true
		cmd.Env = append(cmd.Env, "LAUNCHED=yes")
		return nil
	})})
	if r := run(t, s, "echo $LAUNCHED"); r.Stdout != "yes\n" || !called {
		t.Fatalf("launcher not applied: %q", r.Stdout)
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	s := New(Config{Dir: b.TempDir()})
	defer s.Close()
	s.Run(context.Background(), "true", 0)
	b.ResetTimer()
	for b.Loop() {
		if r := s.Run(context.Background(), "true", 0); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

func TestPrewarm(t *testing.T) {
	s := New(Config{Dir: t.TempDir()})
	s.Prewarm()
	if r := s.Run(context.Background(), "echo ready", 0); r.Err != nil || r.Stdout != "ready\n" {
		t.Fatalf("after prewarm: %+v", r)
	}
	s.Close()
	// A prewarm racing a close starts nothing.
	s2 := New(Config{Dir: t.TempDir()})
	s2.Close()
	s2.Prewarm()
	time.Sleep(50 * time.Millisecond)
	s2.mu.Lock()
	defer s2.mu.Unlock()
	if s2.proc != nil {
		t.Error("a closed session started a shell")
	}
}

// TestStartFailure: a shell that cannot start (a sandbox helper that
// refuses) is reported with what it said, and no command runs.
func TestStartFailure(t *testing.T) {
	s := New(Config{Dir: t.TempDir(), Launcher: LauncherFunc(func(cmd *exec.Cmd) error {
		cmd.Path, cmd.Args = "/bin/sh", []string{"sh", "-c", "echo 'truss sandbox: mount /proc: operation not permitted' >&2; exit 126"}
		return nil
	})})
	defer s.Close()
	r := s.Run(context.Background(), "echo ran", 0)
	if r.Err == nil || r.Err.Kind != tool.ErrShell || !strings.Contains(r.Err.Message, "the shell could not be started: truss sandbox: mount /proc: operation not permitted") || r.Stdout != "" {
		t.Fatalf("%+v", r)
	}
}

// starter is a Starter that starts the command with pipes of its own, as
// a sandbox with a helper ready does, and counts its starts.
type starter struct{ starts int }

func (s *starter) Prepare(*exec.Cmd) error { panic("Prepare called on a Starter") }

func (s *starter) Start(cmd *exec.Cmd) (*exec.Cmd, io.WriteCloser, io.ReadCloser, io.ReadCloser, error) {
	s.starts++
	var files [6]*os.File // child, parent: stdin, stdout, stderr
	for i := 0; i < 3; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, nil, nil, err
		}
		if i == 0 {
			files[0], files[1] = r, w
		} else {
			files[2*i], files[2*i+1] = w, r
		}
	}
	cmd.Env = append(cmd.Env, "STARTED="+strconv.Itoa(s.starts))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = files[0], files[2], files[4]
	err := cmd.Start()
	for i := 0; i < 6; i += 2 {
		files[i].Close()
	}
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return cmd, files[1], files[3], files[5], nil
}

// TestStarter: a Starter starts the shell, and starts it again after a
// timeout killed it; the session's pipes are the Starter's.
func TestStarter(t *testing.T) {
	st := &starter{}
	s := newSession(t, Config{Launcher: st})
	if r := run(t, s, "echo $STARTED; echo err >&2"); r.Stdout != "1\n" || r.Stderr != "err\n" || st.starts != 1 {
		t.Fatalf("%+v, %d starts", r, st.starts)
	}
	if r := s.Run(context.Background(), "sleep 30", 100*time.Millisecond); !r.TimedOut {
		t.Fatalf("no timeout: %+v", r)
	}
	// (The restarted shell gets the last call's exported variables back,
	// STARTED among them.)
	if r := run(t, s, "echo again"); r.Stdout != "again\n" || st.starts != 2 {
		t.Fatalf("after the timeout: %+v, %d starts", r, st.starts)
	}
}

// TestLiveOutput: what the command writes goes to the context's
// tool.OutputFunc as it comes, byte for byte what the result holds, with
// nothing held back but what could begin the sentinel, and nothing after
// the call.
func TestLiveOutput(t *testing.T) {
	s := newSession(t, Config{Dir: t.TempDir()})
	var mu sync.Mutex
	got := map[string]*strings.Builder{"stdout": {}, "stderr": {}}
	first := make(chan string, 1)
	ctx := tool.WithOutput(context.Background(), func(stream string, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		got[stream].Write(p)
		select {
		case first <- string(p):
		default:
		}
	})
	// The first line arrives while the command still waits for it to be
	// seen: a command that printed it and then waited would show it.
	done := make(chan tool.Result, 1)
	go func() {
		done <- s.Run(ctx, `echo first; while [ ! -e seen ]; do sleep 0.01; done; printf 'x%.0s' $(seq 3000); echo; echo oops >&2`, 20*time.Second)
	}()
	select {
	case p := <-first:
		if p != "first\n" {
			t.Fatalf("the first output: %q", p)
		}
	case <-time.After(10 * time.Second): // not a measure: it never comes
		t.Fatal("the first line was held back while the command ran")
	}
	if err := os.WriteFile(filepath.Join(s.cfg.Dir, "seen"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	mu.Lock()
	defer mu.Unlock()
	if got["stdout"].String() != r.Stdout || got["stderr"].String() != r.Stderr || r.Stderr != "oops\n" {
		t.Errorf("streamed %q / %q, the result holds %q / %q", got["stdout"], got["stderr"], r.Stdout, r.Stderr)
	}
	before := got["stdout"].Len()
	mu.Unlock()
	s.Run(context.Background(), "echo later", 0)
	mu.Lock()
	if got["stdout"].Len() != before {
		t.Errorf("a later call's output went to an earlier call's sink")
	}
}

func TestPartialToken(t *testing.T) {
	tok := []byte("__TRUSS_abc")
	for _, tc := range []struct {
		b    string
		want int
	}{{"", 0}, {"hello\n", 0}, {"x_", 1}, {"x__TR", 4}, {"__TRUSS_ab", 10}, {"_x", 0}} {
		if got := partialToken([]byte(tc.b), tok); got != tc.want {
			t.Errorf("partialToken(%q) = %d, want %d", tc.b, got, tc.want)
		}
	}
}

// TestStatusLineProof: the sentinel line's status of 0 counts only with
// the call's proof, which a process that stole the shell's real line of a
// failure never saw; any other status is taken as it is (a failure
// rewritten as another failure is still one).
func TestStatusLineProof(t *testing.T) {
	p := &process{proof: "P7f3a"}
	for _, tc := range []struct {
		line   string
		status int
		cwd    string
	}{
		{"0 P7f3a /w/repo", 0, "/w/repo"},
		{"0 P7f3a /w/a dir with spaces", 0, "/w/a dir with spaces"},
		{"1 /w/repo", 1, "/w/repo"},
		{"0 /w/repo", forgedStatus, ""},       // a failure's line rewritten as a success
		{"0 Pxxxx /w/repo", forgedStatus, ""}, // a guessed proof
		{"0", forgedStatus, ""},
		{"ok /w/repo", forgedStatus, ""},
	} {
		status, cwd := p.statusLine(tc.line)
		if status != tc.status || cwd != tc.cwd {
			t.Errorf("%q: status %d cwd %q, want %d %q", tc.line, status, cwd, tc.status, tc.cwd)
		}
	}
}

// TestForgedSuccessFails: a process that won the race for the shell's
// output (its own standard output, reopened for reading) and wrote the
// sentinel line of a failure back as a success — here a launcher that
// rewrites every sentinel's status on the way, as a winning reader would —
// does not make the failure a success: the line lacks the proof.
func TestForgedSuccessFails(t *testing.T) {
	s := New(Config{Dir: t.TempDir(), Timeout: 10 * time.Second, Launcher: rewriter{}})
	defer s.Close()
	r := s.Run(context.Background(), "echo the tests failed; false", 10*time.Second)
	if r.Err == nil || r.Err.Kind != tool.ErrExit || !strings.Contains(r.Err.Message, "without the shell's proof") {
		t.Fatalf("a failure rewritten as a success: %+v", r)
	}
	if r.ExitCode == nil || *r.ExitCode != -1 {
		t.Fatalf("not a failed command of unknown status: %+v", r)
	}
	if r := s.Run(context.Background(), "echo fine", 10*time.Second); r.Err != nil || r.Stdout != "fine\n" {
		t.Errorf("a real success through the same rewriter: %+v", r)
	}
}

// rewriter starts the shell with its standard output passed through a
// rewrite of every sentinel line's status to 0, keeping the rest.
type rewriter struct{}

func (rewriter) Prepare(*exec.Cmd) error { return nil }

func (rewriter) Start(cmd *exec.Cmd) (*exec.Cmd, io.WriteCloser, io.ReadCloser, io.ReadCloser, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	outR, outW := io.Pipe()
	errOut, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, nil, err
	}
	pw.Close()
	go func() {
		sentinel := regexp.MustCompile(`^(__TRUSS_[0-9a-f]+) -?[0-9]+ `)
		br := bufio.NewReader(pr)
		for {
			line, err := br.ReadString('\n')
			outW.Write([]byte(sentinel.ReplaceAllString(line, "$1 0 ")))
			if err != nil {
				outW.CloseWithError(err)
				return
			}
		}
	}()
	return cmd, in, outR, errOut, nil
}

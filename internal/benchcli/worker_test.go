package benchcli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/bench/runner"
)

// truss bench worker keeps what it makes for its runs in one private
// directory (mode 0700, in its temporary directory), and it is gone once
// the worker exits on SIGTERM: whether the signal comes while the worker
// waits for jobs (it drains, then exits) or while it is still setting up
// (here: warming Go's build cache, which it does when the user has none).
func TestWorkerPrivateDirGoneOnSIGTERM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := t.TempDir()
	q, closeQ, err := runner.OpenQueue(ctx, runner.Net{Listen: "127.0.0.1:0"}, out)
	if err != nil {
		t.Fatal(err)
	}
	defer closeQ()
	qi, err := runner.ReadQueueInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// when says the worker may be signalled: its stderr so far.
		when func(stderr string) bool
		// drained: the worker ran and drained (exit 0, its summary).
		drained bool
		env     []string
	}{
		{"waiting for jobs", func(s string) bool { return strings.Contains(s, "truss: worker w (") }, true, nil},
		{"setting up", func(s string) bool { return strings.Contains(s, "building the standard library") }, false,
			[]string{"GOCACHE=" + filepath.Join(t.TempDir(), "none")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.CommandContext(ctx, exe, "worker", "--nats", qi.WorkerURL(), "--queue", q.Name(), "--id", "w")
			cmd.Env = append(os.Environ(), asTrussBench+"=1", "TMPDIR="+tmp, "TRUSS_HOME="+t.TempDir())
			cmd.Env = append(cmd.Env, tc.env...)
			var stdout bytes.Buffer
			errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			defer errFile.Close()
			cmd.Stdout, cmd.Stderr = &stdout, errFile
			stderr := fileText(errFile.Name())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var priv string
			for priv == "" || !tc.when(stderr.String()) {
				if ctx.Err() != nil {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("the worker made no private directory in %s and said %q", tmp, stderr.String())
				}
				if m, _ := filepath.Glob(filepath.Join(tmp, "truss-bench-*")); len(m) > 0 && priv == "" {
					priv = m[0]
					fi, err := os.Stat(priv)
					if err != nil || fi.Mode().Perm() != 0o700 {
						t.Errorf("the private directory %s: %v, %v; want mode 0700", priv, fi.Mode(), err)
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			if st := cmd.ProcessState; st == nil || !st.Exited() {
				t.Fatalf("the worker did not exit of itself on SIGTERM: %v (stderr %q)", err, stderr.String())
			}
			if tc.drained && (err != nil || !strings.Contains(stdout.String(), "worker w: 0 runs")) {
				t.Errorf("the drained worker: %v, stdout %q, stderr %q", err, stdout.String(), stderr.String())
			}
			left, _ := os.ReadDir(tmp)
			for _, e := range left {
				t.Errorf("left in the worker's temporary directory: %s", e.Name())
			}
		})
	}
}

// fileText reads what a file holds now.
type fileText string

func (f fileText) String() string {
	b, _ := os.ReadFile(string(f))
	return string(b)
}

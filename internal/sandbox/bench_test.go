//go:build linux

package sandbox_test

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool/shell"
)

func benchSandbox(b *testing.B) *sandbox.Sandbox {
	host := sandbox.Probe()
	if !host.UserNS || host.LandlockABI < 1 {
		b.Skip("this host cannot enforce the sandbox")
	}
	dir := b.TempDir()
	pl, err := sandbox.MakePlan(sandbox.DefaultPolicy(dir, filepath.Join(dir)), host, sandbox.NoFallback)
	if err != nil {
		b.Fatal(err)
	}
	sb, err := sandbox.New(pl)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sb.Close() })
	return sb
}

// BenchmarkLaunchTrue measures starting and waiting for `true`, plainly and
// through the sandbox helper (namespaces, mounts, cgroup, rlimits,
// Landlock, seccomp, exec).
func BenchmarkLaunchTrue(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1)")
	}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command(path).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The helper: truss-sandbox (the small helper binary installed next to
	// truss), the whole truss binary (when truss-sandbox is not there), and
	// this test binary.
	helpers := []struct{ name, pkg string }{{"truss-sandbox", "github.com/trussdev/truss/cmd/truss-sandbox"}, {"truss", "github.com/trussdev/truss/cmd/truss"}}
	launch := func(b *testing.B) {
		sb := benchSandbox(b)
		for b.Loop() {
			cmd := exec.Command(path)
			if err := sb.Prepare(cmd); err != nil {
				b.Fatal(err)
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	}
	for _, h := range helpers {
		b.Run("sandboxed/"+h.name, func(b *testing.B) {
			b.Setenv("TRUSS_SANDBOX_HELPER", buildBinary(b, h.pkg))
			launch(b)
		})
	}
	b.Run("sandboxed/test-binary", launch)
	// Start, as the shell starts its bash: the program is handed to a
	// helper that was started and confined ahead of need. Between starts
	// the benchmark waits (untimed) for the next helper to be ready, as a
	// session's starts are apart: this is the latency of one start.
	b.Run("sandboxed/ready", func(b *testing.B) {
		b.Setenv("TRUSS_SANDBOX_HELPER", buildBinary(b, helpers[0].pkg))
		sb := benchSandbox(b)
		for b.Loop() {
			b.StopTimer()
			sb.Ready()
			b.StartTimer()
			started, stdin, out, errOut, err := sb.Start(exec.Command(path))
			if err != nil {
				b.Fatal(err)
			}
			stdin.Close()
			io.Copy(io.Discard, out)
			msg, _ := io.ReadAll(errOut)
			if err := started.Wait(); err != nil {
				b.Fatalf("%v: %s", err, msg)
			}
		}
	})
}

// BenchmarkShellRoundTrip measures one `true` in a warm persistent shell,
// plainly and inside the sandbox.
func BenchmarkShellRoundTrip(b *testing.B) {
	for _, boxed := range []bool{false, true} {
		name := "plain"
		if boxed {
			name = "sandboxed"
		}
		b.Run(name, func(b *testing.B) {
			cfg := shell.Config{Dir: b.TempDir()}
			if boxed {
				// The shell starts in the sandbox's workspace: another
				// directory of the host's /tmp is not there (the sandbox
				// has a /tmp of its own).
				sb := benchSandbox(b)
				cfg.Dir = sb.Plan().Policy.Workspace
				cfg.Launcher, cfg.Guard = sb, sb.Guard
			}
			sh := shell.New(cfg)
			defer sh.Close()
			if r := sh.Run(context.Background(), "true", 0); r.Err != nil {
				b.Fatal(r.Err.Message)
			}
			for b.Loop() {
				if r := sh.Run(context.Background(), "true", 0); r.Err != nil {
					b.Fatal(r.Err.Message)
				}
			}
		})
	}
}

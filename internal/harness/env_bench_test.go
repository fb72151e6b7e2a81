package harness

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool"
)

// BenchmarkEnvSession measures a task environment through a whole
// session (Open with --env image:REF, NoModel): open — the engine found,
// ended sessions reaped, the container started — to the first shell
// command's answer (Close not timed); and a shell call's round trip
// through the session's executor, in the container and on the host (the
// sandbox) in the same run.
func BenchmarkEnvSession(b *testing.B) {
	_, ref := testImage(b)
	call := tool.Call{ID: "b", Op: tool.OpExec, Args: &tool.ExecArgs{Command: "true"}}
	ctx := context.Background()
	open := func(b *testing.B, env string) *Session {
		o := fixtureB(b)
		o.Env, o.NoModel = env, true
		s, err := Open(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	for _, env := range []string{"image:" + ref, "host"} {
		b.Run("open-to-first-command/"+strings.Split(env, ":")[0], func(b *testing.B) {
			for b.Loop() {
				s := open(b, env)
				if r := s.Execute(ctx, call); r.Err != nil {
					b.Fatal(r.Err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		})
	}
	for _, env := range []string{"image:" + ref, "host"} {
		name := "round-trip/container"
		if env == "host" {
			name = "round-trip/host"
		}
		b.Run(name, func(b *testing.B) {
			s := open(b, env)
			defer s.Close()
			if r := s.Execute(ctx, call); r.Err != nil {
				b.Fatal(r.Err)
			}
			for b.Loop() {
				if r := s.Execute(ctx, call); r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		})
	}
}

// fixtureB is a session's options on a new workspace for a benchmark, its
// records in the benchmark's directories.
func fixtureB(b *testing.B) Options {
	root, home := b.TempDir(), b.TempDir()
	b.Setenv("TRUSS_HOME", home)
	return Options{Version: "bench", Root: root, NoSession: true, NoLedger: true,
		KeyDir: filepath.Join(home, "key"), MemoryDir: filepath.Join(home, "memories"),
		Sandbox: SandboxOptions{Fallback: sandbox.FallbackNone}, Validation: ValidationOptions{Off: true},
		MCP: MCPOptions{Off: true}, Spawn: SpawnOptions{Off: true}}
}

// BenchmarkEnvBoundary is the verification boundary of a task
// environment with a check that does nothing (`true`): halting the
// session's container, a fresh container's start, the check, its
// removal and the session's container started again.
func BenchmarkEnvBoundary(b *testing.B) {
	_, ref := testImage(b)
	ctx := context.Background()
	o := fixtureB(b)
	o.Env, o.NoModel = "image:"+ref, true
	o.Validation = ValidationOptions{TestCmd: "true"}
	s, err := Open(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		v, err := s.Validate(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if v == nil || !v.OK {
			b.Fatalf("the check failed: %+v", v)
		}
	}
}

package container

import (
	"context"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool/shell"
)

// BenchmarkStartToPrompt measures a session environment's start with a
// cached image: the container started (Engine.Start) and the persistent
// shell inside it answering its first command. Removal is not timed.
func BenchmarkStartToPrompt(b *testing.B) {
	// The workdir from the image (inspected first), and given (SWE-bench's
	// /testbed: inspected while the container starts).
	for _, workdir := range []string{"", "/testbed"} {
		b.Run("workdir="+workdir, func(b *testing.B) { benchStart(b, workdir) })
	}
}

func benchStart(b *testing.B, workdir string) {
	e, ref := testImage(b)
	ws := b.TempDir()
	session := sessionName(b)
	b.Cleanup(func() { assertNoContainers(b, e, session) })
	ctx := context.Background()
	for b.Loop() {
		env, err := e.Start(ctx, Config{Image: ref, Workspace: ws, Workdir: workdir, Session: session, Limits: Limits{Pids: 1024, Memory: 1 << 30}})
		if err != nil {
			b.Fatal(err)
		}
		sh, err := env.NewShell(shell.Config{})
		if err != nil {
			b.Fatal(err)
		}
		if r := sh.Run(ctx, "true", time.Minute); r.Err != nil {
			b.Fatal(r.Err)
		}
		b.StopTimer()
		sh.Close()
		if err := env.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkShellRoundTrip measures `true` in a warm persistent shell:
// inside the container and on the host, in the same run.
func BenchmarkShellRoundTrip(b *testing.B) {
	ctx := context.Background()
	bench := func(b *testing.B, sh *shell.Session) {
		if r := sh.Run(ctx, "true", time.Minute); r.Err != nil {
			b.Fatal(r.Err)
		}
		for b.Loop() {
			if r := sh.Run(ctx, "true", time.Minute); r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	b.Run("container", func(b *testing.B) {
		_, env := startEnv(b, Config{})
		sh, err := env.NewShell(shell.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer sh.Close()
		bench(b, sh)
	})
	b.Run("host", func(b *testing.B) {
		sh := shell.New(shell.Config{Dir: b.TempDir()})
		defer sh.Close()
		bench(b, sh)
	})
}

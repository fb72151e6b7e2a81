package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool"
)

// BenchmarkCommandGoBuild measures an agent command's `go build` of a
// small module (fmt, encoding/json, strings) in a workspace-write
// session, with the workspace cache every session of the name shares
// (CacheName) and with PrivateCaches (a layer of the session's own over
// the user's Go build cache, read through the cache program). first is a
// new session's first build (the shared cache already holds the module's
// packages from earlier sessions; the private layer starts empty over the
// user's cache, which holds the standard library); again is the same
// build repeated in one session. Opening and closing sessions is not
// timed.
func BenchmarkCommandGoBuild(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("no go command")
	}
	ctx := context.Background()
	build := tool.Call{ID: "b", Op: tool.OpExec, Args: &tool.ExecArgs{Command: `go build -o "$TMPDIR/m" . && echo built`}}
	o := fixtureB(b)
	o.NoModel, o.CacheName = true, "bench-go-build"
	o.ShellTimeout = 30 * time.Minute // the shared cache's first build compiles the standard library
	for name, src := range map[string]string{
		"go.mod":  "module example.com/m\n\ngo 1.22\n",
		"main.go": "package main\n\nimport (\n\t\"encoding/json\"\n\t\"fmt\"\n\t\"strings\"\n)\n\nfunc main() {\n\tb, _ := json.Marshal(map[string]int{\"a\": 1})\n\tfmt.Println(strings.ToUpper(string(b)))\n}\n",
	} {
		if err := os.WriteFile(filepath.Join(o.Root, name), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	open := func(b *testing.B, private bool) *Session {
		p := o
		p.PrivateCaches = private
		s, err := Open(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		if !s.w.sandbox.Plan().Active() {
			s.Close()
			b.Skip("no sandbox on this host")
		}
		return s
	}
	run := func(b *testing.B, s *Session) {
		if r := s.Execute(ctx, build); r.Err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
			b.Fatalf("go build: %v %s %s", r.Err, r.Stdout, r.Stderr)
		}
	}
	// The shared cache as earlier sessions left it.
	s := open(b, false)
	run(b, s)
	s.Close()
	for _, private := range []bool{false, true} {
		name := "shared"
		if private {
			name = "private"
		}
		b.Run("first/"+name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s := open(b, private)
				b.StartTimer()
				run(b, s)
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		})
		b.Run("again/"+name, func(b *testing.B) {
			s := open(b, private)
			defer s.Close()
			run(b, s)
			for b.Loop() {
				run(b, s)
			}
		})
	}
}

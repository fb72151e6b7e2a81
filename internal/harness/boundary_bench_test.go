package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkHostBoundary is the verification boundary on the host
// (Session.Validate: the model's shell and every process of the
// sandbox killed, the checks' own caches made, the checks' shell started
// in the sandbox derived for them, the checks, all of it removed), with
// a check that does nothing (`true`), in a workspace-write session, and
// with `go test` of a small module (one test, fmt and strings) in one
// with private caches (the commands' Go build cache read through the
// cache program over the user's, as a benchmark's agents have it); the
// checks' own cache reads the user's Go build cache through the cache
// program, and compiles the module's package each time. Opening the
// session and a first boundary (which, when the checks used the
// commands' cache, warmed it) are not timed.
func BenchmarkHostBoundary(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, test string
		private    bool
	}{{"true", "true", false}, {"go-test", "go test ./...", true}} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.name == "go-test" {
				if _, err := exec.LookPath("go"); err != nil {
					b.Skip("no go command")
				}
			}
			o := fixtureB(b)
			o.NoModel, o.CacheName, o.PrivateCaches = true, "bench-host-boundary", tc.private
			o.Validation = ValidationOptions{TestCmd: tc.test}
			o.ShellTimeout = 30 * time.Minute
			for name, src := range map[string]string{
				"go.mod":    "module example.com/m\n\ngo 1.22\n",
				"m.go":      "package m\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\nfunc Hello(s string) string { return fmt.Sprintf(\"hello %s\", strings.ToUpper(s)) }\n",
				"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestHello(t *testing.T) {\n\tif Hello(\"x\") != \"hello X\" {\n\t\tt.Fatal(Hello(\"x\"))\n\t}\n}\n",
			} {
				if err := os.WriteFile(filepath.Join(o.Root, name), []byte(src), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			s, err := Open(ctx, o)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if !s.w.sandbox.Plan().Active() {
				b.Skip("no sandbox on this host")
			}
			if v, err := s.Validate(ctx); err != nil || v == nil || !v.OK {
				b.Fatalf("the check failed: %v %+v", err, v)
			}
			for b.Loop() {
				v, err := s.Validate(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if v == nil || !v.OK {
					b.Fatalf("the check failed: %+v", v)
				}
			}
		})
	}
}

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/gitsafe"
)

// makeSourceRepo writes a repository of n files of about 200 bytes in dir,
// shaped like a source tree (a few top-level directories, packages two and
// three levels down, a README and a build file at the top), committed in
// three commits of which the last changes a tenth of the files, and
// returns the last commit.
func makeSourceRepo(ctx context.Context, tb testing.TB, dir string, n int) string {
	tb.Helper()
	git := func(args ...string) string {
		tb.Helper()
		if args[0] == "commit" {
			args = append([]string{"-c", "user.name=Bench", "-c", "user.email=bench@invalid"}, args...)
		}
		out, err := gitsafe.Git{Dir: dir}.Output(ctx, args...)
		if err != nil {
			tb.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	body := func(i, rev int) string {
		s := fmt.Sprintf("package p%d\n\n// F%d is function %d, revision %d.\nfunc F%d() int { return %d }\n", i%50, i, i, rev, i, i*rev)
		return s + strings.Repeat("/", max(0, 199-len(s))) + "\n"
	}
	path := func(i int) string {
		return fmt.Sprintf("%s/pkg%02d/sub%d/file%04d.go", []string{"src", "lib", "internal", "cmd"}[i%4], i%50, i%3, i)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	git("init", "-q", "--template=", "--initial-branch=main")
	write("README.md", "A generated repository.\n")
	write("Makefile", "all:\n\tgo build ./...\n")
	for i := range n - 2 {
		write(path(i), body(i, 0))
	}
	git("add", "-A")
	git("commit", "-q", "-m", "first")
	for rev := 1; rev <= 2; rev++ {
		for i := rev; i < n-2; i += 10 {
			write(path(i), body(i, rev))
		}
		git("add", "-A")
		git("commit", "-q", "-m", fmt.Sprintf("revision %d", rev))
	}
	return git("rev-parse", "HEAD")
}

// BenchmarkCheckout measures the checkouts of one run on a generated
// repository of 1,000 files of 200 bytes: template is the first checkout
// of a (repository, commit), which makes its template, and pair each
// later run's two checkouts, its agent's workspace and its grading
// checkout, made one after the other (as the runner makes them) and
// removed in the background afterwards, as the runner removes them.
// Checkouts go under TRUSS_BENCH_WORK when it is set (a directory on the
// file system to measure), else the test's temporary directory.
func BenchmarkCheckout(b *testing.B) {
	ctx := context.Background()
	work := os.Getenv("TRUSS_BENCH_WORK")
	if work == "" {
		work = b.TempDir()
	} else {
		var err error
		if work, err = os.MkdirTemp(work, "bench-"); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(work)
	}
	repo := filepath.Join(work, "repo")
	commit := makeSourceRepo(ctx, b, repo, 1000)
	b.Run("template", func(b *testing.B) {
		jan := &Janitor{}
		defer jan.Wait()
		for b.Loop() {
			dir, err := os.MkdirTemp(work, "first-")
			if err != nil {
				b.Fatal(err)
			}
			tp := &Templates{Dir: filepath.Join(dir, "templates")}
			if _, err := tp.Checkout(ctx, repo, commit, filepath.Join(dir, "ws")); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			jan.Remove(dir)
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/template")
	})
	b.Run("pair", func(b *testing.B) {
		warm, err := os.MkdirTemp(work, "warm-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(warm)
		tp := &Templates{Dir: filepath.Join(warm, "templates")}
		if _, err := tp.Checkout(ctx, repo, commit, filepath.Join(warm, "ws")); err != nil {
			b.Fatal(err)
		}
		jan := &Janitor{}
		defer jan.Wait()
		var took time.Duration
		for b.Loop() {
			dir, err := os.MkdirTemp(work, "run-")
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for _, d := range []string{"ws", "grade"} {
				if _, err := tp.Checkout(ctx, repo, commit, filepath.Join(dir, d)); err != nil {
					b.Fatal(err)
				}
			}
			took += time.Since(start)
			jan.Remove(dir)
		}
		b.ReportMetric(float64(took.Microseconds())/1e3/float64(b.N), "ms/pair")
	})
}

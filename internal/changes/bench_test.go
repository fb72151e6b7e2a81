//go:build linux

package changes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/shell"
)

// tree writes n files of 200 bytes, each its own, under root, 20 to a directory, in
// directories three levels deep (a source tree's shape).
func tree(b *testing.B, root string, n int) {
	b.Helper()
	content := make([]byte, 200)
	for i := range content {
		content[i] = byte('a' + i%26)
	}
	for i := 0; i < n; i++ {
		copy(content, fmt.Sprintf("file %07d\n", i)) // each file its own content
		d := i / 20
		dir := filepath.Join(root, fmt.Sprintf("m%02d", d/400), fmt.Sprintf("p%02d", d/20%20), fmt.Sprintf("d%02d", d%20))
		if i%20 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", i%20)), content, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScan measures what a scan adds to a shell call, on trees of
// 10,000 and 100,000 files in the page cache, with a full stat walk
// (mode=walk, Options.NoWatch) and with inotify (mode=watch): "none" is a
// command that changed nothing, "edit3" one that rewrote three files in
// three directories. It reports the heap the tracker holds after the
// baseline (index-MB).
func BenchmarkScan(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			root := b.TempDir()
			tree(b, root, n)
			for _, watch := range []bool{false, true} {
				b.Run(map[bool]string{false: "mode=walk", true: "mode=watch"}[watch], func(b *testing.B) {
					var m0, m1 runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&m0)
					tr, err := Open(context.Background(), []string{root}, Options{StoreDir: b.TempDir(), NoWatch: !watch})
					if err != nil {
						b.Fatal(err)
					}
					defer tr.Close()
					if err := tr.Ready(context.Background()); err != nil {
						b.Fatal(err)
					}
					runtime.GC()
					runtime.ReadMemStats(&m1)
					index := float64(m1.HeapAlloc-m0.HeapAlloc) / (1 << 20)
					files := []string{"m00/p00/d00/f00.go", "m00/p01/d02/f03.go", "m00/p00/d07/f19.go"}
					b.Run("none", func(b *testing.B) {
						b.ReportAllocs()
						c0 := cpuTime()
						for b.Loop() {
							if got, err := tr.Scan(context.Background()); err != nil || len(got) != 0 {
								b.Fatal(got, err)
							}
						}
						reportCPU(b, c0)
						b.ReportMetric(index, "index-MB")
					})
					b.Run("edit3", func(b *testing.B) {
						b.ReportAllocs()
						k := 0
						for b.Loop() {
							b.StopTimer()
							k++
							for _, f := range files {
								// The tree is shared by both modes: each writes its own content.
								os.WriteFile(filepath.Join(root, f), fmt.Appendf(nil, "edit %v %d\n", watch, k), 0o644)
							}
							b.StartTimer()
							if got, err := tr.Scan(context.Background()); err != nil || len(got) != 3 {
								b.Fatal(len(got), err)
							}
						}
					})
				})
			}
		})
	}
}

// BenchmarkBaseline measures Open until Ready on 10,000 files: the stat
// walk, the inotify watches and the copy of every file into the store
// (kind=plain), or, in a git work tree whose files are all clean, the
// repository's status and one size check of every blob (kind=git).
func BenchmarkBaseline(b *testing.B) {
	root := b.TempDir()
	tree(b, root, 10_000)
	for _, git := range []bool{false, true} {
		if git {
			sh(b, root, `git init -q . && git add -A && git -c user.email=t@t -c user.name=t commit -qm base`)
		}
		b.Run(map[bool]string{false: "kind=plain", true: "kind=git"}[git], func(b *testing.B) {
			c0 := cpuTime()
			defer reportCPU(b, c0)
			for b.Loop() {
				tr, err := Open(context.Background(), []string{root}, Options{StoreDir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				if err := tr.Ready(context.Background()); err != nil {
					b.Fatal(err)
				}
				tr.Close()
			}
		})
	}
}

// BenchmarkShellCall measures a whole shell call through the persistent
// shell, `echo $N > f` in a 10,000-file tree, unwrapped (bare) and wrapped
// with a tracker (tracked: the call, its scan, the change's contents), so
// that the difference is what tracking adds to a shell call.
func BenchmarkShellCall(b *testing.B) {
	root := b.TempDir()
	tree(b, root, 10_000)
	for _, tracked := range []bool{false, true} {
		b.Run(map[bool]string{false: "bare", true: "tracked"}[tracked], func(b *testing.B) {
			sess := shell.New(shell.Config{Dir: root})
			defer sess.Close()
			var ex tool.Executor = sess
			if tracked {
				tr, err := Open(context.Background(), []string{root}, Options{StoreDir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				defer tr.Close()
				if err := tr.Ready(context.Background()); err != nil {
					b.Fatal(err)
				}
				ex = Wrap(sess, tr)
			}
			k := 0
			for b.Loop() {
				k++
				res := ex.Execute(context.Background(), tool.Call{ID: "c", Op: tool.OpExec,
					Args: &tool.ExecArgs{Command: fmt.Sprintf("echo %v %d > m00/p00/d00/f00.go", tracked, k)}})
				if res.Err != nil || (tracked && len(res.Changes) != 1) {
					b.Fatal(res.Err, len(res.Changes))
				}
			}
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used: on a
// machine shared with other work, a walk's CPU varies far less than its
// wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per iteration since c0
// (cpu-ms/op), the benchmark's workers included.
func reportCPU(b *testing.B, c0 time.Duration) {
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkBigDir measures the scan after a command that made n empty
// files in one new directory (a bulk change): its cost must grow with n,
// not with n squared.
func BenchmarkBigDir(b *testing.B) {
	for _, n := range []int{40_000, 80_000, 160_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			b.StopTimer()
			for range b.N {
				root := b.TempDir()
				// Tracked whatever its size: 160,000 entries are past
				// DefaultMaxDirBytes, and the benchmark measures the
				// scan of a directory that is tracked.
				tr, err := Open(context.Background(), []string{root}, Options{StoreDir: b.TempDir(), NoGit: true, MaxDirBytes: 1 << 30})
				if err != nil {
					b.Fatal(err)
				}
				if err := tr.Ready(context.Background()); err != nil {
					b.Fatal(err)
				}
				big := filepath.Join(root, "big")
				if err := os.Mkdir(big, 0o755); err != nil {
					b.Fatal(err)
				}
				for i := range n {
					fd, err := syscall.Open(filepath.Join(big, fmt.Sprintf("f%07d", i)), syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
					if err != nil {
						b.Fatal(err)
					}
					syscall.Close(fd)
				}
				b.StartTimer()
				ch, err := tr.Scan(context.Background())
				b.StopTimer()
				if err != nil || len(ch) != 1 {
					b.Fatalf("scan: %d changes, %v", len(ch), err)
				}
				tr.Close()
				os.RemoveAll(root)
			}
		})
	}
}

//go:build linux

package changes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// BenchmarkCommandBytes measures what a command that makes many files
// costs the host: the peak heap of the scan (peak-heap-MB, sampled every
// millisecond), the process's peak RSS during it (rss-MB: VmHWM, reset
// before the scan), and the record it makes: the changes' JSON (entry-B)
// and the bulk manifest the ledger stores as a payload (manifest-MB).
// Shapes: longpaths is 80,000 empty files with 187-byte names in four
// directories whose paths are 3.8 KB long; empty is 100,000 empty files,
// 1,000 to a directory.
func BenchmarkCommandBytes(b *testing.B) {
	shapes := []struct {
		name string
		make func(b *testing.B, root string)
	}{
		{"longpaths", func(b *testing.B, root string) {
			for k := range 4 {
				longDir(b, root, fmt.Sprintf("k%d", k), 15, 20000)
			}
		}},
		{"empty", func(b *testing.B, root string) {
			for d := range 100 {
				dir := filepath.Join(root, fmt.Sprintf("d%03d", d))
				if err := os.Mkdir(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				for i := range 1000 {
					fd, err := syscall.Open(filepath.Join(dir, fmt.Sprintf("f%04d", i)), syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
					if err != nil {
						b.Fatal(err)
					}
					syscall.Close(fd)
				}
			}
		}},
	}
	for _, sh := range shapes {
		b.Run("shape="+sh.name, func(b *testing.B) {
			b.StopTimer()
			var heap, rss, entry, manifest float64
			for range b.N {
				root := b.TempDir()
				tr, err := Open(context.Background(), []string{root}, Options{StoreDir: b.TempDir(), NoGit: true})
				if err != nil {
					b.Fatal(err)
				}
				if err := tr.Ready(context.Background()); err != nil {
					b.Fatal(err)
				}
				sh.make(b, root)
				runtime.GC()
				resetHWM()
				stop := peakHeap()
				b.StartTimer()
				ch, err := tr.Scan(context.Background())
				b.StopTimer()
				peak := stop()
				if err != nil {
					b.Fatal(err)
				}
				e, m := recordBytes(b, ch)
				heap += mb(peak)
				rss += mb(hwm())
				entry += float64(e)
				manifest += mb(uint64(m))
				tr.Close()
				os.RemoveAll(root)
			}
			n := float64(b.N)
			b.ReportMetric(heap/n, "peak-heap-MB")
			b.ReportMetric(rss/n, "rss-MB")
			b.ReportMetric(entry/n, "entry-B")
			b.ReportMetric(manifest/n, "manifest-MB")
		})
	}
}

// resetHWM resets the process's peak RSS (VmHWM) to its RSS now.
func resetHWM() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// hwm is the process's peak RSS in bytes (VmHWM), 0 when unknown.
func hwm() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := bytes.Fields(sc.Bytes()); len(f) >= 2 && string(f[0]) == "VmHWM:" {
			kb, _ := strconv.ParseUint(string(f[1]), 10, 64)
			return kb << 10
		}
	}
	return 0
}

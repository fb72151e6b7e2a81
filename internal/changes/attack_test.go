//go:build linux

package changes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool"
)

// secret is what a command must never get into a change: the bytes of a
// file outside the workspace (a signing key, say).
const secret = "SECRET-ledger-key-5f1c9a\n"

// outside makes a directory outside the workspace holding a file "key"
// with the secret, and returns it.
func outside(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "config")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key"), b(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// leaks reports the changes whose contents hold the secret.
func leaks(cs []tool.FileChange) []string {
	var out []string
	for _, c := range cs {
		if bytes.Contains(c.BeforeData, b(secret)) || bytes.Contains(c.AfterData, b(secret)) {
			out = append(out, c.Path)
		}
	}
	return out
}

// storeHolds reports whether the tracker's content store holds the
// secret.
func storeHolds(tr *Tracker) bool {
	tr.store.mu.Lock()
	n := tr.store.used
	tr.store.mu.Unlock()
	pack := make([]byte, n)
	if _, err := tr.store.f.ReadAt(pack, 0); err != nil {
		panic(err)
	}
	return bytes.Contains(pack, b(secret))
}

// TestAttackSwapDirForLink: a command flips a directory the tracker lists
// for a symlink to a directory outside the workspace that holds a file of
// the same name, over and over, while the tracker scans. Whatever the
// timing, no change and nothing in the store holds the outside file's
// bytes: every read resolves from the root's descriptor and refuses links,
// and the file read must be the file listed.
func TestAttackSwapDirForLink(t *testing.T) {
	root := t.TempDir()
	out := outside(t)
	tr := open(t, []string{root}, Options{NoWatch: true})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		d, tmp, link := filepath.Join(root, "d"), filepath.Join(root, "d.new"), filepath.Join(root, "d.link")
		for i := 0; ctx.Err() == nil; i++ {
			// A real directory with a file "key" of its own...
			os.RemoveAll(tmp)
			os.Mkdir(tmp, 0o755)
			os.WriteFile(filepath.Join(tmp, "key"), fmt.Appendf(nil, "decoy %d\n", i), 0o644)
			os.RemoveAll(d)
			os.Rename(tmp, d)
			runtime.Gosched()
			// ...swapped for a link to the outside one.
			os.Remove(link)
			os.Symlink(out, link)
			os.Rename(link, d) // fails while d is a directory: then it goes first
			if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
				os.RemoveAll(d)
				os.Symlink(out, d)
			}
			runtime.Gosched()
		}
	})
	deadline := time.Now().Add(3 * time.Second)
	scans := 0
	for time.Now().Before(deadline) {
		got, _ := tr.Scan(context.Background())
		scans++
		if l := leaks(got); len(l) > 0 {
			cancel()
			wg.Wait()
			t.Fatalf("scan %d: the outside file's bytes are in the changes of %v", scans, l)
		}
	}
	cancel()
	wg.Wait()
	if storeHolds(tr) {
		t.Fatal("the outside file's bytes are in the content store")
	}
	t.Logf("%d scans", scans)
}

// TestAttackLinksAndFIFOs: a command links to a file outside the
// workspace and makes FIFOs (also one named as a file the tracker had
// read, and one in a bulk directory). The scan ends, records each as what
// it is (a link with its target, a FIFO by type and mode), and reads
// neither the outside file nor a FIFO.
func TestAttackLinksAndFIFOs(t *testing.T) {
	for _, bulk := range []bool{false, true} {
		t.Run(fmt.Sprint("bulk=", bulk), func(t *testing.T) {
			root := t.TempDir()
			layout(t, root, map[string]string{"a.txt": "alpha\n", "node_modules/m": "m\n"})
			out := outside(t)
			opts := Options{}
			if bulk {
				opts.BulkThreshold = 1
			}
			tr := open(t, []string{root}, opts)
			sh(t, root, fmt.Sprintf(`ln -s %s/key x; ln -s %s dirlink; mkfifo f; rm a.txt; mkfifo a.txt; mkfifo node_modules/p`, out, out))
			done := make(chan struct{})
			var got []tool.FileChange
			var err error
			go func() {
				defer close(done)
				got, err = tr.Scan(context.Background())
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the scan hangs on a FIFO")
			}
			if err != nil {
				t.Fatal(err)
			}
			if l := leaks(got); len(l) > 0 || storeHolds(tr) {
				t.Fatalf("the outside file's bytes were read: %v", l)
			}
			if bulk {
				if len(got) != 1 || got[0].Path != "." || got[0].Files != 5 {
					t.Fatalf("got %s", show(got))
				}
				m := string(manifestOf(t, got[0]))
				for _, line := range []string{
					`update fifo ` + tool.Digest(b("alpha\n")) + ` - 0 "a.txt"`,
					`add link - - ` + fmt.Sprint(len(out)) + ` "dirlink" -> "` + out + `"`,
					`add fifo - - 0 "f"`,
					`add fifo - - 0 "node_modules/p"`,
				} {
					if !strings.Contains(m, line+"\n") {
						t.Errorf("the manifest has no line %q:\n%s", line, m)
					}
				}
				return
			}
			check(t, got, []want{
				{path: "a.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), typ: "fifo"},
				{path: "dirlink", kind: tool.ChangeAdd, linkAfter: out},
				{path: "f", kind: tool.ChangeAdd, typ: "fifo"},
				{path: "node_modules", kind: tool.ChangeUpdate, files: 1, after: manifest(`add fifo - - 0 "node_modules/p"`)},
				{path: "x", kind: tool.ChangeAdd, linkAfter: out + "/key"},
			})
			if got[0].Mode != "0644" || got[2].Mode == "" {
				t.Errorf("modes not recorded: %q %q", got[0].Mode, got[2].Mode)
			}
		})
	}
}

// TestAttackStoreOutOfReach: the content store is where commands cannot
// reach it. A store directory inside a tracked root is refused; the pack
// has no name in its directory, so a command that could write there finds
// nothing to overwrite; and a content altered in the pack all the same
// is recorded as unavailable, with the reason, never as a wrong or
// silently missing before content.
func TestAttackStoreOutOfReach(t *testing.T) {
	t.Run("inside a root", func(t *testing.T) {
		root := t.TempDir()
		_, err := Open(context.Background(), []string{root}, Options{StoreDir: filepath.Join(root, ".cache", "changes")})
		var se *StoreError
		if !errors.As(err, &se) || !errors.Is(err, ErrStoreInRoot) {
			t.Fatalf("a store inside the workspace: %v", err)
		}
	})
	t.Run("overwrite the store directory", func(t *testing.T) {
		root, store := t.TempDir(), t.TempDir()
		layout(t, root, map[string]string{"a.txt": "alpha\n"})
		tr := open(t, []string{root}, Options{StoreDir: store})
		if ents, err := os.ReadDir(store); err != nil || len(ents) != 0 {
			t.Errorf("the store's directory lists %v (%v): the pack has a name", ents, err)
		}
		// The command rewrites whatever it finds in the store's directory.
		filepath.Walk(store, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				os.WriteFile(p, bytes.Repeat([]byte("X"), int(fi.Size())), 0o600)
			}
			return nil
		})
		sh(t, root, `echo new > a.txt`)
		got, err := tr.Scan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		check(t, got, []want{{path: "a.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), after: b("new\n")}})
	})
	t.Run("altered pack", func(t *testing.T) {
		root := t.TempDir()
		layout(t, root, map[string]string{"a.txt": "alpha\n"})
		tr := open(t, []string{root}, Options{})
		// What a writer holding the pack could do.
		if _, err := tr.store.f.WriteAt([]byte("ALPHA\n"), 0); err != nil {
			t.Fatal(err)
		}
		sh(t, root, `echo new > a.txt`)
		got, err := tr.Scan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("got %s", show(got))
		}
		c := got[0]
		if c.Before != tool.Digest(b("alpha\n")) || c.BeforeData != nil || !strings.Contains(c.BeforeUnavailable, "digest check") ||
			string(c.AfterData) != "new\n" {
			t.Fatalf("an altered before content: %+v", c)
		}
	})
}

// asNobody runs f with the effective user id 65534 when the test runs as
// root (whom no permission bits stop), so that a file with mode 000 is
// unreadable as it is to a user; otherwise f runs as is.
func asNobody(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		f()
		return
	}
	if err := syscall.Setresuid(-1, 65534, -1); err != nil {
		t.Skipf("cannot change the effective user: %v", err)
	}
	defer func() {
		if err := syscall.Setresuid(-1, 0, -1); err != nil {
			panic(err) // the rest of the tests would run as nobody
		}
	}()
	f()
}

// TestAttackUnreadable: a file a command makes unreadable is recorded as
// changed, with its mode and size and why its content is missing — not as
// deleted; a new unreadable file is recorded too; and neither is reported
// again while nothing changes.
func TestAttackUnreadable(t *testing.T) {
	root := t.TempDir()
	// Readable to the unprivileged user the scans run as.
	for _, d := range []string{filepath.Dir(root), root} {
		os.Chmod(d, 0o755)
	}
	layout(t, root, map[string]string{"a.txt": "alpha\n", "b.txt": "bravo\n"})
	tr := open(t, []string{root}, Options{})
	sh(t, root, `chmod 000 a.txt; printf 'hidden payload' > new.bin; chmod 000 new.bin`)
	var got, again []tool.FileChange
	var err, err2 error
	asNobody(t, func() {
		got, err = tr.Scan(context.Background())
		again, err2 = tr.Scan(context.Background())
	})
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	if len(got) != 2 {
		t.Fatalf("got %s", show(got))
	}
	a, n := got[0], got[1]
	if a.Path != "a.txt" || a.Kind != tool.ChangeUpdate || a.Before != tool.Digest(b("alpha\n")) || string(a.BeforeData) != "alpha\n" ||
		a.After != "" || a.Mode != "0000" || a.Size != 6 || !strings.HasPrefix(a.AfterUnavailable, "unreadable") {
		t.Errorf("a file made unreadable: %+v", a)
	}
	if n.Path != "new.bin" || n.Kind != tool.ChangeAdd || n.After != "" || n.Mode != "0000" || n.Size != 14 ||
		!strings.HasPrefix(n.AfterUnavailable, "unreadable") {
		t.Errorf("a new unreadable file: %+v", n)
	}
	if len(again) != 0 {
		t.Errorf("unchanged unreadable files reported again: %s", show(again))
	}
	// Made readable again: its content is recorded from then on.
	sh(t, root, `chmod 644 new.bin`)
	got, err = tr.Scan(context.Background())
	if err != nil || len(got) != 1 || got[0].Path != "new.bin" || string(got[0].AfterData) != "hidden payload" ||
		got[0].Before != "" || got[0].BeforeUnavailable == "" {
		t.Fatalf("made readable: %s %v", show(got), err)
	}
}

// TestBulk: more changes than the threshold are one bulk change per root,
// listing every file by digest; below it they are reported one by one. A
// manifest past SpoolManifest (here: 1 byte, "spooled") is the same bytes
// in a file (AfterFile) instead of memory.
func TestBulk(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string
		files   int
		bulk    bool
		spoolAt int
	}{
		{"below", `for i in $(seq 1 10); do echo $i > f$i; done`, 10, false, SpoolManifest},
		{"above", `for i in $(seq 1 11); do echo $i > f$i; done`, 11, true, SpoolManifest},
		{"deletes above", `for i in $(seq 1 11); do echo $i > f$i; done`, 11, true, SpoolManifest},
		{"above, spooled", `for i in $(seq 1 11); do echo $i > f$i; done`, 11, true, 1},
		{"deletes above, spooled", `for i in $(seq 1 11); do echo $i > f$i; done`, 11, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tr := open(t, []string{root}, Options{BulkThreshold: 10})
			tr.spoolAt = tc.spoolAt
			sh(t, root, tc.script)
			got, err := tr.Scan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(tc.name, "deletes above") {
				sh(t, root, `rm f*`)
				if got, err = tr.Scan(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.bulk {
				if len(got) != tc.files {
					t.Fatalf("got %s", show(got))
				}
				return
			}
			m := manifestOf(t, got[0])
			if len(got) != 1 || got[0].Path != "." || got[0].Files != tc.files || got[0].After != tool.Digest(m) ||
				(got[0].AfterFile != nil) != (tc.spoolAt == 1) {
				t.Fatalf("got %s", show(got))
			}
			lines := strings.Split(strings.TrimSuffix(string(m), "\n"), "\n")
			want := `add file - ` + tool.Digest(b("1\n")) + ` 2 "f1"`
			if strings.HasPrefix(tc.name, "deletes above") {
				want = `delete file ` + tool.Digest(b("1\n")) + ` - 2 "f1"`
			}
			if len(lines) != tc.files || lines[0] != want {
				t.Fatalf("manifest:\n%s", m)
			}
		})
	}
}

// TestMemoryBudget: past the budget of bytes held, a change has its
// digests and says why its content is missing.
func TestMemoryBudget(t *testing.T) {
	root := t.TempDir()
	layout(t, root, map[string]string{"a": strings.Repeat("a", 100), "b": strings.Repeat("b", 100)})
	tr := open(t, []string{root}, Options{MaxHeld: 150, NoGit: true})
	sh(t, root, `echo x >> a; echo y >> b`)
	got, err := tr.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %s", show(got))
	}
	var held int
	for _, c := range got {
		if c.Before == "" || c.After == "" {
			t.Errorf("%s: digests missing", c.Path)
		}
		for _, s := range []struct {
			data   []byte
			reason string
		}{{c.BeforeData, c.BeforeUnavailable}, {c.AfterData, c.AfterUnavailable}} {
			held += len(s.data)
			if s.data == nil && s.reason == "" {
				t.Errorf("%s: a content missing without a reason", c.Path)
			}
		}
	}
	if held > 150 {
		t.Errorf("%d bytes held, past the budget of 150", held)
	}
}

// TestBulkCost: a command that creates 100,000 empty files costs the host
// one change, a manifest of a few MB (on disk), and a heap bounded as the
// tracker's is whatever the workspace holds (memoryBound): the scan's
// diffs go to disk in sorted runs, the manifest to a file.
func TestBulkCost(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 100,000 files")
	}
	if raceDetector {
		t.Skip("measures memory, which the race detector distorts (.ci/run runs it without)")
	}
	// In new directories; and in directories that were there, below
	// another that changed too, so that each waits for its reading (a
	// scan's held directories).
	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprintf("existing=%v", existing), func(t *testing.T) { bulkCost(t, existing) })
	}
}

func bulkCost(t *testing.T, existing bool) {
	root := t.TempDir()
	const n = 100_000
	dirOf := func(d int) string { return filepath.Join(root, "sub", fmt.Sprintf("d%03d", d)) }
	if existing {
		for d := range n / 1000 {
			if err := os.MkdirAll(dirOf(d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	tr := open(t, []string{root}, Options{})
	if existing {
		if err := os.WriteFile(filepath.Join(root, "sub", "x"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for d := range n / 1000 {
		dir := dirOf(d)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("f%04d", i)))
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	// The collector is asked to keep the heap under 56 MiB, as a process
	// that must stay under 64 MB would: the heap sampled below then passes
	// 64 MB only when what the scan holds does, not when a collection
	// comes late (it did under -race, at 65 MB).
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(56 << 20))
	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	peak := m0.HeapAlloc
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
		}
	})
	start := time.Now()
	got, err := tr.Scan(context.Background())
	took := time.Since(start)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	want := n
	if existing {
		want++ // sub/x
	}
	if len(got) != 1 || got[0].Files != want {
		t.Fatalf("got %d changes", len(got))
	}
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	t.Logf("scan of %d new files: %v, peak heap %.1f MB (%.1f MB above the baseline's), one change, manifest %.1f MB",
		n, took.Round(time.Millisecond), float64(peak)/(1<<20), float64(peak-m0.HeapAlloc)/(1<<20), float64(got[0].AfterSize())/(1<<20))
	if got[0].AfterFile == nil {
		t.Error("the manifest is held in memory")
	}
	if peak > m0.HeapAlloc+memoryBound {
		t.Errorf("peak heap %.1f MB above the baseline's, past %d MB", float64(peak-m0.HeapAlloc)/(1<<20), memoryBound>>20)
	}
}

// manifestOf reads a bulk change's manifest, from memory or its file; the
// file's, read twice, is the same bytes.
func manifestOf(t *testing.T, ch tool.FileChange) []byte {
	t.Helper()
	var reads [][]byte
	for range 2 {
		r, err := ch.OpenAfter()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != ch.AfterSize() {
			t.Fatalf("%s: read %d bytes of a manifest of %d", ch.Path, len(b), ch.AfterSize())
		}
		reads = append(reads, b)
	}
	if !bytes.Equal(reads[0], reads[1]) {
		t.Fatalf("%s: the manifest read twice differs", ch.Path)
	}
	return reads[0]
}

// TestBulkSpilled: a scan whose diffs are spilled to disk in sorted runs
// (here runs of 11, the least a bulk threshold of 10 allows) reports the
// same bulk changes, byte for byte, as one that holds them in memory, and
// leaves the index the same: made, changed, removed (a directory gone
// whole, a file become a directory) and then nothing, with inotify and
// with full walks.
func TestBulkSpilled(t *testing.T) {
	steps := []string{
		`mkdir -p a/x b c/deep/er; for i in $(seq 1 30); do echo $i > a/f$i; echo b$i > b/g$i; : > c/deep/er/e$i; done; ln -s a/f1 l1; mkfifo c/p; echo top > z`,
		`rm -r b; for i in $(seq 1 12); do echo again$i > a/f$i; done; rm c/deep/er/e3; mkdir c/deep/er/e3; echo n > c/deep/er/e3/n; chmod 600 z; ln -sf z l1; mkdir b; echo new > b/new`,
		`true`,
	}
	for _, noWatch := range []bool{false, true} {
		t.Run(fmt.Sprintf("nowatch=%v", noWatch), func(t *testing.T) {
			roots := []string{t.TempDir(), t.TempDir()}
			var trs []*Tracker
			for i, r := range roots {
				tr := open(t, []string{r}, Options{BulkThreshold: 10, NoWatch: noWatch})
				if i == 1 {
					tr.spillRun = 3
				}
				trs = append(trs, tr)
			}
			for k, step := range steps {
				var got [2][]string
				for i, r := range roots {
					sh(t, r, step)
					chs, err := trs[i].Scan(context.Background())
					if err != nil {
						t.Fatalf("step %d: %v", k, err)
					}
					for _, ch := range chs {
						got[i] = append(got[i], fmt.Sprintf("%s %s files=%d\n%s", ch.Path, ch.Kind, ch.Files, manifestOf(t, ch)))
					}
				}
				if !slices.Equal(got[0], got[1]) {
					t.Fatalf("step %d: in memory:\n%s\nspilled:\n%s", k, strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
				}
				if k < 2 && (len(got[1]) != 1 || !strings.Contains(got[1][0], "files=")) {
					t.Fatalf("step %d: not one bulk change: %q", k, got[1])
				}
				if k == 2 && len(got[1]) != 0 {
					t.Fatalf("nothing changed, yet: %q", got[1])
				}
			}
		})
	}
}

// TestAttackUnlistable: a directory a command makes unlistable (chmod
// 000) is recorded as such, with its mode, once — its files are not taken
// as deleted — and again when it becomes unlistable after being listed.
func TestAttackUnlistable(t *testing.T) {
	for _, watch := range []bool{false, true} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			root := t.TempDir()
			for _, d := range []string{filepath.Dir(root), root} {
				os.Chmod(d, 0o755)
			}
			layout(t, root, map[string]string{"sub/x.txt": "x\n", "a.txt": "a\n"})
			tr := open(t, []string{root}, Options{NoWatch: !watch})
			defer os.Chmod(filepath.Join(root, "sub"), 0o755)
			scan := func() (got []tool.FileChange, err error) {
				asNobody(t, func() { got, err = tr.Scan(context.Background()) })
				return got, err
			}
			sh(t, root, `chmod 000 sub`)
			got, err := scan()
			if len(got) != 1 || got[0].Path != "sub" || got[0].Type != "unlistable" || got[0].Mode != "0000" ||
				got[0].Kind != tool.ChangeUpdate || !strings.HasPrefix(got[0].AfterUnavailable, "unlistable: ") {
				t.Fatalf("a directory made unlistable: %s", show(got))
			}
			if err == nil {
				t.Error("the scan does not say a directory could not be listed")
			}
			if again, _ := scan(); len(again) != 0 {
				t.Errorf("an unlistable directory recorded again: %s", show(again))
			}
			sh(t, root, `chmod 755 sub`)
			if got, err := scan(); len(got) != 0 || err != nil {
				t.Errorf("listable again: %s, %v", show(got), err)
			}
			sh(t, root, `chmod 000 sub`)
			if got, _ := scan(); len(got) != 1 || got[0].Type != "unlistable" {
				t.Errorf("unlistable a second time: %s", show(got))
			}
		})
	}
}

// TestAttackSparse: a command makes files of a huge apparent size that
// take no blocks (truncate). A scan reads no more than its budget to
// hash them: the files past it are recorded with their size and no
// digest, saying why, and the next scan, with a budget of its own,
// neither reads them again nor reports them while they are unchanged.
func TestAttackSparse(t *testing.T) {
	root := t.TempDir()
	tr := open(t, []string{root}, Options{HashBytes: 96 << 20, MaxFile: 1 << 20})
	sh(t, root, `for i in 1 2 3 4 5 6; do truncate -s 64M sp$i; done`)
	start := time.Now()
	got, err := tr.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("got %s", show(got))
	}
	hashed, skipped := 0, 0
	for _, c := range got {
		switch {
		case c.After != "" && c.Size == 64<<20:
			hashed++
		case c.After == "" && c.Size == 64<<20 && strings.HasPrefix(c.AfterUnavailable, "not hashed: 67108864 bytes"):
			skipped++
		default:
			t.Errorf("a sparse file: %+v", c)
		}
	}
	if hashed != 1 || skipped != 5 {
		t.Errorf("%d hashed and %d not, want 1 within the budget of 96 MiB and 5 past it (%s)", hashed, skipped, time.Since(start))
	}
	if again, err := tr.Scan(context.Background()); err != nil || len(again) != 0 {
		t.Errorf("unchanged files reported again: %s %v", show(again), err)
	}
}

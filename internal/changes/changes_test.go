//go:build linux

package changes

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/tool"
)

// want is one expected change: before and after are the contents (nil: no
// digest on that side).
type want struct {
	path, movedTo string
	kind          tool.ChangeKind
	before, after []byte
	// linkBefore and linkAfter are a symlink's targets.
	linkBefore, linkAfter string
	// typ is a FIFO's, socket's or device's Type; files a bulk change's
	// count (its after content is the manifest).
	typ   string
	files int
}

// manifest is a bulk change's manifest of lines.
func manifest(lines ...string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

func b(s string) []byte { return []byte(s) }

// layout writes files (a value starting with "->" is a symlink to the
// rest) under root.
func layout(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(c, "->"); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		// An old time, as files have that a session starts on.
		if err := os.Chtimes(full, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

var old = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func sh(t testing.TB, dir, script string) {
	t.Helper()
	cmd := exec.Command("bash", "-ec", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

func gitInit(t testing.TB, root string) {
	t.Helper()
	sh(t, root, `git init -q . && git -c user.email=t@t -c user.name=t add -A && git -c user.email=t@t -c user.name=t commit -qm base`)
}

// check compares found changes with the wanted ones, and checks that each
// digest is that of the bytes carried with it.
func check(t *testing.T, got []tool.FileChange, wants []want) {
	t.Helper()
	for _, g := range got {
		for _, side := range []struct {
			d    string
			data []byte
		}{{g.Before, g.BeforeData}, {g.After, g.AfterData}} {
			if side.d == "" && side.data != nil {
				t.Errorf("%s: data without a digest", g.Path)
			}
			if side.d != "" && side.data == nil {
				t.Errorf("%s: digest %s without its content", g.Path, side.d[:8])
			}
			if side.d != "" && tool.Digest(side.data) != side.d {
				t.Errorf("%s: digest %s is not that of its content %q", g.Path, side.d[:8], side.data)
			}
		}
	}
	if len(got) != len(wants) {
		t.Fatalf("got %d changes, want %d:\n%s", len(got), len(wants), show(got))
	}
	for i, g := range got {
		w := wants[i]
		wb, wa := "", ""
		if w.before != nil {
			wb = tool.Digest(w.before)
		}
		if w.after != nil {
			wa = tool.Digest(w.after)
		}
		if g.Path != w.path || g.MovedTo != w.movedTo || g.Kind != w.kind || g.Before != wb || g.After != wa ||
			!bytes.Equal(g.BeforeData, w.before) || !bytes.Equal(g.AfterData, w.after) ||
			g.LinkBefore != w.linkBefore || g.LinkAfter != w.linkAfter || g.Type != w.typ || g.Files != w.files {
			t.Errorf("change %d:\n got %s %s→%s %q → %q (links %q → %q)\nwant %s %s→%s %q → %q (links %q → %q)", i,
				g.Kind, g.Path, g.MovedTo, g.BeforeData, g.AfterData, g.LinkBefore, g.LinkAfter,
				w.kind, w.path, w.movedTo, w.before, w.after, w.linkBefore, w.linkAfter)
		}
	}
}

func show(cs []tool.FileChange) string {
	var sb strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&sb, "  %s %s→%s %q → %q\n", c.Kind, c.Path, c.MovedTo, c.BeforeData, c.AfterData)
	}
	return sb.String()
}

// open opens a tracker on roots and waits for its baseline. Unless the
// test sets IndexMemory, the index's overlay holds a single
// entry: every scan and Note writes the index to disk and reads it back,
// so every test runs through the on-disk index.
func open(t testing.TB, roots []string, opts Options) *Tracker {
	t.Helper()
	if opts.IndexMemory == 0 {
		opts.IndexMemory = 1
	}
	tr, err := Open(context.Background(), roots, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	if err := tr.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tr
}

var base = map[string]string{
	"a.txt":          "alpha\n",
	"c.txt":          "charlie\n",
	"empty":          "",
	"dir/x.txt":      "x content\n",
	"dir/sub/y.go":   "package y\n",
	"link":           "->a.txt",
	"node_modules/m": "module\n",
}

// TestScan runs one command per case after the baseline and checks the
// changes found, in a plain directory and in a git work tree (where the
// before contents of clean files come from the object store).
func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   []want
	}{
		{"create", `echo x > new.txt; mkdir -p d/e; printf 'deep' > d/e/f`, []want{
			{path: "d/e/f", kind: tool.ChangeAdd, after: b("deep")},
			{path: "new.txt", kind: tool.ChangeAdd, after: b("x\n")}}},
		{"modify", `echo more >> a.txt`, []want{
			{path: "a.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), after: b("alpha\nmore\n")}}},
		{"same size rewrite", `printf 'ALPHA\n' > a.txt`, []want{
			{path: "a.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), after: b("ALPHA\n")}}},
		{"delete", `rm a.txt dir/sub/y.go`, []want{
			{path: "a.txt", kind: tool.ChangeDelete, before: b("alpha\n")},
			{path: "dir/sub/y.go", kind: tool.ChangeDelete, before: b("package y\n")}}},
		{"shell example", `echo x > new.txt; rm a.txt`, []want{
			{path: "a.txt", kind: tool.ChangeDelete, before: b("alpha\n")},
			{path: "new.txt", kind: tool.ChangeAdd, after: b("x\n")}}},
		{"rename", `mv a.txt b.txt`, []want{
			{path: "a.txt", movedTo: "b.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), after: b("alpha\n")}}},
		{"rename empty file", `mv empty empty2`, []want{
			{path: "empty", movedTo: "empty2", kind: tool.ChangeUpdate, before: b(""), after: b("")}}},
		{"copy and delete", `cp a.txt z.txt; rm a.txt`, []want{
			{path: "a.txt", movedTo: "z.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), after: b("alpha\n")}}},
		{"empty files are not paired by content", `rm empty; touch other`, []want{
			{path: "empty", kind: tool.ChangeDelete, before: b("")},
			{path: "other", kind: tool.ChangeAdd, after: b("")}}},
		{"move over", `mv a.txt c.txt`, []want{
			{path: "a.txt", kind: tool.ChangeDelete, before: b("alpha\n")},
			{path: "c.txt", kind: tool.ChangeUpdate, before: b("charlie\n"), after: b("alpha\n")}}},
		{"directory rename", `mv dir dir2`, []want{
			{path: "dir/sub/y.go", movedTo: "dir2/sub/y.go", kind: tool.ChangeUpdate, before: b("package y\n"), after: b("package y\n")},
			{path: "dir/x.txt", movedTo: "dir2/x.txt", kind: tool.ChangeUpdate, before: b("x content\n"), after: b("x content\n")}}},
		{"directory delete", `rm -r dir`, []want{
			{path: "dir/sub/y.go", kind: tool.ChangeDelete, before: b("package y\n")},
			{path: "dir/x.txt", kind: tool.ChangeDelete, before: b("x content\n")}}},
		{"file becomes directory", `rm a.txt; mkdir a.txt; echo in > a.txt/f`, []want{
			{path: "a.txt", kind: tool.ChangeDelete, before: b("alpha\n")},
			{path: "a.txt/f", kind: tool.ChangeAdd, after: b("in\n")}}},
		{"directory becomes file", `rm -r dir; echo flat > dir`, []want{
			{path: "dir", kind: tool.ChangeAdd, after: b("flat\n")},
			{path: "dir/sub/y.go", kind: tool.ChangeDelete, before: b("package y\n")},
			{path: "dir/x.txt", kind: tool.ChangeDelete, before: b("x content\n")}}},
		{"symlink created", `ln -s c.txt l2`, []want{
			{path: "l2", kind: tool.ChangeAdd, linkAfter: "c.txt"}}},
		{"symlink retargeted", `ln -sfn c.txt link`, []want{
			{path: "link", kind: tool.ChangeUpdate, linkBefore: "a.txt", linkAfter: "c.txt"}}},
		{"symlink removed", `rm link`, []want{
			{path: "link", kind: tool.ChangeDelete, linkBefore: "a.txt"}}},
		{"file replaced by symlink", `rm c.txt; ln -s a.txt c.txt`, []want{
			{path: "c.txt", kind: tool.ChangeUpdate, before: b("charlie\n"), linkAfter: "a.txt"}}},
		{"write through a symlink changes its target", `echo via > link`, []want{
			{path: "a.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), after: b("via\n")}}},
		{"mode change", `chmod +x a.txt`, []want{
			{path: "a.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), after: b("alpha\n")}}},
		{"touch is no change", `touch a.txt c.txt; cat a.txt > /dev/null`, nil},
		{"rewrite with the same content is no change", `printf 'alpha\n' > a.txt`, nil},
		{"empty directory is no change", `mkdir -p e/f; rmdir e/f`, nil},
		// Dependency trees are recorded by digest, as one bulk change
		// each; only the root's own .git (the one at Open) is not
		// tracked: one made since is.
		{"bulk directories", `echo n > node_modules/m; mkdir -p x/target/y; echo t > x/target/y/o; echo g > .git-not-ignored; mkdir -p .git; echo g > .git/HEAD2`, []want{
			{path: ".git-not-ignored", kind: tool.ChangeAdd, after: b("g\n")},
			{path: ".git/HEAD2", kind: tool.ChangeAdd, after: b("g\n")},
			{path: "node_modules", kind: tool.ChangeUpdate, files: 1, after: manifest(
				`update file - ` + tool.Digest(b("n\n")) + ` 2 "node_modules/m"`)},
			{path: "x/target", kind: tool.ChangeUpdate, files: 1, after: manifest(
				`add file - ` + tool.Digest(b("t\n")) + ` 2 "x/target/y/o"`)}}},
		{"nested .git is tracked", `mkdir -p src/.git; echo payload > src/.git/x; mkdir -p src/__pycache__; echo pyc > src/__pycache__/m.pyc`, []want{
			{path: "src/.git/x", kind: tool.ChangeAdd, after: b("payload\n")},
			{path: "src/__pycache__", kind: tool.ChangeUpdate, files: 1, after: manifest(
				`add file - ` + tool.Digest(b("pyc\n")) + ` 4 "src/__pycache__/m.pyc"`)}}},
		{"fifo is recorded, never opened", `mkfifo pipe`, []want{
			{path: "pipe", kind: tool.ChangeAdd, typ: "fifo"}}},
	} {
		for _, mode := range []struct {
			name       string
			git, watch bool
		}{{"plain", false, false}, {"git", true, false}, {"watched", false, true}} {
			git := mode.git
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				root := t.TempDir()
				layout(t, root, base)
				if git {
					gitInit(t, root)
				}
				tr := open(t, []string{root}, Options{NoWatch: !mode.watch})
				if e := tr.roots[0].lookup("a.txt"); git && (e == nil || e.src != srcGit || e.kept) {
					t.Fatalf("a clean file is not taken from the repository: %+v", e)
				}
				sh(t, root, tc.script)
				got, err := tr.Scan(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				wants := tc.want
				if git {
					// The repository's .git was there at Open: it is the
					// root's own, not tracked.
					wants = slices.DeleteFunc(slices.Clone(wants), func(w want) bool { return strings.HasPrefix(w.path, ".git/") })
				}
				check(t, got, wants)
				// The baseline moved: a second scan finds nothing.
				again, err := tr.Scan(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				check(t, again, nil)
			})
		}
	}
}

// TestSuccessiveScans: a file changed by two commands has the first's
// after content as the second's before content, in a repository too (the
// first before comes from git, the second from the store).
func TestSuccessiveScans(t *testing.T) {
	for _, git := range []bool{false, true} {
		t.Run(fmt.Sprint("git=", git), func(t *testing.T) {
			root := t.TempDir()
			layout(t, root, base)
			if git {
				gitInit(t, root)
			}
			tr := open(t, []string{root}, Options{NoWatch: git})
			steps := []struct {
				script string
				want   []want
			}{
				{`echo 1 > a.txt`, []want{{path: "a.txt", kind: tool.ChangeUpdate, before: b("alpha\n"), after: b("1\n")}}},
				{`echo 2 > a.txt`, []want{{path: "a.txt", kind: tool.ChangeUpdate, before: b("1\n"), after: b("2\n")}}},
				{`mv a.txt q.txt`, []want{{path: "a.txt", movedTo: "q.txt", kind: tool.ChangeUpdate, before: b("2\n"), after: b("2\n")}}},
				{`echo 3 > q.txt`, []want{{path: "q.txt", kind: tool.ChangeUpdate, before: b("2\n"), after: b("3\n")}}},
				{`rm q.txt`, []want{{path: "q.txt", kind: tool.ChangeDelete, before: b("3\n")}}},
			}
			for i, s := range steps {
				sh(t, root, s.script)
				got, err := tr.Scan(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("step %d", i)
				check(t, got, s.want)
			}
		})
	}
}

// TestDirtyRepository: files modified or untracked at the baseline are
// copied, so their before contents are the work tree's, not the index's.
func TestDirtyRepository(t *testing.T) {
	root := t.TempDir()
	layout(t, root, base)
	gitInit(t, root)
	sh(t, root, `echo dirty > a.txt; echo untracked > u.txt; git add a.txt; echo dirtier > a.txt`)
	tr := open(t, []string{root}, Options{})
	sh(t, root, `echo new > a.txt; echo new > u.txt; rm c.txt`)
	got, err := tr.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, []want{
		{path: "a.txt", kind: tool.ChangeUpdate, before: b("dirtier\n"), after: b("new\n")},
		{path: "c.txt", kind: tool.ChangeDelete, before: b("charlie\n")},
		{path: "u.txt", kind: tool.ChangeUpdate, before: b("untracked\n"), after: b("new\n")},
	})
}

// TestCaps: past the store's cap a change has its digests but not its
// before content; past MaxFile neither content is carried.
func TestCaps(t *testing.T) {
	root := t.TempDir()
	layout(t, root, map[string]string{"small": "s\n", "big": strings.Repeat("B", 100)})
	tr := open(t, []string{root}, Options{MaxStore: 10, MaxFile: 50})
	sh(t, root, `echo t >> small; echo more >> big`)
	got, err := tr.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %s", show(got))
	}
	bg, sm := got[0], got[1]
	if bg.Path != "big" || bg.Before != tool.Digest(b(strings.Repeat("B", 100))) || bg.BeforeData != nil || bg.AfterData != nil ||
		bg.After != tool.Digest(b(strings.Repeat("B", 100)+"more\n")) {
		t.Errorf("big: %+v", bg)
	}
	if sm.Path != "small" || string(sm.BeforeData) != "s\n" || string(sm.AfterData) != "s\nt\n" {
		t.Errorf("small: %s", show(got[1:]))
	}
}

// TestCustomIgnore: a configured list is not tracked at all; the root's
// .git stays ignored, and the bulk directories are still recorded.
func TestCustomIgnore(t *testing.T) {
	root := t.TempDir()
	layout(t, root, base)
	tr := open(t, []string{root}, Options{Ignore: []string{"*.log", "build/out"}})
	sh(t, root, `echo n > node_modules/m; echo l > x.log; mkdir -p build/out sub/build/out .git; echo o > build/out/o; echo p > sub/build/out/p; echo g > .git/g`)
	got, err := tr.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, []want{
		{path: ".git/g", kind: tool.ChangeAdd, after: b("g\n")}, // made during the session
		{path: "node_modules", kind: tool.ChangeUpdate, files: 1, after: manifest(
			`update file - ` + tool.Digest(b("n\n")) + ` 2 "node_modules/m"`)},
		{path: "sub/build/out/p", kind: tool.ChangeAdd, after: b("p\n")},
	})
}

// TestOtherRoots: a file in a further writable root is named by its
// absolute path; a root inside the workspace is tracked once.
func TestOtherRoots(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	layout(t, root, base)
	layout(t, other, map[string]string{"o.txt": "other\n"})
	tr := open(t, []string{root, other, filepath.Join(root, "dir")}, Options{})
	sh(t, root, `echo o2 > `+other+`/o.txt; echo in > dir/x.txt`)
	got, err := tr.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	otherAbs, _ := filepath.Abs(other)
	// Absolute paths sort before relative ones.
	check(t, got, []want{
		{path: filepath.ToSlash(otherAbs) + "/o.txt", kind: tool.ChangeUpdate, before: b("other\n"), after: b("o2\n")},
		{path: "dir/x.txt", kind: tool.ChangeUpdate, before: b("x content\n"), after: b("in\n")},
	})
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		roots  []string
		ignore []string
		want   string
	}{
		{nil, nil, "no roots"},
		{[]string{"/nonexistent/x"}, nil, "root /nonexistent/x"},
		{[]string{"."}, []string{"/abs"}, "starts with '/'"},
		{[]string{"."}, []string{"a/../b"}, `".."`},
		{[]string{"."}, []string{"[a"}, "syntax error"},
		{[]string{"."}, []string{""}, "empty"},
	} {
		_, err := Open(context.Background(), tc.roots, Options{Ignore: tc.ignore})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q, ignore %q) = %v, want an error with %q", tc.roots, tc.ignore, err, tc.want)
		}
	}
}

// TestRacy: a file written just before the baseline and rewritten with the
// same size in the same timestamp tick keeps its whole stat; the scan
// compares its content all the same. (The test makes the index's stat
// equal to the new one, as such a tick would.)
func TestRacy(t *testing.T) {
	for _, racy := range []bool{true, false} {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "f"), b("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tr := open(t, []string{root}, Options{})
		if err := os.WriteFile(filepath.Join(root, "f"), b("two\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e := tr.roots[0].lookupEdit("f")
		if !e.racy {
			t.Fatal("a file written just before the baseline is not racy")
		}
		info, err := tr.roots[0].fs.Lstat("f")
		if err != nil {
			t.Fatal(err)
		}
		now := fromInfo("f", info)
		e.mtime, e.ctime, e.size, e.ino, e.racy = now.mtime, now.ctime, now.size, now.ino, racy
		got, err := tr.Scan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if racy {
			check(t, got, []want{{path: "f", kind: tool.ChangeUpdate, before: b("one\n"), after: b("two\n")}})
		} else if len(got) != 0 {
			t.Errorf("a stat taken as trusted found %s", show(got))
		}
	}
}

// TestWatched: with inotify, a scan reads only the directories that
// changed; directories moved, removed and made again, and created deep,
// stay watched under their new names, and a lost event queue falls back to
// a full walk.
func TestWatched(t *testing.T) {
	root := t.TempDir()
	layout(t, root, base)
	tr := open(t, []string{root}, Options{})
	if tr.watch == nil {
		t.Skip("no inotify")
	}
	queued := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		fmt.Sscan(string(b), &queued)
	}
	steps := []struct {
		script string
		want   []want
	}{
		{`mv dir moved`, []want{
			{path: "dir/sub/y.go", movedTo: "moved/sub/y.go", kind: tool.ChangeUpdate, before: b("package y\n"), after: b("package y\n")},
			{path: "dir/x.txt", movedTo: "moved/x.txt", kind: tool.ChangeUpdate, before: b("x content\n"), after: b("x content\n")}}},
		{`echo 2 > moved/sub/y.go`, []want{
			{path: "moved/sub/y.go", kind: tool.ChangeUpdate, before: b("package y\n"), after: b("2\n")}}},
		{`rm -r moved && mkdir -p moved/sub && echo 3 > moved/sub/z`, []want{
			{path: "moved/sub/y.go", kind: tool.ChangeDelete, before: b("2\n")},
			{path: "moved/sub/z", kind: tool.ChangeAdd, after: b("3\n")},
			{path: "moved/x.txt", kind: tool.ChangeDelete, before: b("x content\n")}}},
		{`echo 4 > moved/sub/z; mkdir -p n1/n2/n3; echo 5 > n1/n2/n3/f`, []want{
			{path: "moved/sub/z", kind: tool.ChangeUpdate, before: b("3\n"), after: b("4\n")},
			{path: "n1/n2/n3/f", kind: tool.ChangeAdd, after: b("5\n")}}},
		{`echo 6 > n1/n2/n3/f`, []want{
			{path: "n1/n2/n3/f", kind: tool.ChangeUpdate, before: b("5\n"), after: b("6\n")}}},
		// More events than the kernel queues (max_queued_events): lost, so
		// the scan walks everything.
		{fmt.Sprintf(`cd n1/n2 && for i in $(seq 1 %d); do echo $i > f$i; done; rm f*; cd ../..; echo 7 > c.txt`, queued/2), []want{
			{path: "c.txt", kind: tool.ChangeUpdate, before: b("charlie\n"), after: b("7\n")}}},
		{`echo 8 > n1/n2/n3/f`, []want{
			{path: "n1/n2/n3/f", kind: tool.ChangeUpdate, before: b("6\n"), after: b("8\n")}}},
		// A second name in another directory: a write through it sends no
		// event to the first name's directory, which is read all the same.
		{`ln c.txt n1/hard`, []want{
			{path: "n1/hard", kind: tool.ChangeAdd, after: b("7\n")}}},
		{`echo 9 >> n1/hard`, []want{
			{path: "c.txt", kind: tool.ChangeUpdate, before: b("7\n"), after: b("7\n9\n")},
			{path: "n1/hard", kind: tool.ChangeUpdate, before: b("7\n"), after: b("7\n9\n")}}},
	}
	for i, s := range steps {
		sh(t, root, s.script)
		got, err := tr.Scan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("step %d: %s", i, s.script)
		check(t, got, s.want)
		if want := map[bool]int{false: 0, true: 1}[i >= 5] + map[bool]int{false: 0, true: 1}[i >= 8]; tr.fullScans != want {
			t.Errorf("step %d: %d full walks, want %d", i, tr.fullScans, want)
		}
	}
}

// TestRepositorySubdirectory: a workspace below a repository's top takes
// the before contents of its clean files from the repository, by their
// paths under the workspace.
func TestRepositorySubdirectory(t *testing.T) {
	top := t.TempDir()
	layout(t, top, map[string]string{"outside.txt": "out\n", "ws/a.txt": "alpha\n", "ws/d/b.txt": "bravo\n"})
	gitInit(t, top)
	sh(t, top, `echo dirty > ws/d/b.txt`)
	root := filepath.Join(top, "ws")
	tr := open(t, []string{root}, Options{NoWatch: true})
	if e := tr.roots[0].lookup("a.txt"); e == nil || e.src != srcGit {
		t.Fatalf("a.txt is not taken from the repository: %+v", e)
	}
	if e := tr.roots[0].lookup("d/b.txt"); e == nil || e.src != srcSHA || !e.kept {
		t.Fatalf("the dirty d/b.txt is not copied: %+v", e)
	}
	sh(t, root, `rm a.txt; echo new > d/b.txt`)
	got, err := tr.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, []want{
		{path: "a.txt", kind: tool.ChangeDelete, before: b("alpha\n")},
		{path: "d/b.txt", kind: tool.ChangeUpdate, before: b("dirty\n"), after: b("new\n")},
	})
}

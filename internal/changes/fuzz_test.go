//go:build linux

package changes

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"path"
	"strings"
	"testing"
)

// FuzzIgnore: any list is accepted or refused with an error, never a
// panic; an accepted one ignores the root's own ".git" and matches without
// panicking.
func FuzzIgnore(f *testing.F) {
	for _, s := range []string{"node_modules", "*.pyc", "build/out", "a/[b-c]/*", "/abs", "a/../b", "[", "x/", ""} {
		f.Add(s, "src/x", "node_modules")
	}
	f.Fuzz(func(t *testing.T, pattern, dir, name string) {
		m, err := parseIgnore(strings.Split(pattern, ","))
		if err != nil {
			return
		}
		own := &root{ownGit: [2]uint64{1, 2}, hasGit: true}
		if !own.ignores(m, "", ".git", 1, 2) {
			t.Fatalf("%q does not ignore the root's .git", pattern)
		}
		own.ignores(m, dir, name, 3, 4)
		m.bulkDir(path.Join(dir, name))
	})
}

// FuzzResolve: a change's path resolves to a clean path inside a root, or
// to nothing.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a.txt", "dir/x", "../x", "/elsewhere/x", "/root/other/x", "a//b", "./a", "node_modules/m", ".git/HEAD", ""} {
		f.Add(s)
	}
	m, _ := parseIgnore(DefaultIgnore())
	tr := &Tracker{ign: m, roots: []*root{{abs: "/root/ws"}, {abs: "/root/other", name: "/root/other"}}}
	f.Fuzz(func(t *testing.T, p string) {
		r, rel, ok := tr.resolve(p)
		if !ok {
			return
		}
		if r == nil || rel == "" || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("resolve(%q) = %v, %q", p, r, rel)
		}
		// The roots had no .git at Open: a top-level one is tracked.
		if strings.Contains(rel, "/.git/") {
			t.Fatalf("resolve(%q) gives the ignored %q", p, rel)
		}
	})
}

// FuzzGitOutput: the parsers of git's output take any bytes without
// panicking, and what they accept is well formed.
func FuzzGitOutput(f *testing.F) {
	oid := strings.Repeat("ab", 20)
	st := "  ctime: 1:2\n  mtime: 3:4\n  dev: 5\tino: 6\n  uid: 0\tgid: 0\n  size: 7\tflags: 1a\n"
	f.Add("100644 "+oid+" 0\ta.txt\x00"+st+"120000 "+oid+" 0\tlink\x00"+st+"100644 "+oid+" 1\tc\x00"+st, oid+" blob 12\n")
	f.Add("", "")
	f.Add("160000 "+oid+" 0\tsub\x00"+st, oid+" missing\n")
	f.Add("100644 "+oid+" 0\ta\nb\x00  ctime: 1:2\n", "")
	f.Fuzz(func(t *testing.T, ls, check string) {
		if idx, err := parseLsFiles(ls, 1); err == nil {
			for p, e := range idx {
				if p == "" || (len(e.oid) != 20 && len(e.oid) != 32) {
					t.Fatalf("ls-files gave %q %+v", p, e)
				}
			}
		}
		o, _ := hex.DecodeString(oid)
		if sizes, err := parseBatchCheck(check, [][]byte{o}); err == nil && len(sizes) != 1 {
			t.Fatalf("batch-check gave %d sizes for one object", len(sizes))
		}
	})
}

// FuzzDiffRun: a run of spilled diffs that is not as written reads back
// as errRun (or as diffs) — never a panic — and one written reads back
// as the diffs written.
func FuzzDiffRun(f *testing.F) {
	t0 := &Tracker{roots: []*root{{abs: "/r"}}}
	s := &diffSpill{t: t0}
	old := entry{name: "a", mode: 0o100644, size: 3, src: srcSHA, kept: true, at: span{1, 3}}
	cur := entry{name: "a", mode: 0o120777, link: "target"}
	var seed []byte
	for _, d := range []diff{{r: t0.roots[0], dir: "x", name: "a", old: &old, cur: &cur}, {r: t0.roots[0], dir: "y", name: "a", cur: &cur}, {r: t0.roots[0], name: "a", old: &old}} {
		seed = s.appendDiff(seed, &d)
	}
	rr := &runReader{t: t0, r: bufio.NewReader(bytes.NewReader(seed))}
	var back []byte
	for {
		d, ok, err := rr.next()
		if err != nil {
			f.Fatal(err)
		}
		if !ok {
			break
		}
		back = s.appendDiff(back, &d)
	}
	if !bytes.Equal(back, seed) {
		f.Fatalf("the run read back and written again differs:\n%q\n%q", back, seed)
	}
	f.Add(seed)
	f.Add([]byte{3, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rr := &runReader{t: t0, r: bufio.NewReader(bytes.NewReader(b))}
		for range len(b) + 1 {
			d, ok, err := rr.next()
			if err != nil && !errors.Is(err, errRun) {
				t.Fatalf("%v, not errRun", err)
			}
			if err != nil || !ok {
				return
			}
			if d.r != t0.roots[0] {
				t.Fatalf("a diff of no root: %+v", d)
			}
			var again []byte
			again = s.appendDiff(again, &d)
			if len(again) == 0 {
				t.Fatal("a diff read does not encode")
			}
		}
	})
}

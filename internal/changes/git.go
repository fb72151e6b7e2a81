package changes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/hostfs"
)

// repo is the git repository a root is in, as recorded when tracking
// began: its .git (path, device and inode), the git that reads it (only
// gitsafe's Plumbing commands, which read no work-tree file and so run no
// filter, textconv or fsmonitor whatever its configuration says), and a
// cat-file process that reads blobs. Git runs only while the .git found
// from the root is still the recorded one (same): a .git replaced, or
// one that appeared later, gets no git at all.
type repo struct {
	git    gitsafe.Git
	at     gitsafe.Repo
	root   string
	sha256 bool // the repository's object format

	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	dead error
}

// indexEntry is a stage-0 index entry of a regular file or a symlink.
type indexEntry struct {
	mode uint32 // git's mode: 0o100644, 0o100755, 0o120000
	oid  []byte
	// stat is the file's stat as the index recorded it (git keeps 32
	// bits of each); trusted is set when it was recorded before the index
	// file was last written (git's rule against a racily clean entry) and
	// the index did not change while read.
	stat    indexStat
	trusted bool
}

// indexStat is the stat data git's index keeps of a file, each field
// truncated to 32 bits as git stores it.
type indexStat struct {
	ctimeSec, ctimeNsec, mtimeSec, mtimeNsec uint32
	dev, ino, size                           uint32
}

// statClean reports whether e, as walked, is the file the index entry
// recorded with unchanged stat (times, inode, device, size, executable
// bit): its content is then the entry's blob, as git itself would judge
// without reading it, unless the walk found e too recent to trust.
func statClean(e *entry, ie indexEntry) bool {
	s := ie.stat
	return ie.trusted && !e.racy && (ie.mode == 0o100755) == (e.mode&0o100 != 0) &&
		s.size == uint32(e.size) && s.ino == uint32(e.ino) && s.dev == uint32(e.dev) &&
		s.mtimeSec == uint32(e.mtime/1e9) && s.mtimeNsec == uint32(e.mtime%1e9) &&
		s.ctimeSec == uint32(e.ctime/1e9) && s.ctimeNsec == uint32(e.ctime%1e9)
}

// same reports whether the .git found from the root now is the one
// recorded: git may run on the repository only then.
func (r *repo) same() bool {
	cur, err := gitsafe.Find(r.root)
	return err == nil && cur.Same(r.at)
}

// errNotSame is the error of a use of git once the root's .git is no
// longer the one recorded.
var errNotSame = errors.New("the repository's .git is no longer the one recorded when tracking began")

// openRepo opens the repository at (the .git recorded for root when
// tracking began) and returns its stage-0 regular files and symlinks
// under root, by path relative to root, with the index's stat data. It
// returns nil (and no error) when at is the zero Repo, when the .git found
// from root now is another one, or when git is not installed. Only
// Plumbing commands run, with the repository named explicitly (GIT_DIR
// is at's path, the work tree the directory holding it).
func openRepo(ctx context.Context, root string, at gitsafe.Repo, path string) (*repo, map[string]indexEntry, error) {
	if at.DotGit == "" {
		return nil, nil, nil
	}
	if path == "" {
		path = hostfs.UserPath()
	}
	if _, err := hostfs.LookPath("git", path); err != nil {
		return nil, nil, nil
	}
	top := filepath.Dir(at.DotGit)
	rel, err := filepath.Rel(top, root)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, nil, nil
	}
	prefix := ""
	if rel != "." {
		prefix = filepath.ToSlash(rel) + "/"
	}
	r := &repo{git: gitsafe.Git{Dir: top, GitDir: at.DotGit, WorkTree: top, Path: path}, at: at, root: root}
	if !r.same() {
		return nil, nil, nil
	}
	out, err := r.git.Plumbing(ctx, nil, "rev-parse", "--absolute-git-dir", "--show-object-format")
	if err != nil {
		return nil, nil, nil // not a repository git can read: every file is copied
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !filepath.IsAbs(lines[0]) {
		return nil, nil, nil
	}
	r.sha256 = lines[1] == "sha256"
	// The index's own mtime decides which entries' stat is trusted; it
	// must be the same before and after the listing.
	indexFile := filepath.Join(lines[0], "index")
	before, berr := os.Lstat(indexFile)
	if !r.same() {
		return nil, nil, nil
	}
	ls, err := r.git.Plumbing(ctx, nil, "ls-files", "--stage", "--debug", "-z")
	if err != nil {
		return nil, nil, err
	}
	after, aerr := os.Lstat(indexFile)
	var indexMtime int64 // 0: no entry's stat is trusted
	if berr == nil && aerr == nil && before.Mode().IsRegular() && os.SameFile(before, after) &&
		before.ModTime().Equal(after.ModTime()) && before.Size() == after.Size() {
		indexMtime = before.ModTime().UnixNano()
	}
	all, err := parseLsFiles(ls, indexMtime)
	if err != nil {
		return nil, nil, err
	}
	index := make(map[string]indexEntry, len(all))
	for p, e := range all {
		if rel, ok := strings.CutPrefix(p, prefix); ok {
			index[rel] = e
		}
	}
	return r, index, nil
}

// parseLsFiles reads `git ls-files --stage --debug -z` ("MODE OID
// STAGE\tPATH\0" records, each followed by five lines of stat data) and
// returns the stage-0 regular files and symlinks by path. Conflicted paths
// (stages 1–3) and gitlinks are left out: their work tree files are not an
// index blob. An entry's stat is trusted when its mtime is before
// indexMtime (ns; 0 trusts none).
func parseLsFiles(out string, indexMtime int64) (map[string]indexEntry, error) {
	index := map[string]indexEntry{}
	conflicted := map[string]bool{}
	for out != "" {
		rec, rest, ok := strings.Cut(out, "\x00")
		if !ok {
			return nil, fmt.Errorf("git ls-files: unterminated record %q", rec)
		}
		var st indexStat
		var err error
		if st, rest, err = parseDebug(rest); err != nil {
			return nil, fmt.Errorf("git ls-files: %q: %w", rec, err)
		}
		out = rest
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Split(meta, " ")
		if !ok || len(f) != 3 || p == "" {
			return nil, fmt.Errorf("git ls-files: malformed record %q", rec)
		}
		mode, err := strconv.ParseUint(f[0], 8, 32)
		if err != nil {
			return nil, fmt.Errorf("git ls-files: bad mode in %q", rec)
		}
		oid, err := hex.DecodeString(f[1])
		if err != nil || (len(oid) != sha1.Size && len(oid) != sha256.Size) {
			return nil, fmt.Errorf("git ls-files: bad object id in %q", rec)
		}
		if f[2] != "0" {
			conflicted[p] = true
			continue
		}
		switch mode {
		case 0o100644, 0o100755, 0o120000:
			mtime := int64(st.mtimeSec)*1e9 + int64(st.mtimeNsec)
			index[p] = indexEntry{mode: uint32(mode), oid: oid, stat: st, trusted: indexMtime != 0 && mtime < indexMtime}
		}
	}
	for p := range conflicted {
		delete(index, p)
	}
	return index, nil
}

// parseDebug reads the five lines of stat data ls-files --debug writes
// after a path ("  ctime: S:N", "  mtime: S:N", "  dev: D\tino: I",
// "  uid: U\tgid: G", "  size: Z\tflags: F") and returns the rest.
func parseDebug(s string) (indexStat, string, error) {
	var st indexStat
	var vals [10]uint64
	for i, want := range []string{"ctime", "mtime", "dev", "uid", "size"} {
		line, rest, ok := strings.Cut(s, "\n")
		if !ok {
			return st, "", errors.New("stat data cut short")
		}
		s = rest
		var a, b string
		switch want {
		case "ctime", "mtime":
			v, ok := strings.CutPrefix(line, "  "+want+": ")
			if a, b, ok = cutOK(v, ":", ok); !ok {
				return st, "", fmt.Errorf("bad stat line %q", line)
			}
		default:
			second := map[string]string{"dev": "ino", "uid": "gid", "size": "flags"}[want]
			v, ok := strings.CutPrefix(line, "  "+want+": ")
			x, y, ok := cutOK(v, "\t"+second+": ", ok)
			if !ok {
				return st, "", fmt.Errorf("bad stat line %q", line)
			}
			a, b = x, y
		}
		base := 16
		if want != "size" {
			base = 10
		}
		var err1, err2 error
		vals[2*i], err1 = strconv.ParseUint(a, 10, 32)
		vals[2*i+1], err2 = strconv.ParseUint(b, base, 32)
		if err1 != nil || err2 != nil {
			return st, "", fmt.Errorf("bad stat line %q", line)
		}
	}
	st = indexStat{
		ctimeSec: uint32(vals[0]), ctimeNsec: uint32(vals[1]),
		mtimeSec: uint32(vals[2]), mtimeNsec: uint32(vals[3]),
		dev: uint32(vals[4]), ino: uint32(vals[5]), size: uint32(vals[8]),
	}
	return st, s, nil
}

// cutOK is strings.Cut of s around sep when ok.
func cutOK(s, sep string, ok bool) (string, string, bool) {
	if !ok {
		return "", "", false
	}
	return strings.Cut(s, sep)
}

// blobID returns the object id git gives content b.
func (r *repo) blobID(b []byte) []byte {
	var h hash.Hash
	if r.sha256 {
		h = sha256.New()
	} else {
		h = sha1.New()
	}
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return h.Sum(nil)
}

// blob reads an object's content through one `git cat-file --batch`
// process, started on first use, while the root's .git is the one
// recorded; once it is not, the process is ended and every read fails.
// The content is checked against its object id.
func (r *repo) blob(ctx context.Context, oid []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead != nil {
		return nil, r.dead
	}
	if !r.same() {
		r.dead = fmt.Errorf("git cat-file: %w", errNotSame)
		r.stop()
		return nil, r.dead
	}
	if r.cmd == nil {
		// The process outlives the call that starts it: Close ends it.
		cmd, err := r.git.PlumbingCommand(context.WithoutCancel(ctx), "cat-file", "--batch")
		if err != nil {
			return nil, err
		}
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("git cat-file: %w", err)
		}
		r.cmd, r.in, r.out = cmd, in, bufio.NewReaderSize(out, 64<<10)
	}
	b, err := r.read(oid)
	if err != nil {
		r.dead = fmt.Errorf("git cat-file: %w", err)
		r.stop()
		return nil, r.dead
	}
	return b, nil
}

func (r *repo) read(oid []byte) ([]byte, error) {
	id := hex.EncodeToString(oid)
	if _, err := io.WriteString(r.in, id+"\n"); err != nil {
		return nil, err
	}
	head, err := r.out.ReadString('\n')
	if err != nil {
		return nil, err
	}
	f := strings.Fields(head)
	if len(f) != 3 || f[0] != id || f[1] != "blob" {
		return nil, fmt.Errorf("object %s: %q", id, strings.TrimSpace(head))
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("object %s: bad size in %q", id, strings.TrimSpace(head))
	}
	b := make([]byte, n+1)
	if _, err := io.ReadFull(r.out, b); err != nil {
		return nil, err
	}
	if b[n] != '\n' {
		return nil, errors.New("object not followed by a newline")
	}
	b = b[:n]
	if !bytes.Equal(r.blobID(b), oid) {
		return nil, fmt.Errorf("object %s: content does not hash to its id", id)
	}
	return b, nil
}

// close ends the cat-file process.
func (r *repo) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop()
	if r.dead == nil {
		r.dead = errors.New("git cat-file: closed")
	}
}

func (r *repo) stop() {
	if r.cmd == nil {
		return
	}
	r.in.Close()
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

// blobHash is git's object id of a blob of a known size, as it streams.
type blobHash struct{ hash.Hash }

// newBlobHash starts the object id of a blob of size bytes.
func (r *repo) newBlobHash(size int64) blobHash {
	var h hash.Hash
	if r.sha256 {
		h = sha256.New()
	} else {
		h = sha1.New()
	}
	fmt.Fprintf(h, "blob %d\x00", size)
	return blobHash{h}
}

// sizes returns the size of each object, in one `git cat-file
// --batch-check` run.
func (r *repo) sizes(ctx context.Context, oids [][]byte) ([]int64, error) {
	seen := map[string]int{} // each object is asked once
	var uniq [][]byte
	for _, o := range oids {
		if _, ok := seen[string(o)]; !ok {
			seen[string(o)] = len(uniq)
			uniq = append(uniq, o)
		}
	}
	var in bytes.Buffer
	for _, o := range uniq {
		in.WriteString(hex.EncodeToString(o))
		in.WriteByte('\n')
	}
	if !r.same() {
		return nil, fmt.Errorf("git cat-file --batch-check: %w", errNotSame)
	}
	out, err := r.git.Plumbing(ctx, &in, "cat-file", "--batch-check")
	if err != nil {
		return nil, err
	}
	us, err := parseBatchCheck(out, uniq)
	if err != nil {
		return nil, err
	}
	sizes := make([]int64, len(oids))
	for i, o := range oids {
		sizes[i] = us[seen[string(o)]]
	}
	return sizes, nil
}

// parseBatchCheck reads `git cat-file --batch-check` output ("OID TYPE
// SIZE" or "OID missing", a line per object asked, in order); a missing
// object or one that is not a blob has size -1.
func parseBatchCheck(out string, oids [][]byte) ([]int64, error) {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(oids) == 0 {
		return nil, nil
	}
	if len(lines) != len(oids) {
		return nil, fmt.Errorf("git cat-file --batch-check: %d lines for %d objects", len(lines), len(oids))
	}
	sizes := make([]int64, len(oids))
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != hex.EncodeToString(oids[i]) {
			return nil, fmt.Errorf("git cat-file --batch-check: line %d is %q, not object %x", i+1, l, oids[i])
		}
		sizes[i] = -1
		if len(f) == 3 && f[1] == "blob" {
			n, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("git cat-file --batch-check: bad size in %q", l)
			}
			sizes[i] = n
		}
	}
	return sizes, nil
}

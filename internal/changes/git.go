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
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/trussdev/truss/internal/gitsafe"
)

// repo is the git repository a workspace root is in, as found at the
// baseline: which files are clean (their content is the index's blob),
// and a cat-file process that reads blobs.
type repo struct {
	git    gitsafe.Git
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
}

// openRepo finds the repository of root; nil (and no error) when root is
// not in a work tree or git is not installed.
func openRepo(ctx context.Context, root string) (*repo, map[string]indexEntry, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, nil, nil
	}
	g := gitsafe.Git{Dir: root}
	out, err := g.Output(ctx, "rev-parse", "--is-inside-work-tree", "--show-prefix", "--show-object-format")
	if err != nil {
		return nil, nil, nil // not a repository (or not one git can read): every file is copied
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[0] != "true" {
		return nil, nil, nil
	}
	prefix := lines[1]
	r := &repo{git: g, sha256: lines[2] == "sha256"}
	ls, err := g.Output(ctx, "ls-files", "--stage", "-z")
	if err != nil {
		return nil, nil, err
	}
	index, err := parseLsFiles(ls)
	if err != nil {
		return nil, nil, err
	}
	st, err := g.Output(ctx, "status", "--porcelain=v2", "-z", "--untracked-files=no", "--ignore-submodules=all", "--no-renames")
	if err != nil {
		return nil, nil, err
	}
	dirty, err := parseStatus(st)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range dirty {
		rel, ok := strings.CutPrefix(p, prefix)
		if ok {
			delete(index, rel)
		}
	}
	return r, index, nil
}

// parseLsFiles reads `git ls-files --stage -z` ("MODE OID STAGE\tPATH\0"
// records) and returns the stage-0 regular files and symlinks by path.
// Conflicted paths (stages 1–3) and gitlinks are left out: their work
// tree files are not an index blob.
func parseLsFiles(out string) (map[string]indexEntry, error) {
	index := map[string]indexEntry{}
	conflicted := map[string]bool{}
	for rec := range strings.SplitSeq(out, "\x00") {
		if rec == "" {
			continue
		}
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
			index[p] = indexEntry{mode: uint32(mode), oid: oid}
		}
	}
	for p := range conflicted {
		delete(index, p)
	}
	return index, nil
}

// parseStatus reads `git status --porcelain=v2 -z --untracked-files=no
// --no-renames` and returns the paths (relative to the repository's top)
// whose work tree file differs from the index, and the unmerged ones.
func parseStatus(out string) ([]string, error) {
	var dirty []string
	for rec := range strings.SplitSeq(out, "\x00") {
		if rec == "" {
			continue
		}
		switch rec[0] {
		case '1': // 1 XY sub mH mI mW hH hI path
			f := strings.SplitN(rec, " ", 9)
			if len(f) != 9 || len(f[1]) != 2 || f[8] == "" {
				return nil, fmt.Errorf("git status: malformed record %q", rec)
			}
			if f[1][1] != '.' {
				dirty = append(dirty, f[8])
			}
		case 'u': // u XY sub m1 m2 m3 mW h1 h2 h3 path
			f := strings.SplitN(rec, " ", 11)
			if len(f) != 11 || f[10] == "" {
				return nil, fmt.Errorf("git status: malformed record %q", rec)
			}
			dirty = append(dirty, f[10])
		case '#':
		default:
			return nil, fmt.Errorf("git status: unexpected record %q", rec)
		}
	}
	return dirty, nil
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
// process, started on first use.
func (r *repo) blob(ctx context.Context, oid []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead != nil {
		return nil, r.dead
	}
	if r.cmd == nil {
		// The process outlives the call that starts it: Close ends it.
		cmd, err := r.git.Command(context.WithoutCancel(ctx), "cat-file", "--batch")
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
	cmd, err := r.git.Command(ctx, "cat-file", "--batch-check")
	if err != nil {
		return nil, err
	}
	var out, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &in, &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git cat-file --batch-check: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	us, err := parseBatchCheck(out.String(), uniq)
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

package subagent

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/hostfs"
)

// The bounds of an isolated copy, where Limits sets none.
const (
	defaultMaxCopyBytes   = 1 << 30
	defaultMaxCopyEntries = 200_000
)

// isolation is an isolated copy of a workspace: in a git repository that
// was there when the session began, a git worktree of the workspace's
// current state (uncommitted changes to tracked files included, untracked
// files not); otherwise a plain copy of the directory.
//
// The workspace and the copy are written by commands, so Truss reads and
// writes both only through hostfs (descriptor-relative, no links followed,
// no FIFO or lease waited for, sizes bounded), and runs on them only the
// git commands of gitsafe.Git.Plumbing, which touch the object store,
// refs and index files and never a work tree file: no checkout, status,
// add or work-tree diff, so no filter, textconv, external diff, fsmonitor
// or hook of the repository runs, whatever its configuration says under
// whichever condition. A repository whose .git was not there when the
// session began is not used at all (plain copy): its .git is the
// commands' to write.
type isolation struct {
	// dir is the copy of the workspace the child works in; top the copy's
	// root (the worktree's, for git).
	dir, top string
	// root is top, held open from the moment Truss made it: every copy
	// into it and every diff of it goes through this descriptor, so what
	// Truss reads back is the directory it made, whatever is at its path.
	root *hostfs.Root
	// from is the workspace that was copied.
	from string
	// skipped are the entries not copied (FIFOs, sockets, devices, and
	// tracked paths that were neither files nor links).
	skipped []string
	limits  copyLimits

	// git only: the repository's git directory and the worktree's, the
	// object format, the commit the copy started from, and the copy's
	// entries as Truss wrote them (slash paths relative to top).
	repo   *gitsafe.Git
	gitdir string
	format string
	base   string
	start  map[string]copied
}

// copyLimits bound what an isolated copy and its diff read.
type copyLimits struct {
	bytes   int64
	entries int
	// gitPath is the PATH host git is found in (gitsafe.Git's Path).
	gitPath string
}

// copied is one entry of the worktree as Truss wrote it: git's mode and
// object name, and what fstat said after the write (a file whose inode,
// size, modification and change times are the same is unchanged).
type copied struct {
	mode uint32
	oid  string
	info hostfs.Info
}

func (c copied) sameFile(i hostfs.Info) bool {
	return c.info.Same(i) && c.info.Size == i.Size && c.info.ModTime == i.ModTime &&
		c.info.ChangeTime == i.ChangeTime && c.info.Mode == i.Mode
}

// tooLarge is the error of a copy or diff over its bounds.
func tooLarge(l copyLimits) error {
	return fmt.Errorf("%w: an isolated copy holds at most %d bytes in %d entries (spawn's Limits.MaxCopyBytes and MaxCopyEntries)", hostfs.ErrTooLarge, l.bytes, l.entries)
}

// isolate makes an isolated copy of workspace under workdir, named after
// the session. repo is the workspace's repository as found when the
// session began (the zero Repo: none); git is used only when the
// workspace is still in that same repository.
func isolate(ctx context.Context, workspace string, repo gitsafe.Repo, workdir, session string, l copyLimits) (*isolation, error) {
	if workdir == "" {
		workdir = os.TempDir()
	}
	if err := os.MkdirAll(workdir, 0o700); err != nil {
		return nil, err
	}
	name := "agent-" + safeID(session)
	if repo.DotGit != "" {
		if cur, err := gitsafe.Find(workspace); err == nil && cur.Same(repo) {
			iso, err := isolateGit(ctx, workspace, repo, workdir, name, l)
			if !errors.Is(err, errNoCommit) {
				return iso, err
			}
		}
	}
	dst, root, err := makeTop(workdir, name)
	if err != nil {
		return nil, err
	}
	iso := &isolation{dir: dst, top: dst, root: root, from: workspace, limits: l}
	if err := iso.copyPlain(); err != nil {
		iso.remove()
		return nil, fmt.Errorf("copy the workspace: %w", err)
	}
	return iso, nil
}

// makeTop makes a new directory for a copy in workdir, named after name,
// and opens it. workdir must be one no command can write (the session's
// private directory): the copy's own contents are the child's to write,
// never its name or its parent.
func makeTop(workdir, name string) (string, *hostfs.Root, error) {
	dir, err := os.MkdirTemp(workdir, name+"-")
	if err != nil {
		return "", nil, err
	}
	root, err := hostfs.OpenRoot(dir)
	if err != nil {
		os.Remove(dir)
		return "", nil, err
	}
	return dir, root, nil
}

// copyPlain copies the workspace into the copy through hostfs, leaving
// out every .git.
func (i *isolation) copyPlain() error {
	src, err := hostfs.OpenRoot(i.from)
	if err != nil {
		return err
	}
	defer src.Close()
	rep, err := hostfs.CopyTree(src, i.root, hostfs.CopyOptions{
		MaxBytes: i.limits.bytes, MaxEntries: i.limits.entries,
		Skip: func(_ string, info hostfs.Info) bool { return info.Name() == ".git" },
	})
	i.skipped = rep.Skipped
	if errors.Is(err, hostfs.ErrTooLarge) {
		return fmt.Errorf("%w (%v)", tooLarge(i.limits), err)
	}
	return err
}

// errNoCommit: the repository has no commit to start a worktree from.
var errNoCommit = errors.New("the repository has no commit")

// indexEntry is a stage-0 entry of the repository's index.
type indexEntry struct {
	mode uint32
	oid  string
}

// isolateGit makes the worktree: registered with `git worktree add
// --no-checkout` at HEAD, its files copied by Truss from the workspace's
// tracked files (through hostfs), then pointed at a commit of that state.
func isolateGit(ctx context.Context, workspace string, repo gitsafe.Repo, workdir, name string, l copyLimits) (*isolation, error) {
	top := filepath.Dir(repo.DotGit)
	g := gitsafe.Git{Dir: top, Path: l.gitPath}
	if fi, err := os.Lstat(repo.DotGit); err == nil && fi.IsDir() {
		g = gitsafe.Git{Dir: top, GitDir: repo.DotGit, WorkTree: top, Path: l.gitPath}
	}
	out, err := g.Plumbing(ctx, nil, "rev-parse", "--absolute-git-dir", "--git-common-dir", "--show-object-format")
	if err != nil {
		return nil, errNoCommit
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		return nil, fmt.Errorf("git rev-parse: unexpected output %q", out)
	}
	common := lines[1]
	if !filepath.IsAbs(common) {
		common = filepath.Join(top, common)
	}
	format := lines[2]
	head, err := g.Plumbing(ctx, nil, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		return nil, errNoCommit
	}
	head = strings.TrimSpace(head)
	ls, err := g.Plumbing(ctx, nil, "ls-files", "--stage", "-z", "--full-name")
	if err != nil {
		return nil, err
	}
	index, gitlinks, err := parseIndex(ls)
	if err != nil {
		return nil, err
	}

	wt, root, err := makeTop(workdir, name)
	if err != nil {
		return nil, err
	}
	if _, err := g.Plumbing(ctx, nil, "worktree", "add", "-q", "--no-checkout", "--detach", wt, head); err != nil {
		root.Close()
		os.RemoveAll(wt)
		return nil, err
	}
	iso := &isolation{top: wt, root: root, from: workspace, limits: l, format: format, start: map[string]copied{}}
	ok := false
	defer func() {
		if !ok {
			iso.remove()
		}
	}()
	if iso.gitdir, err = worktreeGitDir(root, common); err != nil {
		iso.remove()
		// The registration is left to `git worktree prune`: its git
		// directory is not known for sure.
		return nil, err
	}
	iso.repo = &gitsafe.Git{Dir: iso.gitdir, GitDir: common, Bare: true, Path: l.gitPath}

	// The worktree's files, and the commit of what they are.
	changed, err := iso.copyTracked(ctx, top, index, gitlinks)
	if err != nil {
		return nil, err
	}
	iso.base = head
	if changed != "" {
		if iso.base, err = iso.commit(ctx, head, changed); err != nil {
			return nil, err
		}
	}
	wg := gitsafe.Git{Dir: iso.gitdir, GitDir: iso.gitdir, Bare: true, Path: l.gitPath}
	if _, err := wg.Plumbing(ctx, nil, "update-ref", "--no-deref", "HEAD", iso.base); err != nil {
		return nil, err
	}
	if _, err := wg.Plumbing(ctx, nil, "read-tree", iso.base); err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(top, workspace)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		rel = "."
	}
	iso.dir = filepath.Join(wt, rel)
	ok = true
	return iso, nil
}

// worktreeGitDir reads the "gitdir:" file git wrote at wt/.git and checks
// that it names a directory of the repository's worktrees.
func worktreeGitDir(wt *hostfs.Root, common string) (string, error) {
	b, err := wt.ReadFile(".git", 4096)
	if err != nil {
		return "", err
	}
	gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok || filepath.Dir(gd) != filepath.Join(common, "worktrees") {
		return "", fmt.Errorf("the new worktree's .git names %q, not a worktree of %s", gd, common)
	}
	return gd, nil
}

// parseIndex reads `git ls-files --stage -z` ("MODE OID STAGE\tPATH\0")
// into the stage-0 files and links by path, and the gitlinks (submodules).
// Conflicted paths are left out.
func parseIndex(out string) (map[string]indexEntry, []string, error) {
	index := map[string]indexEntry{}
	var gitlinks []string
	for rec := range strings.SplitSeq(out, "\x00") {
		if rec == "" {
			continue
		}
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Split(meta, " ")
		if !ok || len(f) != 3 || p == "" {
			return nil, nil, fmt.Errorf("git ls-files: malformed record %q", rec)
		}
		mode, err := strconv.ParseUint(f[0], 8, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("git ls-files: bad mode in %q", rec)
		}
		if f[2] != "0" {
			continue
		}
		switch mode {
		case 0o100644, 0o100755, 0o120000:
			index[p] = indexEntry{mode: uint32(mode), oid: f[1]}
		case 0o160000:
			gitlinks = append(gitlinks, p)
		}
	}
	return index, gitlinks, nil
}

// copyTracked copies the workspace's tracked files (as they are now) from
// top into the worktree, through hostfs: a link as a link, a path that is
// now neither a file nor a link (or lies under a link) left out. It
// writes the objects of the files that differ from the index and returns
// the `update-index --index-info` lines that turn the index into what was
// copied ("" when nothing differs).
func (i *isolation) copyTracked(ctx context.Context, top string, index map[string]indexEntry, gitlinks []string) (string, error) {
	src, err := hostfs.OpenRoot(top)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst := i.root
	paths := make([]string, 0, len(index))
	for p := range index {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	if len(paths)+len(gitlinks) > i.limits.entries {
		return "", tooLarge(i.limits)
	}
	for _, p := range gitlinks {
		if err := dst.MkdirAll(p, 0o755); err != nil {
			return "", err
		}
	}
	objects := i.objectWriter(ctx)
	defer objects.abort()
	var info strings.Builder
	var total int64
	buf := make([]byte, copyBuffer)
	for _, p := range paths {
		e := index[p]
		t, err := copyEntry(i.format, src, dst, p, i.limits.bytes-total, buf)
		if errors.Is(err, hostfs.ErrTooLarge) {
			return "", fmt.Errorf("%w (%v)", tooLarge(i.limits), err)
		}
		if err != nil {
			if !hostfs.IsNotExist(err) && !hostfs.Refused(err) {
				return "", err
			}
			if hostfs.Refused(err) {
				i.skipped = append(i.skipped, p)
			}
			fmt.Fprintf(&info, "0 %s\t%s\x00", strings.Repeat("0", len(e.oid)), p)
			continue
		}
		total += t.size
		i.start[p] = copied{mode: t.mode, oid: t.oid, info: t.info}
		if t.oid != e.oid || t.mode != e.mode {
			// From the copy, which only Truss has written yet.
			if err := objects.writeEntry(i.format, dst, p, t, buf); err != nil {
				return "", err
			}
			fmt.Fprintf(&info, "%o %s\t%s\x00", t.mode, t.oid, p)
		}
	}
	if err := objects.close(); err != nil {
		return "", err
	}
	return info.String(), nil
}

// readTracked reads what the entry p beneath r is for git: a regular
// file's content (at most max bytes) and mode, or a link's target.
func readTracked(r *hostfs.Root, p string, max int64) ([]byte, uint32, error) {
	fi, err := r.Lstat(p)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case fi.Mode&fs.ModeSymlink != 0:
		t, err := r.Readlink(p)
		return []byte(t), 0o120000, err
	case fi.IsRegular():
		f, err := r.Open(p)
		if err != nil {
			return nil, 0, err
		}
		defer f.Close()
		if !f.Info.Same(fi) {
			return nil, 0, &hostfs.Error{Op: "open", Path: p, Err: hostfs.ErrChanged}
		}
		data, err := f.ReadAll(max)
		mode := uint32(0o100644)
		if f.Info.Mode&0o111 != 0 {
			mode = 0o100755
		}
		return data, mode, err
	}
	return nil, 0, &hostfs.Error{Op: "open", Path: p, Err: hostfs.ErrNotRegular}
}

// copyBuffer is the size of the buffer content is streamed through: an
// isolated copy and its diff never hold a whole file in memory.
const copyBuffer = 256 << 10

// entry is a tracked path as git sees it: its mode (100644, 100755 or
// 120000), object name and size, a link's target, and what lstat says of
// the entry that was read (or, when copied, written).
type entry struct {
	mode   uint32
	oid    string
	size   int64
	target string
	info   hostfs.Info
}

// copyEntry reads the entry p beneath src for git, at most max bytes: a
// link's target, or a regular file's content streamed through the blob
// hash of the object format. With dst set, the entry is also made at p
// beneath dst (a link as a link, a file with git's mode), and info is
// the new entry's.
func copyEntry(format string, src, dst *hostfs.Root, p string, max int64, buf []byte) (entry, error) {
	fi, err := src.Lstat(p)
	if err != nil {
		return entry{}, err
	}
	mkdir := func() error {
		if d := path.Dir(p); d != "." {
			return dst.MkdirAll(d, 0o755)
		}
		return nil
	}
	switch {
	case fi.Mode&fs.ModeSymlink != 0:
		target, err := src.Readlink(p)
		if err != nil {
			return entry{}, err
		}
		if int64(len(target)) > max {
			return entry{}, &hostfs.Error{Op: "read", Path: p, Err: hostfs.ErrTooLarge}
		}
		oid, err := gitsafe.BlobID(format, []byte(target))
		if err != nil {
			return entry{}, err
		}
		e := entry{mode: 0o120000, oid: oid, size: int64(len(target)), target: target, info: fi}
		if dst != nil {
			if err := mkdir(); err != nil {
				return entry{}, err
			}
			if err := dst.Symlink(target, p); err != nil {
				return entry{}, err
			}
			if e.info, err = dst.Lstat(p); err != nil {
				return entry{}, err
			}
		}
		return e, nil
	case fi.IsRegular():
		f, err := src.Open(p)
		if err != nil {
			return entry{}, err
		}
		defer f.Close()
		if !f.Info.Same(fi) {
			return entry{}, &hostfs.Error{Op: "open", Path: p, Err: hostfs.ErrChanged}
		}
		if f.Info.Size > max {
			return entry{}, &hostfs.Error{Op: "read", Path: p, Err: hostfs.ErrTooLarge}
		}
		e := entry{mode: 0o100644, size: f.Info.Size, info: f.Info}
		perm := fs.FileMode(0o644)
		if f.Info.Mode&0o111 != 0 {
			e.mode, perm = 0o100755, 0o755
		}
		if dst == nil {
			e.oid, err = streamBlob(format, f, nil, buf)
			return e, err
		}
		if err := mkdir(); err != nil {
			return entry{}, err
		}
		out, err := dst.Create(p, perm)
		if err != nil {
			return entry{}, err
		}
		sw := hostfs.NewSparseWriter(out) // a sparse file stays sparse
		e.oid, err = streamBlob(format, f, sw, buf)
		if err == nil {
			err = sw.Close()
		}
		if err == nil {
			err = out.Chmod(perm)
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return entry{}, err
		}
		e.info, err = dst.Lstat(p)
		return e, err
	}
	return entry{}, &hostfs.Error{Op: "open", Path: p, Err: hostfs.ErrNotRegular}
}

// streamBlob copies exactly the size f had when it was opened from f to
// w (nil: nowhere) through the blob hash of the object format, and
// returns the blob's name. A file that turns out shorter or longer has
// changed while read (hostfs.ErrChanged), and nothing past its size is
// written.
func streamBlob(format string, f *hostfs.File, w io.Writer, buf []byte) (string, error) {
	size := f.Info.Size
	h, err := gitsafe.NewBlobHash(format, size)
	if err != nil {
		return "", err
	}
	var to io.Writer = h
	if w != nil {
		to = io.MultiWriter(h, w)
	}
	n, err := io.CopyBuffer(to, io.LimitReader(f, size), buf)
	if err != nil {
		return "", &hostfs.Error{Op: "read", Path: f.Name(), Err: err}
	}
	var one [1]byte
	if k, _ := f.Read(one[:]); n != size || k > 0 {
		return "", &hostfs.Error{Op: "read", Path: f.Name(), Err: hostfs.ErrChanged}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// objectWriter streams blobs into the repository's object store through
// one `git fast-import`, started at the first blob.
type objectWriter struct {
	ctx  context.Context
	git  *gitsafe.Git
	pw   *io.PipeWriter
	done chan error
}

func (i *isolation) objectWriter(ctx context.Context) *objectWriter {
	return &objectWriter{ctx: ctx, git: i.repo}
}

// write writes the blob of data.
func (w *objectWriter) write(data []byte) error {
	w.start()
	if _, err := fmt.Fprintf(w.pw, "blob\ndata %d\n", len(data)); err != nil {
		return w.failed(err)
	}
	if _, err := w.pw.Write(data); err != nil {
		return w.failed(err)
	}
	if _, err := io.WriteString(w.pw, "\n"); err != nil {
		return w.failed(err)
	}
	return nil
}

// writeEntry writes the blob of the entry e read at p beneath r: a
// link's target, or the regular file streamed from r again, which must
// still be the file that was read, with the content that was hashed
// (else the stream fails, hostfs.ErrChanged).
func (w *objectWriter) writeEntry(format string, r *hostfs.Root, p string, e entry, buf []byte) error {
	if e.mode == 0o120000 {
		return w.write([]byte(e.target))
	}
	f, err := r.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if !f.Info.Same(e.info) || f.Info.Size != e.size {
		return &hostfs.Error{Op: "open", Path: p, Err: hostfs.ErrChanged}
	}
	w.start()
	if _, err := fmt.Fprintf(w.pw, "blob\ndata %d\n", e.size); err != nil {
		return w.failed(err)
	}
	oid, err := streamBlob(format, f, w.pw, buf)
	if err == nil && oid != e.oid {
		err = &hostfs.Error{Op: "read", Path: p, Err: hostfs.ErrChanged}
	}
	if err != nil {
		return w.failed(err)
	}
	if _, err := io.WriteString(w.pw, "\n"); err != nil {
		return w.failed(err)
	}
	return nil
}

// start starts git fast-import at the first blob.
func (w *objectWriter) start() {
	if w.pw == nil {
		pr, pw := io.Pipe()
		w.pw, w.done = pw, make(chan error, 1)
		go func() {
			_, err := w.git.Plumbing(w.ctx, pr, "fast-import", "--quiet", "--done")
			pr.CloseWithError(errors.New("git fast-import ended"))
			w.done <- err
		}()
	}
}

func (w *objectWriter) failed(err error) error {
	w.pw.Close()
	if ferr := <-w.done; ferr != nil {
		err = ferr
	}
	w.pw = nil
	return err
}

// close ends the stream and waits for the objects to be written.
func (w *objectWriter) close() error {
	if w.pw == nil {
		return nil
	}
	_, err := io.WriteString(w.pw, "done\n")
	w.pw.Close()
	if ferr := <-w.done; ferr != nil || err != nil {
		w.pw = nil
		return errors.Join(ferr, err)
	}
	w.pw = nil
	return nil
}

// abort ends a stream that was not closed.
func (w *objectWriter) abort() {
	if w.pw != nil {
		w.pw.CloseWithError(errors.New("aborted"))
		<-w.done
		w.pw = nil
	}
}

// tree returns the tree of base's tree changed by the update-index
// lines, built in an index of Truss's own in the worktree's git directory
// (which commands cannot write).
func (i *isolation) tree(ctx context.Context, base, lines string) (string, error) {
	idx := filepath.Join(i.gitdir, "truss-index")
	defer os.Remove(idx)
	g := *i.repo
	g.IndexFile = idx
	if _, err := g.Plumbing(ctx, nil, "read-tree", base); err != nil {
		return "", err
	}
	if _, err := g.Plumbing(ctx, strings.NewReader(lines), "update-index", "-z", "--index-info"); err != nil {
		return "", err
	}
	out, err := g.Plumbing(ctx, nil, "write-tree")
	return strings.TrimSpace(out), err
}

// commit returns a commit of head's tree changed by the update-index
// lines, with head as its parent.
func (i *isolation) commit(ctx context.Context, head, lines string) (string, error) {
	tree, err := i.tree(ctx, head, lines)
	if err != nil {
		return "", err
	}
	out, err := i.repo.Plumbing(ctx, nil, "commit-tree", tree, "-p", head, "-m", "truss: sub-agent snapshot")
	return strings.TrimSpace(out), err
}

// diff returns the changes made in the copy: for a worktree, git's
// binary-safe diff of its tracked and new files against the start; for a
// plain copy, a unified diff of the changed paths against the
// workspace's files.
func (i *isolation) diff(ctx context.Context, changed []string) (string, error) {
	if i.repo != nil {
		return i.diffGit(ctx)
	}
	from, err := hostfs.OpenRoot(i.from)
	if err != nil {
		return "", err
	}
	defer from.Close()
	cp := i.root // a plain copy's dir is its top
	var sb strings.Builder
	var total int64
	for _, p := range changed {
		a, b := "a/"+p, "b/"+p
		ofi, oerr := from.Lstat(p)
		cfi, cerr := cp.Lstat(p)
		if oerr != nil && cerr != nil {
			continue
		}
		if oerr == nil && ofi.Size > maxTextDiff || cerr == nil && cfi.Size > maxTextDiff {
			fmt.Fprintf(&sb, "Files %s and %s differ (over %d MiB: not shown)\n", a, b, maxTextDiff>>20)
			continue
		}
		if sb.Len() > maxDiff {
			fmt.Fprintf(&sb, "Files %s and %s differ (the diff is over %d MiB: not shown)\n", a, b, maxDiff>>20)
			continue
		}
		old, oerr := readEntry(from, p, min(maxTextDiff, i.limits.bytes-total))
		cur, cerr := readEntry(cp, p, min(maxTextDiff, i.limits.bytes-total))
		if errors.Is(oerr, hostfs.ErrTooLarge) || errors.Is(cerr, hostfs.ErrTooLarge) {
			if total+maxTextDiff > i.limits.bytes {
				return "", tooLarge(i.limits)
			}
			fmt.Fprintf(&sb, "Files %s and %s differ (over %d MiB: not shown)\n", a, b, maxTextDiff>>20)
			continue
		}
		if oerr != nil && cerr != nil {
			continue
		}
		total += int64(len(old) + len(cur))
		if oerr != nil {
			a = "/dev/null"
		}
		if cerr != nil {
			b = "/dev/null"
		}
		if strings.IndexByte(old, 0) >= 0 || strings.IndexByte(cur, 0) >= 0 {
			fmt.Fprintf(&sb, "Binary files %s and %s differ\n", a, b)
			continue
		}
		sb.WriteString(udiff.Unified(a, b, old, cur))
	}
	return sb.String(), nil
}

// maxTextDiff bounds a file a plain copy's diff shows line by line; a
// larger one (or one with a NUL byte) is named as differing.
const maxTextDiff = 1 << 20

// maxDiff bounds an isolated copy's diff, which Truss holds, returns to
// the parent and stores in the ledger: past it, a plain copy's diff names
// the rest of the changed files, and a worktree's is replaced by the list
// of changed paths (git diff-tree --name-status).
const maxDiff = 16 << 20

// diffGit walks the worktree through hostfs (links reported as links,
// FIFOs and the like left out, every .git left out), writes the objects
// of what differs from the start, and diffs the two trees with
// `git diff-tree`, which reads no work tree.
func (i *isolation) diffGit(ctx context.Context) (string, error) {
	root := i.root
	objects := i.objectWriter(ctx)
	defer objects.abort()
	var lines strings.Builder
	seen := map[string]bool{}
	var total int64
	entries := 0
	buf := make([]byte, copyBuffer)
	err := root.Walk(func(name string, dir *hostfs.Root, info hostfs.Info) error {
		if info.Name() == ".git" {
			if info.IsDir() {
				return hostfs.SkipDir
			}
			return nil
		}
		if entries++; entries > i.limits.entries {
			return tooLarge(i.limits)
		}
		if info.IsDir() || (!info.IsRegular() && info.Mode&fs.ModeSymlink == 0) {
			return nil
		}
		seen[name] = true
		was, ok := i.start[name]
		if ok && was.sameFile(info) {
			return nil
		}
		t, err := copyEntry(i.format, dir, nil, info.Name(), i.limits.bytes-total, buf)
		if err != nil {
			if errors.Is(err, hostfs.ErrTooLarge) {
				return tooLarge(i.limits)
			}
			if hostfs.IsNotExist(err) {
				delete(seen, name)
				return nil
			}
			return err
		}
		total += t.size
		if ok && t.oid == was.oid && t.mode == was.mode {
			return nil
		}
		if err := objects.writeEntry(i.format, dir, info.Name(), t, buf); err != nil {
			return err
		}
		fmt.Fprintf(&lines, "%o %s\t%s\x00", t.mode, t.oid, name)
		return nil
	})
	if err != nil {
		return "", err
	}
	for p, was := range i.start {
		if !seen[p] {
			fmt.Fprintf(&lines, "0 %s\t%s\x00", strings.Repeat("0", len(was.oid)), p)
		}
	}
	if err := objects.close(); err != nil {
		return "", err
	}
	if lines.Len() == 0 {
		return "", nil
	}
	tree, err := i.tree(ctx, i.base, lines.String())
	if err != nil {
		return "", err
	}
	cmd, err := i.repo.PlumbingCommand(ctx, "diff-tree", "-r", "-p", "--binary", "--no-renames", "--no-color", i.base, tree)
	if err != nil {
		return "", err
	}
	out := &cappedBuffer{max: maxDiff}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	err = cmd.Run()
	if out.over {
		names, nerr := i.repo.Plumbing(ctx, nil, "diff-tree", "-r", "--name-status", "--no-renames", i.base, tree)
		if nerr != nil {
			return "", nerr
		}
		return fmt.Sprintf("# The diff is over %d MiB and is not shown; the paths the child changed:\n%s", maxDiff>>20, names), nil
	}
	if err != nil {
		return "", fmt.Errorf("git diff-tree: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// cappedBuffer keeps what is written up to max bytes; past it, it keeps
// nothing more, says so (over) and fails the write (the writer stops).
// It has no ReadFrom, so that io.Copy writes through Write.
type cappedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.over || b.buf.Len()+len(p) > b.max {
		b.over = true
		return 0, errors.New("past the bound")
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) String() string { return b.buf.String() }

// readEntry returns what a diff shows of the entry at p under r: a
// regular file's content (at most max bytes), a symbolic link as
// "symbolic link to TARGET" (never what it points to), an error for
// anything else or for a path with a link before its last component.
func readEntry(r *hostfs.Root, p string, max int64) (string, error) {
	data, mode, err := readTracked(r, p, max)
	if err != nil {
		return "", err
	}
	if mode == 0o120000 {
		return "symbolic link to " + string(data) + "\n", nil
	}
	return string(data), nil
}

// remove deletes the copy, and for a worktree its registration (the git
// directory Truss found when it was made; no git runs).
func (i *isolation) remove() {
	if i.root != nil {
		i.root.Close()
	}
	os.RemoveAll(i.top)
	if i.gitdir != "" {
		os.RemoveAll(i.gitdir)
	}
}

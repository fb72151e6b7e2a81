//go:build linux

package changes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/tool"
)

// A Tracker finds the changes made in a set of roots. One Tracker serves
// every agent that works in those roots; it is safe for concurrent use.
type Tracker struct {
	roots     []*root
	ign       *matcher
	store     *store
	tmpStore  string
	workers   int
	maxFile   int64
	noGit     bool
	scanAfter []tool.Op
	watch     *watcher // nil: every scan is a full walk
	cancel    context.CancelFunc

	ready chan struct{}
	err   error // the baseline's failure, set before ready closes

	// mu guards the index and pending. Scan and Note hold it, and Wrap
	// holds it for the whole of a file tool's call.
	mu        sync.Mutex
	pending   []tool.FileChange
	closed    bool
	fullScans int // scans that walked everything (for tests and benchmarks)
	// rescan makes the next scan walk everything: a file got another
	// name, maybe in a directory no event will lead a scan to.
	rescan bool
}

// root is one tracked directory and its index.
type root struct {
	abs string
	// name prefixes the paths of this root's files: "" for the first root
	// (the workspace: paths are relative to it), else its absolute path,
	// '/'-separated.
	name  string
	dirs  map[string][]entry // directory (relative, "" for the root) → its entries by name
	links map[string]string  // symlink → target
	repo  *repo
	watch *watcher
	// linked are the directories holding a file with another name, read
	// by every scan (see entry.linked).
	linked map[string]bool
}

// install puts a directory as read into the index.
func (r *root) install(w walked) {
	r.dirs[w.rel] = w.ents
	if w.linked {
		r.linked[w.rel] = true
	} else {
		delete(r.linked, w.rel)
	}
}

func (r *root) path(rel string) string {
	if r.name == "" {
		return rel
	}
	return r.name + "/" + rel
}

func (r *root) abspath(rel string) string {
	if rel == "" {
		return r.abs
	}
	return filepath.Join(r.abs, filepath.FromSlash(rel))
}

// Open starts tracking the roots: the first is the workspace, whose files
// are named relative to it; files of the others are named by their
// absolute path. It returns at once; the baseline (the stat index, the
// repository's state and the copies of the contents that git does not
// hold) is taken in the background, and Scan, Note, Ready and Wrap's
// calls wait for it. Nothing may change the roots until Ready returns.
func Open(ctx context.Context, roots []string, opts Options) (*Tracker, error) {
	if len(roots) == 0 {
		return nil, errors.New("changes: no roots to track")
	}
	ignore := opts.Ignore
	if ignore == nil {
		ignore = DefaultIgnore()
	}
	ign, err := parseIgnore(ignore)
	if err != nil {
		return nil, fmt.Errorf("changes: %w", err)
	}
	t := &Tracker{ign: ign, workers: opts.Workers, maxFile: opts.MaxFile, noGit: opts.NoGit,
		scanAfter: opts.ScanAfter, ready: make(chan struct{})}
	if !opts.NoWatch {
		if w, err := newWatcher(); err == nil {
			t.watch = w // else (no inotify, too many instances) full walks
		}
	}
	if t.workers <= 0 {
		t.workers = 4 * runtime.GOMAXPROCS(0)
	}
	if t.maxFile <= 0 {
		t.maxFile = DefaultMaxFile
	}
	if t.scanAfter == nil {
		t.scanAfter = DefaultScanAfter()
	}
	for i, p := range roots {
		given, err := filepath.Abs(p)
		abs := given
		if err == nil {
			abs, err = filepath.EvalSymlinks(given)
		}
		if err != nil {
			return nil, fmt.Errorf("changes: root %s: %w", p, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("changes: root %s is not a directory", p)
		}
		nested := false
		for _, r := range t.roots {
			if under(filepath.ToSlash(abs), filepath.ToSlash(r.abs)) {
				nested = true // tracked as part of r
			}
		}
		if nested {
			continue
		}
		r := &root{abs: abs, dirs: map[string][]entry{}, links: map[string]string{}, watch: t.watch, linked: map[string]bool{}}
		if i > 0 {
			// Named as given (the path the tools and the sandbox use),
			// walked where it leads.
			r.name = strings.TrimSuffix(filepath.ToSlash(given), "/")
		}
		t.roots = append(t.roots, r)
	}
	dir := opts.StoreDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "truss-changes-"); err != nil {
			return nil, fmt.Errorf("changes: %w", err)
		}
		t.tmpStore = dir
	}
	max := opts.MaxStore
	if max <= 0 {
		max = DefaultMaxStore
	}
	if t.store, err = newStore(dir, max); err != nil {
		return nil, fmt.Errorf("changes: %w", err)
	}
	ctx, t.cancel = context.WithCancel(context.WithoutCancel(ctx))
	t.mu.Lock() // held until the baseline is taken
	go func() {
		defer close(t.ready)
		defer t.mu.Unlock()
		t.err = t.baseline(ctx)
	}()
	return t, nil
}

// Ready waits until the baseline is taken and returns its error.
func (t *Tracker) Ready(ctx context.Context) error {
	select {
	case <-t.ready:
		return t.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the tracker and removes a temporary content store.
func (t *Tracker) Close() error {
	<-t.ready
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	t.cancel()
	if t.watch != nil {
		t.watch.close()
	}
	for _, r := range t.roots {
		if r.repo != nil {
			r.repo.close()
		}
	}
	err := t.store.close()
	if t.tmpStore != "" {
		err = os.RemoveAll(t.tmpStore)
	}
	return err
}

// baseline builds the index: the stat of every entry, then what is known
// of each regular file's content.
func (t *Tracker) baseline(ctx context.Context) error {
	ws := t.walk(t.rootJobs(), true, time.Now().Add(-RacyWindow).UnixNano())
	var errs []error
	for _, w := range ws {
		w.r.install(w)
		if w.err != nil {
			errs = append(errs, w.err)
		}
	}
	var hash []*entry
	var hashRel []string
	var hashRoot []*root
	for _, r := range t.roots {
		var index map[string]indexEntry
		if !t.noGit {
			repo, idx, err := openRepo(ctx, r.abs)
			if err != nil {
				errs = append(errs, err)
			}
			r.repo, index = repo, idx
		}
		var clean []*entry
		var cleanRel []string
		var cleanOID [][]byte
		for dir, ents := range r.dirs {
			for i := range ents {
				e := &ents[i]
				rel := path.Join(dir, e.name)
				switch {
				case e.isLink():
					if target, err := os.Readlink(r.abspath(rel)); err == nil {
						r.links[rel] = target
					}
				case e.isReg():
					ie, ok := index[rel]
					exec := e.mode&0o100 != 0
					if ok && ie.mode != 0o120000 && (ie.mode == 0o100755) == exec {
						clean, cleanRel = append(clean, e), append(cleanRel, rel)
						cleanOID = append(cleanOID, ie.oid)
						continue
					}
					hash, hashRel, hashRoot = append(hash, e), append(hashRel, rel), append(hashRoot, r)
				}
			}
		}
		if len(clean) > 0 {
			// A clean file is its index blob unless the repository converts
			// line endings or expands keywords: those change the size.
			sizes, err := r.repo.sizes(ctx, cleanOID)
			if err != nil {
				errs = append(errs, err)
			}
			for i, e := range clean {
				if err == nil && sizes[i] == e.size {
					e.src = srcGit
					copy(e.sum[:], cleanOID[i])
					continue
				}
				hash, hashRel, hashRoot = append(hash, e), append(hashRel, cleanRel[i]), append(hashRoot, r)
			}
		}
	}
	// Copy the rest into the store, in parallel.
	var mu sync.Mutex
	t.parallel(len(hash), func(i int) {
		e := hash[i]
		c, err := t.read(hashRoot[i].abspath(hashRel[i]), nil)
		if err != nil || c.size != e.size || c.ino != e.ino {
			// Changed or gone while the baseline was taken: unknown, and
			// compared by content at the first scan.
			e.racy = true
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return
		}
		e.sum, e.src = c.sum, srcSHA
		if c.data != nil {
			kept, err := t.store.put(c.sum, c.data)
			e.kept = kept
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}
	})
	return errors.Join(errs...)
}

// parallel runs f(0..n-1) on the tracker's workers.
func (t *Tracker) parallel(n int, f func(i int)) {
	if n == 0 {
		return
	}
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range min(t.workers, n) {
		wg.Go(func() {
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= n {
					return
				}
				f(k)
			}
		})
	}
	wg.Wait()
}

// content is a regular file as read: its SHA-256, its bytes (nil when it
// is larger than MaxFile) and its git object id when asked.
type content struct {
	data []byte
	sum  [32]byte
	gid  []byte
	size int64
	ino  uint64
	mode uint32
}

// read reads a regular file without following a symlink.
func (t *Tracker) read(abs string, r *repo) (content, error) {
	var c content
	f, err := os.OpenFile(abs, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return c, os.ErrNotExist // not a regular file any more
		}
		return c, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return c, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return c, os.ErrNotExist
	}
	c.ino, c.mode = st.Ino, st.Mode
	if st.Size <= t.maxFile {
		b := make([]byte, 0, st.Size+1)
		for {
			n, err := f.Read(b[len(b):cap(b)])
			b = b[:len(b)+n]
			if err == io.EOF {
				break
			}
			if err != nil {
				return c, err
			}
			if len(b) == cap(b) {
				if int64(len(b)) > t.maxFile {
					b = nil // grew past the cap while read: hash it instead
					break
				}
				b = slices.Grow(b, 4096)
			}
		}
		if b != nil {
			c.data, c.size, c.sum = b, int64(len(b)), sha256.Sum256(b)
			if r != nil {
				c.gid = r.blobID(b)
			}
			return c, nil
		}
	}
	// Too large to keep: hash it as it streams. Git's object id needs the
	// size first; the size read must agree with it.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return c, err
	}
	h := sha256.New()
	var g interface {
		io.Writer
		Sum([]byte) []byte
	}
	w := io.Writer(h)
	if r != nil {
		g = r.newBlobHash(st.Size)
		w = io.MultiWriter(h, g)
	}
	n, err := io.Copy(w, f)
	if err != nil {
		return c, err
	}
	c.size = n
	copy(c.sum[:], h.Sum(nil))
	if g != nil && n == st.Size {
		c.gid = g.Sum(nil)
	}
	return c, nil
}

// Scan finds the changes made in the roots since the baseline or the last
// scan, with their contents, and makes now the new baseline. Changes the
// tracker was told of (Note) are not reported again; changes Note found
// that nobody had reported come first. The changes are sorted by path. An
// error lists directories or files that could not be read (their changes
// are missing); the changes found are returned with it.
func (t *Tracker) Scan(ctx context.Context) ([]tool.FileChange, error) {
	if err := t.Ready(ctx); err != nil && !t.baselineDone() {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.scan(ctx, false)
}

// ScanAll is Scan with a walk of every directory, whatever the kernel's
// events say: for the end of a session, where a change that inotify does
// not see (a write through a memory mapping) is still found by its stat.
func (t *Tracker) ScanAll(ctx context.Context) ([]tool.FileChange, error) {
	if err := t.Ready(ctx); err != nil && !t.baselineDone() {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.scan(ctx, true)
}

func (t *Tracker) rootJobs() []dirJob {
	var jobs []dirJob
	for _, r := range t.roots {
		jobs = append(jobs, dirJob{r: r, rel: ""})
	}
	return jobs
}

// jobs returns the directories a scan starts from, and whether it walks
// all of them.
func (t *Tracker) jobs(all bool) ([]dirJob, bool) {
	if t.watch == nil {
		return t.rootJobs(), true
	}
	dirty, full := t.watch.drain()
	if full || all || t.rescan {
		t.rescan = false
		return t.rootJobs(), true
	}
	for _, r := range t.roots {
		for rel := range r.linked {
			dirty = append(dirty, watched{r, rel})
		}
	}
	var jobs []dirJob
	seen := map[watched]bool{}
	for _, k := range dirty {
		if _, ok := k.r.dirs[k.rel]; ok && !seen[k] {
			seen[k] = true
			jobs = append(jobs, dirJob(k))
		}
	}
	return jobs, false
}

func (t *Tracker) baselineDone() bool {
	select {
	case <-t.ready:
		return true
	default:
		return false
	}
}

// side is one side of a change as found.
type side struct {
	exists bool // a regular file or a symlink
	reg    bool
	known  bool // reg: sum is known
	sum    [32]byte
	data   []byte // reg: the content, nil when not kept
	ino    uint64
	mtime  int64
	mode   uint32
}

func (s side) digest() string {
	if !s.reg || !s.known {
		return ""
	}
	return hex.EncodeToString(s.sum[:])
}

func (t *Tracker) scan(ctx context.Context, all bool) ([]tool.FileChange, error) {
	if t.closed {
		return nil, errors.New("changes: the tracker is closed")
	}
	jobs, full := t.jobs(all)
	if full {
		t.fullScans++
	}
	ws := t.walk(jobs, full, time.Now().Add(-RacyWindow).UnixNano())
	var diffs []diff
	var errs []error
	goneDirs := map[watched]bool{}
	for _, w := range ws {
		if w.err != nil {
			errs = append(errs, w.err)
		}
		for _, g := range w.gone {
			goneDirs[watched{w.r, g}] = true
			diffs = t.gone(w.r, g, diffs)
		}
	}
	for _, w := range ws {
		if w.vanished || (len(goneDirs) > 0 && inGone(goneDirs, w.r, w.rel)) {
			// Read before its parent found it gone (a process removed it
			// meanwhile): the parent's reading has the removal.
			continue
		}
		w.r.install(w)
		diffs = append(diffs, w.diffs...)
		t.rescan = t.rescan || w.newLink
	}
	if len(diffs) == 0 && len(t.pending) == 0 {
		return nil, errors.Join(errs...)
	}

	// Read what is there now, and what was there before, in parallel.
	olds := make([]side, len(diffs))
	curs := make([]side, len(diffs))
	oldLink := make([]string, len(diffs))
	curLink := make([]string, len(diffs))
	var emu sync.Mutex
	fail := func(err error) {
		emu.Lock()
		errs = append(errs, err)
		emu.Unlock()
	}
	t.parallel(len(diffs), func(i int) {
		d := diffs[i]
		var repo *repo
		if d.old != nil && d.old.isReg() && d.old.src == srcGit {
			repo = d.r.repo
		}
		if c := d.cur; c != nil {
			abs := d.r.abspath(d.rel)
			switch {
			case c.isReg():
				got, err := t.read(abs, repo)
				if err != nil {
					if !errors.Is(err, os.ErrNotExist) {
						fail(err)
					}
					d.cur = nil // gone since the walk: as if not seen
					diffs[i] = d
					break
				}
				curs[i] = side{exists: true, reg: true, known: true, sum: got.sum, data: got.data, ino: got.ino, mtime: c.mtime, mode: got.mode}
				if o := d.old; o != nil && o.isReg() && (got.mode&0o7777) == (o.mode&0o7777) {
					switch {
					case o.src == srcSHA && o.sum == got.sum,
						o.src == srcGit && got.gid != nil && bytes.Equal(got.gid, o.sum[:len(got.gid)]):
						curs[i].known = false // marks "unchanged": resolved below
						olds[i] = side{exists: true, reg: true}
						return
					}
				}
			case c.isLink():
				target, err := os.Readlink(abs)
				if err != nil {
					d.cur = nil
					diffs[i] = d
					break
				}
				curs[i] = side{exists: true}
				curLink[i] = target
			}
		}
		if o := d.old; o != nil {
			olds[i] = side{exists: true, ino: o.ino, mtime: o.mtime, mode: o.mode}
			switch {
			case o.isLink():
				oldLink[i] = d.r.links[d.rel]
			case o.isReg():
				olds[i].reg = true
				switch o.src {
				case srcSHA:
					olds[i].known, olds[i].sum = true, o.sum
					if o.kept {
						b, ok, err := t.store.get(o.sum)
						if err != nil {
							fail(err)
						}
						if ok {
							olds[i].data = b
						}
					}
				case srcGit:
					n := 20
					if d.r.repo.sha256 {
						n = 32
					}
					b, err := d.r.repo.blob(ctx, o.sum[:n])
					if err != nil {
						fail(fmt.Errorf("%s: before content: %w", d.r.path(d.rel), err))
						break
					}
					olds[i].known, olds[i].sum, olds[i].data = true, sha256.Sum256(b), b
				}
			}
		}
	})

	// Unchanged contents keep what the index knew; a symlink whose stat
	// alone changed is no change either.
	var changes []tool.FileChange
	var dels, adds []int
	for i, d := range diffs {
		o, c := olds[i], curs[i]
		if d.cur != nil && d.cur.isReg() && c.exists && !c.known && o.exists {
			t.settle(d, d.old.sum, d.old.src, d.old.kept)
			continue
		}
		if d.cur != nil && d.cur.isReg() && c.known {
			kept := false
			if c.data != nil {
				var err error
				if kept, err = t.store.put(c.sum, c.data); err != nil {
					fail(err)
				}
			}
			t.settle(d, c.sum, srcSHA, kept)
		}
		if d.cur == nil {
			t.drop(d)
		}
		if d.cur != nil && d.cur.isLink() {
			d.r.links[d.rel] = curLink[i]
		} else {
			delete(d.r.links, d.rel)
		}
		switch {
		case !o.exists && !c.exists:
			continue
		case o.exists && c.exists && !o.reg && !c.reg && oldLink[i] == curLink[i]:
			continue
		case o.exists && !c.exists && o.reg && o.known:
			dels = append(dels, i)
		case !o.exists && c.exists && c.reg:
			adds = append(adds, i)
		}
		ch := change(d.r.path(d.rel), o, c)
		if d.old != nil && d.old.isLink() {
			ch.LinkBefore = oldLink[i]
		}
		if d.cur != nil && d.cur.isLink() {
			ch.LinkAfter = curLink[i]
		}
		changes = append(changes, ch)
	}

	// Renames: a deleted and an added file of the same content, the same
	// inode and time preferred (and required for empty files).
	if len(dels) > 0 && len(adds) > 0 {
		bySum := map[[32]byte][]int{}
		for _, i := range dels {
			bySum[olds[i].sum] = append(bySum[olds[i].sum], i)
		}
		moved := map[string]string{} // deleted path → new path
		added := map[string]bool{}
		for _, a := range adds {
			cands := bySum[curs[a].sum]
			// A rename keeps the inode and the modification time; a new
			// file may get a freed inode again, but not the old time.
			pick, rank := -1, 0
			for k, i := range cands {
				r := 1
				if olds[i].ino == curs[a].ino {
					r = 2
					if olds[i].mtime == curs[a].mtime {
						r = 3
					}
				}
				if curs[a].sum == emptySum && r < 3 {
					continue // nothing ties two empty files but that
				}
				if r > rank {
					pick, rank = k, r
				}
			}
			if pick < 0 {
				continue
			}
			i := cands[pick]
			bySum[curs[a].sum] = slices.Delete(cands, pick, pick+1)
			from, to := diffs[i].r.path(diffs[i].rel), diffs[a].r.path(diffs[a].rel)
			moved[from], added[to] = to, true
		}
		if len(moved) > 0 {
			kept := changes[:0]
			var addCh = map[string]tool.FileChange{}
			for _, ch := range changes {
				if added[ch.Path] && ch.Kind == tool.ChangeAdd {
					addCh[ch.Path] = ch
				}
			}
			for _, ch := range changes {
				if to, ok := moved[ch.Path]; ok && ch.Kind == tool.ChangeDelete {
					a := addCh[to]
					ch.Kind, ch.MovedTo, ch.After, ch.AfterData = tool.ChangeUpdate, to, a.After, a.AfterData
				} else if added[ch.Path] && ch.Kind == tool.ChangeAdd {
					continue
				}
				kept = append(kept, ch)
			}
			changes = kept
		}
	}
	slices.SortFunc(changes, func(a, b tool.FileChange) int { return strings.Compare(a.Path, b.Path) })
	out := append(t.pending, changes...)
	t.pending = nil
	return out, errors.Join(errs...)
}

// inGone reports whether rel is one of the gone directories or under one.
func inGone(gone map[watched]bool, r *root, rel string) bool {
	for {
		if gone[watched{r, rel}] {
			return true
		}
		if rel == "" {
			return false
		}
		rel, _ = splitRel(rel)
	}
}

// change makes the FileChange of path from its two sides.
func change(p string, o, c side) tool.FileChange {
	ch := tool.FileChange{Path: p, Kind: tool.ChangeUpdate, Before: o.digest(), After: c.digest()}
	switch {
	case !o.exists:
		ch.Kind = tool.ChangeAdd
	case !c.exists:
		ch.Kind = tool.ChangeDelete
	}
	if ch.Before != "" {
		ch.BeforeData = o.data
	}
	if ch.After != "" {
		ch.AfterData = c.data
	}
	return ch
}

// settle records in the index what is now known of a diff's current
// regular file.
func (t *Tracker) settle(d diff, sum [32]byte, src uint8, kept bool) {
	if e := d.r.lookup(d.rel); e != nil && e.isReg() {
		e.sum, e.src, e.kept = sum, src, kept
	}
}

// drop removes a diff's path from the index, when it was found gone after
// the walk had listed it.
func (t *Tracker) drop(d diff) {
	if e := d.r.lookup(d.rel); e != nil && !e.isDir() {
		d.r.remove(d.rel)
	}
}

// gone adds to diffs a removal for each file the index holds under the
// directory rel, which is no longer one, and drops them from the index.
func (t *Tracker) gone(r *root, rel string, diffs []diff) []diff {
	ents, ok := r.dirs[rel]
	if !ok {
		return diffs
	}
	delete(r.dirs, rel)
	delete(r.linked, rel)
	if r.watch != nil {
		r.watch.remove(r, rel)
	}
	for i := range ents {
		e := ents[i]
		p := path.Join(rel, e.name)
		if e.isDir() {
			diffs = t.gone(r, p, diffs)
			continue
		}
		diffs = append(diffs, diff{r: r, rel: p, old: &e})
	}
	return diffs
}

// lookupIn returns the entry named name of a directory's entries, or nil.
func lookupIn(ents []entry, name string) *entry {
	i, ok := slices.BinarySearchFunc(ents, name, func(e entry, n string) int { return strings.Compare(e.name, n) })
	if !ok {
		return nil
	}
	return &ents[i]
}

// lookup returns the index entry of rel, or nil.
func (r *root) lookup(rel string) *entry {
	dir, name := splitRel(rel)
	return lookupIn(r.dirs[dir], name)
}

// remove drops rel (and, for a directory, everything under it) from the
// index.
func (r *root) remove(rel string) {
	dir, name := splitRel(rel)
	ents := r.dirs[dir]
	i, ok := slices.BinarySearchFunc(ents, name, func(e entry, n string) int { return strings.Compare(e.name, n) })
	if !ok {
		return
	}
	if ents[i].isDir() {
		r.dropDir(rel)
	}
	r.dirs[dir] = slices.Delete(ents, i, i+1)
	delete(r.links, rel)
}

func (r *root) dropDir(rel string) {
	if r.watch != nil {
		r.watch.remove(r, rel)
	}
	for _, e := range r.dirs[rel] {
		if e.isDir() {
			r.dropDir(path.Join(rel, e.name))
		}
		delete(r.links, path.Join(rel, e.name))
	}
	delete(r.dirs, rel)
	delete(r.linked, rel)
}

// put inserts or replaces rel's entry, making its directories known.
func (r *root) put(rel string, e entry) {
	dir, name := splitRel(rel)
	r.ensureDir(dir)
	e.name = name
	ents := r.dirs[dir]
	i, ok := slices.BinarySearchFunc(ents, name, func(x entry, n string) int { return strings.Compare(x.name, n) })
	if ok {
		if ents[i].isDir() && !e.isDir() {
			r.dropDir(rel)
		}
		ents[i] = e
		return
	}
	r.dirs[dir] = slices.Insert(ents, i, e)
}

// ensureDir makes the directory rel known to the index, with its parents;
// a directory new to the index is taken as empty, so what is in it that
// nobody reported is found by the next scan.
func (r *root) ensureDir(rel string) {
	if _, ok := r.dirs[rel]; ok || rel == "" {
		if rel == "" && r.dirs[""] == nil {
			r.dirs[""] = []entry{}
		}
		return
	}
	var st unix.Stat_t
	e := entry{mode: unix.S_IFDIR | 0o755}
	if unix.Lstat(r.abspath(rel), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		e, _ = fromStat("", &st)
	}
	r.put(rel, e)
	r.dirs[rel] = []entry{}
	if r.watch != nil {
		// What is in it that nobody reported (it may have been moved here
		// whole) is read by the next scan.
		r.watch.ensure(r, rel)
		r.watch.mark(r, rel)
	}
}

func splitRel(rel string) (dir, name string) {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return "", rel
}

// resolve finds the root and the relative path of a change's path: a
// relative path is in the first root; an absolute one in the root that
// holds it. ok is false for a path outside every root or ignored.
func (t *Tracker) resolve(p string) (*root, string, bool) {
	if p == "" {
		return nil, "", false
	}
	var r *root
	rel := p
	if path.IsAbs(p) {
		for _, x := range t.roots {
			for _, prefix := range []string{x.name, strings.TrimSuffix(filepath.ToSlash(x.abs), "/")} {
				if prefix != "" && r == nil && under(p, prefix) && p != prefix {
					r, rel = x, strings.TrimPrefix(p, prefix+"/")
				}
			}
		}
		if r == nil {
			return nil, "", false
		}
	} else {
		r = t.roots[0]
	}
	if rel != path.Clean(rel) || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, "", false
	}
	dir := ""
	for el := range strings.SplitSeq(rel, "/") {
		if t.ign.ignored(dir, el) {
			return nil, "", false
		}
		dir = path.Join(dir, el)
	}
	return r, rel, true
}

// Note tells the tracker of changes a tool made itself and reported (a
// file tool's or a patch's result), so that they are not reported again by
// the next scan: the index takes each file's reported after content, and
// the next scan compares the file with it by content (a file changed since
// the tool wrote it is then reported as changed from the tool's content).
// A change whose before content differs from what the index held means the
// file was changed in between and nobody reported it; that change (index
// content → the tool's before content) is reported first by the next Scan.
// Paths outside the roots, or ignored, are skipped.
func (t *Tracker) Note(changes []tool.FileChange) {
	<-t.ready
	t.mu.Lock()
	defer t.mu.Unlock()
	t.note(changes)
}

func (t *Tracker) note(changes []tool.FileChange) {
	if t.closed {
		return
	}
	for _, ch := range changes {
		r, rel, ok := t.resolve(ch.Path)
		if !ok {
			continue
		}
		t.gap(r, rel, ch)
		if ch.MovedTo != "" || ch.Kind == tool.ChangeDelete {
			r.remove(rel)
		}
		if ch.Kind == tool.ChangeDelete {
			continue
		}
		if ch.MovedTo != "" {
			if r, rel, ok = t.resolve(ch.MovedTo); !ok {
				continue
			}
		}
		var st unix.Stat_t
		e := entry{mode: unix.S_IFREG | 0o644} // a zero stat: compared at the next scan
		if err := unix.Lstat(r.abspath(rel), &st); err == nil {
			if x, ok := fromStat("", &st); ok {
				e = x
			}
		}
		if e.isDir() {
			r.ensureDir(rel)
			continue
		}
		e.racy = true // the next scan compares the content with the tool's
		if ch.After != "" {
			if sum, err := hex.DecodeString(ch.After); err == nil && len(sum) == 32 {
				copy(e.sum[:], sum)
				e.src = srcSHA
				if ch.AfterData != nil && sha256.Sum256(ch.AfterData) == e.sum {
					e.kept, _ = t.store.put(e.sum, ch.AfterData)
				}
				if !e.isReg() { // not what the tool wrote any more
					e.mode, e.ino, e.size = unix.S_IFREG|0o644, 0, -1
				}
			}
		}
		if e.isLink() {
			if target, err := os.Readlink(r.abspath(rel)); err == nil {
				r.links[rel] = target
			}
		}
		r.put(rel, e)
	}
}

// gap queues, for the next scan, the change nobody reported between what
// the index holds of rel and the before content of ch.
func (t *Tracker) gap(r *root, rel string, ch tool.FileChange) {
	e := r.lookup(rel)
	if e == nil || !e.isReg() || ch.Before == "" || e.src == srcNone {
		return
	}
	var before [32]byte
	if b, err := hex.DecodeString(ch.Before); err != nil || len(b) != 32 {
		return
	} else {
		copy(before[:], b)
	}
	old := side{exists: true, reg: true, known: true}
	switch e.src {
	case srcSHA:
		if e.sum == before {
			return
		}
		old.sum = e.sum
		if e.kept {
			old.data, _, _ = t.store.get(e.sum)
		}
	case srcGit:
		if ch.BeforeData == nil || r.repo == nil {
			return
		}
		gid := r.repo.blobID(ch.BeforeData)
		if bytes.Equal(gid, e.sum[:len(gid)]) {
			return
		}
	}
	cur := side{exists: true, reg: true, known: true, sum: before, data: ch.BeforeData}
	if e.src == srcGit {
		n := 20
		if r.repo.sha256 {
			n = 32
		}
		b, err := r.repo.blob(context.Background(), e.sum[:n])
		if err != nil {
			return
		}
		old.sum, old.data = sha256.Sum256(b), b
	}
	t.pending = append(t.pending, change(r.path(rel), old, cur))
}

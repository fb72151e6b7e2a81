//go:build linux

package changes

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/tool"
)

// A Tracker finds the changes made in a set of roots. One Tracker serves
// every agent that works in those roots; it is safe for concurrent use.
type Tracker struct {
	roots     []*root
	gitPath   string // gitsafe.Git's Path
	ign       *matcher
	bulk      *matcher // directories whose changes are one bulk change
	store     *store
	hold      *budget // content bytes held in memory at once
	bulkAt    int     // more changes than this in one scan are one bulk change
	bulkBytes int     // changes whose paths and targets pass this many bytes are one bulk change
	// maxDirBytes: a directory whose entries would take more is too large
	// to track (Options.MaxDirBytes).
	maxDirBytes int
	spoolAt     int // a bulk change's manifest past this many bytes is kept on disk
	spillRun    int // a scan's diffs past this many are spilled in sorted runs (0: spillRun)
	spillBytes  int // a scan's diffs past this many bytes in memory are spilled (0: spillBytes)
	tmpStore    string
	workers     int
	maxFile     int64
	hashBytes   int64        // what one scan may read to hash (Options.HashBytes)
	hashLeft    atomic.Int64 // what the scan under way may still read
	noGit       bool
	scanAfter   []tool.Op
	watch       *watcher // nil: every scan is a full walk
	// bigDir is the walk's one turn for reading a large directory.
	bigDir chan struct{}
	// life is done when Close is called: it cuts the baseline and any
	// scan under way (cancel ends it).
	life   context.Context
	cancel context.CancelFunc

	ready chan struct{}
	err   error // the baseline's failure, set before ready closes
	// wanted is closed (once, by want) when something waits for the
	// baseline: a baseline held by Options.Defer starts then.
	wanted     chan struct{}
	wantedOnce sync.Once

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
	// fs is the root's directory, held open: every listing, stat, read
	// and readlink beneath it resolves from it and refuses every link.
	fs *hostfs.Root
	// name prefixes the paths of this root's files: "" for the first root
	// (the workspace: paths are relative to it), else its absolute path,
	// '/'-separated.
	name string
	idx  *index // the stat index, mostly on disk
	repo *repo
	// dotGit is the .git recorded for the root at Open (the zero Repo:
	// none, or none git may be run on).
	dotGit gitsafe.Repo
	// ownGit is the device and inode of the root's ".git" at Open
	// (hasGit false: there was none): that entry alone is not tracked.
	// gitFD holds it open (O_PATH), so that its inode cannot be reused
	// by a ".git" a command makes in its place.
	ownGit [2]uint64
	hasGit bool
	gitFD  int
	watch  *watcher
	// linked are the directories holding a file with another name, read
	// by every scan (see entry.linked).
	linked map[string]bool
	// unlisted are the directories recorded as unlistable and not listed
	// since, so that one is recorded once, not by every scan that meets
	// it; unlistedBytes bounds their paths (past maxUnlisted a directory
	// is recorded each time a scan meets it).
	unlisted      map[string]bool
	unlistedBytes int
	// tooBig are the directories recorded as too large to track, with
	// their stat then, so that one is recorded again only when entries
	// were made, removed or renamed in it since; tooBigBytes bounds their
	// paths as unlistedBytes does.
	tooBig      map[string]dirStamp
	tooBigBytes int
}

// maxUnlistedScan bounds the unlistable directories one scan records, and
// maxWalkErrs the errors of its walk it keeps (the rest are counted): a
// command that makes 100,000 directories unlistable costs a scan neither
// a change nor an error each.
const (
	maxUnlistedScan = 256
	maxWalkErrs     = 64
)

// maxUnlisted bounds the bytes of the paths a root remembers as recorded
// unlistable.
const maxUnlisted = 1 << 20

// unlistable returns the change that records w's directory as one the
// scan could not list, with its metadata, or false when it was recorded
// already and has not been listed since.
func (r *root) unlistable(w walked) (tool.FileChange, bool) {
	if r.unlisted[w.rel] {
		return tool.FileChange{}, false
	}
	if r.unlistedBytes+len(w.rel) <= maxUnlisted {
		if r.unlisted == nil {
			r.unlisted = map[string]bool{}
		}
		r.unlisted[w.rel] = true
		r.unlistedBytes += len(w.rel)
	}
	p := r.name
	if w.rel != "" {
		p = r.path(w.rel)
	} else if p == "" {
		p = "."
	}
	return tool.FileChange{Path: p, Kind: tool.ChangeUpdate, Type: "unlistable",
		Mode: fmt.Sprintf("%04o", w.unlistMode&0o7777), AfterUnavailable: "unlistable: " + w.err.Error()}, true
}

// listed forgets that rel was recorded unlistable or too large: it was
// listed and tracked.
func (r *root) listed(rel string) {
	if r.unlisted[rel] {
		delete(r.unlisted, rel)
		r.unlistedBytes -= len(rel)
	}
	if _, ok := r.tooBig[rel]; ok {
		delete(r.tooBig, rel)
		r.tooBigBytes -= len(rel)
	}
}

// tooLarge returns the change that records w's directory as too large to
// track, or false when it was recorded already and no entry was made,
// removed or renamed in it since. A directory found too large by the
// baseline is remembered without a change (record false): no command
// made it so.
func (r *root) tooLarge(w walked, maxDirBytes int, record bool) (tool.FileChange, bool) {
	at, ok := r.tooBig[w.rel]
	if ok && at == w.stamp {
		return tool.FileChange{}, false
	}
	if ok || r.tooBigBytes+len(w.rel) <= maxUnlisted {
		if r.tooBig == nil {
			r.tooBig = map[string]dirStamp{}
		}
		if !ok {
			r.tooBigBytes += len(w.rel)
		}
		r.tooBig[w.rel] = w.stamp
	}
	if !record {
		return tool.FileChange{}, false
	}
	p := r.name
	if w.rel != "" {
		p = r.path(w.rel)
	} else if p == "" {
		p = "."
	}
	return tool.FileChange{Path: p, Kind: tool.ChangeUpdate, Type: "too_large", Mode: fmt.Sprintf("%04o", w.stamp.mode&0o7777),
		AfterUnavailable: fmt.Sprintf("too large to track: its entries, their names and link targets would take more than the limit of %d bytes; what changes in it is not recorded while it stays so", maxDirBytes)}, true
}

// install puts a directory as read into the index (only its links to
// other names, when it is as the index had it).
func (r *root) install(w walked) {
	if !w.same {
		r.idx.set(w.rel, w.ents, true)
	}
	if w.linked {
		r.linked[w.rel] = true
	} else {
		delete(r.linked, w.rel)
	}
}

// recordGit records the root's ".git", if it has one, and holds it open.
func (r *root) recordGit() {
	r.gitFD = -1
	fd, err := unix.Openat(r.fs.Fd(), AlwaysIgnored, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		unix.Close(fd)
		return
	}
	r.gitFD, r.ownGit, r.hasGit = fd, [2]uint64{uint64(st.Dev), st.Ino}, true
}

func (r *root) closeGit() {
	if r.gitFD >= 0 {
		unix.Close(r.gitFD)
		r.gitFD = -1
	}
}

// ignores reports whether the entry name of the directory dir (device
// dev, inode ino) is not tracked: the root's own ".git", the one recorded
// at Open (a ".git" made or replaced since is tracked like any other
// directory), or an entry the patterns of m match.
func (r *root) ignores(m *matcher, dir, name string, dev, ino uint64) bool {
	if m.match(dir, name) {
		return true
	}
	return dir == "" && name == AlwaysIgnored && r.hasGit && r.ownGit == [2]uint64{dev, ino}
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
	bulkList := opts.Bulk
	if bulkList == nil {
		bulkList = DefaultBulk()
	}
	bulk, err := parseIgnore(bulkList)
	if err != nil {
		return nil, fmt.Errorf("changes: bulk: %w", err)
	}
	t := &Tracker{ign: ign, bulk: bulk, workers: opts.Workers, maxFile: opts.MaxFile, noGit: opts.NoGit, gitPath: opts.GitPath,
		scanAfter: opts.ScanAfter, bulkAt: opts.BulkThreshold, ready: make(chan struct{}), wanted: make(chan struct{}), bigDir: make(chan struct{}, 1)}
	if !opts.NoWatch {
		if w, err := newWatcher(cmp.Or(max(opts.MaxWatches, 0), DefaultMaxWatches)); err == nil {
			t.watch = w // else (no inotify, too many instances) full walks
		}
	}
	if t.workers <= 0 {
		t.workers = 4 * runtime.GOMAXPROCS(0)
	}
	if t.maxFile <= 0 {
		t.maxFile = DefaultMaxFile
	}
	if t.bulkAt <= 0 {
		t.bulkAt = DefaultBulkThreshold
	}
	t.bulkBytes = cmp.Or(max(opts.BulkBytes, 0), DefaultBulkBytes)
	t.maxDirBytes = cmp.Or(max(opts.MaxDirBytes, 0), DefaultMaxDirBytes)
	t.hashBytes = cmp.Or(max(opts.HashBytes, 0), DefaultHashBytes)
	t.hashLeft.Store(t.hashBytes)
	t.spoolAt = SpoolManifest
	held := opts.MaxHeld
	if held <= 0 {
		held = DefaultMaxHeld
	}
	t.hold = &budget{max: held}
	if t.scanAfter == nil {
		t.scanAfter = DefaultScanAfter()
	}
	ok := false
	defer func() {
		if !ok {
			for _, r := range t.roots {
				r.closeGit()
				r.fs.Close()
			}
			if t.watch != nil {
				t.watch.close()
			}
		}
	}()
	for i, p := range roots {
		given, err := filepath.Abs(p)
		abs := given
		if err == nil {
			abs, err = filepath.EvalSymlinks(given)
		}
		if err != nil {
			return nil, fmt.Errorf("changes: root %s: %w", p, err)
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
		rfs, err := hostfs.OpenRoot(abs)
		if err != nil {
			return nil, fmt.Errorf("changes: root %s is not a directory: %w", p, err)
		}
		r := &root{abs: abs, fs: rfs, watch: t.watch, linked: map[string]bool{}}
		r.recordGit()
		if !t.noGit {
			// Recorded now, with lstat only: the baseline and every later
			// use of git check that the .git found is still this one.
			found, err := gitsafe.Find(abs)
			if err == nil && (i > 0 || opts.Repo == nil || (opts.Repo.DotGit != "" && found.Dev == opts.Repo.Dev && found.Ino == opts.Repo.Ino)) {
				r.dotGit = found
			}
		}
		if i > 0 {
			// Named as given (the path the tools and the sandbox use),
			// walked where it leads.
			r.name = strings.TrimSuffix(filepath.ToSlash(given), "/")
		}
		t.roots = append(t.roots, r)
	}
	dir := opts.StoreDir
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("changes: content store %s: %w", dir, err)
		}
		real := abs
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			real = r
		}
		for _, r := range t.roots {
			for _, d := range []string{abs, real} {
				if under(filepath.ToSlash(d), filepath.ToSlash(r.abs)) {
					return nil, &StoreError{Dir: dir, Err: fmt.Errorf("%w %s", ErrStoreInRoot, r.abs)}
				}
			}
		}
	} else {
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
		if t.tmpStore != "" {
			os.RemoveAll(t.tmpStore)
		}
		return nil, &StoreError{Dir: dir, Err: err}
	}
	for _, r := range t.roots {
		if r.idx, err = newIndex(t.store, opts.IndexMemory, opts.IndexBytes); err != nil {
			for _, r := range t.roots {
				if r.idx != nil {
					r.idx.close()
				}
			}
			t.store.close()
			if t.tmpStore != "" {
				os.RemoveAll(t.tmpStore)
			}
			return nil, &StoreError{Dir: dir, Err: err}
		}
	}
	ok = true
	ctx, t.cancel = context.WithCancel(context.WithoutCancel(ctx))
	t.life = ctx
	t.mu.Lock() // held until the baseline is taken
	go func() {
		defer close(t.ready)
		defer t.mu.Unlock()
		if opts.Defer != nil {
			select {
			case <-opts.Defer:
			case <-t.wanted:
			case <-ctx.Done():
			}
		}
		t.err = t.baseline(ctx)
	}()
	return t, nil
}

// want starts a baseline that Options.Defer holds: something waits for it.
func (t *Tracker) want() { t.wantedOnce.Do(func() { close(t.wanted) }) }

// Ready waits until the baseline is taken and returns its error. A
// baseline that Options.Defer holds starts at once.
func (t *Tracker) Ready(ctx context.Context) error {
	t.want()
	select {
	case <-t.ready:
		return t.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the tracker and removes a temporary content store.
func (t *Tracker) Close() error {
	t.cancel() // the baseline and a scan under way stop at their next directory
	<-t.ready
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if t.watch != nil {
		t.watch.close()
	}
	for _, r := range t.roots {
		if r.repo != nil {
			r.repo.close()
		}
		r.closeGit()
		r.fs.Close()
		r.idx.close()
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
	var errs []error
	// The stat walk installs each directory as it is read, and the index
	// goes to disk as its overlay fills.
	walked, cut := t.walk(ctx, t.rootJobs(), true, time.Now().Add(-RacyWindow).UnixNano(), true, nil)
	for _, w := range walked {
		if w.err != nil {
			errs = append(errs, w.err)
		}
	}
	if cut {
		return &CutError{Err: ctx.Err()}
	}
	for _, r := range t.roots {
		if err := r.idx.merge(); err != nil {
			errs = append(errs, err)
			continue
		}
		var index map[string]indexEntry
		if !t.noGit {
			repo, idx, err := openRepo(ctx, r.abs, r.dotGit, t.gitPath)
			if err != nil {
				errs = append(errs, err)
			}
			r.repo, index = repo, idx
		}
		if err := t.learn(ctx, r, index); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// learnChunk is how many regular files the baseline reads at once, and
// learnBytes how many bytes of entries (their records, names and link
// targets) it holds at most before it writes them: a tree of links holds
// no regular file, and their targets are up to 4 KiB each.
const (
	learnChunk = 16384
	learnBytes = 4 << 20
)

// learn completes the index of r, which is all in its segment: it reads
// each link's target, and learns what is known of each regular file's
// content (its index blob, when the repository's index proves it clean;
// else its SHA-256 as it is copied into the store). It rewrites the
// segment as it reads it, a chunk of files at a time, so what it holds is
// a chunk, whatever the root holds.
func (t *Tracker) learn(ctx context.Context, r *root, index map[string]indexEntry) error {
	x := r.idx
	if x.size == 0 {
		return nil
	}
	f, err := x.begin()
	if err != nil {
		return err
	}
	w := newSegWriter(f)
	rd := newSegReader(x.seg, 0, x.size, nil)
	type dir struct {
		rel  string
		ents []entry
	}
	var (
		errs  []error
		dirs  []dir
		files int
		held  int // what dirs hold: entries, names, link targets
		// The files to hash, with the index's blob of a file whose stat
		// does not prove it clean (nil: none).
		hash    []*entry
		hashRel []string
		hashOID [][]byte
		// The files whose stat proves them clean.
		clean    []*entry
		cleanRel []string
		cleanOID [][]byte
	)
	flush := func() {
		errs = append(errs, t.learnChunk(ctx, r, hash, hashRel, hashOID, clean, cleanRel, cleanOID)...)
		for _, d := range dirs {
			if err := w.dir(d.rel, d.ents); err != nil {
				errs = append(errs, fmt.Errorf("index: %w", err))
			}
		}
		clear(dirs)
		dirs, files, held = dirs[:0], 0, 0
		hash, hashRel, hashOID = hash[:0], hashRel[:0], hashOID[:0]
		clean, cleanRel, cleanOID = clean[:0], cleanRel[:0], cleanOID[:0]
	}
	for {
		d, body, ok, err := rd.record()
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("index: %w", err))...)
		}
		if !ok {
			break
		}
		ents, err := decodeEntries(body)
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("index: %w", err))...)
		}
		dirs = append(dirs, dir{rel: d, ents: ents})
		held += len(d) + entsBytes(ents)
		for i := range ents {
			e := &ents[i]
			rel := path.Join(d, e.name)
			switch {
			case e.isLink():
				if target, err := r.fs.Readlink(rel); err == nil {
					e.link = target
					held += len(target)
				}
			case e.isReg():
				if _, ok := t.bulk.bulkDir(rel); ok {
					continue // recorded by digest only: no copy, and no hash yet
				}
				files++
				ie, ok := index[rel]
				exec := e.mode&0o100 != 0
				switch {
				case ok && ie.mode != 0o120000 && statClean(e, ie):
					clean, cleanRel, cleanOID = append(clean, e), append(cleanRel, rel), append(cleanOID, ie.oid)
				case ok && ie.mode != 0o120000 && (ie.mode == 0o100755) == exec:
					// Clean only if its content hashes to the index's
					// blob, which the copy computes.
					hash, hashRel, hashOID = append(hash, e), append(hashRel, rel), append(hashOID, ie.oid)
				default:
					hash, hashRel, hashOID = append(hash, e), append(hashRel, rel), append(hashOID, nil)
				}
			}
		}
		if files >= learnChunk || held >= learnBytes {
			flush()
		}
	}
	flush()
	if err := w.flush(); err != nil {
		return errors.Join(append(errs, fmt.Errorf("index: %w", err))...)
	}
	x.mu.Lock()
	x.commit(w)
	x.mu.Unlock()
	return errors.Join(errs...)
}

// learnChunk learns the contents of a chunk of the baseline's files:
// clean ones are their index blob when the blob's size is the file's
// (the repository converts no line endings, expands no keywords); the
// rest are read, hashed and copied into the store, in parallel, and a
// file whose content is its index blob is taken from the repository
// instead.
func (t *Tracker) learnChunk(ctx context.Context, r *root, hash []*entry, hashRel []string, hashOID [][]byte,
	clean []*entry, cleanRel []string, cleanOID [][]byte) []error {
	var errs []error
	if len(clean) > 0 {
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
			hash, hashRel = append(hash, e), append(hashRel, cleanRel[i])
			hashOID = append(hashOID, nil)
		}
	}
	var mu sync.Mutex
	var verified []int // of hash: found to be their index blob
	t.parallel(len(hash), func(i int) {
		e := hash[i]
		var g *repo
		if hashOID[i] != nil {
			g = r.repo
		}
		c, err := t.read(r, hashRel[i], e, g, true)
		if err == nil && c.size == e.size && c.gid != nil && bytes.Equal(c.gid, hashOID[i]) {
			e.src = srcGit
			copy(e.sum[:], c.gid)
			t.hold.give(c.held)
			mu.Lock()
			verified = append(verified, i)
			mu.Unlock()
			return
		}
		if err != nil || c.size != e.size {
			// Changed, gone or unreadable while the baseline was taken:
			// unknown, and compared by content at the first scan.
			e.racy = true
			if err != nil && !errors.Is(err, errGone) && !errors.Is(err, errUnreadable) && !errors.Is(err, errNotHashed) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return
		}
		e.sum, e.src = c.sum, srcSHA
		if c.data != nil {
			at, kept, err := t.store.put(c.sum, c.data)
			e.at, e.kept = at, kept
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}
		t.hold.give(c.held)
	})
	// A file is its index blob only if the repository has that object
	// (an intent-to-add entry, or a partial clone's, may not). One it
	// lacks is unknown, compared by content at the first scan.
	if len(verified) > 0 {
		slices.Sort(verified)
		oids := make([][]byte, len(verified))
		for k, i := range verified {
			oids[k] = hashOID[i]
		}
		sizes, err := r.repo.sizes(ctx, oids)
		if err != nil {
			errs = append(errs, err)
		}
		for k, i := range verified {
			if err != nil || sizes[k] != hash[i].size {
				hash[i].src, hash[i].racy = srcNone, true
			}
		}
	}
	return errs
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
// is larger than MaxFile, or the memory budget is spent) and its git
// object id when asked.
type content struct {
	data []byte
	held int64 // bytes of the budget data holds: give them back
	sum  [32]byte
	gid  []byte
	size int64
	ino  uint64
	dev  uint64
	mode uint32
}

// The ways a read of a listed file fails that are not I/O errors.
var (
	// errGone: the name no longer leads to a regular file without a
	// link (removed, replaced by a link, a FIFO or a directory, or a
	// directory on its way replaced by a link).
	errGone = errors.New("no longer a regular file")
	// errUnreadable: the file is there and cannot be read (its
	// permissions, a lease).
	errUnreadable = errors.New("unreadable")
	// errReplaced: the file opened is not the one listed.
	errReplaced = errors.New("replaced while read")
	// errNotHashed: the scan's budget of bytes read to hash is spent.
	errNotHashed = errors.New("not hashed")
)

// read reads the regular file rel of r through the root's descriptor,
// refusing every link on the way and anything but a regular file, and
// checks that the file opened is want (the entry listed; nil: any). With
// keep, its bytes are returned when it is at most MaxFile and the budget
// of bytes held allows (the caller gives c.held back); otherwise it is
// hashed as it streams.
func (t *Tracker) read(r *root, rel string, want *entry, g *repo, keep bool) (content, error) {
	var c content
	if want != nil && want.isReg() && want.size == 0 && !want.racy {
		// Empty when listed, and the listing's stat is trusted: its
		// content is no bytes, with no open (a write since changes the
		// stat, which the next scan compares).
		c.data, c.sum, c.ino, c.dev, c.mode = []byte{}, emptySum, want.ino, want.dev, want.mode
		if g != nil {
			c.gid = g.blobID(nil)
		}
		return c, nil
	}
	f, err := r.fs.Open(rel)
	if err != nil {
		switch {
		case hostfs.IsNotExist(err), errors.Is(err, hostfs.ErrLink), errors.Is(err, hostfs.ErrNotRegular),
			errors.Is(err, hostfs.ErrEscapes), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
			return c, fmt.Errorf("%s: %w", r.path(rel), errGone)
		case errors.Is(err, fs.ErrPermission), errors.Is(err, hostfs.ErrBusy):
			return c, fmt.Errorf("%w: %w", errUnreadable, err)
		}
		return c, err
	}
	defer f.Close()
	if want != nil && (f.Info.Ino != want.ino || f.Info.Dev != want.dev) {
		return c, fmt.Errorf("%s: %w", r.path(rel), errReplaced)
	}
	c.ino, c.dev, c.mode = f.Info.Ino, f.Info.Dev, unixMode(f.Info.Mode)
	size := f.Info.Size
	if keep && size <= t.maxFile && t.hold.take(size) {
		b, truncated, err := f.ReadHead(t.maxFile)
		switch {
		case err != nil:
			t.hold.give(size)
			return c, readErr(err)
		case truncated || (int64(len(b)) > size && !t.hold.take(int64(len(b))-size)):
			// Grew past the cap, or the budget, while read: hash it
			// instead.
			t.hold.give(size)
		default:
			c.data, c.held, c.size, c.sum = b, max(size, int64(len(b))), int64(len(b)), sha256.Sum256(b)
			if g != nil {
				c.gid = g.blobID(b)
			}
			return c, nil
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return c, err
		}
	}
	// Not kept: hash it as it streams, from what the scan may still
	// read. Git's object id needs the size first; the size read must
	// agree with it.
	if t.hashLeft.Add(-size) < 0 {
		t.hashLeft.Add(size)
		c.size = size
		return c, fmt.Errorf("%w: %d bytes, past what is left of the scan's budget of %d bytes read to hash", errNotHashed, size, t.hashBytes)
	}
	h := sha256.New()
	var gh interface {
		io.Writer
		Sum([]byte) []byte
	}
	w := io.Writer(h)
	if g != nil {
		gh = g.newBlobHash(size)
		w = io.MultiWriter(h, gh)
	}
	n, err := io.Copy(w, f.File)
	if err != nil {
		return c, readErr(err)
	}
	c.size = n
	copy(c.sum[:], h.Sum(nil))
	if gh != nil && n == size {
		c.gid = gh.Sum(nil)
	}
	return c, nil
}

// readErr marks a read that the file's permissions refused as
// errUnreadable.
func readErr(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w: %w", errUnreadable, err)
	}
	return err
}

// budget bounds the bytes of file contents the tracker holds in memory at
// once, over all its workers: a content that does not fit is hashed as it
// streams and recorded by digest.
type budget struct {
	mu        sync.Mutex
	used, max int64
}

// take reserves n bytes; false when they do not fit.
func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n < 0 || b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

// give returns n bytes taken.
func (b *budget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
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
		jobs = append(jobs, dirJob{r: r, rel: "", first: true})
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
		if !seen[k] && k.r.idx.has(k.rel) {
			seen[k] = true
			jobs = append(jobs, dirJob{r: k.r, rel: k.rel})
		}
	}
	// A job below another may be under a directory the other's reading
	// finds gone: what it finds is held to the walk's end.
	for i := range jobs {
		j := &jobs[i]
		j.first = true
		for rel := j.rel; rel != "" && !j.held; {
			rel, _ = splitRel(rel)
			j.held = seen[watched{j.r, rel}]
		}
	}
	// The walk takes its jobs from the end: the shallowest first, so that
	// a held job's directory waits only while the one above it is read.
	slices.SortStableFunc(jobs, func(a, b dirJob) int { return depth(b.rel) - depth(a.rel) })
	return jobs, false
}

// depth is how many names rel has: 0 for a root itself.
func depth(rel string) int {
	if rel == "" {
		return 0
	}
	return strings.Count(rel, "/") + 1
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
	exists bool // any file but a directory
	reg    bool
	known  bool // reg: sum is known
	kept   bool // reg, known: the content is in the store
	at     span // kept: where
	sum    [32]byte
	data   []byte // reg: the content, nil when not held
	held   int64  // bytes of the budget data holds
	ino    uint64
	mtime  int64
	mode   uint32
	size   int64
	typ    string // "fifo", "socket", "device"; "" for a regular file or a link
	link   string // a symlink's target
	// missing says why a regular file's digest or content is not there.
	missing string
}

func (s side) digest() string {
	if !s.reg || !s.known {
		return ""
	}
	return hex.EncodeToString(s.sum[:])
}

// found is what a scan read of one diff.
type found struct {
	old, cur side
	same     bool // the content and mode are unchanged: no change
	replaced bool // the file read was not the one listed: read again next time
	inBulk   bool // under a bulk directory
}

// examine reads what is there now of a diff's path, and what the index
// knew of it before. It reads the current file through the root's
// descriptor, refusing links, and holds contents within the budget only
// when keep is set; the content of a regular file outside bulk
// directories goes into the store, for the before side of its next
// change.
func (t *Tracker) examine(ctx context.Context, d *diff, keep bool) (f found, err error) {
	if ctx.Err() != nil {
		// The scan is cut: the diff is left for the next one, which
		// walks everything (see scanOnce).
		f.replaced = true
		return f, nil
	}
	_, f.inBulk = t.bulk.bulkDir(d.rel())
	keep = keep && !f.inBulk
	var g *repo
	if d.old != nil && d.old.isReg() && d.old.src == srcGit {
		g = d.r.repo
	}
	if c := d.cur; c != nil {
		f.cur = side{exists: true, ino: c.ino, mtime: c.mtime, mode: c.mode, size: c.size, typ: c.typeName()}
		switch {
		case c.isReg():
			f.cur.reg = true
			got, rerr := t.read(d.r, d.rel(), c, g, !f.inBulk)
			switch {
			case errors.Is(rerr, errGone):
				d.cur, f.cur = nil, side{} // gone since the walk: as if not seen
			case errors.Is(rerr, errReplaced):
				f.replaced = true
				return f, nil
			case errors.Is(rerr, errUnreadable):
				f.cur.missing = "unreadable: " + strings.TrimPrefix(rerr.Error(), errUnreadable.Error()+": ")
			case errors.Is(rerr, errNotHashed):
				f.cur.missing = rerr.Error()
			case rerr != nil:
				f.cur.missing = "unreadable: " + rerr.Error()
				err = rerr
			default:
				f.cur.known, f.cur.sum, f.cur.size, f.cur.mode = true, got.sum, got.size, got.mode
				if !f.inBulk && got.data != nil {
					at, kept, perr := t.store.put(got.sum, got.data)
					f.cur.at, f.cur.kept = at, kept
					if perr != nil {
						err = perr
					}
				}
				if keep {
					f.cur.data, f.cur.held = got.data, got.held
				} else {
					t.hold.give(got.held)
				}
				if got.data == nil && !f.inBulk {
					f.cur.missing = fmt.Sprintf("not kept: %d bytes, past the per-file cap or the memory budget", got.size)
				}
				if o := d.old; o != nil && o.isReg() && (got.mode&0o7777) == (o.mode&0o7777) {
					switch {
					case o.src == srcNone && sameStat(o, c):
						// Nothing was known of it but its stat, which
						// has not changed (it was only too recent to
						// trust): it is now known.
						fallthrough
					case o.src == srcSHA && o.sum == got.sum,
						o.src == srcGit && got.gid != nil && bytes.Equal(got.gid, o.sum[:len(got.gid)]):
						f.same = true
						t.hold.give(f.cur.held)
						f.cur.data, f.cur.held = nil, 0
						return f, err
					}
				}
			}
		case c.isLink():
			target, lerr := d.r.fs.Readlink(d.rel())
			if lerr != nil {
				d.cur, f.cur = nil, side{}
				break
			}
			f.cur.link = target
		}
	}
	if o := d.old; o != nil {
		f.old = side{exists: true, ino: o.ino, mtime: o.mtime, mode: o.mode, size: o.size, typ: o.typeName()}
		switch {
		case o.isLink():
			f.old.link = o.link
		case o.isReg():
			f.old.reg = true
			switch o.src {
			case srcSHA:
				f.old.known, f.old.sum, f.old.kept, f.old.at = true, o.sum, o.kept, o.at
			case srcGit:
				if o.size > t.maxFile {
					f.old.missing = fmt.Sprintf("not read: %d bytes, past the per-file cap", o.size)
					break
				}
				n := 20
				if d.r.repo.sha256 {
					n = 32
				}
				b, berr := d.r.repo.blob(ctx, o.sum[:n])
				if berr != nil {
					f.old.missing = "the repository's copy could not be read: " + berr.Error()
					err = errors.Join(err, fmt.Errorf("%s: before content: %w", d.r.path(d.rel()), berr))
					break
				}
				f.old.known, f.old.sum = true, sha256.Sum256(b)
				if keep && t.hold.take(int64(len(b))) {
					f.old.data, f.old.held = b, int64(len(b))
				} else if !f.inBulk {
					f.old.missing = fmt.Sprintf("not kept: %d bytes, past the memory budget", len(b))
				}
			default:
				if f.inBulk {
					f.old.missing = "not hashed: in a bulk directory"
				} else {
					f.old.missing = "not known: the file was unreadable or changing when last seen"
				}
			}
		}
		// Both unreadable, and the stat as the index had it: no change.
		if c := d.cur; c != nil && f.old.reg && f.cur.reg && !f.old.known && !f.cur.known && sameStat(o, c) {
			f.same = true
		}
	}
	return f, err
}

// release gives back the budget a found's contents hold.
func (t *Tracker) release(f *found) {
	t.hold.give(f.old.held + f.cur.held)
	f.old.data, f.old.held, f.cur.data, f.cur.held = nil, 0, nil, 0
}

// apply records in the index what a scan found of a diff, and reports
// whether the diff is a change to record.
func (t *Tracker) apply(d *diff, f *found) bool {
	if f.replaced {
		// Read again by the next scan, from what the index held.
		if d.old != nil {
			d.r.put(d.rel(), *d.old)
		} else {
			d.r.remove(d.rel())
		}
		t.rescan = true
		return false
	}
	if f.same {
		switch {
		case f.cur.reg && !f.cur.known:
			t.settle(*d, [32]byte{}, srcNone, false, span{})
		case d.old.src == srcNone:
			t.settle(*d, f.cur.sum, srcSHA, f.cur.kept, f.cur.at)
		default:
			t.settle(*d, d.old.sum, d.old.src, d.old.kept, d.old.at)
		}
		return false
	}
	if d.cur != nil && d.cur.isReg() {
		if f.cur.known {
			t.settle(*d, f.cur.sum, srcSHA, f.cur.kept, f.cur.at)
		} else {
			t.settle(*d, [32]byte{}, srcNone, false, span{})
		}
	}
	if d.cur == nil {
		t.drop(*d)
	}
	if d.cur != nil && d.cur.isLink() {
		if e := d.r.lookupEdit(d.rel()); e != nil && e.isLink() {
			d.r.idx.grow(d.dir, len(f.cur.link)-len(e.link))
			e.link = f.cur.link
		}
	}
	o, c := f.old, f.cur
	switch {
	case !o.exists && !c.exists:
		return false
	case o.exists && c.exists && !o.reg && !c.reg && o.typ == c.typ && o.link == c.link && o.mode == c.mode:
		// A symlink whose stat alone changed; a FIFO, socket or device
		// whose times changed (its data is not a file's content).
		return false
	}
	return true
}

// The scan is cut when ctx is done or the tracker is closed: its walk
// reads no further directory, the diffs it has not examined are left as
// the index had them, and the error is a *CutError; the next scan walks
// everything.
func (t *Tracker) scan(ctx context.Context, all bool) ([]tool.FileChange, error) {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	defer context.AfterFunc(t.life, func() { stop(errors.New("the tracker is closed")) })()
	out, err := t.scanOnce(ctx, all)
	if ctx.Err() != nil {
		if ce := (*CutError)(nil); !errors.As(err, &ce) {
			// Cut after the walk: the diffs not examined were put back
			// as the index had them, for the next scan (which walks
			// everything).
			t.rescan = true
			err = errors.Join(err, &CutError{Err: ctx.Err()})
		}
	}
	if cerrs := t.compact(); len(cerrs) > 0 {
		err = errors.Join(append([]error{err}, cerrs...)...)
	}
	return out, err
}

// compact merges each root's index overlay into its segment when it has
// passed its budget. It is called where no entry of the overlay is held.
func (t *Tracker) compact() []error {
	var errs []error
	for _, r := range t.roots {
		if err := r.idx.maybeMerge(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func (t *Tracker) scanOnce(ctx context.Context, all bool) ([]tool.FileChange, error) {
	if t.closed {
		return nil, errors.New("changes: the tracker is closed")
	}
	jobs, full := t.jobs(all)
	if full {
		t.fullScans++
	}
	t.hashLeft.Store(t.hashBytes)
	if len(jobs) == 0 && len(t.pending) == 0 {
		return nil, errors.Join(t.compact()...) // nothing to read, nothing to report
	}
	col := t.newDiffSpill()
	defer col.close()
	var errs []error
	goneDirs := map[watched]bool{}
	// Each directory is installed as soon as it is read, and its diffs
	// gathered (spilled to disk past a run), unless a first job above it
	// is still to be read: that one's reading may find a directory on
	// the way to it gone (a process removed it meanwhile), and then what
	// was read below is not installed — the removal covers it. Those wait
	// in held until the jobs above them are read. So what the walk holds
	// at once is a run of diffs and the directories waiting, not a diff
	// per file changed.
	unread := map[watched]bool{} // first jobs not read yet
	for _, j := range jobs {
		unread[watched{j.r, j.rel}] = true
	}
	waits := func(w walked) bool {
		for rel := w.rel; rel != ""; {
			rel, _ = splitRel(rel)
			if unread[watched{w.r, rel}] {
				return true
			}
		}
		return false
	}
	var held []walked
	// Directories the scan could not list, recorded with their metadata
	// rather than skipped (their entries keep what the index had).
	var unlisted []tool.FileChange
	process := func(w walked) {
		if len(goneDirs) > 0 && inGone(goneDirs, w.r, w.rel) {
			// Read before its parent found it gone: the parent's
			// reading has the removal.
			return
		}
		for _, g := range w.gone {
			goneDirs[watched{w.r, g}] = true
			t.gone(w.r, g, col.add)
		}
		if w.vanished {
			return
		}
		switch {
		case w.unlistable && len(unlisted) < maxUnlistedScan:
			// Past the cap, one is left unmarked: a later scan that
			// meets it records it.
			if ch, ok := w.r.unlistable(w); ok {
				unlisted = append(unlisted, ch)
			}
		case w.tooLarge && len(unlisted) < maxUnlistedScan:
			// Recorded with the unlistable ones, under the same cap.
			if ch, ok := w.r.tooLarge(w, t.maxDirBytes, true); ok {
				unlisted = append(unlisted, ch)
			}
		case w.err == nil && !w.tooLarge:
			w.r.listed(w.rel)
		}
		w.r.install(w)
		for _, d := range w.diffs {
			col.add(d)
		}
		t.rescan = t.rescan || w.newLink
		if err := w.r.idx.maybeMerge(); err != nil {
			errs = append(errs, err)
		}
	}
	walkErrs := 0 // the walk's errors, of which maxWalkErrs are kept
	take := func(j dirJob, w walked) {
		if w.err != nil {
			if walkErrs < maxWalkErrs {
				errs = append(errs, w.err)
			}
			walkErrs++
		}
		if j.held && waits(w) {
			held = append(held, w)
		} else {
			process(w)
		}
		if !j.first {
			return
		}
		delete(unread, watched{j.r, j.rel})
		kept := held[:0]
		for _, h := range held {
			if waits(h) {
				kept = append(kept, h)
			} else {
				process(h)
			}
		}
		clear(held[len(kept):])
		held = kept
	}
	if _, cut := t.walk(ctx, jobs, full, time.Now().Add(-RacyWindow).UnixNano(), false, take); cut {
		// Directories were left unread, and the marks that led to them
		// are drained: the next scan walks everything. What this one
		// read is reported; what waits below a first job left unread
		// is not installed (the next scan reads it again).
		t.rescan = true
		errs = append(errs, &CutError{Err: ctx.Err()})
	} else {
		for _, w := range held { // none: every first job has been read
			process(w)
		}
	}
	held = nil
	t.pending = append(t.pending, unlisted...)
	if walkErrs > maxWalkErrs {
		errs = append(errs, fmt.Errorf("and %d more directories could not be read", walkErrs-maxWalkErrs))
	}
	// The diffs hold copies of their entries: what was installed may go
	// to disk now.
	errs = append(errs, t.compact()...)
	if col.n == 0 && len(t.pending) == 0 {
		return nil, errors.Join(errs...)
	}
	var emu sync.Mutex
	fail := func(err error) {
		emu.Lock()
		errs = append(errs, err)
		emu.Unlock()
	}
	if col.n > t.bulkAt || col.pathBytes > t.bulkBytes || len(col.runs) > 0 {
		ch, err := t.scanBulk(ctx, col.iter())
		if err != nil {
			errs = append(errs, err)
		}
		out := append(t.pending, ch...)
		t.pending = nil
		return out, errors.Join(errs...)
	}
	diffs := col.mem // all of them: none was spilled

	col.sortMem()
	// Read what is there now, and what was there before, in parallel.
	fs := make([]found, len(diffs))
	t.parallel(len(diffs), func(i int) {
		f, err := t.examine(ctx, &diffs[i], true)
		if err != nil {
			fail(err)
		}
		fs[i] = f
	})

	var changes []tool.FileChange
	var outHeld int64
	var sides [][2]side
	var bulks []*bulkChange
	var dels, adds []int
	for i := range diffs {
		d, f := &diffs[i], &fs[i]
		if !t.apply(d, f) {
			t.release(f)
			continue
		}
		o, c := f.old, f.cur
		if f.inBulk {
			dir, _ := t.bulk.bulkDir(d.rel())
			bulks = t.addBulk(bulks, d.r, dir, d.rel(), o, c)
			t.release(f)
			continue
		}
		switch {
		case o.exists && !c.exists && o.reg && o.known:
			dels = append(dels, len(changes))
		case !o.exists && c.exists && c.reg && c.known:
			adds = append(adds, len(changes))
		}
		changes = append(changes, t.change(d.r.path(d.rel()), o, c, &outHeld))
		o.data, c.data = nil, nil
		sides = append(sides, [2]side{o, c})
		outHeld += f.old.held + f.cur.held // given back when the scan returns
	}
	t.hold.give(outHeld)
	changes = pairRenames(changes, sides, dels, adds)
	for _, b := range bulks {
		ch, err := b.change()
		if err != nil {
			errs = append(errs, err)
		}
		changes = append(changes, ch)
	}
	slices.SortFunc(changes, func(a, b tool.FileChange) int { return strings.Compare(a.Path, b.Path) })
	out := append(t.pending, changes...)
	t.pending = nil
	return out, errors.Join(errs...)
}

// pairRenames makes a deleted and an added file of the same content one
// change, Path → MovedTo, the same inode and modification time preferred
// (and required for empty files). dels and adds index changes; sides
// holds each change's two sides.
func pairRenames(changes []tool.FileChange, sides [][2]side, dels, adds []int) []tool.FileChange {
	if len(dels) == 0 || len(adds) == 0 {
		return changes
	}
	bySum := map[[32]byte][]int{}
	for _, i := range dels {
		s := sides[i][0].sum
		bySum[s] = append(bySum[s], i)
	}
	moved := map[int]int{} // deleted change → added change
	drop := map[int]bool{}
	for _, a := range adds {
		cur := sides[a][1]
		cands := bySum[cur.sum]
		// A rename keeps the inode and the modification time; a new
		// file may get a freed inode again, but not the old time.
		pick, rank := -1, 0
		for k, i := range cands {
			old := sides[i][0]
			r := 1
			if old.ino == cur.ino {
				r = 2
				if old.mtime == cur.mtime {
					r = 3
				}
			}
			if cur.sum == emptySum && r < 3 {
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
		bySum[cur.sum] = slices.Delete(cands, pick, pick+1)
		moved[i], drop[a] = a, true
	}
	kept := changes[:0:0]
	for i, ch := range changes {
		if a, ok := moved[i]; ok {
			add := changes[a]
			ch.Kind, ch.MovedTo, ch.After, ch.AfterData, ch.AfterUnavailable = tool.ChangeUpdate, add.Path, add.After, add.AfterData, add.AfterUnavailable
			ch.Mode, ch.Size = add.Mode, add.Size
		} else if drop[i] {
			continue
		}
		kept = append(kept, ch)
	}
	return kept
}

// change makes the FileChange of path p from its two sides. A before
// content not held is taken from the store (checked against its digest
// there) while the scan's memory budget allows; held counts the bytes
// taken, which the caller gives back.
func (t *Tracker) change(p string, o, c side, held *int64) tool.FileChange {
	ch := tool.FileChange{Path: p, Kind: tool.ChangeUpdate, Before: o.digest(), After: c.digest(),
		LinkBefore: o.link, LinkAfter: c.link}
	switch {
	case !o.exists:
		ch.Kind = tool.ChangeAdd
	case !c.exists:
		ch.Kind = tool.ChangeDelete
	}
	last := c
	if !c.exists {
		last = o
	}
	ch.Type, ch.Mode = last.typ, fmt.Sprintf("%04o", last.mode&0o7777)
	if last.reg || last.typ != "" {
		ch.Size = last.size
	}
	switch {
	case ch.Before != "" && o.data != nil:
		ch.BeforeData = o.data
	case ch.Before != "" && o.kept:
		if !t.hold.take(o.size) {
			ch.BeforeUnavailable = fmt.Sprintf("not kept: %d bytes, past the memory budget of one scan", o.size)
			break
		}
		b, ok, err := t.store.get(o.sum, o.at)
		switch {
		case err != nil:
			t.hold.give(o.size)
			ch.BeforeUnavailable = err.Error()
		case !ok:
			t.hold.give(o.size)
			ch.BeforeUnavailable = "not kept: the content store does not hold it"
		default:
			ch.BeforeData = b
			*held += o.size
		}
	case o.reg && o.missing != "":
		ch.BeforeUnavailable = o.missing
	case ch.Before != "":
		ch.BeforeUnavailable = fmt.Sprintf("not kept: %d bytes, past the content store's or the per-file cap", o.size)
	}
	switch {
	case ch.After != "" && c.data != nil:
		ch.AfterData = c.data
	case c.reg && c.missing != "":
		ch.AfterUnavailable = c.missing
	}
	return ch
}

// bulkChange gathers the changes beneath one directory into one change
// whose content is their manifest. The manifest is hashed as it is
// written, and held in memory only up to the tracker's spoolAt bytes:
// past that it goes on to a file with no name in the content store's
// directory (spool), so a change of any number of files holds a chunk
// of its manifest, not the whole.
type bulkChange struct {
	r     *root
	dir   string // relative to the root; "" for the root itself
	files int
	bytes int64
	// list is the manifest while it is held in memory, else the lines
	// not yet written to spool.
	list    bytes.Buffer
	line    []byte // the line being made
	sum     hash.Hash
	size    int64
	st      *store
	spoolAt int
	spool   *os.File // nil while the manifest is in memory
	written int64    // bytes of the manifest in spool
}

// spoolChunk is how many bytes of a spooled manifest are gathered before
// they are written.
const spoolChunk = 64 << 10

// newBulk makes the bulk change of dir (relative to r).
func (t *Tracker) newBulk(r *root, dir string) *bulkChange {
	return &bulkChange{r: r, dir: dir, sum: sha256.New(), st: t.store, spoolAt: t.spoolAt}
}

// addBulk adds the change of rel (beneath dir of r) to its bulk change in
// bs, making it when it is the first.
func (t *Tracker) addBulk(bs []*bulkChange, r *root, dir, rel string, o, c side) []*bulkChange {
	var b *bulkChange
	for _, x := range bs {
		if x.r == r && x.dir == dir {
			b = x
		}
	}
	if b == nil {
		b = t.newBulk(r, dir)
		bs = append(bs, b)
	}
	b.add(r.path(rel), o, c)
	return bs
}

// add writes one line of the manifest: KIND TYPE BEFORE AFTER SIZE PATH,
// with "-" for a digest that is not there, the path quoted as a Go
// string, and a symlink's target after " -> ", quoted too. TYPE is that of
// the file after the change (before, for a deletion): file, unreadable,
// link, fifo, socket or device.
func (b *bulkChange) add(p string, o, c side) {
	kind := tool.ChangeUpdate
	switch {
	case !o.exists:
		kind = tool.ChangeAdd
	case !c.exists:
		kind = tool.ChangeDelete
	}
	last := c
	if !c.exists {
		last = o
	}
	typ := last.typ
	switch {
	case typ != "":
	case last.reg && last.known:
		typ = "file"
	case last.reg:
		typ = "unreadable"
	default:
		typ = "link"
	}
	l := b.line[:0]
	l = append(l, kind...)
	l = append(l, ' ')
	l = append(l, typ...)
	for _, s := range []side{o, c} {
		l = append(l, ' ')
		if s.reg && s.known {
			l = hex.AppendEncode(l, s.sum[:])
		} else {
			l = append(l, '-')
		}
	}
	l = append(l, ' ')
	l = strconv.AppendInt(l, last.size, 10)
	l = append(l, ' ')
	l = strconv.AppendQuote(l, p)
	if typ == "link" {
		l = append(l, " -> "...)
		l = strconv.AppendQuote(l, last.link)
	}
	l = append(l, '\n')
	b.line = l
	b.write(l)
	b.files++
	if c.exists {
		b.bytes += c.size
	}
}

// write appends line to the manifest: to memory while the manifest is
// within spoolAt, else to spool a chunk at a time. When no spool can be
// made or written, the manifest goes on in memory (what was written read
// back): it is then held whole, but never incomplete.
func (b *bulkChange) write(line []byte) {
	b.sum.Write(line)
	b.size += int64(len(line))
	b.list.Write(line)
	if b.spool == nil && (b.size <= int64(b.spoolAt) || b.st == nil) {
		return
	}
	if b.spool == nil {
		f, err := b.st.tmpFile("manifest")
		if err != nil {
			b.st = nil // held in memory
			return
		}
		b.spool = f
	}
	if b.list.Len() >= spoolChunk {
		b.flush()
	}
}

// flush writes what list holds to spool; on a failure it reads the
// spooled part back and keeps the whole manifest in memory.
func (b *bulkChange) flush() {
	if b.spool == nil || b.list.Len() == 0 {
		return
	}
	n, err := b.spool.WriteAt(b.list.Bytes(), b.written)
	if err == nil {
		b.written += int64(n)
		b.list.Reset()
		return
	}
	head := make([]byte, b.written, b.size)
	if _, rerr := b.spool.ReadAt(head, 0); rerr != nil {
		// Neither written nor read back: the manifest is lost, which
		// change reports.
		b.list.Reset()
		b.written = -1
		return
	}
	rest := b.list.Bytes()
	b.list = *bytes.NewBuffer(append(head, rest...))
	b.spool.Close()
	b.spool, b.st, b.written = nil, nil, 0
}

// change is the bulk change: Path the directory ("." for the workspace
// root), After the digest of the manifest, AfterData the manifest, or
// AfterFile when it was spooled. An error is a manifest that could be
// neither written nor kept.
func (b *bulkChange) change() (tool.FileChange, error) {
	b.flush()
	p := b.r.path(b.dir)
	if p == "" {
		p = "."
	}
	ch := tool.FileChange{Path: p, Kind: tool.ChangeUpdate, After: hex.EncodeToString(b.sum.Sum(nil)),
		Files: b.files, Bytes: b.bytes}
	switch {
	case b.written < 0:
		ch.AfterUnavailable = "the manifest could not be written to the content store's directory"
		return ch, fmt.Errorf("manifest of %s: lost writing it to the content store's directory", p)
	case b.spool != nil:
		ch.AfterFile = &spooled{f: b.spool, n: b.written}
	default:
		ch.AfterData = b.list.Bytes()
	}
	return ch, nil
}

// spooled is a manifest in a file with no name (tmpFile): only its
// descriptor reaches it, and it is gone once nothing references it (the
// descriptor is closed with the os.File).
type spooled struct {
	f *os.File
	n int64
}

// Open implements tool.Content.
func (s *spooled) Open() (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(s.f, 0, s.n)), nil
}

// Size implements tool.Content.
func (s *spooled) Size() int64 { return s.n }

// bulkChunk is how many diffs a bulk scan reads at once.
const bulkChunk = 1024

// scanBulk records more diffs than one scan reports one by one: a bulk
// change per root, its manifest listing every file changed, read from
// next (sorted by root and path) in chunks so that what is held at once
// stays bounded. Contents are hashed and kept in the store (for the next
// change's before side) but not reported; renames are not paired.
func (t *Tracker) scanBulk(ctx context.Context, next func() (diff, bool, error)) ([]tool.FileChange, error) {
	var errs []error
	var emu sync.Mutex
	// One per root; each manifest goes to disk past spoolAt.
	var bulks []*bulkChange
	chunk := make([]diff, 0, bulkChunk)
	fs := make([]found, bulkChunk)
	for more := true; more; {
		chunk = chunk[:0]
		// A chunk is bounded by bytes too, whatever the paths' length.
		size := 0
		for len(chunk) < bulkChunk && size < spillBytes {
			d, ok, err := next()
			if err != nil {
				errs = append(errs, fmt.Errorf("changes: %w", err))
			}
			if !ok {
				more = false
				break
			}
			// Each diff's full path is made as it is examined, and
			// kept until the chunk is done.
			size += diffBytes + d.pathBytes() + len(d.dir) + 1
			chunk = append(chunk, d)
		}
		t.parallel(len(chunk), func(i int) {
			f, err := t.examine(ctx, &chunk[i], false)
			if err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
			fs[i] = f
		})
		for i := range chunk {
			d, f := &chunk[i], &fs[i]
			if t.apply(d, f) {
				bulks = t.addBulk(bulks, d.r, "", d.rel(), f.old, f.cur)
			}
			t.release(f)
			fs[i] = found{}
		}
		clear(chunk)
		errs = append(errs, t.compact()...)
	}
	var out []tool.FileChange
	for _, b := range bulks {
		if b.files > 0 {
			ch, err := b.change()
			if err != nil {
				errs = append(errs, err)
			}
			out = append(out, ch)
		}
	}
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

// settle records in the index what is now known of a diff's current
// regular file.
func (t *Tracker) settle(d diff, sum [32]byte, src uint8, kept bool, at span) {
	if e := d.r.lookupEdit(d.rel()); e != nil && e.isReg() {
		e.sum, e.src, e.kept, e.at = sum, src, kept, at
	}
}

// drop removes a diff's path from the index, when it was found gone after
// the walk had listed it.
func (t *Tracker) drop(d diff) {
	if e := d.r.lookup(d.rel()); e != nil && !e.isDir() {
		d.r.remove(d.rel())
	}
}

// gone adds a removal for each file the index holds under the directory
// rel, which is no longer one, and drops them from the index.
func (t *Tracker) gone(r *root, rel string, add func(diff)) {
	ents, ok, err := r.idx.get(rel)
	if err != nil || !ok {
		return
	}
	r.idx.del(rel)
	delete(r.linked, rel)
	if r.watch != nil {
		r.watch.remove(r, rel)
	}
	for i := range ents {
		e := ents[i]
		if e.isDir() {
			t.gone(r, path.Join(rel, e.name), add)
			continue
		}
		add(diff{r: r, dir: rel, name: e.name, old: &e})
	}
}

// lookupIn returns the entry named name of a directory's entries, or nil.
func lookupIn(ents []entry, name string) *entry {
	i, ok := slices.BinarySearchFunc(ents, name, func(e entry, n string) int { return strings.Compare(e.name, n) })
	if !ok {
		return nil
	}
	return &ents[i]
}

// lookup returns the index entry of rel, or nil. It is not to be
// modified (lookupEdit's is).
func (r *root) lookup(rel string) *entry {
	dir, name := splitRel(rel)
	ents, _, _ := r.idx.get(dir)
	return lookupIn(ents, name)
}

// lookupEdit returns the index entry of rel, which the caller may modify
// until the index is next merged, or nil.
func (r *root) lookupEdit(rel string) *entry {
	dir, name := splitRel(rel)
	ents, _ := r.idx.edit(dir)
	return lookupIn(ents, name)
}

// remove drops rel (and, for a directory, everything under it) from the
// index.
func (r *root) remove(rel string) {
	dir, name := splitRel(rel)
	ents, _ := r.idx.edit(dir)
	i, ok := slices.BinarySearchFunc(ents, name, func(e entry, n string) int { return strings.Compare(e.name, n) })
	if !ok {
		return
	}
	if ents[i].isDir() {
		r.dropDir(rel)
	}
	r.idx.set(dir, slices.Delete(ents, i, i+1), false)
}

func (r *root) dropDir(rel string) {
	if r.watch != nil {
		r.watch.remove(r, rel)
	}
	ents, _, _ := r.idx.get(rel)
	for _, e := range ents {
		if e.isDir() {
			r.dropDir(path.Join(rel, e.name))
		}
	}
	r.idx.del(rel)
	delete(r.linked, rel)
}

// put inserts or replaces rel's entry, making its directories known.
func (r *root) put(rel string, e entry) {
	dir, name := splitRel(rel)
	r.ensureDir(dir)
	e.name = name
	ents, _ := r.idx.edit(dir)
	i, ok := slices.BinarySearchFunc(ents, name, func(x entry, n string) int { return strings.Compare(x.name, n) })
	if ok {
		if ents[i].isDir() && !e.isDir() {
			r.dropDir(rel)
		}
		r.idx.grow(dir, entBytes(&e)-entBytes(&ents[i]))
		ents[i] = e
		return
	}
	r.idx.set(dir, slices.Insert(ents, i, e), false)
}

// ensureDir makes the directory rel known to the index, with its parents;
// a directory new to the index is taken as empty, so what is in it that
// nobody reported is found by the next scan.
func (r *root) ensureDir(rel string) {
	if rel == "" || r.idx.has(rel) {
		if rel == "" && !r.idx.has("") {
			r.idx.set("", []entry{}, false)
		}
		return
	}
	e := entry{mode: unix.S_IFDIR | 0o755}
	if i, err := r.fs.Lstat(rel); err == nil && i.IsDir() {
		e = fromInfo("", i)
	}
	r.put(rel, e)
	r.idx.set(rel, []entry{}, false)
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
		if t.ign.match(dir, el) {
			return nil, "", false
		}
		if dir == "" && el == AlwaysIgnored && r.hasGit {
			if i, err := r.fs.Lstat(el); err == nil && r.ignores(t.ign, dir, el, i.Dev, i.Ino) {
				return nil, "", false
			}
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
	t.want()
	<-t.ready
	t.mu.Lock()
	defer t.mu.Unlock()
	t.note(changes)
	t.compact() // a failure leaves the overlay in memory, still right
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
		e := entry{mode: unix.S_IFREG | 0o644} // a zero stat: compared at the next scan
		if i, err := r.fs.Lstat(rel); err == nil {
			e = fromInfo("", i)
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
					e.at, e.kept, _ = t.store.put(e.sum, ch.AfterData)
				}
				if !e.isReg() { // not what the tool wrote any more
					e.mode, e.ino, e.size = unix.S_IFREG|0o644, 0, -1
				}
			}
		}
		if e.isLink() {
			if target, err := r.fs.Readlink(rel); err == nil {
				e.link = target
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
	old := side{exists: true, reg: true, known: true, mode: e.mode, size: e.size}
	switch e.src {
	case srcSHA:
		if e.sum == before {
			return
		}
		old.sum, old.kept, old.at = e.sum, e.kept, e.at
	case srcGit:
		if ch.BeforeData == nil || r.repo == nil {
			return
		}
		gid := r.repo.blobID(ch.BeforeData)
		if bytes.Equal(gid, e.sum[:len(gid)]) {
			return
		}
	}
	cur := side{exists: true, reg: true, known: true, sum: before, data: ch.BeforeData, mode: e.mode, size: int64(len(ch.BeforeData))}
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
	var held int64
	t.pending = append(t.pending, t.change(r.path(rel), old, cur, &held))
	t.hold.give(held)
}

//go:build linux

package changes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/hostfs"
)

// entry is what the stat index holds of one directory entry: its stat
// (no content is read to build it) and, for a regular file, what is known
// of its content.
type entry struct {
	name  string
	mode  uint32 // st_mode: type and permission bits
	size  int64
	mtime int64 // ns
	ctime int64 // ns
	ino   uint64
	dev   uint64
	link  string // a symlink's target, as last read
	// sum is the content's SHA-256 when src is srcSHA, or its git object
	// id (20 or 32 bytes) when src is srcGit.
	sum  [32]byte
	src  uint8
	kept bool // srcSHA: the content is in the store
	at   span // kept: where
	// linked: a regular file with more than one name. A write through
	// another name sends its inotify event to that name's directory only,
	// so a scan reads this entry's directory every time.
	linked bool
	// racy: the stat is too recent to prove the content unchanged (a write
	// in the same timestamp tick leaves it as it was); the next scan
	// compares the content.
	racy bool
}

// The sources of an entry's sum.
const (
	srcNone uint8 = iota // content unknown
	srcSHA               // sum is the SHA-256
	srcGit               // sum is the index's blob id; the file was clean at the baseline
)

func (e *entry) isDir() bool  { return e.mode&unix.S_IFMT == unix.S_IFDIR }
func (e *entry) isReg() bool  { return e.mode&unix.S_IFMT == unix.S_IFREG }
func (e *entry) isLink() bool { return e.mode&unix.S_IFMT == unix.S_IFLNK }

// typeName names an entry's type as a FileChange's Type does: "" for a
// regular file or a symlink.
func (e *entry) typeName() string {
	switch e.mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	}
	return ""
}

// sameStat reports whether the stat of two entries of one path is equal:
// same type, permissions, size, inode, modification and change times.
func sameStat(a, b *entry) bool {
	return a.mode == b.mode && a.size == b.size && a.mtime == b.mtime && a.ctime == b.ctime && a.ino == b.ino && a.dev == b.dev
}

// fromInfo makes an entry of what fstatat said. Every kind of file is an
// entry: FIFOs, sockets and devices too, which are compared by their stat
// and never opened.
func fromInfo(name string, i hostfs.Info) entry {
	e := entry{name: name, mode: unixMode(i.Mode), size: i.Size, mtime: i.ModTime, ctime: i.ChangeTime, ino: i.Ino, dev: i.Dev}
	switch {
	case i.Mode.IsRegular():
		e.linked = i.Nlink > 1
	case i.Mode.IsDir():
		e.size, e.mtime, e.ctime = 0, 0, 0 // a directory's own stat is not compared
	}
	return e
}

// unixMode turns a FileMode back into st_mode's type and permission bits.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	switch {
	case m&fs.ModeDir != 0:
		u |= unix.S_IFDIR
	case m&fs.ModeSymlink != 0:
		u |= unix.S_IFLNK
	case m&fs.ModeNamedPipe != 0:
		u |= unix.S_IFIFO
	case m&fs.ModeSocket != 0:
		u |= unix.S_IFSOCK
	case m&fs.ModeCharDevice != 0:
		u |= unix.S_IFCHR
	case m&fs.ModeDevice != 0:
		u |= unix.S_IFBLK
	default:
		u |= unix.S_IFREG
	}
	if m&fs.ModeSetuid != 0 {
		u |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		u |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		u |= unix.S_ISVTX
	}
	return u
}

// diff is one entry of a directory that differs from the index: added
// (old nil), removed (cur nil), or changed in stat or type.
//
// Its path is held as its directory and its name: every diff of one
// directory shares that directory's string, and the name is its entry's,
// so a directory of many files with a long path costs a path once, not
// once per file. rel makes the full path when one is needed.
type diff struct {
	r    *root
	dir  string // the entry's directory relative to its root ("" for the root)
	name string
	old  *entry
	cur  *entry
	// full is the path rel made, kept while the diff is examined and
	// applied (not while it is gathered: see diffSpill).
	full string
}

// rel is the entry's path relative to its root.
func (d *diff) rel() string {
	switch {
	case d.full != "":
	case d.dir == "":
		d.full = d.name
	default:
		d.full = d.dir + "/" + d.name
	}
	return d.full
}

// pathBytes is how many bytes the diff's strings hold that are its own
// (its name, and the link targets of its entries); the directory, shared,
// is counted by whoever holds it.
func (d *diff) pathBytes() int {
	n := len(d.name)
	if d.old != nil {
		n += len(d.old.link)
	}
	if d.cur != nil {
		n += len(d.cur.link)
	}
	return n
}

// dirJob is a directory to read.
type dirJob struct {
	r   *root
	rel string
	// first: the job is one the walk began with, not a subdirectory it
	// found.
	first bool
	// held: the job is below another of the walk's first jobs, whose
	// reading may find a directory on the way to it gone; what is found
	// from it waits until that one is read (see Tracker.scanOnce). The
	// jobs it leads to inherit it.
	held bool
}

// subdirBytes is what a subdirectory costs a scan besides its entry and
// its path (which is counted too): its record in the index's overlay and
// the walk's job and result for it. A directory of 30,000 subdirectories
// with 200-byte names held 1.2 KB of heap a subdirectory while it was
// scanned, a third of it their entries and names.
const subdirBytes = 512

// bigDirBytes is the size (st_size) past which a directory is large: on
// ext4 about 10,000 entries of short names, on tmpfs 13,000.
const bigDirBytes = 256 << 10

// walked is a directory as read.
type walked struct {
	r   *root
	rel string
	// vanished: the directory was gone when it was to be read (and the
	// scan reads only some directories: its parent's reading sees it
	// gone).
	vanished bool
	linked   bool // an entry is a file with another name
	// newLink: an entry has a name more than the index knew; the other
	// may be in a directory this scan does not read.
	newLink bool
	// unlistable: listing the directory was refused (EACCES, EPERM);
	// unlistMode is its st_mode then.
	unlistable bool
	unlistMode uint32
	// tooLarge: what the tracker would keep of the directory (dirBytes:
	// its entries' records, names and link targets) is past
	// Tracker.maxDirBytes. Nothing of it is compared or installed (the
	// index keeps what it had; a directory the index did not know is
	// known as empty), and the scan records it (root.tooLarge). stamp is
	// its own stat then.
	tooLarge bool
	dirBytes int
	stamp    dirStamp
	// big: the directory is large (bigDirBytes), and its reader holds
	// the walk's one turn for large directories (Tracker.bigDir) until
	// the directory is taken.
	big bool
	// same: the directory is as the index has it (ents is nil: nothing
	// to install but linked).
	same  bool
	ents  []entry
	diffs []diff
	// gone lists the subdirectories of the index that are no longer
	// directories: what was under them is removed.
	gone []string
	err  error
}

// walk reads directories with a pool of workers and compares each with
// the index. It starts with jobs and reads the subdirectories of each
// directory read: all of them when full, else only those new to the
// index. racyFrom is the time (ns) from which a stat is too recent to be
// trusted.
//
// It returns the directories that differ from the index and those that
// failed, and does not change the index, except that install (the
// baseline: an empty index, nothing to compare) installs each directory
// as it is read and returns only failures. A directory as the index has
// it only updates the root's linked set: a walk of a tree where nothing
// changed holds nothing per directory, whatever the tree holds.
//
// take, when set (and not install), is given every directory as it is
// read, with its job, in place of the above: the walk then returns
// nothing. It is called by one worker at a time.
//
// When ctx is done the workers read no further directory: the walk ends
// once the directories being read are read, what is still queued is not
// read, and cut says so.
func (t *Tracker) walk(ctx context.Context, jobs []dirJob, full bool, racyFrom int64, install bool, take func(dirJob, walked)) (_ []walked, cut bool) {
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		queue   []dirJob
		active  int
		results []walked
	)
	queue = append(queue, jobs...)
	var wg sync.WaitGroup
	for range t.workers {
		wg.Go(func() {
			var scratch readScratch
			for {
				mu.Lock()
				for len(queue) == 0 && active > 0 {
					cond.Wait()
				}
				if len(queue) > 0 && ctx.Err() != nil {
					cut = true
					clear(queue)
					queue = queue[:0]
				}
				if len(queue) == 0 {
					mu.Unlock()
					cond.Broadcast()
					return
				}
				j := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				active++
				mu.Unlock()

				w, sub := t.readDir(j, full, racyFrom, &scratch)

				mu.Lock()
				switch {
				case install:
					if w.tooLarge {
						j.r.tooLarge(w, t.maxDirBytes, false)
					}
					j.r.install(w)
					if err := j.r.idx.maybeMerge(); err != nil && w.err == nil {
						w.err = err
					}
					if w.err != nil {
						results = append(results, walked{r: w.r, rel: w.rel, err: w.err, same: true})
					}
				case take != nil:
					take(j, w)
				case w.same && w.err == nil:
					j.r.install(w)
				default:
					results = append(results, w)
				}
				for _, s := range sub {
					queue = append(queue, dirJob{r: j.r, rel: s, held: j.held})
				}
				active--
				mu.Unlock()
				cond.Broadcast()
				if w.big {
					// Given back once the directory is taken: its
					// entries are then the index's, its diffs the
					// scan's (spilled past their budget).
					<-t.bigDir
				}
			}
		})
	}
	wg.Wait()
	return results, cut
}

// readScratch is what a walk's worker reuses from one directory to the
// next: the index's entries of a directory, decoded, and the directory's
// listing as it is read, each kept for the next directory while it is
// no longer than scratchEntries.
type readScratch struct {
	old, list []entry
	order     []int32 // the listing's order by name
}

// scratchEntries is the most entries a worker keeps of a directory for
// the next one.
const scratchEntries = 1024

// readDir reads one directory, stats its entries and compares them with
// the index; it returns the subdirectories to read. The index's entries
// are decoded into scratch.old, and the listing read into scratch.list,
// which the caller passes again for the next directory: nothing returned
// points into them, nor into the one copy of the index's record that
// their strings share (what is kept of them is cloned).
func (t *Tracker) readDir(j dirJob, full bool, racyFrom int64, scratch *readScratch) (walked, []string) {
	w := walked{r: j.r, rel: j.rel}
	// Read only: the walk installs what it read only in the baseline,
	// where every directory is read once and the index is empty.
	old, decoded, known, ierr := j.r.idx.getInto(j.rel, scratch.old)
	if decoded {
		scratch.old = old[:0]
	} else if cap(old) > cap(scratch.old) && len(old) <= scratchEntries {
		scratch.old = make([]entry, 0, cap(old)) // large enough next time
	}
	if ierr != nil {
		// The index cannot say what was here: it keeps what it had.
		w.err, w.same = fmt.Errorf("index of %s: %w", j.r.abspath(j.rel), ierr), true
		return w, nil
	}
	// Opened from the root's descriptor, refusing every link on the way:
	// a directory swapped for a link since its parent was read is gone.
	name := j.rel
	if name == "" {
		name = "."
	}
	var ents []entry
	d, err := j.r.fs.OpenDir(name)
	if err == nil {
		// Large directories are read one at a time: each costs its
		// entries and a diff per entry while it is read and taken, and
		// several at once (one per worker) would add those up.
		var st unix.Stat_t
		if unix.Fstat(d.Fd(), &st) == nil {
			w.stamp = dirStamp{ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), mode: st.Mode}
			if st.Size > bigDirBytes {
				t.bigDir <- struct{}{}
				w.big = true
			}
		}
		if t.watch != nil {
			// Watched through the descriptor just opened, before reading:
			// no change in it is missed, and no link leads the watch
			// elsewhere.
			t.watch.ensureOpen(j.r, j.rel, d)
		}
		// What is kept of the directory is counted as it is listed: a
		// link's target by its size (what readlink will return), before
		// a byte of it is read. The listing is read a batch of names at
		// a time, and past maxDirBytes the entries are let go and the
		// listing stops: a directory of any size costs the host at most
		// the bound and a batch.
		list := scratch.list[:0]
		err = d.ListFunc(func(name string, info hostfs.Info) bool {
			if j.r.ignores(t.ign, j.rel, name, info.Dev, info.Ino) {
				return true
			}
			w.dirBytes += entryBytes + len(name)
			switch {
			case info.Mode&fs.ModeSymlink != 0:
				w.dirBytes += int(max(info.Size, 0))
			case info.Mode.IsDir():
				w.dirBytes += subdirBytes + len(j.rel) + 1 + len(name)
			}
			if w.dirBytes > t.maxDirBytes {
				w.tooLarge = true
				return false
			}
			list = append(list, fromInfo(name, info))
			return true
		})
		d.Close()
		if err == nil && !w.tooLarge {
			// The index and the merge below take the entries sorted by
			// name; the file system lists them in its own order. The
			// listing becomes the index's: a slice of its own, of its
			// length, each entry copied once (sorting the entries
			// themselves would copy them at every comparison).
			order := scratch.order[:0]
			for i := range list {
				order = append(order, int32(i))
			}
			slices.SortFunc(order, func(a, b int32) int { return strings.Compare(list[a].name, list[b].name) })
			ents = make([]entry, 0, len(list))
			for _, i := range order {
				ents = append(ents, list[i])
			}
			if cap(order) <= scratchEntries {
				scratch.order = order
			}
		}
		clear(list) // no name kept alive by the scratch
		if cap(list) <= scratchEntries {
			scratch.list = list[:0]
		}
		if err == nil && w.tooLarge {
			return tooLarge(w, old, known), subdirsIf(full, j.rel, old)
		}
	}
	if err != nil {
		if hostfs.IsNotExist(err) || errors.Is(err, hostfs.ErrLink) || errors.Is(err, hostfs.ErrNotRegular) ||
			errors.Is(err, unix.ENOTDIR) {
			if !full {
				w.vanished = true
				return w, nil
			}
			// Gone (or replaced) since its parent was read: empty now.
			ents = nil
		} else {
			// Unreadable: nothing is known, the index keeps what it had.
			w.err = fmt.Errorf("list %s: %w", j.r.abspath(j.rel), err)
			w.same = true
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				// Recorded as unlistable, with its mode: a command
				// that hides a directory from Truss is seen doing so.
				w.unlistable = true
				if i, serr := j.r.fs.Lstat(name); serr == nil {
					w.unlistMode = unixMode(i.Mode)
				}
			}
			for i := range old {
				w.linked = w.linked || old[i].linked
			}
			if !full {
				return w, nil
			}
			return w, subdirs(j.rel, old)
		}
	}

	// Merge with the index's entries (both sorted by name).
	var sub []string
	changed := len(ents) != len(old)
	i, k := 0, 0
	for i < len(ents) || k < len(old) {
		var cur, prev *entry
		switch {
		case k == len(old) || (i < len(ents) && ents[i].name < old[k].name):
			cur = &ents[i]
			i++
		case i == len(ents) || old[k].name < ents[i].name:
			prev = &old[k]
			k++
		default:
			cur, prev = &ents[i], &old[k]
			i++
			k++
		}
		name := ""
		if cur != nil {
			name = cur.name
		} else {
			name = prev.name
		}
		// A subdirectory's path, made only for a subdirectory: a file's
		// diff holds its directory's string and its name.
		rel := func() string {
			switch {
			case j.rel != "":
				return j.rel + "/" + name
			case cur == nil:
				return strings.Clone(name) // the index's: a view of its record
			}
			return name
		}
		if cur != nil && cur.isDir() && (full || prev == nil || !prev.isDir()) {
			sub = append(sub, rel())
		}
		if prev != nil && prev.isDir() && (cur == nil || !cur.isDir()) {
			w.gone = append(w.gone, rel())
		}
		if cur != nil && !cur.isDir() && (cur.mtime >= racyFrom || cur.ctime >= racyFrom) {
			cur.racy = true
		}
		switch {
		case cur != nil && prev != nil && cur.isDir() && prev.isDir():
			continue
		case cur != nil && prev != nil && sameStat(cur, prev) && !prev.racy:
			cur.sum, cur.src, cur.kept, cur.at, cur.link = prev.sum, prev.src, prev.kept, prev.at, prev.link
			continue
		}
		changed = true
		d := diff{r: j.r, dir: j.rel}
		if cur != nil {
			d.name = cur.name
		}
		if prev != nil && !prev.isDir() {
			p := *prev
			p.name, p.link = strings.Clone(p.name), strings.Clone(p.link)
			d.old = &p
			if cur == nil {
				d.name = p.name
			}
		}
		if cur != nil && !cur.isDir() {
			// The walk's entries become the index's as they are
			// (index.set with shared), never modified in place.
			d.cur = cur
		}
		if d.old != nil || d.cur != nil {
			w.diffs = append(w.diffs, d)
		}
	}
	if !changed && old != nil {
		ents, w.same = old, true // nothing differs: the index keeps its own
	}
	w.ents = ents
	for i := range ents {
		if ents[i].linked {
			w.linked = true
			if !full {
				if o := lookupIn(old, ents[i].name); o == nil || !o.linked {
					w.newLink = true
				}
			}
		}
	}
	if w.same {
		w.ents = nil
	}
	return w, sub
}

// dirStamp is a directory's own stat: its inode and times, which change
// when an entry is made, removed or renamed in it.
type dirStamp struct {
	ino          uint64
	mtime, ctime int64
	mode         uint32
}

// tooLarge makes w, a directory past maxDirBytes, what a walk returns of
// it: the index keeps the entries it had (old), or knows the directory as
// empty when it did not know it (known false), so that the events in it
// lead later scans to it.
func tooLarge(w walked, old []entry, known bool) walked {
	w.same = known
	if !known {
		w.ents = []entry{}
	}
	for i := range old {
		w.linked = w.linked || old[i].linked
	}
	return w
}

// subdirsIf is subdirs(rel, ents) when full, else nil.
func subdirsIf(full bool, rel string, ents []entry) []string {
	if !full {
		return nil
	}
	return subdirs(rel, ents)
}

// subdirs lists the directories among ents, as paths under rel, in
// strings of their own (ents may be views of an index record).
func subdirs(rel string, ents []entry) []string {
	var out []string
	for i := range ents {
		if ents[i].isDir() {
			out = append(out, strings.Clone(path.Join(rel, ents[i].name)))
		}
	}
	return out
}

// under reports whether rel is dir or below it.
func under(rel, dir string) bool {
	return rel == dir || strings.HasPrefix(rel, dir+"/")
}

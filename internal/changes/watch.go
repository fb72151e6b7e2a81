//go:build linux

package changes

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/hostfs"
)

// watcher narrows a scan to the directories the kernel says changed: an
// inotify watch on every tracked directory marks it dirty when an entry
// of it is created, written, has its attributes changed, is deleted or is
// renamed. Events are queued by the kernel as the changes happen, so
// reading the queue at a scan's start finds every change the command
// made. When the queue overflowed (more than
// /proc/sys/fs/inotify/max_queued_events changes between two scans) or a
// directory could not be watched, the next scan walks everything, as it
// does without a watcher.
//
// A write through one name of a file with several (hard links) sends its
// event to that name's directory only, so the directories of such files
// are read by every scan; a scan that finds a new name of a file makes
// the next one walk everything, to find the other names. What inotify does not see: a write through a
// memory mapping (no event until the file's times change, which the stat
// comparison of a later full walk finds). Options.NoWatch makes every
// scan a full walk. At most Options.MaxWatches watches are held (the
// kernel's limit is per user, shared with the user's editors): while a
// directory is left unwatched for that cap, every scan is a full walk.
type watcher struct {
	fd int

	mu sync.Mutex
	// wds holds every name a watch serves: a directory moved, or reached
	// again under another name, keeps its one watch descriptor.
	wds    map[int32][]watched
	byDir  map[watched]int32
	dirty  map[watched]bool
	broken bool // the next scan walks everything
	// max bounds the watches held; unwatched holds the directories not
	// watched for it, each of which makes every scan a full walk.
	max       int
	adding    int // watches being added, outside mu: they count against max
	unwatched map[watched]bool
}

// watched names a directory: its root and its path relative to it.
type watched struct {
	r   *root
	rel string
}

// The events that mark a directory dirty.
const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

func newWatcher(maxWatches int) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &watcher{fd: fd, wds: map[int32][]watched{}, byDir: map[watched]int32{}, dirty: map[watched]bool{},
		max: maxWatches, unwatched: map[watched]bool{}}, nil
}

// ensure watches a directory not watched yet, opening it from the root
// without following any link.
func (w *watcher) ensure(r *root, rel string) {
	if w.has(r, rel) {
		return
	}
	name := rel
	if name == "" {
		name = "."
	}
	d, err := r.fs.OpenDir(name)
	if err != nil {
		w.failed(err)
		return
	}
	defer d.Close()
	w.add(r, rel, d.Fd())
}

// ensureOpen watches the directory open as d (opened as rel from the
// root, refusing links) when rel is not watched yet.
func (w *watcher) ensureOpen(r *root, rel string, d *hostfs.Root) {
	if !w.has(r, rel) {
		w.add(r, rel, d.Fd())
	}
}

func (w *watcher) has(r *root, rel string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.byDir[watched{r, rel}]
	return ok
}

// failed notes a directory that could not be watched: one gone is fine
// (its parent's scan sees it gone); any other failure (the watch limit)
// makes the next scan walk everything.
func (w *watcher) failed(err error) {
	if hostfs.IsNotExist(err) || errors.Is(err, hostfs.ErrLink) || errors.Is(err, hostfs.ErrNotRegular) ||
		errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return
	}
	w.mu.Lock()
	w.broken = true
	w.mu.Unlock()
}

// mark makes the next scan read a directory.
func (w *watcher) mark(r *root, rel string) {
	w.mu.Lock()
	w.dirty[watched{r, rel}] = true
	w.mu.Unlock()
}

// add watches the directory open as fd under the name rel. The watch is
// added through the descriptor (/proc/self/fd/N), never by a path a
// command could have turned into a link to another tracked directory.
// When the kernel returns a descriptor that already serves another name
// (the same directory moved, or reached again), the watch serves both.
func (w *watcher) add(r *root, rel string, fd int) {
	k := watched{r, rel}
	w.mu.Lock()
	// Watches being added by other workers hold their places: the cap
	// counts them.
	full := len(w.wds)+w.adding >= w.max
	if full {
		w.unwatched[k] = true
	} else {
		w.adding++
	}
	w.mu.Unlock()
	if full {
		return
	}
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.adding--
	if err != nil {
		// The directory is open: any failure (the kernel's limit, no
		// /proc) leaves it unwatched, so the next scan walks everything.
		w.broken = true
		return
	}
	delete(w.unwatched, k)
	if old, ok := w.byDir[k]; ok && old != int32(wd) {
		w.unname(old, k)
	}
	w.byDir[k] = int32(wd)
	if !slices.Contains(w.wds[int32(wd)], k) {
		w.wds[int32(wd)] = append(w.wds[int32(wd)], k)
	}
}

// unname drops name k from watch wd, removing the watch when no other
// name still uses it. w.mu is held.
func (w *watcher) unname(wd int32, k watched) {
	names := slices.DeleteFunc(w.wds[wd], func(n watched) bool { return n == k })
	if len(names) > 0 {
		w.wds[wd] = names
		return
	}
	delete(w.wds, wd)
	unix.InotifyRmWatch(w.fd, uint32(wd))
}

// remove stops watching a directory gone from the index under the name
// rel; its watch stays while another name (the same directory, moved or
// reached again) still uses it.
func (w *watcher) remove(r *root, rel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := watched{r, rel}
	delete(w.unwatched, k)
	wd, ok := w.byDir[k]
	if !ok {
		return
	}
	delete(w.byDir, k)
	w.unname(wd, k)
}

// drain reads the queued events and returns the dirty directories, or
// all false when the next scan must walk everything.
func (w *watcher) drain() (dirty []watched, full bool) {
	var buf [64 << 10]byte
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		n, err := unix.Read(w.fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			break // EAGAIN: the queue is empty
		}
		b := buf[:n]
		for len(b) >= unix.SizeofInotifyEvent {
			wd := int32(binary.NativeEndian.Uint32(b[0:4]))
			mask := binary.NativeEndian.Uint32(b[4:8])
			nlen := int(binary.NativeEndian.Uint32(b[12:16]))
			if unix.SizeofInotifyEvent+nlen > len(b) {
				w.broken = true
				break
			}
			b = b[unix.SizeofInotifyEvent+nlen:]
			if mask&unix.IN_Q_OVERFLOW != 0 {
				w.broken = true
				continue
			}
			names, ok := w.wds[wd]
			if !ok {
				continue
			}
			for _, k := range names {
				w.dirty[k] = true
			}
			if mask&unix.IN_IGNORED != 0 { // the directory is gone
				delete(w.wds, wd)
				for _, k := range names {
					if w.byDir[k] == wd {
						delete(w.byDir, k)
					}
				}
			}
		}
	}
	full = w.broken || len(w.unwatched) > 0
	if !full {
		for k := range w.dirty {
			dirty = append(dirty, k)
		}
	}
	w.broken = false
	clear(w.dirty)
	return dirty, full
}

func (w *watcher) close() { unix.Close(w.fd) }

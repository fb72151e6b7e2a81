//go:build linux

package changes

import (
	"encoding/binary"
	"errors"
	"sync"

	"golang.org/x/sys/unix"
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
// scan a full walk.
type watcher struct {
	fd int

	mu     sync.Mutex
	wds    map[int32]watched
	byDir  map[watched]int32
	dirty  map[watched]bool
	broken bool // the next scan walks everything
}

// watched names a directory: its root and its path relative to it.
type watched struct {
	r   *root
	rel string
}

// The events that mark a directory dirty.
const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

func newWatcher() (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &watcher{fd: fd, wds: map[int32]watched{}, byDir: map[watched]int32{}, dirty: map[watched]bool{}}, nil
}

// ensure watches a directory not watched yet.
func (w *watcher) ensure(r *root, rel string) {
	w.mu.Lock()
	_, ok := w.byDir[watched{r, rel}]
	w.mu.Unlock()
	if !ok {
		w.add(r, rel)
	}
}

// mark makes the next scan read a directory.
func (w *watcher) mark(r *root, rel string) {
	w.mu.Lock()
	w.dirty[watched{r, rel}] = true
	w.mu.Unlock()
}

// add watches a directory; a failure (the watch limit) makes every later
// scan a full walk.
func (w *watcher) add(r *root, rel string) {
	wd, err := unix.InotifyAddWatch(w.fd, r.abspath(rel), watchMask)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			w.broken = true // gone is fine: its parent's scan sees it gone
		}
		return
	}
	k := watched{r, rel}
	w.wds[int32(wd)] = k // a directory moved keeps its watch: it has a new name now
	w.byDir[k] = int32(wd)
}

// remove stops watching a directory gone from the index, unless its watch
// now serves a directory of another name (the same one, moved).
func (w *watcher) remove(r *root, rel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := watched{r, rel}
	wd, ok := w.byDir[k]
	if !ok {
		return
	}
	delete(w.byDir, k)
	if w.wds[wd] == k {
		delete(w.wds, wd)
		unix.InotifyRmWatch(w.fd, uint32(wd))
	}
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
			k, ok := w.wds[wd]
			if !ok {
				continue
			}
			if mask&unix.IN_IGNORED != 0 { // the directory is gone
				delete(w.wds, wd)
				if w.byDir[k] == wd {
					delete(w.byDir, k)
				}
			}
			w.dirty[k] = true
		}
	}
	full = w.broken
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

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/sandbox/helper"
)

// The disk budget's second measure: the space the session's files take.
//
// write_bytes (watcher.account) misses what a process wrote when it is
// gone before a poll sees it and no parent waits for it: the kernel adds
// a child's I/O counters to its parent's only in wait(), and a parent
// that ignores SIGCHLD, or sets SA_NOCLDWAIT, has its children reaped
// without one. Nothing an unprivileged process can use closes that:
// seccomp cannot refuse SIG_IGN for SIGCHLD (the disposition is behind
// rt_sigaction's pointer argument, and refusing every change of SIGCHLD
// would break every shell, which installs a handler); per-exit taskstats
// need CAP_NET_ADMIN in the initial namespace; io.stat needs the io
// controller delegated and cgroup v2, and sees only block devices, late
// (at writeback). What the writes leave is in files, though: in the
// writable roots, or in a file deleted but held open by a process of the
// sandbox.
//
// So the watcher also watches the free space of the file systems that
// hold the writable roots (statfs, cheap, every disk poll). That drop
// counts the host's writes too, so it only triggers a walk of the
// writable roots, which sums the blocks of every file changed since the
// session began (a process cannot set a ctime back) and of every file
// deleted but held open by a process of the sandbox. The budget is
// broken when either measure passes it.
//
// Files count as well as bytes: every inode a command takes is space the
// file system cannot give again, and a command can make millions of
// empty files that take no blocks and write no bytes, until no file can
// be made on the file system that holds the user's home. So each file
// the walk counts takes at least fileCost bytes of the budget (a block,
// 4 KiB, or more when the budget is large for the file system's free
// inodes: a budget that half the free inodes reach), and the free space
// watched is the free blocks plus the free inodes at that cost.

// spaceWalkCost bounds the time spent walking: a walk that took d waits
// spaceWalkCost×d before the next (a tenth of a core at most, when the
// host keeps the free space falling past the budget), but no more than
// spaceWalkWait: a command that makes millions of files to slow the walks
// down delays the budget by seconds, not minutes.
const (
	spaceWalkCost = 9
	spaceWalkWait = 10 * time.Second
)

type space struct {
	roots []string
	// since is when the session began, less a second: change times come
	// from a clock that may lag a tick.
	since time.Time // files changed since count
	fs    []fsFree

	fileCost int64  // the least a file takes of the budget
	held     int64  // what the last walk found
	unread   string // what it could not read or size (a directory, a mapped file), "" for none
	deleted  string // what holds the first deleted object it found, "" for none
	nextWalk time.Time
	// statMapped stats a file through a /proc/PID/map_files link
	// (syscall.Stat; the tests make it fail as it does without the
	// capability).
	statMapped func(path string, st *syscall.Stat_t) error
}

// fsFree is a file system that holds a writable root or a mount below
// one.
type fsFree struct {
	path string
	dev  uint64
	high int64 // the most free space since the last walk
}

// minFileCost is the least a file takes of the disk budget: a block.
const minFileCost = 4096

// newSpace watches the file systems of the writable roots, and of the
// mounts below them, for a session whose budget is budget bytes.
func newSpace(roots []string, budget int64) *space {
	s := &space{since: time.Now().Add(-time.Second), fileCost: minFileCost, statMapped: syscall.Stat}
	seen := map[uint64]bool{}
	watch := func(p string) {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || seen[st.Dev] {
			return
		}
		if len(s.fs) == 0 {
			// The first root's file system sets the cost: half its
			// free inodes take the whole budget, or a block each.
			var sf unix.Statfs_t
			if unix.Statfs(p, &sf) == nil && sf.Ffree > 0 {
				s.fileCost = max(minFileCost, 2*budget/int64(sf.Ffree))
			}
		}
		if free, ok := s.freeBlocks(p); ok {
			seen[st.Dev] = true
			s.fs = append(s.fs, fsFree{path: p, dev: st.Dev, high: free})
		}
	}
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			continue
		}
		if e, err := filepath.EvalSymlinks(r); err == nil {
			r = e
		}
		s.roots = append(s.roots, r)
		// The nearest directory that exists: a root made later is on
		// its file system.
		p := r
		for !pathExists(p) && p != "/" {
			p = filepath.Dir(p)
		}
		watch(p)
	}
	for _, m := range mountPoints() {
		for _, r := range s.roots {
			if under(m, r) {
				watch(m)
			}
		}
	}
	return s
}

func pathExists(p string) bool { _, err := os.Stat(p); return err == nil }

// mountPoints lists where this process sees file systems mounted.
func mountPoints() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			out = append(out, helper.UnescapeMount(f[4]))
		}
	}
	return out
}

// freeBlocks is the free space of path's file system, the blocks kept
// for root included (a process root in its user namespace is not root
// to the file system, but the host's may be), plus its free inodes at
// fileCost each (file systems without an inode count report none).
func (s *space) freeBlocks(path string) (int64, bool) {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return 0, false
	}
	return int64(st.Bfree)*st.Bsize + int64(st.Ffree)*s.fileCost, true
}

// fall is how much free space the file systems lost since they last
// had the most since the last walk, each counted alone: space the host
// frees, on the same file system or another, hides none the sandbox
// takes. reset starts again from now, for a walk.
func (s *space) fall(reset bool) int64 {
	var d int64
	for i := range s.fs {
		f := &s.fs[i]
		free, ok := s.freeBlocks(f.path)
		if !ok {
			continue
		}
		if reset || free > f.high {
			f.high = free
		}
		d += f.high - free
	}
	return d
}

// check returns what the session's files take, walking the writable roots
// when the free space lost since the last walk could have taken them past
// limit; otherwise the last walk's figure. pids are the sandbox's
// processes, whose descriptors may hold deleted files.
func (s *space) check(limit int64, pids func() []int) int64 {
	if len(s.roots) == 0 {
		return 0
	}
	fall := s.fall(false)
	if fall <= limit-s.held || time.Now().Before(s.nextWalk) {
		return s.held
	}
	return s.rewalk(fall, pids())
}

// rewalk walks the writable roots now; fall is the free space lost since
// the last walk.
func (s *space) rewalk(fall int64, pids []int) int64 {
	start := time.Now()
	s.fall(true)
	held, unread, deleted := s.walk(pids)
	if unread != "" || deleted != "" {
		// A directory the walk cannot read (a command can make one its
		// owner cannot list) may hold anything: all the free space lost
		// since the last walk counts. So it does while a process of the
		// sandbox holds a deleted object: what the walk finds held is
		// counted, but such a process may hold more where no walk looks
		// (a descriptor in flight on a Unix socket, a thread that came
		// and went between two reads of /proc).
		held = max(held, s.held+fall)
	}
	s.held, s.unread, s.deleted = held, unread, deleted
	s.nextWalk = time.Now().Add(min(spaceWalkCost*time.Since(start), spaceWalkWait))
	return held
}

// walk sums the blocks of the files in the writable roots changed since
// the session began, and of the objects of any type (files, directories)
// that no directory names any more but pids hold, on the roots' file
// systems (heldObjects). unread is what could not be read or sized (a
// directory, a mapped file), deleted what holds the first deleted object
// found; "" for none.
func (s *space) walk(pids []int) (held int64, unread, deleted string) {
	type key struct{ dev, ino uint64 }
	counted := map[key]bool{}
	devs := map[uint64]bool{}
	for _, f := range s.fs {
		devs[f.dev] = true
	}
	since := s.since.UnixNano()
	// Through hostfs: each directory opened from its parent's descriptor,
	// never through a link, so a directory a command swaps for a link
	// sends the walk nowhere; a walk cut short (a directory that cannot
	// be read or was replaced) counts as unread.
	for _, root := range s.roots {
		r, err := hostfs.OpenRoot(root)
		if err != nil {
			if !hostfs.IsNotExist(err) && unread == "" {
				unread = root
			}
			continue
		}
		err = r.Walk(func(name string, _ *hostfs.Root, info hostfs.Info) error {
			if info.ChangeTime >= since {
				k := key{info.Dev, info.Ino}
				if !counted[k] {
					counted[k] = true
					held += max(info.Blocks*512, s.fileCost)
				}
			}
			return nil
		})
		r.Close()
		if err != nil && !hostfs.IsNotExist(err) && unread == "" {
			unread = root
			var he *hostfs.Error
			if errors.As(err, &he) && he.Path != "" {
				unread = he.Path
			}
		}
	}
	for _, pid := range pids {
		for _, h := range heldObjects(pid, s.statMapped) {
			k := key{h.dev, h.ino}
			if counted[k] || !devs[h.dev] {
				continue
			}
			counted[k] = true
			if h.st == nil {
				if unread == "" {
					unread = h.desc
				}
				continue
			}
			held += h.st.Blocks * 512
			if deleted == "" {
				deleted = h.desc
			}
		}
	}
	return held, unread, deleted
}

// heldObject is something a process holds that no directory names any
// more (its link count is 0): a file, a directory, an object of any
// type, which takes its blocks until its last holder lets it go. st is
// nil when it could not be sized; desc says what holds it.
type heldObject struct {
	dev, ino uint64
	st       *syscall.Stat_t
	desc     string
}

// kcmpFiles is kcmp(2)'s KCMP_FILES: do two tasks share a descriptor
// table.
const kcmpFiles = 2

// heldObjects lists what pid holds that no directory names any more:
// through the descriptors of each of its threads (each descriptor table
// read once), each thread's working directory, root and program, and
// the process's memory mappings (shared or private, their descriptors
// closed). Every thread is read, not only the process's first: a thread
// can have a descriptor table, a working directory and a root of its own
// (clone without CLONE_FILES or CLONE_FS, or unshare), and once the
// first thread has exited while others run, the process's own
// descriptors, directories and mappings in /proc are empty. A mapping
// is sized through /proc/TID/map_files with statMapped; one that cannot
// be is listed with st nil. Nothing is listed when pid is gone.
func heldObjects(pid int, statMapped func(path string, st *syscall.Stat_t) error) []heldObject {
	var out []heldObject
	seen := map[[2]uint64]bool{}
	add := func(st *syscall.Stat_t, tid int, how string) {
		k := [2]uint64{uint64(st.Dev), st.Ino}
		if st.Nlink != 0 || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, heldObject{dev: k[0], ino: k[1], st: st,
			desc: fmt.Sprintf("process %d holds a deleted %s (inode %d) %s", tid, objectKind(st.Mode), st.Ino, how)})
	}
	note := func(path string, tid int, how string) {
		var st syscall.Stat_t
		if syscall.Stat(path, &st) == nil {
			add(&st, tid, how)
		}
	}
	var tables []int // a thread of each descriptor table read
	mapsRead := false
	for _, tid := range threads(pid) {
		base := "/proc/" + strconv.Itoa(tid)
		note(base+"/cwd", tid, "as its working directory")
		note(base+"/root", tid, "as its root")
		note(base+"/exe", tid, "as its program")
		if !slices.ContainsFunc(tables, func(o int) bool { return sameFiles(o, tid) }) {
			tables = append(tables, tid)
			eachName(base+"/fd", func(name string) { note(base+"/fd/"+name, tid, "open") })
		}
		if mapsRead {
			continue
		}
		ms, ok := deletedMappings(tid)
		if !ok {
			continue // gone, or a thread that has exited: its mappings are the others'
		}
		mapsRead = true
		for _, m := range ms {
			k := [2]uint64{m.dev, m.ino}
			if seen[k] {
				continue
			}
			var st syscall.Stat_t
			if statMapped(base+"/map_files/"+m.area, &st) == nil {
				add(&st, tid, "by a memory mapping")
				continue
			}
			seen[k] = true
			out = append(out, heldObject{dev: m.dev, ino: m.ino,
				desc: fmt.Sprintf("a deleted file that process %d maps (inode %d)", tid, m.ino)})
		}
	}
	return out
}

// threads are pid's threads, pid alone when they cannot be listed.
func threads(pid int) []int {
	var out []int
	eachName("/proc/"+strconv.Itoa(pid)+"/task", func(name string) {
		if tid, err := strconv.Atoi(name); err == nil {
			out = append(out, tid)
		}
	})
	if len(out) == 0 {
		out = []int{pid}
	}
	return out
}

// sameFiles reports whether tasks a and b share a descriptor table; no
// when that cannot be told (a kernel without kcmp), so that both are read.
func sameFiles(a, b int) bool {
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), kcmpFiles, 0, 0, 0)
	return e == 0 && r == 0
}

// eachName calls f with each name in dir, read a batch at a time (a
// process's descriptors may number a million).
func eachName(dir string, f func(name string)) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	defer d.Close()
	for {
		names, err := d.Readdirnames(1024)
		for _, n := range names {
			f(n)
		}
		if err != nil || len(names) == 0 {
			return
		}
	}
}

func objectKind(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		return "file"
	case syscall.S_IFDIR:
		return "directory"
	}
	return "special file"
}

// mapping is a memory mapping of a file: its address range as
// /proc/PID/map_files names it, and the file's device and inode.
type mapping struct {
	area     string
	dev, ino uint64
}

// deletedMappings are pid's mappings of files that are no longer in any
// directory, one per file; ok is false when pid is gone or its maps
// cannot be read, or are empty (a thread that has exited, a zombie).
func deletedMappings(pid int) (ms []mapping, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil || len(b) == 0 {
		return nil, false
	}
	return parseDeletedMappings(string(b)), true
}

// parseDeletedMappings reads the lines of a /proc/PID/maps ("start-end
// perms offset major:minor inode path") whose path ends in " (deleted)",
// one per device and inode.
func parseDeletedMappings(maps string) []mapping {
	var out []mapping
	seen := map[[2]uint64]bool{}
	for line := range strings.SplitSeq(maps, "\n") {
		if !strings.HasSuffix(line, " (deleted)") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 6 || !strings.Contains(f[0], "-") {
			continue
		}
		maj, min, ok := strings.Cut(f[3], ":")
		if !ok {
			continue
		}
		ma, err1 := strconv.ParseUint(maj, 16, 32)
		mi, err2 := strconv.ParseUint(min, 16, 32)
		ino, err3 := strconv.ParseUint(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || ino == 0 {
			continue
		}
		m := mapping{area: f[0], dev: unix.Mkdev(uint32(ma), uint32(mi)), ino: ino}
		if k := [2]uint64{m.dev, m.ino}; !seen[k] {
			seen[k] = true
			out = append(out, m)
		}
	}
	return out
}

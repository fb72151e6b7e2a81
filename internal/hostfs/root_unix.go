//go:build unix

package hostfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Root is a directory the host holds open; names are resolved beneath it.
// A Root is safe for concurrent use; Close it when done.
type Root struct {
	dir     *os.File
	path    string
	beneath bool // symbolic links that stay beneath the root are followed
}

// Options says how a Root resolves names.
type Options struct {
	// Beneath allows symbolic links whose targets stay beneath the root
	// (the model's own file tools). Without it every link is refused.
	// Where the kernel has no openat2, links are refused either way.
	Beneath bool
}

// OpenRoot opens the directory dir (following links in dir itself: the
// caller chose it) as a strict Root: no name beneath it may contain a
// link.
func OpenRoot(dir string) (*Root, error) { return OpenRootWith(dir, Options{}) }

// OpenRootWith opens dir as a Root with the given options.
func OpenRootWith(dir string, o Options) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &Error{"open", dir, errnoErr(err)}
	}
	return &Root{dir: os.NewFile(uintptr(fd), dir), path: dir, beneath: o.Beneath}, nil
}

// Path is the path the root was opened with (for messages).
func (r *Root) Path() string { return r.path }

// Close releases the root's descriptor.
func (r *Root) Close() error { return r.dir.Close() }

func (r *Root) fd() int { return int(r.dir.Fd()) }

// Fd returns the descriptor of r's directory, valid until r is closed.
func (r *Root) Fd() int { return r.fd() }

func (r *Root) display(name string) string {
	if name == "." || name == "" {
		return r.path
	}
	return filepath.Join(r.path, filepath.FromSlash(name))
}

// errnoErr maps the errors of a resolution to this package's.
func errnoErr(err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return ErrLink
	case errors.Is(err, unix.EXDEV):
		return ErrEscapes
	case errors.Is(err, unix.EWOULDBLOCK):
		return ErrBusy
	case errors.Is(err, unix.ENXIO):
		// O_NONBLOCK|O_WRONLY on a FIFO without a reader; a socket.
		return ErrNotRegular
	}
	return err
}

// maxPart is the longest name openat passes to the kernel in one call,
// below PATH_MAX (4,096 bytes with its NUL).
const maxPart = 4000

// dirErr explains ENOTDIR from opening name beneath dirfd as a directory:
// a link in its place is ErrLink, anything else ErrNotRegular.
func dirErr(dirfd int, name string, err error) error {
	if !errors.Is(err, unix.ENOTDIR) {
		return errnoErr(err)
	}
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return ErrLink
	}
	return fmt.Errorf("%w (not a directory)", ErrNotRegular)
}

// openat opens name beneath dirfd with flags (O_CLOEXEC, O_NONBLOCK and
// O_NOCTTY are added), never following a link outside the root nor, for a
// strict root, any link.
//
// A name longer than the kernel takes in one call (PATH_MAX) is opened a
// part at a time, each part from the descriptor of the directory the
// part before it names, with the same rules at every part.
func (r *Root) openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	if len(name) > maxPart {
		cut := strings.LastIndexByte(name[:maxPart], '/')
		if cut <= 0 {
			return -1, unix.ENAMETOOLONG // one component longer than NAME_MAX
		}
		d, err := r.openat(dirfd, name[:cut], unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return -1, err
		}
		defer unix.Close(d)
		return r.openat(d, name[cut+1:], flags, mode)
	}
	flags |= unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	if fd, ok, err := openat2(dirfd, name, flags, mode, r.beneath); ok {
		return fd, err
	}
	// No openat2: O_NOFOLLOW at every component, from dirfd.
	parts := strings.Split(name, "/")
	cur := dirfd
	closeCur := func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}
	for i, p := range parts {
		if p == "." || p == "" {
			if i == len(parts)-1 {
				fd, err := unix.Openat(cur, ".", flags, mode)
				closeCur()
				return fd, err
			}
			continue
		}
		if p == ".." {
			closeCur()
			return -1, ErrEscapes
		}
		if i == len(parts)-1 {
			fd, err := unix.Openat(cur, p, flags|unix.O_NOFOLLOW, mode)
			closeCur()
			return fd, err
		}
		next, err := unix.Openat(cur, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		closeCur()
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return -1, unix.ENOENT
}

func infoOf(name string, st *unix.Stat_t) Info {
	m := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	sec, nsec := st.Mtim.Unix()
	return Info{
		name: path.Base(name), Mode: m, Size: st.Size, Blocks: int64(st.Blocks),
		Dev: uint64(st.Dev), Ino: uint64(st.Ino), ModTime: time.Unix(sec, nsec).UnixNano(),
		ChangeTime: st.Ctim.Nano(),
		UID:        st.Uid, Nlink: uint64(st.Nlink),
	}
}

// Open opens the regular file name for reading. A link (for a strict
// root), a FIFO, socket, device or directory is refused; so is an open
// that would wait on a lease.
func (r *Root) Open(name string) (*File, error) {
	c, err := clean(name)
	if err != nil {
		return nil, &Error{"open", name, err}
	}
	fd, err := r.openat(r.fd(), c, unix.O_RDONLY, 0)
	if err != nil {
		return nil, &Error{"open", r.display(c), errnoErr(err)}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &Error{"open", r.display(c), err}
	}
	info := infoOf(c, &st)
	if !info.IsRegular() {
		unix.Close(fd)
		return nil, &Error{"open", r.display(c), kindErr(info)}
	}
	return &File{File: os.NewFile(uintptr(fd), r.display(c)), Info: info}, nil
}

func kindErr(i Info) error {
	switch {
	case i.IsDir():
		return fmt.Errorf("%w (a directory)", ErrNotRegular)
	case i.Mode&fs.ModeNamedPipe != 0:
		return fmt.Errorf("%w (a FIFO)", ErrNotRegular)
	case i.Mode&fs.ModeSocket != 0:
		return fmt.Errorf("%w (a socket)", ErrNotRegular)
	case i.Mode&fs.ModeDevice != 0:
		return fmt.Errorf("%w (a device)", ErrNotRegular)
	}
	return ErrNotRegular
}

// ReadFile reads the regular file name, at most max bytes: a larger one
// is ErrTooLarge.
func (r *Root) ReadFile(name string, max int64) ([]byte, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadAll(max)
}

// ReadHead reads the first max bytes of the regular file name; truncated
// says it has more.
func (r *Root) ReadHead(name string, max int64) (data []byte, truncated bool, err error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	return f.ReadHead(max)
}

// OpenDir opens the directory name beneath r as a Root with r's options.
func (r *Root) OpenDir(name string) (*Root, error) {
	c, err := clean(name)
	if err != nil {
		return nil, &Error{"open", name, err}
	}
	fd, err := r.openat(r.fd(), c, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, &Error{"open", r.display(c), dirErr(r.fd(), c, err)}
	}
	return &Root{dir: os.NewFile(uintptr(fd), r.display(c)), path: r.display(c), beneath: r.beneath}, nil
}

// Lstat says what name is, without following a link in its last
// component (and, for a strict root, refusing one before it).
func (r *Root) Lstat(name string) (Info, error) {
	c, err := clean(name)
	if err != nil {
		return Info{}, &Error{"stat", name, err}
	}
	if c == "." {
		var st unix.Stat_t
		if err := unix.Fstat(r.fd(), &st); err != nil {
			return Info{}, &Error{"stat", r.path, err}
		}
		return infoOf(path.Base(r.path), &st), nil
	}
	dir, base := path.Split(c)
	dfd := r.fd()
	if dir != "" {
		d, err := r.openat(r.fd(), strings.TrimSuffix(dir, "/"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return Info{}, &Error{"stat", r.display(c), dirErr(r.fd(), strings.TrimSuffix(dir, "/"), err)}
		}
		defer unix.Close(d)
		dfd = d
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Info{}, &Error{"stat", r.display(c), err}
	}
	return infoOf(base, &st), nil
}

// Entry is one name of a directory listing, with what fstatat said of it
// (links not followed).
type Entry struct {
	Name string // base name
	Info Info
}

// ReadDir lists the root's own directory, sorted by name, with each
// entry's Info. An entry removed between the listing and its fstatat is
// left out.
func (r *Root) ReadDir() ([]Entry, error) {
	out := []Entry{}
	err := r.ReadDirFunc(func(n int) { out = make([]Entry, 0, n) }, func(name string, info Info) { out = append(out, Entry{Name: name, Info: info}) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadDirFunc is ReadDir handing each entry to fn, in order, instead of
// returning a slice: a caller that keeps its own form of the entries
// (the change tracker's index) makes no copy of the whole listing. size,
// when not nil, is called first with the number of names listed (an
// upper bound of fn's calls: a name removed meanwhile is skipped), so
// that the caller allocates once.
func (r *Root) ReadDirFunc(size func(n int), fn func(name string, info Info)) error {
	return r.readDir(nil, size, fn)
}

// ReadDirMatching is ReadDirFunc for the names keep accepts, which it is
// asked before anything is read of them: a listing for a few names of a
// large directory stats only those.
func (r *Root) ReadDirMatching(keep func(name string) bool, fn func(name string, info Info)) error {
	return r.readDir(keep, nil, fn)
}

func (r *Root) readDir(keep func(string) bool, size func(n int), fn func(name string, info Info)) error {
	// A second descriptor of the same directory, so that listings of one
	// Root at once do not share an offset.
	fd, err := unix.Openat(r.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return &Error{"list", r.path, err}
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	if err != nil {
		return &Error{"list", r.path, err}
	}
	if keep != nil {
		names = slices.DeleteFunc(names, func(n string) bool { return !keep(n) })
	}
	sort.Strings(names)
	if size != nil {
		size(len(names))
	}
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return &Error{"stat", r.display(n), err}
		}
		fn(n, infoOf(n, &st))
	}
	return nil
}

// readNames lists a directory descriptor's names (getdents; no "." or
// ".."), with no file object around the descriptor.
func readNames(fd int) ([]string, error) {
	var names []string
	err := readNameBatches(fd, func(batch []string) bool {
		names = append(names, batch...)
		return true
	})
	return names, err
}

// readNameBatches reads a directory descriptor's names (getdents; no "."
// or "..") listBatch bytes at a time, handing each batch to fn (valid
// only during the call) until fn returns false or the names end.
func readNameBatches(fd int, fn func(batch []string) bool) error {
	buf := make([]byte, listBatch)
	var names []string
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names[:0])
		if !fn(names) {
			return nil
		}
	}
}

// SkipDir, returned by a WalkFunc for a directory, skips its contents.
var SkipDir = fs.SkipDir

// WalkFunc is called for each entry Walk finds: name is slash-separated
// and relative to the root, info is what fstatat said (links are reported,
// never followed). dir is the Root of the entry's parent directory, valid
// during the call, from which the entry can be opened by its base name
// (dir.Open(info.Name())) with no path resolved again. Returning SkipDir
// for a directory skips it; another error stops the walk.
type WalkFunc func(name string, dir *Root, info Info) error

// Walk walks the tree beneath r in lexical order, depth first, opening
// each directory from its parent's descriptor (never by path, never
// through a link), and checking that the directory opened is the one
// listed: a directory replaced in between is ErrChanged.
func (r *Root) Walk(fn WalkFunc) error {
	return r.walk("", fn)
}

func (r *Root) walk(prefix string, fn WalkFunc) error {
	entries, err := r.ReadDir()
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name
		if prefix != "" {
			name = prefix + "/" + e.Name
		}
		err := fn(name, r, e.Info)
		if err == SkipDir {
			continue
		}
		if err != nil {
			return err
		}
		if !e.Info.IsDir() {
			continue
		}
		sub, err := r.openDirEntry(e)
		if err != nil {
			if IsNotExist(err) {
				continue
			}
			return err
		}
		err = sub.walk(name, fn)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// openDirEntry opens the listed directory e, refusing another in its place.
func (r *Root) openDirEntry(e Entry) (*Root, error) {
	fd, err := unix.Openat(r.fd(), e.Name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			err = ErrChanged
		}
		return nil, &Error{"open", r.display(e.Name), errnoErr(err)}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &Error{"open", r.display(e.Name), err}
	}
	if got := infoOf(e.Name, &st); !got.Same(e.Info) {
		unix.Close(fd)
		return nil, &Error{"open", r.display(e.Name), ErrChanged}
	}
	return &Root{dir: os.NewFile(uintptr(fd), r.display(e.Name)), path: r.display(e.Name), beneath: r.beneath}, nil
}

// OpenEntry opens the regular file e of r's own listing, refusing another
// file in its place (ErrChanged).
func (r *Root) OpenEntry(e Entry) (*File, error) {
	f, err := r.Open(e.Name)
	if err != nil {
		return nil, err
	}
	if !f.Info.Same(e.Info) {
		f.Close()
		return nil, &Error{"open", r.display(e.Name), ErrChanged}
	}
	return f, nil
}

// Readlink reads the target of the link name (its last component; links
// before it are refused by a strict root).
func (r *Root) Readlink(name string) (string, error) {
	c, err := clean(name)
	if err != nil {
		return "", &Error{"readlink", name, err}
	}
	dir, base := path.Split(c)
	dfd := r.fd()
	if dir != "" {
		d, err := r.openat(r.fd(), strings.TrimSuffix(dir, "/"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return "", &Error{"readlink", r.display(c), dirErr(r.fd(), strings.TrimSuffix(dir, "/"), err)}
		}
		defer unix.Close(d)
		dfd = d
	}
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dfd, base, buf)
	if err != nil {
		return "", &Error{"readlink", r.display(c), err}
	}
	return string(buf[:n]), nil
}

// MkdirAll makes the directory name and its missing parents beneath r,
// each with perm, never through a link.
func (r *Root) MkdirAll(name string, perm fs.FileMode) error {
	c, err := clean(name)
	if err != nil {
		return &Error{"mkdir", name, err}
	}
	if c == "." {
		return nil
	}
	cur := r.fd()
	defer func() {
		if cur != r.fd() {
			unix.Close(cur)
		}
	}()
	for _, p := range strings.Split(c, "/") {
		err := unix.Mkdirat(cur, p, uint32(perm.Perm()))
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return &Error{"mkdir", r.display(c), err}
		}
		next, err := unix.Openat(cur, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return &Error{"mkdir", r.display(c), dirErr(cur, p, err)}
		}
		if cur != r.fd() {
			unix.Close(cur)
		}
		cur = next
	}
	return nil
}

// parent opens the directory that holds name (strictly: no links) and
// returns its descriptor and name's base. The caller closes fd unless it
// is r's own.
func (r *Root) parent(c string) (fd int, base string, err error) {
	dir, base := path.Split(c)
	if dir == "" {
		return r.fd(), base, nil
	}
	dir = strings.TrimSuffix(dir, "/")
	fd, err = r.openat(r.fd(), dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", dirErr(r.fd(), dir, err)
	}
	return fd, base, nil
}

// WriteFile replaces name with data, atomically and durably: a new file
// is created O_EXCL|O_NOFOLLOW beside it in the parent's descriptor,
// written, fsynced and renamed over name, and the directory fsynced. A
// link at name is replaced, never followed; the parent directory must
// exist and is reached without links.
func (r *Root) WriteFile(name string, data []byte, perm fs.FileMode) error {
	c, err := clean(name)
	if err != nil || c == "." {
		if err == nil {
			err = ErrNotRegular
		}
		return &Error{"write", name, err}
	}
	dfd, base, err := r.parent(c)
	if err != nil {
		return &Error{"write", r.display(c), err}
	}
	if dfd != r.fd() {
		defer unix.Close(dfd)
	}
	if err := writeIn(dfd, base, data, perm); err != nil {
		return &Error{"write", r.display(c), err}
	}
	return nil
}

// Remove removes the file or empty directory name (a link itself, never
// its target).
func (r *Root) Remove(name string) error {
	c, err := clean(name)
	if err != nil || c == "." {
		if err == nil {
			err = ErrEscapes
		}
		return &Error{"remove", name, err}
	}
	dfd, base, err := r.parent(c)
	if err != nil {
		return &Error{"remove", r.display(c), err}
	}
	if dfd != r.fd() {
		defer unix.Close(dfd)
	}
	err = unix.Unlinkat(dfd, base, 0)
	if errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return &Error{"remove", r.display(c), err}
	}
	return nil
}

// writeIn writes base in the directory dfd atomically (see WriteFile).
func writeIn(dfd int, base string, data []byte, perm fs.FileMode) error {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := "." + base + ".tmp-" + hex.EncodeToString(rnd[:])
	if len(tmp) > 255 {
		tmp = ".truss-tmp-" + hex.EncodeToString(rnd[:])
	}
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	ok := false
	defer func() {
		if !ok {
			f.Close()
			unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	// The mode as asked, whatever the umask took.
	if err := f.Chmod(perm.Perm()); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		return err
	}
	ok = true
	// The rename durable: fsync the directory.
	return unix.Fsync(dfd)
}

// WriteFileAtomic replaces the file at path (one of Truss's own, in a
// directory the caller trusts: links in the directory's path are
// followed, a link at the name itself is replaced, never written
// through) with data, atomically and durably, as Root.WriteFile does.
func WriteFileAtomic(file string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return &Error{"write", file, ErrNotRegular}
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &Error{"write", file, err}
	}
	defer unix.Close(dfd)
	if err := writeIn(dfd, base, data, perm); err != nil {
		return &Error{"write", file, err}
	}
	return nil
}

// ReadFile reads the regular file at path (following links in its
// directory's path, refusing one at the name itself), at most max bytes,
// without blocking on a FIFO or a lease. It is for files whose directory
// the caller trusts; beneath a tree commands write, use a Root.
func ReadFile(file string, max int64) ([]byte, error) {
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &Error{"open", file, errnoErr(err)}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &Error{"open", file, err}
	}
	info := infoOf(file, &st)
	if !info.IsRegular() {
		unix.Close(fd)
		return nil, &Error{"open", file, kindErr(info)}
	}
	f := &File{File: os.NewFile(uintptr(fd), file), Info: info}
	defer f.Close()
	return f.ReadAll(max)
}

// ReadFileIn reads the regular file name beneath the directory dir
// through a strict Root: see Root.ReadFile. A missing dir or file is an
// error for which IsNotExist is true.
func ReadFileIn(dir, name string, max int64) ([]byte, error) {
	r, err := OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadFile(name, max)
}

// Split returns the slash-separated name of path relative to root, or
// ErrEscapes when path is not beneath root (lexically).
func Split(root, p string) (string, error) {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return "", err
	}
	rel = filepath.ToSlash(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", &Error{"resolve", p, ErrEscapes}
	}
	return rel, nil
}

// realRel returns the path of the directory open at fd relative to the
// root (slash-separated; "." for the root), as the kernel names it.
func (r *Root) realRel(fd int) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlink("/proc/self/fd/"+fmt.Sprint(fd), buf)
	if err != nil {
		return "", err
	}
	m, err := unix.Readlink("/proc/self/fd/"+fmt.Sprint(r.fd()), buf[n:])
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(string(buf[n:n+m]), string(buf[:n]))
	if err != nil {
		return "", err
	}
	rel = filepath.ToSlash(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", ErrEscapes
	}
	return rel, nil
}

// RealName returns name with the links of its directory resolved as the
// kernel resolves them beneath the root (for a strict root, name itself):
// the name a write or removal of name reaches. Its last component is
// name's own, which a write replaces and a removal removes, never
// following it. A missing parent is an error for which IsNotExist holds.
func (r *Root) RealName(name string) (string, error) {
	c, err := clean(name)
	if err != nil || c == "." {
		return c, err
	}
	dfd, base, err := r.parent(c)
	if err != nil {
		return "", &Error{"resolve", r.display(c), err}
	}
	if dfd == r.fd() {
		return base, nil
	}
	defer unix.Close(dfd)
	dir, err := r.realRel(dfd)
	if err != nil {
		return "", &Error{"resolve", r.display(c), err}
	}
	return path.Join(dir, base), nil
}

// WriteFileGuard is WriteFile with guard called, before anything is
// written, with the name the write reaches (RealName's, from the very
// directory descriptor the write then uses, so no link swapped in
// between can change it); an error of guard is returned as is.
func (r *Root) WriteFileGuard(name string, data []byte, perm fs.FileMode, guard func(real string) error) error {
	c, err := clean(name)
	if err != nil || c == "." {
		if err == nil {
			err = ErrNotRegular
		}
		return &Error{"write", name, err}
	}
	dfd, base, err := r.parent(c)
	if err != nil {
		return &Error{"write", r.display(c), err}
	}
	real := base
	if dfd != r.fd() {
		defer unix.Close(dfd)
		dir, err := r.realRel(dfd)
		if err != nil {
			return &Error{"write", r.display(c), err}
		}
		real = path.Join(dir, base)
	}
	if err := guard(real); err != nil {
		return err
	}
	if err := writeIn(dfd, base, data, perm); err != nil {
		return &Error{"write", r.display(c), err}
	}
	return nil
}

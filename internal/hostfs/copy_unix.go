//go:build unix

package hostfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Create makes the new regular file name beneath r (O_CREAT|O_EXCL|
// O_NOFOLLOW in its parent's descriptor, reached without links) with perm
// and returns it open for writing. An existing name, a link included, is
// an error: nothing is ever written through what was there.
func (r *Root) Create(name string, perm fs.FileMode) (*os.File, error) {
	c, err := clean(name)
	if err != nil || c == "." {
		if err == nil {
			err = ErrNotRegular
		}
		return nil, &Error{"create", name, err}
	}
	dfd, base, err := r.parent(c)
	if err != nil {
		return nil, &Error{"create", r.display(c), err}
	}
	if dfd != r.fd() {
		defer unix.Close(dfd)
	}
	fd, err := unix.Openat(dfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &Error{"create", r.display(c), err}
	}
	return os.NewFile(uintptr(fd), r.display(c)), nil
}

// Mkdir makes the directory name beneath r (its parent reached without
// links) with perm.
func (r *Root) Mkdir(name string, perm fs.FileMode) error {
	c, err := clean(name)
	if err != nil || c == "." {
		if err == nil {
			err = fs.ErrExist
		}
		return &Error{"mkdir", name, err}
	}
	dfd, base, err := r.parent(c)
	if err != nil {
		return &Error{"mkdir", r.display(c), err}
	}
	if dfd != r.fd() {
		defer unix.Close(dfd)
	}
	if err := unix.Mkdirat(dfd, base, uint32(perm.Perm())); err != nil {
		return &Error{"mkdir", r.display(c), err}
	}
	return nil
}

// Symlink makes name beneath r (its parent reached without links) a
// symbolic link to target. The link is made, never followed.
func (r *Root) Symlink(target, name string) error {
	c, err := clean(name)
	if err != nil || c == "." {
		if err == nil {
			err = fs.ErrExist
		}
		return &Error{"symlink", name, err}
	}
	dfd, base, err := r.parent(c)
	if err != nil {
		return &Error{"symlink", r.display(c), err}
	}
	if dfd != r.fd() {
		defer unix.Close(dfd)
	}
	if err := unix.Symlinkat(target, dfd, base); err != nil {
		return &Error{"symlink", r.display(c), err}
	}
	return nil
}

// CopyOptions bound and filter a CopyTree.
type CopyOptions struct {
	// MaxBytes bounds the bytes of all regular files copied together;
	// a tree with more is ErrTooLarge. It must be positive.
	MaxBytes int64
	// MaxEntries bounds the entries copied (files, directories and
	// links); a tree with more is ErrTooLarge. It must be positive.
	MaxEntries int
	// Skip, when set, leaves out the entry (and a directory's contents)
	// for which it returns true.
	Skip func(name string, info Info) bool
}

// CopyReport is what CopyTree copied and left out.
type CopyReport struct {
	Files, Dirs, Links int
	Bytes              int64
	// Skipped are the names (slash-separated, relative to the source)
	// of the FIFOs, sockets and devices found, which are not copied.
	Skipped []string
}

// CopyTree copies the tree beneath src into dst, which should be empty,
// through descriptors only: src is walked as Walk does (each directory
// opened from its parent's descriptor and checked to be the one listed),
// each regular file opened from its parent's descriptor with O_NONBLOCK
// and checked to be the file listed (a file swapped, or held by a lease,
// fails the copy instead of being read or waited for), each symbolic link
// copied as a link with the same target (never followed), and FIFOs,
// sockets and devices left out and reported. Everything is written in dst
// with O_EXCL|O_NOFOLLOW (files) or mkdirat/symlinkat in a directory
// reached without links; a directory gets its mode with the owner's rwx
// added, a file its permission bits. A tree over the options' bounds is
// ErrTooLarge, with what was copied so far left in dst for the caller to
// remove.
func CopyTree(src, dst *Root, o CopyOptions) (CopyReport, error) {
	var rep CopyReport
	if o.MaxBytes <= 0 || o.MaxEntries <= 0 {
		return rep, errors.New("hostfs.CopyTree: MaxBytes and MaxEntries must be positive")
	}
	buf := make([]byte, 64<<10)
	entries := 0
	err := src.Walk(func(name string, dir *Root, info Info) error {
		if o.Skip != nil && o.Skip(name, info) {
			if info.IsDir() {
				return SkipDir
			}
			return nil
		}
		if !info.IsDir() && !info.IsRegular() && info.Mode&fs.ModeSymlink == 0 {
			rep.Skipped = append(rep.Skipped, name)
			return nil
		}
		if entries++; entries > o.MaxEntries {
			return &Error{"copy", src.display(name), fmt.Errorf("%w (more than %d entries)", ErrTooLarge, o.MaxEntries)}
		}
		switch {
		case info.IsDir():
			rep.Dirs++
			return dst.Mkdir(name, info.Mode.Perm()|0o700)
		case info.Mode&fs.ModeSymlink != 0:
			target, err := dir.Readlink(info.Name())
			if err != nil {
				return err
			}
			rep.Links++
			return dst.Symlink(target, name)
		}
		in, err := dir.OpenEntry(Entry{Name: info.Name(), Info: info})
		if err != nil {
			return err
		}
		defer in.Close()
		left := o.MaxBytes - rep.Bytes
		if in.Info.Size > left {
			return &Error{"copy", src.display(name), fmt.Errorf("%w (the tree has more than %d bytes)", ErrTooLarge, o.MaxBytes)}
		}
		out, err := dst.Create(name, info.Mode.Perm())
		if err != nil {
			return err
		}
		sw := NewSparseWriter(out)
		n, err := io.CopyBuffer(sw, &io.LimitedReader{R: in, N: left + 1}, buf)
		rep.Bytes += n
		if err == nil {
			err = sw.Close()
		}
		if err == nil {
			// The mode as listed, whatever the umask took.
			err = out.Chmod(info.Mode.Perm())
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return &Error{"copy", src.display(name), err}
		}
		if rep.Bytes > o.MaxBytes {
			return &Error{"copy", src.display(name), fmt.Errorf("%w (the tree has more than %d bytes)", ErrTooLarge, o.MaxBytes)}
		}
		rep.Files++
		return nil
	})
	return rep, err
}

// sparseBlock is the size of the blocks a SparseWriter leaves as holes
// when they hold only zeros.
const sparseBlock = 4096

// SparseWriter writes a new file's content at its offset, leaving each
// whole block of zeros a hole (as cp --sparse=always does): a sparse file
// Truss copies stays sparse, so a file a command made of nothing (truncate
// -s 1G) takes no more space in Truss's copy than in the workspace. Close
// sets the file's size, a trailing hole included; it does not close f.
type SparseWriter struct {
	f    *os.File
	off  int64
	zero [sparseBlock]byte
}

// NewSparseWriter writes f, an empty file, from its start.
func NewSparseWriter(f *os.File) *SparseWriter { return &SparseWriter{f: f} }

// Write implements io.Writer.
func (w *SparseWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		// Up to the next block boundary, so that holes are whole blocks.
		k := min(len(p), sparseBlock-int(w.off%sparseBlock))
		if k != sparseBlock || !bytes.Equal(p[:k], w.zero[:]) {
			m, err := w.f.WriteAt(p[:k], w.off)
			w.off += int64(m)
			n += m
			if err != nil {
				return n, err
			}
		} else {
			w.off += int64(k)
			n += k
		}
		p = p[k:]
	}
	return n, nil
}

// Close sets the file's size to what was written.
func (w *SparseWriter) Close() error { return w.f.Truncate(w.off) }

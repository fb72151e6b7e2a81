// Package hostfs is the host side's file layer over trees that a sandboxed
// command can write: the workspace, --add-dir roots, a container's state
// directory. Truss itself runs outside the sandbox, so every read, write,
// copy, listing and hash it makes of such a tree goes through here, and
// none of them can be turned against it by what a command planted there:
//
//   - names are resolved from a directory descriptor the host holds, never
//     by path: openat2 with RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS (and
//     RESOLVE_NO_SYMLINKS unless the Root allows links beneath it) where
//     the kernel has it, O_NOFOLLOW at every component otherwise, so a
//     symbolic link, a ".." or a directory swapped for a link between a
//     listing and an open cannot lead outside the root;
//   - every open is O_NONBLOCK|O_NOCTTY and followed by fstat: anything
//     but a regular file or a directory (a FIFO, a socket, a device) is
//     refused with ErrNotRegular instead of blocking the host, and a file
//     lease that would make the open wait is ErrBusy;
//   - every read is capped: a file larger than the caller's limit is
//     ErrTooLarge (or truncated, where the caller asks for a head);
//   - a write creates a new file O_EXCL|O_NOFOLLOW in a directory
//     descriptor the host holds, writes, fsyncs and renames it over the
//     name, so it never writes through a planted link;
//   - what was listed is what is opened: Walk gives each entry's device
//     and inode from fstatat(AT_SYMLINK_NOFOLLOW), and File.Same tells
//     whether an open file is that entry.
//
// Files Truss interprets (AGENTS.md, configuration, test markers,
// attachments, the change tracker's reads, copies for sub-agents,
// container state) are read through a strict Root, which refuses every
// link. The model's own file tools may follow links that stay beneath
// their root, as the reference editors do; they use a Root opened with
// Beneath.
package hostfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// The errors of this package, for errors.Is. Each is wrapped with the
// name it concerns.
var (
	// ErrLink: a component of the name is a symbolic link and the Root
	// refuses links, or the link leads outside the root.
	ErrLink = errors.New("is a symbolic link, which Truss does not follow here")
	// ErrNotRegular: the name is neither a regular file nor a directory
	// (a FIFO, socket or device), or not the kind the call wants.
	ErrNotRegular = errors.New("is not a regular file")
	// ErrTooLarge: the file is larger than the caller's limit.
	ErrTooLarge = errors.New("is larger than the limit")
	// ErrBusy: opening the file would wait (a lease held by another
	// process).
	ErrBusy = errors.New("is held by another process (a file lease); not waiting for it")
	// ErrEscapes: the name leads outside the root ("..", an absolute
	// name).
	ErrEscapes = errors.New("is outside the root")
	// ErrChanged: the file opened is not the one listed (it was replaced
	// in between).
	ErrChanged = errors.New("was replaced while Truss read it")
)

// Error is the error of an operation on a name beneath a root.
type Error struct {
	Op   string // "open", "read", "write", "stat", "list"
	Path string // the name as given, or the root's path joined with it
	Err  error
}

func (e *Error) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// clean checks that name is a local name (relative, no ".." leaving the
// root) and returns it cleaned; "" and "." name the root itself.
func clean(name string) (string, error) {
	if name == "" {
		return ".", nil
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("%q: a name with a NUL byte", name)
	}
	c := path.Clean(name)
	if path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", ErrEscapes
	}
	return c, nil
}

// readAll reads at most max bytes of r. With head false, a reader with
// more than max bytes is ErrTooLarge; with head true, the first max bytes
// are returned with truncated set.
func readAll(r io.Reader, size, max int64, head bool) (data []byte, truncated bool, err error) {
	if max < 0 {
		max = 0
	}
	if size > max && !head {
		return nil, false, fmt.Errorf("%w (%d bytes, at most %d)", ErrTooLarge, size, max)
	}
	n := min(size, max)
	if n < 0 {
		n = 0
	}
	buf := make([]byte, 0, n+1)
	lr := &io.LimitedReader{R: r, N: max + 1}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		k, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	if int64(len(buf)) > max {
		if !head {
			return nil, false, fmt.Errorf("%w (more than %d bytes)", ErrTooLarge, max)
		}
		return buf[:max], true, nil
	}
	return buf, false, nil
}

// Info is what fstat or fstatat(AT_SYMLINK_NOFOLLOW) said of a file.
type Info struct {
	name    string
	Mode    fs.FileMode
	Size    int64
	Blocks  int64 // 512-byte blocks allocated
	Dev     uint64
	Ino     uint64
	ModTime int64 // nanoseconds since the epoch
	// ChangeTime is the inode's change time (nanoseconds since the
	// epoch), which no process can set back.
	ChangeTime int64
	UID        uint32
	Nlink      uint64
}

// Name is the base name.
func (i Info) Name() string { return i.name }

// IsDir and IsRegular say what kind of file it is.
func (i Info) IsDir() bool     { return i.Mode.IsDir() }
func (i Info) IsRegular() bool { return i.Mode.IsRegular() }

// Same reports whether i and j are the same file (device and inode).
func (i Info) Same(j Info) bool { return i.Dev == j.Dev && i.Ino == j.Ino }

// File is a regular file opened beneath a root.
type File struct {
	*os.File
	Info Info
}

// ReadAll reads the whole file, at most max bytes (ErrTooLarge beyond).
func (f *File) ReadAll(max int64) ([]byte, error) {
	b, _, err := readAll(f.File, f.Info.Size, max, false)
	if err != nil {
		return nil, &Error{"read", f.Name(), err}
	}
	return b, nil
}

// ReadHead reads the first max bytes of the file; truncated says there
// was more.
func (f *File) ReadHead(max int64) (data []byte, truncated bool, err error) {
	b, t, err := readAll(f.File, f.Info.Size, max, true)
	if err != nil {
		return nil, false, &Error{"read", f.Name(), err}
	}
	return b, t, nil
}

// IsNotExist reports whether err says the name does not exist.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Refused reports whether err is one of this package's refusals (a link,
// not a regular file, too large, busy, outside the root, replaced), as
// against an ordinary I/O error or a missing file.
func Refused(err error) bool {
	for _, e := range []error{ErrLink, ErrNotRegular, ErrTooLarge, ErrBusy, ErrEscapes, ErrChanged} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

//go:build unix

package hostfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// listBatch is what ListFunc reads of a directory at a time: the
// getdents buffer, about 60 names of 240 bytes or 700 short ones.
const listBatch = 16 << 10

// ListFunc lists the root's own directory a batch of names at a time,
// in the order the file system returns them (not sorted), handing each
// name with what fstatat said of it (links not followed) to fn, and
// stops, with no error, when fn returns false. Unlike ReadDir and
// ReadDirFunc, which hold every name before the first is handed on, it
// holds one batch: a caller that bounds what it keeps of a directory
// stops reading at its bound, whatever the directory holds. An entry
// removed between the listing and its fstatat is left out; a name may
// be missed or handed twice if the directory changes while it is read
// (as with readdir(3)).
func (r *Root) ListFunc(fn func(name string, info Info) bool) error {
	// A second descriptor of the same directory, so that listings of one
	// Root at once do not share an offset.
	fd, err := unix.Openat(r.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return &Error{"list", r.path, err}
	}
	defer unix.Close(fd)
	var stopped error
	err = readNameBatches(fd, func(names []string) bool {
		for _, name := range names {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				stopped = &Error{"stat", r.display(name), err}
				return false
			}
			if !fn(name, infoOf(name, &st)) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return &Error{"list", r.path, err}
	}
	return stopped
}

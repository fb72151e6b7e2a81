package hostfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// openat2 opens name beneath dirfd with openat2(2): RESOLVE_BENEATH and
// RESOLVE_NO_MAGICLINKS always, RESOLVE_NO_SYMLINKS unless beneath. ok is
// false where the kernel has no openat2 (before 5.6), for the caller to
// walk the components itself.
func openat2(dirfd int, name string, flags int, mode uint32, beneath bool) (fd int, ok bool, err error) {
	how := unix.OpenHow{
		Flags:   uint64(flags),
		Mode:    uint64(mode),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	if !beneath {
		how.Resolve |= unix.RESOLVE_NO_SYMLINKS
		how.Flags |= unix.O_NOFOLLOW
	}
	// EAGAIN is both a rename that raced RESOLVE_BENEATH's check (worth
	// another try) and a lease that an O_NONBLOCK open would wait for
	// (which stays): a few tries tell them apart.
	for try := 0; ; try++ {
		fd, err = unix.Openat2(dirfd, name, &how)
		if !errors.Is(err, unix.EAGAIN) || try == 3 {
			break
		}
	}
	if errors.Is(err, unix.ENOSYS) {
		return -1, false, nil
	}
	return fd, true, err
}

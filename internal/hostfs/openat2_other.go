//go:build unix && !linux

package hostfs

// openat2 is Linux's; elsewhere the caller walks the components itself.
func openat2(dirfd int, name string, flags int, mode uint32, beneath bool) (fd int, ok bool, err error) {
	return -1, false, nil
}

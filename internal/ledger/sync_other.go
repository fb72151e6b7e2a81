//go:build !linux

package ledger

import "os"

// syncData makes what was written to f durable.
func syncData(f *os.File) error { return f.Sync() }

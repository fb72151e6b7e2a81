//go:build !linux

package ledger

import "os"

// syncAll syncs the entries; payloads are synced as they are written.
func syncAll(f *os.File) error { return f.Sync() }

const payloadSync = true

package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The signing key is never replaced silently, nor read through a link or
// from a file others can read.
func TestKeyFileAttacks(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := LoadOrCreateKey(dir); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "ledger.key")

	// A key gone while its verifier key remains (a renamed or deleted
	// key) is an error, not a new key.
	moved := filepath.Join(t.TempDir(), "old.key")
	if err := os.Rename(key, moved); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(dir); !errors.Is(err, ErrKeyMissing) {
		t.Fatalf("missing key: %v, want ErrKeyMissing", err)
	}
	if _, err := os.Lstat(key); err == nil {
		t.Fatal("a new key was made")
	}

	// A link in the key's place, to a key of the attacker's or anything.
	if err := os.Symlink(moved, key); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("key behind a link: %v", err)
	}
	os.Remove(key)

	// A key others can read.
	if err := os.Rename(moved, key); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("key readable by others: %v", err)
	}
	if err := os.Chmod(key, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(dir); err != nil {
		t.Fatal(err)
	}
}

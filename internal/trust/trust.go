// Package trust records which project configurations the user has trusted.
//
// A project's configuration (Truss's .truss directory in a repository) can
// widen the sandbox and start programs on the host, and a repository is
// written by whoever wrote it — and, during a session, by the model. So a
// configuration takes effect only once the user has trusted it: Trust
// records the SHA-256 digest of each of its files, keyed by the workspace's
// absolute path, in a file of the user's configuration directory that no
// sandboxed process can write; Check compares the files as they are now
// with that record. A file added, changed or removed since makes the
// configuration untrusted again, until the user trusts it once more.
package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/trussdev/truss/internal/hostfs"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// FileName is the store's file in the user's Truss directory.
const FileName = "trusted.json"

// Files are a project's configuration files: each file's path relative to
// the workspace root ('/'-separated) and its content.
type Files map[string][]byte

// Digests returns the hex SHA-256 digest of each file.
func (f Files) Digests() map[string]string {
	out := make(map[string]string, len(f))
	for p, b := range f {
		sum := sha256.Sum256(b)
		out[p] = hex.EncodeToString(sum[:])
	}
	return out
}

// State is a configuration's standing with the user.
type State string

// The states.
const (
	// None: the project has no configuration files; there is nothing to
	// trust.
	None State = "none"
	// Trusted: the files are exactly those the user trusted.
	Trusted State = "trusted"
	// Untrusted: the user never trusted this workspace's configuration.
	Untrusted State = "untrusted"
	// Changed: the user trusted the configuration, and a file was added,
	// changed or removed since.
	Changed State = "changed"
)

// Decision is the outcome of Check.
type Decision struct {
	State State
	// Changed lists the files added, changed or removed since the
	// configuration was trusted (State Changed), sorted.
	Changed []string
	// Since is when the user trusted the configuration (zero when never).
	Since time.Time
}

// Store is the user's record of trusted configurations, one JSON file.
type Store struct {
	// Path is the file; it need not exist.
	Path string
}

// UserStore is the store in the user's Truss directory: $TRUSS_HOME, else
// truss under the user's configuration directory (beside the ledger's
// signing key).
func UserStore() (*Store, error) {
	dir := os.Getenv("TRUSS_HOME")
	if dir == "" {
		d, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("no place to record trusted configurations: set TRUSS_HOME: %w", err)
		}
		dir = filepath.Join(d, "truss")
	}
	return &Store{Path: filepath.Join(dir, FileName)}, nil
}

// record is one workspace's trusted configuration.
type record struct {
	Files   map[string]string `json:"files"` // path → hex SHA-256
	Trusted time.Time         `json:"trusted_at"`
}

// document is the store's file.
type document struct {
	Format     int               `json:"format"`
	Workspaces map[string]record `json:"workspaces"`
}

const format = 1

func (s *Store) read() (*document, error) {
	doc := &document{Format: format, Workspaces: map[string]record{}}
	b, err := hostfs.ReadFile(s.Path, 16<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	if err := json.Unmarshal(b, doc); err != nil {
		return nil, fmt.Errorf("trust: %s: %w", s.Path, err)
	}
	if doc.Format != format {
		return nil, fmt.Errorf("trust: %s has format %d, this build reads %d", s.Path, doc.Format, format)
	}
	if doc.Workspaces == nil {
		doc.Workspaces = map[string]record{}
	}
	return doc, nil
}

// write replaces the store's file atomically (0600; its directory 0700).
func (s *Store) write(doc *document) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	if err := hostfs.WriteFileAtomic(s.Path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	return nil
}

// Key is the key a workspace is recorded under: its absolute path with
// symbolic links resolved.
func Key(workspace string) (string, error) {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// Check compares a workspace's configuration files with what the user
// trusted. No files is None, whatever the record says.
func (s *Store) Check(workspace string, files Files) (Decision, error) {
	if len(files) == 0 {
		return Decision{State: None}, nil
	}
	key, err := Key(workspace)
	if err != nil {
		return Decision{}, fmt.Errorf("trust: %w", err)
	}
	doc, err := s.read()
	if err != nil {
		return Decision{}, err
	}
	rec, ok := doc.Workspaces[key]
	if !ok {
		return Decision{State: Untrusted}, nil
	}
	changed := diff(rec.Files, files.Digests())
	if len(changed) > 0 {
		return Decision{State: Changed, Changed: changed, Since: rec.Trusted}, nil
	}
	return Decision{State: Trusted, Since: rec.Trusted}, nil
}

// diff returns the paths whose digests differ between a and b, sorted.
func diff(a, b map[string]string) []string {
	var out []string
	for p, d := range a {
		if b[p] != d {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Trust records files as the trusted configuration of workspace, replacing
// any earlier record. The files are the bytes the caller read and checked:
// what was reviewed is what is trusted.
func (s *Store) Trust(workspace string, files Files, now time.Time) error {
	key, err := Key(workspace)
	if err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	doc, err := s.read()
	if err != nil {
		return err
	}
	doc.Workspaces[key] = record{Files: files.Digests(), Trusted: now.UTC()}
	return s.write(doc)
}

// Revoke forgets the workspace's trusted configuration; it reports whether
// there was one.
func (s *Store) Revoke(workspace string) (bool, error) {
	key, err := Key(workspace)
	if err != nil {
		return false, fmt.Errorf("trust: %w", err)
	}
	doc, err := s.read()
	if err != nil {
		return false, err
	}
	if _, ok := doc.Workspaces[key]; !ok {
		return false, nil
	}
	delete(doc.Workspaces, key)
	return true, s.write(doc)
}

// Paths returns the files' paths, sorted.
func (f Files) Paths() []string { return slices.Sorted(maps.Keys(f)) }

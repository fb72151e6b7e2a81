package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PackName is the file a ledger's payloads are appended to, and
// CheckpointsName the file its signed checkpoints are appended to; both
// are packs.
const (
	PackName        = "payloads.pack"
	CheckpointsName = "checkpoints.log"
)

// appendRecord appends one pack record: the key, a space, the length in
// decimal, a newline, the bytes and a newline.
func appendRecord(buf []byte, key string, b []byte) []byte {
	buf = appendHeader(buf, key, len(b))
	buf = append(buf, b...)
	return append(buf, '\n')
}

// appendHeader appends a record's header line.
func appendHeader(buf []byte, key string, n int) []byte {
	buf = append(buf, key...)
	buf = append(buf, ' ')
	buf = strconv.AppendInt(buf, int64(n), 10)
	return append(buf, '\n')
}

// packRecord is one record of a pack, as read.
type packRecord struct {
	key  string
	off  int64 // of the record's first byte
	data []byte
}

// PackError is a pack that cannot be read past Offset: a torn last record
// (a process killed while appending: Torn) or a damaged one.
type PackError struct {
	File   string
	Offset int64
	Reason string
	Torn   bool
}

func (e *PackError) Error() string {
	return fmt.Sprintf("%s is unreadable from byte %d: %s", e.File, e.Offset, e.Reason)
}

// maxHeader bounds a record header: a 64-digit key, a space and a length.
const maxHeader = 64 + 1 + 19

// parsePack reads the records of a pack up to the first that cannot be
// read, which it reports. Keys are not checked against the contents here.
func parsePack(b []byte) ([]packRecord, *PackError) {
	var recs []packRecord
	var off int64
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 || nl > maxHeader {
			torn := nl < 0 && len(b) <= maxHeader
			return recs, &PackError{Offset: off, Reason: "a record header without its newline", Torn: torn}
		}
		key, n, ok := bytes.Cut(b[:nl], []byte(" "))
		size, err := strconv.ParseUint(string(n), 10, 63)
		if !ok || len(key) == 0 || err != nil || (len(n) > 1 && n[0] == '0') {
			return recs, &PackError{Offset: off, Reason: fmt.Sprintf("a malformed record header %q", b[:nl])}
		}
		rest := b[nl+1:]
		if uint64(len(rest)) < size+1 {
			return recs, &PackError{Offset: off, Reason: fmt.Sprintf("the record of %s is cut short (%d of %d bytes)", key, len(rest), size+1), Torn: true}
		}
		if rest[size] != '\n' {
			return recs, &PackError{Offset: off, Reason: fmt.Sprintf("the record of %s does not end with a newline", key)}
		}
		recs = append(recs, packRecord{key: string(key), off: off, data: rest[:size:size]})
		adv := int64(nl + 1 + int(size) + 1)
		off += adv
		b = b[adv:]
	}
	return recs, nil
}

// payloadStore finds payloads by digest: in the ledger's pack and, for
// ledgers written before the pack, in payloads/<digest> files.
type payloadStore struct {
	dir     string
	good    map[string][]byte
	damaged map[string]int64 // digest → offset of a record whose content does not match it
	packErr *PackError
}

func openPayloads(dir string) (*payloadStore, error) {
	s := &payloadStore{dir: dir, good: map[string][]byte{}, damaged: map[string]int64{}}
	b, err := os.ReadFile(filepath.Join(dir, PackName))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return s, nil
		}
		return nil, fmt.Errorf("read payloads: %w", err)
	}
	recs, perr := parsePack(b)
	if perr != nil {
		perr.File = PackName
	}
	s.packErr = perr
	for _, r := range recs {
		sum := sha256.Sum256(r.data)
		if hex.EncodeToString(sum[:]) != r.key {
			s.damaged[r.key] = r.off
			continue
		}
		s.good[r.key] = r.data
	}
	return s, nil
}

// get returns the payload of a digest, or why it cannot.
func (s *payloadStore) get(digest string) ([]byte, error) {
	if len(digest) != 64 {
		return nil, fmt.Errorf("%q is not a SHA-256 digest", digest)
	}
	if b, ok := s.good[digest]; ok {
		return b, nil
	}
	if off, ok := s.damaged[digest]; ok {
		return nil, fmt.Errorf("content does not match its digest %s (the record at byte %d of %s)", digest, off, PackName)
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "payloads", digest))
	if err != nil {
		if s.packErr != nil {
			return nil, fmt.Errorf("missing (%v)", s.packErr)
		}
		return nil, errors.New("missing")
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != digest {
		return nil, fmt.Errorf("content does not match its digest %s", digest)
	}
	return b, nil
}

// readCheckpoints returns a ledger's checkpoints by tree size: the records
// of checkpoints.log and, for ledgers written before it, the files
// checkpoints/<size>. A torn last record of the log (a process killed while
// appending it) is left out; any other damage is an error.
func readCheckpoints(dir string) (map[uint64][]byte, error) {
	cps := map[uint64][]byte{}
	b, err := os.ReadFile(filepath.Join(dir, CheckpointsName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read checkpoints: %w", err)
	}
	recs, perr := parsePack(b)
	if perr != nil && !perr.Torn {
		perr.File = CheckpointsName
		return nil, &Error{Entry: -1, Reason: perr.Error()}
	}
	for _, r := range recs {
		n, err := strconv.ParseUint(r.key, 10, 64)
		if err != nil || r.key != strconv.FormatUint(n, 10) {
			return nil, &Error{Entry: -1, Reason: fmt.Sprintf("%s: the record at byte %d is not keyed by a tree size (%q)", CheckpointsName, r.off, r.key)}
		}
		if _, dup := cps[n]; dup {
			return nil, &Error{Entry: -1, Reason: fmt.Sprintf("%s: two checkpoints of size %d", CheckpointsName, n)}
		}
		cps[n] = r.data
	}
	files, err := os.ReadDir(filepath.Join(dir, "checkpoints"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read checkpoints: %w", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".tmp") {
			continue // an unfinished write
		}
		n, err := strconv.ParseUint(f.Name(), 10, 64)
		if err != nil {
			return nil, &Error{Entry: -1, Reason: fmt.Sprintf("checkpoint file %q is not named by a tree size", f.Name())}
		}
		b, err := os.ReadFile(filepath.Join(dir, "checkpoints", f.Name()))
		if err != nil {
			return nil, fmt.Errorf("read checkpoint %d: %w", n, err)
		}
		if _, dup := cps[n]; dup {
			return nil, &Error{Entry: -1, Reason: fmt.Sprintf("two checkpoints of size %d", n)}
		}
		cps[n] = b
	}
	return cps, nil
}

// Payloads returns a ledger's stored payloads by digest: those of its pack
// whose contents match their digest (a damaged or torn record, which
// Verify reports, is left out).
func Payloads(dir string) (map[string][]byte, error) {
	s, err := openPayloads(dir)
	if err != nil {
		return nil, err
	}
	return s.good, nil
}

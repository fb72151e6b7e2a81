// Package ledger writes and verifies Truss's signed, tamper-evident session
// ledger.
//
// # Layout
//
// A ledger is a directory:
//
//	entries.jsonl    one entry per line
//	payloads.pack    payloads, each a record keyed by its hex SHA-256
//	checkpoints.log  signed checkpoints, each a record keyed by its tree size
//
// All three are only appended to. A record is
//
//	<key> SP <length, decimal> LF <length bytes> LF
//
// (see pack.go). Ledgers of earlier versions hold payloads/<sha256 hex> and
// checkpoints/<size, 20 digits> files instead; Verify reads both.
//
// # Entries
//
// An entry is one JSON object on one line (UTF-8, no trailing spaces,
// terminated by a single '\n'), with these members in this order:
//
//	"v"        1, the format version
//	"seq"      the entry's index, 0, 1, 2, ... without gaps
//	"time"     RFC 3339 UTC time with nanoseconds
//	"session"  the session id (the same in every entry)
//	"type"     the event: session.start, model.response, tool.call,
//	           tool.result, provider_tool, validation, session.end, ...
//	"prev"     hex SHA-256 leaf hash of the previous entry ("" for seq 0)
//	"data"     an object with the event's small fields, its keys sorted at
//	           every depth
//	"payloads" an object from payload names to hex SHA-256 digests
//
// Strings and numbers are encoded as Go's encoding/json does with HTML
// escaping off, invalid UTF-8 in data replaced by U+FFFD itself (never the
// escape). Verification does not depend on the encoding: it hashes the
// line's bytes and accepts any valid JSON escapes (see parseEntry for what
// it checks of each entry).
//
// The leaf of entry i is the RFC 6962 leaf hash of the line's bytes without
// its '\n': SHA-256(0x00 || line). The tree over leaves 0..n-1 is the RFC
// 6962 Merkle tree; its root is the tree hash of size n.
//
// # Payloads
//
// Each digest named in an entry's "payloads" (and, in tool.result entries,
// each non-empty "before" and "after" digest of data.changes whose content
// was captured) names a record of payloads.pack whose SHA-256 is that
// digest.
//
// # Checkpoints
//
// After every model turn and at the end of a session the writer appends a
// checkpoint: a C2SP tlog-checkpoint (origin line, tree size, base64 root
// hash) signed as a C2SP signed note with the installation's Ed25519 key.
// The origin is "<key name>/session/<session id>". A checkpoint is
// appended only after the entries and payloads it covers are durable, and
// is itself synced. Turns that come faster than SealInterval are sealed
// together, by a checkpoint of the last of them.
//
// # Verification
//
// Verify recomputes every leaf and the tree; checks every entry, sealed or
// not, member by member (types, "v", "seq", "session", "prev", time,
// digests, change paths); checks every checkpoint's signature with the
// verifier key and that its root is the tree hash of the first size
// entries (which makes successive checkpoints consistent); and checks every
// payload a sealed entry names against its digest. Entries past the last
// checkpoint, and a torn last line, are the unsealed tail: counted in the
// Report (Unsealed, TornBytes), not covered by a signature, so unproven;
// Report.CheckSealed fails on them. docs/ledger.md is the specification.
package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// Version is the entry format version.
const Version = 1

// Entry is one ledger entry.
type Entry struct {
	V        int               `json:"v"`
	Seq      uint64            `json:"seq"`
	Time     string            `json:"time"`
	Session  string            `json:"session"`
	Type     string            `json:"type"`
	Prev     string            `json:"prev"`
	Data     any               `json:"data"`
	Payloads map[string]string `json:"payloads"`
}

// Writer appends to a ledger. It is safe for concurrent use; entries are
// appended in the order Append is called.
type Writer struct {
	mu      sync.Mutex
	dir     string
	session string
	origin  string
	signer  note.Signer
	f       *os.File
	pack    *os.File // payloads.pack; written by the sealer only
	packNew bool     // the sealer appended to pack since its last sync
	cps     *os.File // checkpoints.log; written by the sealer only
	rng     *compact.Range
	seq     uint64
	prev    []byte
	sealed  uint64
	now     func() time.Time

	interval time.Duration // SealInterval, but in tests

	// The sealer writes payloads and checkpoints in the background, in
	// order, so that a turn never waits for a disk: a checkpoint is signed
	// and written only after the entries and payloads before it are synced.
	queue  jobQueue
	done   chan struct{}
	stored map[string]bool
	errMu  sync.Mutex
	err    error
}

type job struct {
	payload []byte
	digest  string
	// from, when set, is the payload's source in place of payload: n
	// bytes, read as they are appended (PutFrom).
	from func() (io.ReadCloser, error)
	n    int64
	size uint64 // a checkpoint of this size and root, when root is set
	root []byte
	ack  chan []byte // receives the signed checkpoint, when set
}

// newRange returns an empty compact range of RFC 6962 hashes starting at
// begin. (A factory per range, not one package-level factory: its method
// value would be allocated at every start of the program. No two ranges
// here are ever joined or compared, which is what needs a shared factory.)
func newRange(begin uint64) *compact.Range {
	f := &compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	return f.NewEmptyRange(begin)
}

// Origin returns the checkpoint origin of a session's ledger.
func Origin(keyName, session string) string { return keyName + "/session/" + session }

// Create creates a ledger in dir (which must not hold one) for a session,
// signing checkpoints with signer.
func Create(dir, session string, signer note.Signer) (*Writer, error) {
	return create(dir, session, signer, SealInterval)
}

// create is Create with the shortest time between two seals no caller
// waits for.
func create(dir, session string, signer note.Signer, interval time.Duration) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	var files [3]*os.File
	for i, name := range []string{"entries.jsonl", PackName, CheckpointsName} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			for _, g := range files[:i] {
				g.Close()
			}
			return nil, fmt.Errorf("ledger: %w", err)
		}
		files[i] = f
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the new files' names
		d.Close()
	}
	w := &Writer{dir: dir, session: session, origin: Origin(signer.Name(), session), signer: signer,
		f: files[0], pack: files[1], cps: files[2],
		rng: newRange(0), now: time.Now, interval: interval, done: make(chan struct{}), stored: map[string]bool{}}
	w.queue.cond = sync.NewCond(&w.queue.mu)
	go w.seal()
	return w, nil
}

// jobQueue is the sealer's FIFO. It never blocks the producer: a turn must
// not wait for a disk, and a real model's latency lets the sealer catch up.
type jobQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	jobs   []job
	closed bool
}

func (q *jobQueue) push(j job) {
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *jobQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Signal()
}

// gather waits for d, or until a job a caller waits for (an ack) is queued
// or the queue is closed, and returns jobs with every job queued since
// appended.
func (q *jobQueue) gather(jobs []job, d time.Duration) []job {
	q.mu.Lock()
	defer q.mu.Unlock()
	expired := false
	t := time.AfterFunc(d, func() {
		q.mu.Lock()
		expired = true
		q.mu.Unlock()
		q.cond.Signal()
	})
	defer t.Stop()
	for !expired && !q.closed && !awaited(q.jobs) {
		q.cond.Wait()
	}
	jobs = append(jobs, q.jobs...)
	clear(q.jobs)
	q.jobs = q.jobs[:0]
	return jobs
}

// awaited reports whether a caller waits for one of jobs.
func awaited(jobs []job) bool {
	for _, j := range jobs {
		if j.ack != nil {
			return true
		}
	}
	return false
}

// lastCheckpoint returns the index of the last checkpoint job, or -1.
func lastCheckpoint(jobs []job) int {
	for i := len(jobs) - 1; i >= 0; i-- {
		if jobs[i].root != nil {
			return i
		}
	}
	return -1
}

// SealInterval is the shortest time between the starts of two seals that
// no caller waits for. When turns come faster than that, the sealer
// gathers them and one checkpoint, after one round of fdatasyncs, seals
// them together; a real model's turn takes longer, so each of its turns is
// sealed on its own, right after it.
const SealInterval = 10 * time.Millisecond

// popAll returns every queued job, in order, waiting while there is none;
// it returns nil once the queue is closed and empty.
func (q *jobQueue) popAll(spare []job) []job {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.jobs) == 0 && !q.closed {
		q.cond.Wait()
	}
	jobs := q.jobs
	q.jobs = spare[:0]
	return jobs
}

// seal runs the background jobs, a batch of those queued at a time: the
// batch's payloads are appended to the pack in one write; then, when the
// batch holds checkpoints, the pack and the entries are synced once, and a
// checkpoint of the batch's last tree (and of each tree a caller waits
// for) is signed, appended and synced. A batch therefore costs three
// fdatasyncs however many turns it holds. A batch that seals waits until
// SealInterval has passed since the last seal (unless a caller waits for
// it), gathering what is queued meanwhile.
func (w *Writer) seal() {
	defer close(w.done)
	var buf, cbuf []byte
	var spare []job
	var last []byte // the last checkpoint signed
	lastSize := ^uint64(0)
	var sealed time.Time // when the last seal began
	// written holds the payloads this loop has appended: Put marks a
	// payload stored when it queues it, PutFrom only once its copy
	// succeeded, so a payload may be queued twice and is written once.
	written := map[string]bool{}
	for {
		jobs := w.queue.popAll(spare)
		if len(jobs) == 0 {
			return
		}
		lastCP := lastCheckpoint(jobs)
		if lastCP >= 0 {
			if wait := time.Until(sealed.Add(w.interval)); wait > 0 && !awaited(jobs) {
				jobs = w.queue.gather(jobs, wait)
				lastCP = lastCheckpoint(jobs)
			}
			sealed = time.Now()
		}
		if cap(buf) > maxBuffered {
			buf = nil // a large batch's buffer is not kept for the session
		}
		buf, cbuf = buf[:0], cbuf[:0]
		var acks []chan []byte
		var signed [][]byte
		for i, j := range jobs {
			if j.root == nil {
				if written[j.digest] {
					continue
				}
				if j.from != nil {
					w.writePack(buf)
					buf = buf[:0]
					err := w.copyPayload(j)
					w.fail(err)
					if err == nil {
						written[j.digest] = true
						w.mu.Lock()
						w.stored[j.digest] = true
						w.mu.Unlock()
					}
					continue
				}
				written[j.digest] = true
				if len(j.payload) > maxBuffered {
					// Written as it is, not copied into the batch.
					buf = appendHeader(buf, j.digest, len(j.payload))
					w.writePack(buf, j.payload, []byte{'\n'})
					buf = buf[:0]
					continue
				}
				buf = appendRecord(buf, j.digest, j.payload)
				continue
			}
			if j.ack == nil && i != lastCP {
				continue // sealed by the batch's last checkpoint
			}
			if j.size != lastSize { // a tree is checkpointed once
				cp := log.Checkpoint{Origin: w.origin, Size: j.size, Hash: j.root}
				sig, err := note.Sign(&note.Note{Text: string(cp.Marshal())}, w.signer)
				if err != nil {
					w.fail(fmt.Errorf("ledger: sign checkpoint %d: %w", j.size, err))
				} else {
					cbuf = appendRecord(cbuf, strconv.FormatUint(j.size, 10), sig)
				}
				last, lastSize = sig, j.size
			}
			acks, signed = append(acks, j.ack), append(signed, last)
		}
		clear(jobs)
		spare = jobs
		w.writePack(buf)
		if len(acks) == 0 {
			continue
		}
		if len(cbuf) > 0 {
			w.fail(w.writeCheckpoints(cbuf))
		}
		for i, ack := range acks {
			if ack != nil {
				ack <- signed[i]
			}
		}
	}
}

// maxBuffered is the largest payload copied into a batch's write, and the
// largest batch buffer kept from one batch to the next.
const maxBuffered = 1 << 20

// writePack appends bytes to the pack, in order.
func (w *Writer) writePack(parts ...[]byte) {
	for _, b := range parts {
		if len(b) == 0 {
			continue
		}
		w.packNew = true
		if _, err := w.pack.Write(b); err != nil {
			w.fail(fmt.Errorf("ledger: append payloads: %w", err))
			return
		}
	}
}

// copyPayload appends the record of a payload read from its source (a
// job of PutFrom): the header, the bytes as they are read, hashed on the
// way, and the newline. A source that fails, or whose bytes are not the
// size and digest given, leaves no record: the pack is cut back to where
// the record began.
func (w *Writer) copyPayload(j job) error {
	st, err := w.pack.Stat()
	if err != nil {
		return fmt.Errorf("ledger: append payload %s: %w", j.digest, err)
	}
	start := st.Size()
	err = func() error {
		r, err := j.from()
		if err != nil {
			return err
		}
		defer r.Close()
		w.packNew = true
		if _, err := w.pack.Write(appendHeader(nil, j.digest, int(j.n))); err != nil {
			return err
		}
		h := sha256.New()
		n, err := io.CopyBuffer(w.pack, io.TeeReader(io.LimitReader(r, j.n), h), make([]byte, 64<<10))
		switch {
		case err != nil:
			return err
		case n != j.n:
			return fmt.Errorf("its source ended after %d of %d bytes", n, j.n)
		case hex.EncodeToString(h.Sum(nil)) != j.digest:
			return errors.New("its source's bytes do not hash to its digest")
		}
		_, err = w.pack.Write([]byte{'\n'})
		return err
	}()
	if err != nil {
		if terr := w.pack.Truncate(start); terr != nil {
			err = errors.Join(err, terr)
		}
		return fmt.Errorf("ledger: append payload %s: %w", j.digest, err)
	}
	return nil
}

// writeCheckpoints makes the payloads and entries written so far durable,
// then appends the checkpoint records and makes them durable.
func (w *Writer) writeCheckpoints(records []byte) error {
	if w.packNew {
		if err := syncData(w.pack); err != nil {
			return fmt.Errorf("ledger: sync the payloads: %w", err)
		}
		w.packNew = false
	}
	if err := syncData(w.f); err != nil {
		return fmt.Errorf("ledger: sync the entries: %w", err)
	}
	if _, err := w.cps.Write(records); err != nil {
		return fmt.Errorf("ledger: append checkpoints: %w", err)
	}
	if err := syncData(w.cps); err != nil {
		return fmt.Errorf("ledger: sync the checkpoints: %w", err)
	}
	return nil
}

func (w *Writer) fail(err error) {
	if err != nil {
		w.errMu.Lock()
		if w.err == nil {
			w.err = err
		}
		w.errMu.Unlock()
	}
}

// Err returns the first error of the background writes.
func (w *Writer) Err() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// Dir returns the ledger's directory.
func (w *Writer) Dir() string { return w.dir }

// Origin returns the checkpoint origin.
func (w *Writer) Origin() string { return w.origin }

// Put stores a payload and returns its hex SHA-256 digest. The payload is
// written in the background, before any later checkpoint, from b itself:
// the caller must not change b afterwards.
func (w *Writer) Put(b []byte) (string, error) {
	sum := sha256.Sum256(b)
	d := hex.EncodeToString(sum[:])
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stored[d] {
		return d, nil
	}
	w.stored[d] = true
	w.queue.push(job{payload: b, digest: d})
	return d, nil
}

// PutKnown stores a payload whose hex SHA-256 the caller computed (an
// adapter's cached message), as Put does. A wrong digest makes the ledger
// fail verification; it cannot make a wrong payload pass.
func (w *Writer) PutKnown(digest string, b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stored[digest] {
		return
	}
	w.stored[digest] = true
	w.queue.push(job{payload: b, digest: digest})
}

// PutFrom stores a payload of size bytes that open reads, whose hex
// SHA-256 the caller computed, without holding it in memory: the sealer
// calls open once, in the background, and copies the bytes into the pack
// as they are read, before any later checkpoint. The pack's record is the
// one Put writes of the same bytes. What open reads must stay readable
// and unchanged until then; bytes that are not size long or do not hash
// to digest are not stored, and fail the writer (Err); a later Put or
// PutFrom of that digest still stores it. A payload already stored is not
// stored again, and open is then never called.
func (w *Writer) PutFrom(digest string, size int64, open func() (io.ReadCloser, error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stored[digest] {
		return
	}
	w.queue.push(job{digest: digest, from: open, n: size})
}

// Append appends an entry of the given type and returns its sequence number.
// Payloads maps names to digests from Put.
func (w *Writer) Append(typ string, data any, payloads map[string]string) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if payloads == nil {
		payloads = map[string]string{}
	}
	if data == nil {
		data = struct{}{}
	}
	cd, err := canonical(data)
	if err != nil {
		return 0, fmt.Errorf("ledger: entry %d data: %w", w.seq, err)
	}
	e := Entry{V: Version, Seq: w.seq, Time: w.now().UTC().Format(time.RFC3339Nano), Session: w.session, Type: typ,
		Prev: hex.EncodeToString(w.prev), Data: cd, Payloads: payloads}
	line, err := marshal(e)
	if err != nil {
		return 0, fmt.Errorf("ledger: entry %d: %w", w.seq, err)
	}
	if _, err := w.f.Write(append(line, '\n')); err != nil {
		return 0, fmt.Errorf("ledger: append entry %d: %w", w.seq, err)
	}
	leaf := rfc6962.DefaultHasher.HashLeaf(line)
	if err := w.rng.Append(leaf, nil); err != nil {
		return 0, fmt.Errorf("ledger: %w", err)
	}
	w.prev = leaf
	w.seq++
	return e.Seq, nil
}

// canonical re-encodes v with object keys sorted at every depth and numbers
// as written.
// An entry's data nested deeper than MaxDataDepth is refused: its line,
// one level deeper, would pass the 10,000 levels of nesting that Go's
// encoding/json (and the session page's reader) read, and no verifier
// could read the ledger.
func canonical(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if d := Depth(b); d > MaxDataDepth {
		return nil, fmt.Errorf("%w: %d levels", ErrTooDeep, d)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MaxDataDepth is the deepest nesting of arrays and objects an entry's
// data may have: its line nests one level more, and Go's encoding/json
// reads 10,000 levels and no more.
const MaxDataDepth = 9999

// ErrTooDeep is Append's error for data nested deeper than MaxDataDepth.
var ErrTooDeep = errors.New("ledger: data nested too deep for a verifier to read")

// Depth returns how deeply the arrays and objects of the JSON text b
// nest (0 for a scalar), counting only brackets outside strings.
func Depth(b []byte) int {
	depth, most, in, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case in && esc:
			esc = false
		case in && c == '\\':
			esc = true
		case in && c == '"':
			in = false
		case in:
		case c == '"':
			in = true
		case c == '[' || c == '{':
			depth++
			most = max(most, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return most
}

// marshal encodes an entry as its one line.
func marshal(e Entry) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Checkpoint seals the tree as it is now: the entries are synced and a
// signed checkpoint is written, in the background. Flush waits for it.
func (w *Writer) Checkpoint() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	root, err := w.root()
	if err != nil {
		return err
	}
	w.queue.push(job{size: w.seq, root: root})
	w.sealed = w.seq
	return nil
}

// Flush seals the tree as it is now and waits until every payload and
// checkpoint so far is on disk; it returns the signed checkpoint.
func (w *Writer) Flush() ([]byte, error) {
	w.mu.Lock()
	root, err := w.root()
	if err != nil {
		w.mu.Unlock()
		return nil, err
	}
	ack := make(chan []byte, 1)
	w.queue.push(job{size: w.seq, root: root, ack: ack})
	w.sealed = w.seq
	w.mu.Unlock()
	signed := <-ack
	return signed, w.Err()
}

// Seal is Flush that also returns the size and root hash the checkpoint
// signs: what a parent's ledger links a sub-agent's by.
func (w *Writer) Seal() (size uint64, root, signed []byte, err error) {
	w.mu.Lock()
	size = w.seq
	root, err = w.root()
	w.mu.Unlock()
	if err != nil {
		return 0, nil, nil, err
	}
	signed, err = w.Flush()
	return size, root, signed, err
}

func (w *Writer) root() ([]byte, error) {
	if w.seq == 0 {
		return rfc6962.DefaultHasher.EmptyRoot(), nil
	}
	return w.rng.GetRootHash(nil)
}

// Size returns the number of entries.
func (w *Writer) Size() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// Close seals any unsealed entries, waits for the background writes and
// closes.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.seq != w.sealed || w.seq == 0 {
		if root, err := w.root(); err == nil {
			w.queue.push(job{size: w.seq, root: root})
			w.sealed = w.seq
		}
	}
	w.queue.close()
	w.mu.Unlock()
	<-w.done
	err := w.Err()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	for _, f := range []*os.File{w.pack, w.cps} {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// ---- Verification ----

// Report is the outcome of a verification.
//
// A ledger's complete lines are its entries; Verify checks every one of
// them, sealed or not, for form and for its prev link. The first Sealed of
// them are covered by the last checkpoint that verified: its signature
// proves them. The rest, Unsealed, and a torn last line are the unsealed
// tail: no signature covers them, so nothing proves that Truss wrote them
// (anyone can append a well-formed entry with the right prev link, in any
// encoding). Verify does not fail on the tail; CheckSealed does, which is
// what `truss ledger verify --strict` means. A caller that acts on a
// ledger's content reads only entries[:Sealed].
//
// With an error found after the entries were read (a checkpoint's, a
// payload's), the report holds what verified before it, and still
// Unsealed = Entries - Sealed: a ledger with no checkpoint at all reports
// every entry unsealed.
type Report struct {
	Entries     uint64 // complete lines read, each an entry: Sealed + Unsealed
	Sealed      uint64 // entries covered by the last valid checkpoint: its tree size
	Checkpoints int
	Root        []byte // root of the last checkpoint
	Checkpoint  []byte // the last checkpoint, as signed
	Origin      string
	Session     string
	Payloads    int // payloads checked
	// Unsealed is the number of entries no checkpoint covers: those after
	// the last valid checkpoint's tree size, however they are encoded
	// (escapes, whitespace, a line ending in CR LF). It does not count a
	// torn last line, which is not an entry (TornBytes).
	Unsealed uint64
	// TornBytes is the length of a last line without its newline: a write
	// cut short by a crash, after the last checkpoint. It is not an entry;
	// it is reported with the unsealed tail.
	TornBytes int
	// TailPayloads counts payloads that unsealed entries name but that are
	// missing or damaged: a process killed before writing them.
	TailPayloads int
}

// Complete reports whether the checkpoints cover the whole ledger: no
// unsealed entry and no torn last line.
func (r *Report) Complete() bool { return r.Unsealed == 0 && r.TornBytes == 0 }

// CheckSealed returns nil when r is complete, else an *UnsealedError
// describing the unsealed tail: the failure of a verification that
// requires every entry to be sealed.
func (r *Report) CheckSealed() error {
	if r.Complete() {
		return nil
	}
	return &UnsealedError{Sealed: r.Sealed, Unsealed: r.Unsealed, TornBytes: r.TornBytes, MissingPayloads: r.TailPayloads}
}

// UnsealedError is an unsealed tail where none is allowed: entries after
// the last checkpoint, or a torn last line, that no signature covers.
type UnsealedError struct {
	Sealed          uint64 // the last checkpoint's tree size
	Unsealed        uint64 // entries after it
	TornBytes       int    // the length of a torn last line; 0 when there is none
	MissingPayloads int    // payloads the unsealed entries name that are missing or damaged
}

func (e *UnsealedError) Error() string {
	var parts []string
	switch e.Unsealed {
	case 0:
	case 1:
		parts = append(parts, "1 entry")
	default:
		parts = append(parts, fmt.Sprintf("%d entries", e.Unsealed))
	}
	if e.TornBytes > 0 {
		parts = append(parts, fmt.Sprintf("a torn last line of %d bytes (a write cut short, not an entry)", e.TornBytes))
	}
	n := e.Unsealed // what the tail holds: its entries and its torn line
	if e.TornBytes > 0 {
		n++
	}
	them := "them"
	if n == 1 {
		them = "it"
	}
	s := fmt.Sprintf("unsealed tail: %s after the last checkpoint (size %d); no signature covers %s", strings.Join(parts, " and "), e.Sealed, them)
	switch e.MissingPayloads {
	case 0:
	case 1:
		s += ", and 1 payload they name is missing"
	default:
		s += fmt.Sprintf(", and %d payloads they name are missing", e.MissingPayloads)
	}
	return s
}

// FormatRoot formats a tree's root hash for people as a checkpoint writes
// it: standard base64 with padding, the signed note's third line. Every
// root Truss shows goes through it, so a root printed anywhere compares
// with a checkpoint's by eye.
func FormatRoot(root []byte) string { return base64.StdEncoding.EncodeToString(root) }

// Error is a verification failure, naming what is wrong.
type Error struct {
	Entry  int64 // the first bad entry, -1 when the fault is not an entry's
	Reason string
}

func (e *Error) Error() string {
	if e.Entry >= 0 {
		return fmt.Sprintf("entry %d: %s", e.Entry, e.Reason)
	}
	return e.Reason
}

func bad(entry int64, format string, args ...any) error {
	return &Error{Entry: entry, Reason: fmt.Sprintf(format, args...)}
}

// Verify verifies the ledger in dir with the given verifier key (a vkey).
func Verify(dir, vkey string) (*Report, []Entry, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, nil, fmt.Errorf("verifier key: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "entries.jsonl"))
	if err != nil {
		return nil, nil, fmt.Errorf("read entries: %w", err)
	}
	r, entries, err := verifyTree(data, func() (map[uint64][]byte, error) { return readCheckpoints(dir) }, v)
	if err != nil {
		return r, entries, err
	}
	return r, entries, verifyPayloads(dir, r, entries)
}

// VerifyEntries verifies a ledger held in memory, without its payloads:
// data is the bytes of its entries.jsonl and checkpoints its signed
// checkpoints by tree size (each the record's bytes). It checks what
// Verify checks first — every entry, the prev links, every checkpoint's
// signature with vkey and root — and fails as Verify does; whoever holds
// the payloads checks each against the digest an entry names.
func VerifyEntries(data []byte, checkpoints map[uint64][]byte, vkey string) (*Report, []Entry, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, nil, fmt.Errorf("verifier key: %w", err)
	}
	return verifyTree(data, func() (map[uint64][]byte, error) { return checkpoints, nil }, v)
}

// Checkpoints returns the signed checkpoints of the ledger in dir by tree
// size, as stored (a torn last record left out), without verifying them.
func Checkpoints(dir string) (map[uint64][]byte, error) { return readCheckpoints(dir) }

// verifyTree is steps 1 and 2 of Verify: the entries of data, then the
// checkpoints cps returns, read only once every entry is checked.
func verifyTree(data []byte, cps func() (map[uint64][]byte, error), v note.Verifier) (*Report, []Entry, error) {
	r := &Report{}
	var entries []Entry
	var leaves [][]byte
	rest := data
	for i := int64(0); len(rest) > 0; i++ {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			// A torn write: not an entry. Past the last checkpoint it is
			// part of the unsealed tail; a checkpoint that covers it finds
			// an entry missing.
			r.TornBytes = len(rest)
			break
		}
		line := rest[:nl]
		rest = rest[nl+1:]
		e, err := parseEntry(line)
		if err != nil {
			return r, entries, bad(i, "%v", err)
		}
		switch {
		case e.V != Version:
			return r, entries, bad(i, "format version %d, want %d", e.V, Version)
		case e.Seq != uint64(i):
			return r, entries, bad(i, "sequence number %d, want %d (entries reordered, deleted or duplicated)", e.Seq, i)
		case i > 0 && e.Session != entries[0].Session:
			return r, entries, bad(i, "session %q, want %q", e.Session, entries[0].Session)
		}
		want := ""
		if i > 0 {
			want = hex.EncodeToString(leaves[i-1])
		}
		if e.Prev != want {
			return r, entries, bad(i-1, "the entry was changed: its leaf hash no longer matches the next entry's prev link")
		}
		entries = append(entries, e)
		leaves = append(leaves, rfc6962.DefaultHasher.HashLeaf(line))
	}
	r.Entries = uint64(len(entries))
	r.Unsealed = r.Entries // until a checkpoint covers them
	if len(entries) > 0 {
		r.Session = entries[0].Session
	}
	// Roots of every prefix, computed once.
	roots := make([][]byte, len(leaves)+1)
	roots[0] = rfc6962.DefaultHasher.EmptyRoot()
	rng := newRange(0)
	for i, l := range leaves {
		rng.Append(l, nil)
		roots[i+1], _ = rng.GetRootHash(nil)
	}
	cpsRead, err := cps()
	if err != nil {
		return r, entries, err
	}
	origin := ""
	if r.Session != "" {
		origin = Origin(v.Name(), r.Session)
	}
	for _, n := range slices.Sorted(maps.Keys(cpsRead)) {
		b := cpsRead[n]
		cp, _, _, err := log.ParseCheckpoint(b, origin, v)
		if err != nil {
			return r, entries, bad(-1, "checkpoint %d: %v", n, err)
		}
		if cp.Size != n {
			return r, entries, bad(-1, "checkpoint %d: it is a checkpoint of size %d", n, cp.Size)
		}
		if n > r.Entries {
			return r, entries, bad(int64(r.Entries), "checkpoint %d covers %d entries, but only %d exist (entries deleted or truncated)", n, n, r.Entries)
		}
		if !bytes.Equal(cp.Hash, roots[n]) {
			first := firstDiverging(n, r.Sealed)
			return r, entries, bad(first, "checkpoint %d's root hash does not match the entries (an entry was changed, inserted or removed at or after entry %d)", n, first)
		}
		r.Checkpoints++
		r.Sealed, r.Root, r.Origin, r.Checkpoint = n, cp.Hash, cp.Origin, b
		r.Unsealed = r.Entries - n
	}
	if r.Checkpoints == 0 {
		// Without a checkpoint nothing is signed, not even by whom.
		return r, entries, bad(-1, "no signed checkpoint: none of the %d entries is sealed", r.Entries)
	}
	return r, entries, nil
}

// verifyPayloads is step 3 of Verify: every payload a sealed entry of the
// ledger in dir names, and every part a request_parts manifest names.
func verifyPayloads(dir string, r *Report, entries []Entry) error {
	// Payloads, and the parts a request_parts manifest names.
	store, err := openPayloads(dir)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	check := func(i int, name, d string) error {
		if seen[d] {
			return nil
		}
		if _, err := store.get(d); err != nil {
			if uint64(i) >= r.Sealed {
				r.TailPayloads++ // unsealed: reported with the tail
				return nil
			}
			return bad(int64(i), "payload %s: %v", name, err)
		}
		seen[d] = true
		return nil
	}
	for i, e := range entries {
		for _, name := range slices.Sorted(maps.Keys(e.Payloads)) {
			d := e.Payloads[name]
			if err := check(i, name, d); err != nil {
				return err
			}
			if name != "request_parts" {
				continue
			}
			b, err := store.get(d)
			if err != nil {
				continue // an unsealed entry's, counted above
			}
			var parts []string
			if err := json.Unmarshal(b, &parts); err != nil {
				return bad(int64(i), "payload request_parts is not a list of digests: %v", err)
			}
			for k, pd := range parts {
				if err := check(i, fmt.Sprintf("request part %d", k), pd); err != nil {
					return err
				}
			}
		}
	}
	r.Payloads = len(seen)
	return nil
}

// firstDiverging names the first entry a root mismatch can lie in: past
// the entries the previous checkpoint sealed.
func firstDiverging(n, sealed uint64) int64 {
	if sealed < n {
		return int64(sealed)
	}
	return 0
}

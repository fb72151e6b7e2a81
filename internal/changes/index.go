//go:build linux

package changes

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// index is one root's stat index: each directory's entries, sorted by
// name, under the directory's path relative to the root ("" for the root).
//
// Most of it is on disk, so that the tracker's memory does not grow with
// the number of files a root holds: a segment, one unnamed file in the
// content store's private directory (made as the store's pack is, so no
// command can open or rewrite it), holds every directory in path order;
// a sparse table in memory gives the path and offset of the first
// directory starting in each block of segBlock bytes, so a lookup reads
// one block or a little more. What changed since the segment was written
// is held in memory, the overlay, until it holds more than budget
// entries; it is then merged with the segment into a new one (a
// sequential read of the old and a sequential write of the new), at the
// points where the tracker holds no entry of it (maybeMerge).
//
// The overlay's budget is in entries and in bytes (entsBytes: each
// entry's record, name and link target, and each directory's path): a
// link's target is up to 4 KiB, a name 255 bytes, so a budget of entries
// alone would let a few thousand long links hold a hundred megabytes.
//
// Memory is thus the overlay's budget, the sparse table (a path and an
// offset per block: about 0.5 % of the segment) and the directories
// being read; a directory costs its entries while it is read, and the
// walk reads its listing a batch at a time and stops past
// Options.MaxDirBytes (too large to track).
//
// get and has may be called concurrently with each other and with set,
// del and merge (the walk's workers read while the walk installs); the
// slice get returns must not be modified (edit returns one that may be).
type index struct {
	budget     int // entries the overlay may hold before a merge
	byteBudget int // bytes (entsBytes) the overlay may hold before a merge

	mu sync.RWMutex
	// seg is the segment, size bytes long (0: empty); a merge writes the
	// new one into spare, and the two are swapped. Both are made when the
	// index is, unnamed, in the content store's private directory.
	seg, spare *os.File
	size       int64
	sparse     []mark
	over       map[string]*odir
	overN      int // entries (and directories) the overlay holds
	overBytes  int // their bytes (entsBytes, and each directory's path)
	// slack is the largest directory the last merge wrote from the
	// overlay: the next merge waits for budget entries more than that,
	// so that a directory larger than the budget, edited chunk after
	// chunk, is read into the overlay once, not once per chunk;
	// slackBytes is the same for the byte budget.
	slack, slackBytes int
	merges            int // merges done (read by tests)

	bufs sync.Pool // of *[]byte, segBlock long: lookups' read buffers
}

// mark is an entry of the sparse table: the first directory that starts
// in a block of the segment, and its offset.
type mark struct {
	dir string
	off int64
}

// odir is a directory of the overlay: its entries, or gone when it was
// removed from the index since the segment was written. shared entries
// (a walk's, which its diffs point into) are copied before they are
// edited.
type odir struct {
	ents   []entry
	gone   bool
	shared bool
	bytes  int // entsBytes(ents) as last accounted (grow keeps it)
}

// segBlock is the segment's block: the sparse table has one mark per
// block.
const segBlock = 4096

// DefaultIndexMemory is the default of Options.IndexMemory.
const DefaultIndexMemory = 32768

// DefaultIndexBytes is the default of Options.IndexBytes.
const DefaultIndexBytes = 8 << 20

// entryBytes is what an entry costs the tracker besides its strings.
const entryBytes = int(unsafe.Sizeof(entry{}))

// entBytes is what the tracker holds of one entry: its record, its name
// and its link target.
func entBytes(e *entry) int { return entryBytes + len(e.name) + len(e.link) }

// entsBytes is entBytes over a directory's entries.
func entsBytes(ents []entry) int {
	n := 0
	for i := range ents {
		n += entBytes(&ents[i])
	}
	return n
}

func newIndex(files *store, budget, byteBudget int) (*index, error) {
	if budget <= 0 {
		budget = DefaultIndexMemory
	}
	if byteBudget <= 0 {
		byteBudget = DefaultIndexBytes
	}
	seg, err := files.tmpFile("index")
	if err != nil {
		return nil, err
	}
	spare, err := files.tmpFile("index")
	if err != nil {
		seg.Close()
		return nil, err
	}
	return &index{budget: budget, byteBudget: byteBudget, seg: seg, spare: spare, over: map[string]*odir{}}, nil
}

// close closes the segments, which, having no name, are gone with them.
func (x *index) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.seg == nil {
		return nil
	}
	err := errors.Join(x.seg.Close(), x.spare.Close())
	x.seg, x.spare = nil, nil
	return err
}

// begin returns the spare segment, emptied, for a new segment to be
// written to; commit makes it the segment.
func (x *index) begin() (*os.File, error) {
	if err := x.spare.Truncate(0); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	if _, err := x.spare.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	return x.spare, nil
}

// commit makes the spare, size bytes written by w, the segment. The
// caller holds mu.
func (x *index) commit(w *segWriter) {
	x.seg, x.spare = x.spare, x.seg
	x.size, x.sparse = w.off, w.sparse
}

// get returns the entries of dir and whether the index knows it. The
// slice is shared: the caller does not modify it.
func (x *index) get(dir string) ([]entry, bool, error) {
	ents, _, ok, err := x.getInto(dir, nil)
	return ents, ok, err
}

// getInto is get, decoding entries read from the segment into buf's
// array when it is large enough (decoded then says so): a caller that
// reads many directories reuses one buffer.
func (x *index) getInto(dir string, buf []entry) (ents []entry, decoded, ok bool, err error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if o, ok := x.over[dir]; ok {
		if o.gone {
			return nil, false, false, nil
		}
		return o.ents, false, true, nil
	}
	ents, ok, err = x.read(dir, true, buf)
	return ents, ok && len(ents) > 0 && cap(buf) >= len(ents) && &buf[:1][0] == &ents[0], ok, err
}

// has reports whether the index knows dir.
func (x *index) has(dir string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if o, ok := x.over[dir]; ok {
		return !o.gone
	}
	_, ok, err := x.read(dir, false, nil)
	return ok && err == nil
}

// edit returns the entries of dir held in the overlay (read into it from
// the segment first), which the caller may modify in place until the next
// merge; ok is false when the index does not know dir.
func (x *index) edit(dir string) ([]entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if o, ok := x.over[dir]; ok {
		if o.shared {
			o.ents, o.shared = slices.Clone(o.ents), false
		}
		return o.ents, !o.gone
	}
	ents, ok, err := x.read(dir, true, nil)
	if err != nil || !ok {
		return nil, false
	}
	n := entsBytes(ents)
	x.over[dir] = &odir{ents: ents, bytes: n}
	x.overN += len(ents) + 1
	x.overBytes += n + len(dir)
	return ents, true
}

// grow accounts n bytes more (or fewer) held by the entries of dir in the
// overlay, which the caller changed in place (edit's entries): a link's
// target set, an entry replaced.
func (x *index) grow(dir string, n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if o, ok := x.over[dir]; ok {
		o.bytes += n
		x.overBytes += n
	}
}

// set makes ents the entries of dir. With shared, the index never
// modifies ents (edit copies them first): the caller may keep pointers
// into them.
func (x *index) set(dir string, ents []entry, shared bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := entsBytes(ents)
	if o, ok := x.over[dir]; ok {
		x.overN += len(ents) - len(o.ents)
		x.overBytes += n - o.bytes
		o.ents, o.gone, o.shared, o.bytes = ents, false, shared, n
		return
	}
	x.over[dir] = &odir{ents: ents, shared: shared, bytes: n}
	x.overN += len(ents) + 1
	x.overBytes += n + len(dir)
}

// del removes dir (not what is beneath it) from the index.
func (x *index) del(dir string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if o, ok := x.over[dir]; ok {
		x.overN -= len(o.ents)
		x.overBytes -= o.bytes
		o.ents, o.gone, o.shared, o.bytes = nil, true, false, 0
		return
	}
	x.over[dir] = &odir{gone: true}
	x.overN++
	x.overBytes += len(dir)
}

// maybeMerge merges the overlay into a new segment when it holds more
// than its budget of entries or of bytes (plus the slack of a directory
// larger than the budget, whose entries a scan holds while it reads it
// anyway). The caller holds no slice edit returned.
func (x *index) maybeMerge() error {
	x.mu.RLock()
	n, b := x.overN, x.overBytes
	x.mu.RUnlock()
	if n <= x.budget+x.slack && b <= x.byteBudget+x.slackBytes {
		return nil
	}
	return x.merge()
}

// merge writes the segment and the overlay, merged in path order, to a
// new segment, which replaces the old; the overlay is then empty.
func (x *index) merge() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	f, err := x.begin()
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(x.over))
	largest, largestBytes := 0, 0
	for k, o := range x.over {
		keys = append(keys, k)
		largest = max(largest, len(o.ents))
		largestBytes = max(largestBytes, o.bytes)
	}
	slices.Sort(keys)
	w := newSegWriter(f)
	rd := newSegReader(x.seg, 0, x.size, nil)
	var cur string
	var body []byte
	have := false
	next := func() error {
		have = false
		d, b, ok, err := rd.record()
		if err != nil || !ok {
			return err
		}
		cur, body, have = d, b, true
		return nil
	}
	err = next()
	for err == nil && (have || len(keys) > 0) {
		switch {
		case len(keys) > 0 && (!have || keys[0] <= cur):
			k := keys[0]
			keys = keys[1:]
			if have && cur == k {
				err = next() // replaced by the overlay's
			}
			if o := x.over[k]; !o.gone && err == nil {
				err = w.dir(k, o.ents)
			}
		default:
			err = w.raw(cur, body)
			if err == nil {
				err = next()
			}
		}
	}
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	x.commit(w)
	x.merges++
	clear(x.over)
	x.overN, x.overBytes = 0, 0
	x.slack, x.slackBytes = 0, 0
	if largest > x.budget {
		x.slack = largest
	}
	if largestBytes > x.byteBudget {
		x.slackBytes = largestBytes
	}
	return nil
}

// read finds dir in the segment; with decode, its entries are returned,
// in buf's array when it is large enough. The caller holds mu (read).
func (x *index) read(dir string, decode bool, buf []entry) ([]entry, bool, error) {
	if x.size == 0 {
		return nil, false, nil
	}
	i := sort.Search(len(x.sparse), func(i int) bool { return x.sparse[i].dir > dir }) - 1
	if i < 0 {
		return nil, false, nil
	}
	b, _ := x.bufs.Get().(*[]byte)
	if b == nil {
		b = new([]byte)
	}
	rd := newSegReader(x.seg, x.sparse[i].off, x.size, *b)
	defer func() {
		if cap(rd.buf) == segBlock {
			*b = rd.buf
			x.bufs.Put(b)
		}
	}()
	for {
		d, n, ok, err := rd.header()
		if err != nil || !ok {
			return nil, false, err
		}
		switch {
		case d == dir:
			if !decode {
				return nil, true, nil
			}
			body, err := rd.bytes(n)
			if err != nil {
				return nil, false, err
			}
			ents, err := decodeEntriesInto(body, buf)
			return ents, err == nil, err
		case d > dir:
			return nil, false, nil
		}
		if err := rd.skip(n); err != nil {
			return nil, false, err
		}
	}
}

// A segment is a sequence of directory records in path order:
//
//	uvarint len(path) | path | uvarint len(body) | body
//
// and a body is uvarint count, then each entry:
//
//	uvarint len(name) | name | mode u32 | size, mtime, ctime i64 |
//	ino, dev u64 | src u8 | flags u8 | sum [32] (src ≠ srcNone) |
//	uvarint offset, uvarint length in the store (flagKept) |
//	uvarint len(link) | link (flagLink)
//
// little-endian. The segment is Truss's own and no command can reach it,
// but a record that does not decode is an error, never a guess.
const (
	flagKept = 1 << iota
	flagLinked
	flagRacy
	flagLink
)

// errSegment is a segment that does not decode.
var errSegment = errors.New("the stat index's segment is corrupt")

func appendEntries(b []byte, ents []entry) []byte {
	b = binary.AppendUvarint(b, uint64(len(ents)))
	for i := range ents {
		e := &ents[i]
		b = binary.AppendUvarint(b, uint64(len(e.name)))
		b = append(b, e.name...)
		b = binary.LittleEndian.AppendUint32(b, e.mode)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.size))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.mtime))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.ctime))
		b = binary.LittleEndian.AppendUint64(b, e.ino)
		b = binary.LittleEndian.AppendUint64(b, e.dev)
		var fl byte
		if e.kept {
			fl |= flagKept
		}
		if e.linked {
			fl |= flagLinked
		}
		if e.racy {
			fl |= flagRacy
		}
		if e.link != "" {
			fl |= flagLink
		}
		b = append(b, e.src, fl)
		if e.src != srcNone {
			b = append(b, e.sum[:]...)
		}
		if e.kept {
			b = binary.AppendUvarint(b, uint64(e.at.off))
			b = binary.AppendUvarint(b, uint64(e.at.n))
		}
		if e.link != "" {
			b = binary.AppendUvarint(b, uint64(len(e.link)))
			b = append(b, e.link...)
		}
	}
	return b
}

func decodeEntries(b []byte) ([]entry, error) { return decodeEntriesInto(b, nil) }

// decodeEntriesInto decodes into buf's array when it is large enough.
// With a non-nil buf the entries' strings share one copy of b: a caller
// that keeps one beyond the next directory clones it (strings.Clone), or
// it keeps the whole record alive.
func decodeEntriesInto(b []byte, buf []entry) ([]entry, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errSegment
	}
	b = b[k:]
	var ents []entry
	if uint64(cap(buf)) >= n {
		ents = buf[:n]
		clear(ents)
	} else {
		ents = make([]entry, n)
	}
	// A caller that passes buf reads many directories and keeps none of
	// their entries: its names are views of one copy of the record, made
	// here, instead of an allocation per name. Other callers get names of
	// their own.
	var record string
	if buf != nil {
		record = string(b)
	}
	size := len(b)
	str := func() (string, bool) {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return "", false
		}
		var s string
		if record != "" {
			at := size - len(b) + k
			s = record[at : at+int(l)]
		} else {
			s = string(b[k : k+int(l)])
		}
		b = b[k+int(l):]
		return s, true
	}
	for i := range ents {
		e := &ents[i]
		var ok bool
		if e.name, ok = str(); !ok || len(b) < 4+5*8+2 {
			return nil, errSegment
		}
		le := binary.LittleEndian
		e.mode = le.Uint32(b)
		e.size = int64(le.Uint64(b[4:]))
		e.mtime = int64(le.Uint64(b[12:]))
		e.ctime = int64(le.Uint64(b[20:]))
		e.ino = le.Uint64(b[28:])
		e.dev = le.Uint64(b[36:])
		e.src = b[44]
		fl := b[45]
		b = b[46:]
		e.kept, e.linked, e.racy = fl&flagKept != 0, fl&flagLinked != 0, fl&flagRacy != 0
		if e.src != srcNone {
			if len(b) < 32 {
				return nil, errSegment
			}
			copy(e.sum[:], b)
			b = b[32:]
		}
		if e.kept {
			off, k := binary.Uvarint(b)
			if k <= 0 {
				return nil, errSegment
			}
			n, m := binary.Uvarint(b[k:])
			if m <= 0 || off > 1<<62 || n > 1<<62 {
				return nil, errSegment
			}
			e.at, b = span{off: int64(off), n: int64(n)}, b[k+m:]
		}
		if fl&flagLink != 0 {
			if e.link, ok = str(); !ok {
				return nil, errSegment
			}
		}
	}
	if len(b) != 0 {
		return nil, errSegment
	}
	return ents, nil
}

// segWriter writes a segment and its sparse table.
type segWriter struct {
	w      *bufio.Writer
	off    int64
	sparse []mark
	buf    []byte
}

func newSegWriter(f *os.File) *segWriter {
	return &segWriter{w: bufio.NewWriterSize(f, 64<<10)}
}

// dir writes a directory's record.
func (s *segWriter) dir(path string, ents []entry) error {
	s.buf = appendEntries(s.buf[:0], ents)
	err := s.raw(path, s.buf)
	if cap(s.buf) > 1<<20 {
		s.buf = nil // a large directory's buffer is not kept
	}
	return err
}

// raw writes a record whose body is encoded already.
func (s *segWriter) raw(path string, body []byte) error {
	if len(s.sparse) == 0 || s.off/segBlock != s.sparse[len(s.sparse)-1].off/segBlock {
		s.sparse = append(s.sparse, mark{dir: strings.Clone(path), off: s.off})
	}
	var h [2 * binary.MaxVarintLen64]byte
	n := binary.PutUvarint(h[:], uint64(len(path)))
	s.w.Write(h[:n])
	s.w.WriteString(path)
	m := binary.PutUvarint(h[:], uint64(len(body)))
	s.w.Write(h[:m])
	_, err := s.w.Write(body)
	s.off += int64(n + len(path) + m + len(body))
	return err
}

func (s *segWriter) flush() error { return s.w.Flush() }

// segReader reads a segment from an offset, with a buffer of its own
// (concurrent readers share the file, never a buffer).
type segReader struct {
	f    io.ReaderAt
	off  int64 // the file offset of buf[0]
	end  int64
	buf  []byte
	i, n int
}

// newSegReader reads f from off to end, in buf when it holds a block.
func newSegReader(f io.ReaderAt, off, end int64, buf []byte) *segReader {
	if cap(buf) < segBlock {
		buf = make([]byte, segBlock)
	}
	return &segReader{f: f, off: off, end: end, buf: buf[:segBlock]}
}

// fill makes at least k bytes available from i, if the segment has them.
func (r *segReader) fill(k int) error {
	if r.n-r.i >= k {
		return nil
	}
	r.off += int64(r.i)
	copy(r.buf, r.buf[r.i:r.n])
	r.n -= r.i
	r.i = 0
	if k > len(r.buf) {
		nb := make([]byte, k)
		copy(nb, r.buf[:r.n])
		r.buf = nb
	}
	for r.n < k {
		want := min(int64(len(r.buf)-r.n), r.end-(r.off+int64(r.n)))
		if want <= 0 {
			return io.ErrUnexpectedEOF
		}
		m, err := r.f.ReadAt(r.buf[r.n:r.n+int(want)], r.off+int64(r.n))
		r.n += m
		if m == 0 && err != nil {
			return err
		}
	}
	return nil
}

func (r *segReader) uvarint() (uint64, error) {
	if err := r.fill(binary.MaxVarintLen64); err != nil && r.n == r.i {
		return 0, err
	}
	v, k := binary.Uvarint(r.buf[r.i:r.n])
	if k <= 0 {
		return 0, errSegment
	}
	r.i += k
	return v, nil
}

// header reads a record's path and body length; ok is false at the end.
func (r *segReader) header() (path string, n int, ok bool, err error) {
	if r.off+int64(r.i) >= r.end {
		return "", 0, false, nil
	}
	l, err := r.uvarint()
	if err != nil {
		return "", 0, false, err
	}
	p, err := r.bytes(int(l))
	if err != nil {
		return "", 0, false, err
	}
	path = string(p)
	bl, err := r.uvarint()
	if err != nil {
		return "", 0, false, err
	}
	if int64(bl) > r.end-(r.off+int64(r.i)) {
		return "", 0, false, errSegment
	}
	return path, int(bl), true, nil
}

// bytes returns the next n bytes, valid until the next call.
func (r *segReader) bytes(n int) ([]byte, error) {
	if n < 0 || int64(n) > r.end-(r.off+int64(r.i)) {
		return nil, errSegment
	}
	if err := r.fill(n); err != nil {
		return nil, err
	}
	b := r.buf[r.i : r.i+n]
	r.i += n
	return b, nil
}

// skip passes over the next n bytes.
func (r *segReader) skip(n int) error {
	if n <= r.n-r.i {
		r.i += n
		return nil
	}
	r.off += int64(r.i + n)
	r.i, r.n = 0, 0
	if len(r.buf) > segBlock {
		r.buf = make([]byte, segBlock)
	}
	return nil
}

// record reads the next record, its body valid until the next call; ok
// is false at the end.
func (r *segReader) record() (path string, body []byte, ok bool, err error) {
	path, n, ok, err := r.header()
	if err != nil || !ok {
		return "", nil, ok, err
	}
	body, err = r.bytes(n)
	return path, body, err == nil, err
}

package ledger

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
)

// InlineFiles is the most files a session.end entry lists in data.files;
// past it, data.files_count says how many, and the payload final_files
// alone lists them (a command that makes 100,000 files would otherwise
// put them into the entry, its canonical form and the payload at once).
const InlineFiles = 1000

// finalFiles is each file the session changed, to its last content's
// SHA-256 (the zero digest: deleted). A session may change hundreds of
// thousands of files, with paths of up to 4 KB, so it holds at most max
// paths, and at most maxBytes of them, in memory: past either they are
// written, sorted, as a run to a spill file with no name (made in dir and
// removed at once), and the runs are merged, newest first, when the list
// is written. Its memory is O(maxBytes), whatever the session changed.
type finalFiles struct {
	mem      map[string]finalDigest
	memBytes int    // what mem holds, as finalCost counts it
	max      int    // paths held in memory; 0: DefaultFinalMemory
	maxBytes int    // their bytes; 0: DefaultFinalBytes
	dir      string // where spill files are made
	// spill holds the runs, each a sorted list of records (see
	// writeRun), oldest first; nil until the first.
	spill *os.File
	runs  []span64
	end   int64 // of spill's last run
	err   error // a spill that failed: the paths stay in memory
}

// finalDigest is one path's last digest, or its removal from the list
// (a change that left no regular file: a symlink), which must hide what
// an older run says of the path.
type finalDigest struct {
	sum     [32]byte
	removed bool
}

// span64 locates a run in the spill file.
type span64 struct{ off, n int64 }

// DefaultFinalMemory is how many changed files' final digests a recorder
// holds in memory (about 100 bytes each, and the path) before it spills
// them to disk.
const DefaultFinalMemory = 16384

// DefaultFinalBytes is how many bytes of paths and digests (finalCost) a
// recorder holds in memory before it spills them, however few the paths:
// 16,384 paths of 4 KB would be 64 MiB. It is the change tracker's budget
// for the changes it gathers.
const DefaultFinalBytes = 4 << 20

// finalCost is what one path's entry costs in memory: its bytes, and its
// digest, flag and share of the map, about 64 bytes.
func finalCost(path string) int { return len(path) + 64 }

// maxRuns is how many runs the spill file holds before they are merged
// into one, so that merging reads from few runs at once.
const maxRuns = 16

func newFinalFiles(dir string) *finalFiles {
	return &finalFiles{mem: map[string]finalDigest{}, dir: dir}
}

// set records path's last digest d (hex; "" when deleted) and reports
// whether d was one.
func (f *finalFiles) set(path, d string) bool {
	var sum [32]byte
	if d != "" {
		if len(d) != 64 {
			return false
		}
		if _, err := hex.Decode(sum[:], []byte(d)); err != nil {
			return false
		}
	}
	f.put(path, finalDigest{sum: sum})
	return true
}

// remove takes path off the list: its last change left nothing the
// workspace check can compare.
func (f *finalFiles) remove(path string) {
	if len(f.runs) == 0 {
		if _, ok := f.mem[path]; ok {
			delete(f.mem, path)
			f.memBytes -= finalCost(path)
		}
		return
	}
	f.put(path, finalDigest{removed: true})
}

func (f *finalFiles) put(path string, d finalDigest) {
	if _, ok := f.mem[path]; !ok {
		f.memBytes += finalCost(path)
	}
	f.mem[path] = d
	max, maxBytes := f.max, f.maxBytes
	if max <= 0 {
		max = DefaultFinalMemory
	}
	if maxBytes <= 0 {
		maxBytes = DefaultFinalBytes
	}
	if (len(f.mem) >= max || f.memBytes >= maxBytes) && f.err == nil {
		if err := f.spillMem(); err != nil {
			f.err = err // kept in memory from now on
		}
	}
}

// spillMem writes the paths in memory as a new run and empties memory;
// past maxRuns runs, it merges them into one.
func (f *finalFiles) spillMem() error {
	if f.spill == nil {
		s, err := spillFile(f.dir)
		if err != nil {
			return err
		}
		f.spill = s
	}
	w := bufio.NewWriterSize(io.NewOffsetWriter(f.spill, f.end), 32<<10)
	n, err := writeRun(w, memIter(f.mem))
	if err != nil {
		return fmt.Errorf("final files: spill: %w", err)
	}
	f.runs = append(f.runs, span64{f.end, n})
	f.end += n
	clear(f.mem)
	f.memBytes = 0
	if len(f.runs) < maxRuns {
		return nil
	}
	// One run of all: the newest of each path, removals kept (nothing
	// older is left for them to hide, but they cost little).
	s, err := spillFile(f.dir)
	if err != nil {
		return err
	}
	w = bufio.NewWriterSize(s, 32<<10)
	n, err = writeRun(w, f.merged(false))
	if err != nil {
		s.Close()
		return fmt.Errorf("final files: merge: %w", err)
	}
	f.spill.Close()
	f.spill, f.runs, f.end = s, []span64{{0, n}}, n
	return nil
}

// spillFile makes a file for runs in dir, with no name: it is removed as
// soon as it is made.
func spillFile(dir string) (*os.File, error) {
	s, err := os.CreateTemp(dir, ".final-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("final files: %w", err)
	}
	if err := os.Remove(s.Name()); err != nil {
		s.Close()
		return nil, fmt.Errorf("final files: %w", err)
	}
	return s, nil
}

// close releases the spill file.
func (f *finalFiles) close() {
	if f.spill != nil {
		f.spill.Close()
		f.spill = nil
	}
}

// finalRec is one record of a run: a path and its digest or removal.
type finalRec struct {
	path string
	d    finalDigest
}

// recIter yields records in path order; ok is false past the last. err
// is a run that could not be read.
type recIter func() (rec finalRec, ok bool, err error)

// memIter yields the paths in memory, sorted.
func memIter(m map[string]finalDigest) recIter {
	keys := slices.Sorted(maps.Keys(m))
	i := 0
	return func() (finalRec, bool, error) {
		if i == len(keys) {
			return finalRec{}, false, nil
		}
		p := keys[i]
		i++
		return finalRec{p, m[p]}, true, nil
	}
}

// writeRun writes records, sorted, as a run: for each, the path's length
// (uvarint), the path, a flag byte (1: removed) and the 32-byte digest.
// It returns the run's length.
func writeRun(w *bufio.Writer, next recIter) (int64, error) {
	var n int64
	var hdr [binary.MaxVarintLen64 + 1]byte
	for {
		rec, ok, err := next()
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		k := binary.PutUvarint(hdr[:], uint64(len(rec.path)))
		w.Write(hdr[:k])
		w.WriteString(rec.path)
		flag := byte(0)
		if rec.d.removed {
			flag = 1
		}
		w.WriteByte(flag)
		w.Write(rec.d.sum[:])
		n += int64(k + len(rec.path) + 1 + 32)
	}
	return n, w.Flush()
}

// runIter reads the run at sp of the spill file.
func runIter(spill *os.File, sp span64) recIter {
	r := bufio.NewReaderSize(io.NewSectionReader(spill, sp.off, sp.n), 16<<10)
	return func() (finalRec, bool, error) {
		l, err := binary.ReadUvarint(r)
		if err == io.EOF {
			return finalRec{}, false, nil
		}
		if err != nil || l > 1<<20 {
			return finalRec{}, false, fmt.Errorf("final files: a damaged run (%v)", err)
		}
		b := make([]byte, l+1+32)
		if _, err := io.ReadFull(r, b); err != nil {
			return finalRec{}, false, fmt.Errorf("final files: a damaged run: %w", err)
		}
		rec := finalRec{path: string(b[:l]), d: finalDigest{removed: b[l] == 1}}
		copy(rec.d.sum[:], b[l+1:])
		return rec, true, nil
	}
}

// merged yields every path of the runs and of memory once, in order,
// with its newest digest; removals are left out when drop is set.
func (f *finalFiles) merged(drop bool) recIter {
	// Sources newest first: memory, then the runs from the last.
	srcs := []recIter{memIter(f.mem)}
	for i := len(f.runs) - 1; i >= 0; i-- {
		srcs = append(srcs, runIter(f.spill, f.runs[i]))
	}
	heads := make([]finalRec, len(srcs))
	live := make([]bool, len(srcs))
	var failed error
	advance := func(i int) {
		rec, ok, err := srcs[i]()
		if err != nil && failed == nil {
			failed = err
		}
		heads[i], live[i] = rec, ok
	}
	for i := range srcs {
		advance(i)
	}
	return func() (finalRec, bool, error) {
		for {
			if failed != nil {
				return finalRec{}, false, failed
			}
			best := -1
			for i := range srcs {
				// The smallest path; among equal ones the newest source.
				if live[i] && (best < 0 || heads[i].path < heads[best].path) {
					best = i
				}
			}
			if best < 0 {
				return finalRec{}, false, nil
			}
			rec := heads[best]
			for i := range srcs {
				if live[i] && heads[i].path == rec.path {
					advance(i)
				}
			}
			if drop && rec.d.removed {
				continue
			}
			return rec, true, nil
		}
	}
}

// json is the files as session.end's data.files and the final_files
// payload name them: a JSON object from path to hex digest ("" when
// deleted), keys sorted. It is the whole list in memory: for a list of
// at most InlineFiles files (small reports whether it is one). A longer
// list is written by writeJSON.
func (f *finalFiles) json() (b []byte, small bool, err error) {
	if len(f.runs) > 0 || len(f.mem) > InlineFiles {
		return nil, false, nil
	}
	var buf bytes.Buffer
	_, err = writeJSON(&buf, f.merged(true))
	return buf.Bytes(), true, err
}

// writeJSON writes the files' JSON object to w, as json does, and
// returns how many it lists.
func writeJSON(w io.Writer, next recIter) (int, error) {
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.WriteByte('{')
	var zero [32]byte
	var hexd [64]byte
	n := 0
	for {
		rec, ok, err := next()
		if err != nil {
			return n, err
		}
		if !ok {
			break
		}
		if n > 0 {
			bw.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(rec.path) // a string always encodes
		bw.Write(k)
		bw.WriteByte(':')
		if rec.d.sum == zero {
			bw.WriteString(`""`)
		} else {
			hex.Encode(hexd[:], rec.d.sum[:])
			bw.WriteByte('"')
			bw.Write(hexd[:])
			bw.WriteByte('"')
		}
	}
	bw.WriteByte('}')
	return n, bw.Flush()
}

// spooled writes the whole list's JSON object to a spill file and
// returns it with its size, hex SHA-256 and count. The caller closes it.
func (f *finalFiles) spooled() (file *os.File, size int64, digest string, count int, err error) {
	s, err := spillFile(f.dir)
	if err != nil {
		return nil, 0, "", 0, err
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(s, h)}
	count, err = writeJSON(cw, f.merged(true))
	if err != nil {
		s.Close()
		return nil, 0, "", 0, fmt.Errorf("final files: %w", err)
	}
	return s, cw.n, hex.EncodeToString(h.Sum(nil)), count, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// FinalFiles returns what a session.end entry says the session left in
// its workspace: each changed file to its hex SHA-256, "" where it was
// deleted; from data.files, else (a session that changed more than
// InlineFiles files) from the payload final_files of the ledger in dir.
// The files are named by their paths' bytes: the recorded names decoded
// (DecodeName), so a name that is not UTF-8 is the file's own.
func FinalFiles(dir string, end Entry) (map[string]string, error) {
	files, err := finalRecorded(dir, end)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(files))
	for p, d := range files {
		n, err := DecodeName(p)
		if err != nil {
			return nil, &Error{Entry: int64(end.Seq), Reason: fmt.Sprintf("final files: %q: %v", p, err)}
		}
		out[n] = d
	}
	return out, nil
}

// finalRecorded is FinalFiles with the names as recorded.
func finalRecorded(dir string, end Entry) (map[string]string, error) {
	var data struct {
		Files map[string]string `json:"files"`
		Count *int              `json:"files_count"`
	}
	b, _ := json.Marshal(end.Data)
	if err := json.Unmarshal(b, &data); err != nil {
		return nil, &Error{Entry: int64(end.Seq), Reason: "session.end has no file list: " + err.Error()}
	}
	if data.Count == nil {
		if data.Files == nil {
			data.Files = map[string]string{}
		}
		return data.Files, nil
	}
	d, ok := end.Payloads["final_files"]
	if !ok {
		return nil, &Error{Entry: int64(end.Seq), Reason: "session.end has files_count but no final_files payload"}
	}
	s, err := openPayloads(dir)
	if err != nil {
		return nil, err
	}
	p, err := s.get(d)
	if err != nil {
		return nil, &Error{Entry: int64(end.Seq), Reason: "final_files: " + err.Error()}
	}
	var files map[string]string
	if err := json.Unmarshal(p, &files); err != nil {
		return nil, &Error{Entry: int64(end.Seq), Reason: "final_files is not a JSON object of digests: " + err.Error()}
	}
	if len(files) != *data.Count {
		return nil, &Error{Entry: int64(end.Seq), Reason: fmt.Sprintf("final_files lists %d files, files_count says %d", len(files), *data.Count)}
	}
	return files, nil
}

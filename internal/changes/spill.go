//go:build linux

package changes

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unsafe"
)

// diffSpill gathers the diffs of one scan. It holds them in memory up to
// max; past that it sorts them and writes them as a run to a file with no
// name in the content store's directory, each a copy of its entries, so
// that a command that changes any number of files costs the scan a run's
// memory, not a diff per file. next then merges the runs in the order a
// scan reports changes: by root, then path.
type diffSpill struct {
	t   *Tracker
	max int
	mem []diff
	// memBytes is what the diffs in memory hold (their structs, entries,
	// names, targets, and each directory's string once), maxBytes the
	// most before a run is written: a run is bounded by bytes as well as
	// by count, whatever the paths' length.
	memBytes, maxBytes int
	n                  int // diffs gathered, in memory and in runs
	// pathBytes is the bytes of every diff's full path and link targets,
	// in memory and in runs: what a record of them one by one would hold.
	pathBytes int
	f         *os.File
	runs      []span
	end       int64
	buf       []byte  // a record, reused
	body      []byte  // a record's body, reused
	ents      []entry // a record's entries, reused
	// noSpill: no run could be written; the diffs stay in memory.
	noSpill bool
}

// spillRun is how many diffs a scan holds in memory before it writes
// them as a run (at least one more than the bulk threshold, so that a
// scan that reports changes one by one never spills).
const spillRun = 16384

// spillBytes is how many bytes of diffs a scan holds in memory before it
// writes them as a run.
const spillBytes = 4 << 20

// diffBytes is what a diff held in memory costs besides its strings.
const diffBytes = int(unsafe.Sizeof(diff{}) + 2*unsafe.Sizeof(entry{}))

func (t *Tracker) newDiffSpill() *diffSpill {
	run := t.spillRun
	if run <= 0 {
		run = spillRun
	}
	return &diffSpill{t: t, max: max(run, t.bulkAt+1), maxBytes: cmp.Or(t.spillBytes, spillBytes)}
}

// add gathers d.
func (s *diffSpill) add(d diff) {
	own := d.pathBytes()
	s.pathBytes += own + len(d.dir) + 1
	s.memBytes += diffBytes + own
	if k := len(s.mem); k == 0 || s.mem[k-1].dir != d.dir || s.mem[k-1].r != d.r {
		s.memBytes += len(d.dir)
	}
	s.mem = append(s.mem, d)
	s.n++
	if (len(s.mem) >= s.max || s.memBytes >= s.maxBytes) && !s.noSpill {
		if err := s.spill(); err != nil {
			s.noSpill = true // kept in memory: never a diff lost
		}
	}
}

func compareDiffs(a, b *diff) int {
	return cmp.Or(strings.Compare(a.r.abs, b.r.abs), comparePaths(a.dir, a.name, b.dir, b.name))
}

// comparePaths compares two paths given as directory and name, as
// strings.Compare compares the paths they make, without making them.
func comparePaths(adir, aname, bdir, bname string) int {
	if adir == bdir {
		return strings.Compare(aname, bname)
	}
	var as, bs [3]string
	ap, bp := pathParts(&as, adir, aname), pathParts(&bs, bdir, bname)
	for {
		for len(ap) > 0 && ap[0] == "" {
			ap = ap[1:]
		}
		for len(bp) > 0 && bp[0] == "" {
			bp = bp[1:]
		}
		switch {
		case len(ap) == 0 && len(bp) == 0:
			return 0
		case len(ap) == 0:
			return -1
		case len(bp) == 0:
			return 1
		}
		n := min(len(ap[0]), len(bp[0]))
		if c := strings.Compare(ap[0][:n], bp[0][:n]); c != 0 {
			return c
		}
		ap[0], bp[0] = ap[0][n:], bp[0][n:]
	}
}

// pathParts are the strings whose concatenation is the path of dir and
// name, in buf.
func pathParts(buf *[3]string, dir, name string) []string {
	if dir == "" {
		buf[0] = name
		return buf[:1]
	}
	buf[0], buf[1], buf[2] = dir, "/", name
	return buf[:3]
}

// sortMem sorts the diffs in memory.
func (s *diffSpill) sortMem() {
	slices.SortFunc(s.mem, func(a, b diff) int { return compareDiffs(&a, &b) })
}

// spill writes the diffs in memory, sorted, as a run, and forgets them.
func (s *diffSpill) spill() error {
	if s.f == nil {
		f, err := s.t.store.tmpFile("diffs")
		if err != nil {
			return err
		}
		s.f = f
	}
	s.sortMem()
	w := bufio.NewWriterSize(io.NewOffsetWriter(s.f, s.end), 64<<10)
	var n int64
	for i := range s.mem {
		s.buf = s.appendDiff(s.buf[:0], &s.mem[i])
		w.Write(s.buf)
		n += int64(len(s.buf))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("spill the scan's diffs: %w", err)
	}
	s.runs = append(s.runs, span{s.end, n})
	s.end += n
	clear(s.mem)
	s.mem = s.mem[:0]
	s.memBytes = 0
	return nil
}

// A run's record is its length (uvarint), then the root's index
// (uvarint), the directory (uvarint length and bytes), a byte saying
// which sides follow (1: old, 2: cur) and those entries as the index
// encodes a directory's; the diff's name is its entries'.
const (
	sideOld = 1 << iota
	sideCur
)

func (s *diffSpill) appendDiff(b []byte, d *diff) []byte {
	ri := slices.Index(s.t.roots, d.r)
	body := binary.AppendUvarint(s.body[:0], uint64(ri))
	body = binary.AppendUvarint(body, uint64(len(d.dir)))
	body = append(body, d.dir...)
	var sides byte
	ents := s.ents[:0]
	if d.old != nil {
		sides |= sideOld
		ents = append(ents, *d.old)
	}
	if d.cur != nil {
		sides |= sideCur
		ents = append(ents, *d.cur)
	}
	body = append(body, sides)
	body = appendEntries(body, ents)
	clear(ents)
	s.body, s.ents = body, ents
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

// errRun is a run of diffs that does not read back as written.
var errRun = errors.New("a spilled run of the scan's diffs is corrupt")

// runReader reads one run's diffs in order.
type runReader struct {
	t   *Tracker
	r   *bufio.Reader
	buf []byte
	dir string // the last record's directory, shared by the next ones of it
}

func (rr *runReader) next() (diff, bool, error) {
	n, err := binary.ReadUvarint(rr.r)
	if err == io.EOF {
		return diff{}, false, nil
	}
	if err != nil || n > 1<<24 {
		return diff{}, false, errRun
	}
	if uint64(cap(rr.buf)) < n {
		rr.buf = make([]byte, n)
	}
	b := rr.buf[:n]
	if _, err := io.ReadFull(rr.r, b); err != nil {
		return diff{}, false, errRun
	}
	ri, k := binary.Uvarint(b)
	if k <= 0 || ri >= uint64(len(rr.t.roots)) {
		return diff{}, false, errRun
	}
	b = b[k:]
	l, k := binary.Uvarint(b)
	if k <= 0 || l >= uint64(len(b)-k) {
		return diff{}, false, errRun
	}
	if dir := b[k : k+int(l)]; string(dir) != rr.dir {
		rr.dir = string(dir)
	}
	d := diff{r: rr.t.roots[ri], dir: rr.dir}
	b = b[k+int(l):]
	sides := b[0]
	ents, err := decodeEntries(b[1:])
	want := 0
	for _, s := range []byte{sideOld, sideCur} {
		if sides&s != 0 {
			want++
		}
	}
	if err != nil || want == 0 || len(ents) != want || sides&^(sideOld|sideCur) != 0 {
		return diff{}, false, errRun
	}
	d.name = ents[0].name
	if sides&sideOld != 0 {
		d.old, ents = &ents[0], ents[1:]
	}
	if sides&sideCur != 0 {
		d.cur = &ents[0]
		d.name = d.cur.name
	}
	return d, true, nil
}

// iter returns the diffs gathered, sorted by root and path: the runs and
// what is in memory, merged. Reading it is the scan's last use of s.
func (s *diffSpill) iter() func() (diff, bool, error) {
	s.sortMem()
	mem := s.mem
	srcs := []func() (diff, bool, error){func() (diff, bool, error) {
		if len(mem) == 0 {
			return diff{}, false, nil
		}
		d := mem[0]
		mem[0] = diff{}
		mem = mem[1:]
		return d, true, nil
	}}
	for _, sp := range s.runs {
		rr := &runReader{t: s.t, r: bufio.NewReaderSize(io.NewSectionReader(s.f, sp.off, sp.n), 16<<10)}
		srcs = append(srcs, rr.next)
	}
	heads := make([]diff, len(srcs))
	live := make([]bool, len(srcs))
	var failed error
	advance := func(i int) {
		d, ok, err := srcs[i]()
		if err != nil && failed == nil {
			failed = err
		}
		heads[i], live[i] = d, ok
	}
	for i := range srcs {
		advance(i)
	}
	return func() (diff, bool, error) {
		if failed != nil {
			return diff{}, false, failed
		}
		best := -1
		for i := range srcs {
			if live[i] && (best < 0 || compareDiffs(&heads[i], &heads[best]) < 0) {
				best = i
			}
		}
		if best < 0 {
			return diff{}, false, nil
		}
		d := heads[best]
		advance(best)
		return d, true, nil
	}
}

// close releases the runs' file.
func (s *diffSpill) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	s.mem = nil
}

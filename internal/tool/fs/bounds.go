package fs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/tool"
)

// The bounds of what the file tools hold in Truss's own memory, which no
// sandbox limit covers (docs/sandbox.md, "The host side"). An edit holds
// its file, the new content and, with undo history, the old one, and its
// result carries both to the ledger: 16 MiB a file keeps one edit under
// about 50 MB, while a source file, a lock file or a generated bundle a
// person edits by hand is far smaller (a file past it is data, which a
// shell command edits better than a text editor).
const (
	// DefaultMaxFileBytes is the largest file the file tools read whole.
	DefaultMaxFileBytes = 16 << 20
	// DefaultMaxHistoryBytes is the most file content the undo history
	// keeps, over every file: four edits of the largest file.
	DefaultMaxHistoryBytes = 64 << 20
	// DefaultMaxKeptBytes is the most file content one delete or rename
	// carries in its changes, over all its files.
	DefaultMaxKeptBytes = 64 << 20
)

// MiB renders n bytes in MiB when it is a whole number of them, for the
// messages that name a bound.
func MiB(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// TooLarge is the error of an edit (or another whole-file read: a patch's
// update) of a file of size bytes, past max: what the model reads, with
// the way on.
func TooLarge(name string, size, max int64) error {
	return &tool.Error{Kind: tool.ErrInvalidInput, Path: name, Reason: "too_large", Limit: int(min(max, 1<<40)),
		Message: fmt.Sprintf("the file %s is %d bytes, more than the %s the file tools read and rewrite whole; "+
			"change it with a shell command instead (sed -i, or a script that streams it), "+
			"and read parts of it with a line range or with head, tail, grep or sed -n", name, size, MiB(max))}
}

// notKept is the BeforeUnavailable of a change whose file, of size bytes,
// was recorded by digest and size only.
func notKept(size, max int64) string {
	return fmt.Sprintf("not kept: the file is %d bytes, past the %s of file contents a file tool's change carries; recorded by digest and size only", size, MiB(max))
}

// budget is what is left of the contents one call may carry.
type budget struct{ left, max int64 }

func (e *Executor) keptBudget() *budget {
	n := e.MaxKeptBytes()
	return &budget{left: n, max: n}
}

// MaxFileBytes is the largest file the executor reads whole
// (Options.MaxFileBytes, or its default).
func (e *Executor) MaxFileBytes() int64 { return e.maxBytes() }

// MaxKeptBytes is the most file content one call carries in its changes
// (Options.MaxKeptBytes, or its default): what a patch holds at once.
func (e *Executor) MaxKeptBytes() int64 {
	if e.Opts.MaxKeptBytes > 0 {
		return e.Opts.MaxKeptBytes
	}
	return DefaultMaxKeptBytes
}

// recordContent fills in the before side of c for the regular file name
// beneath h, of size bytes, as a delete or a rename records what it takes
// away: the content itself when it is within the file bound and what is
// left of b (which it then takes), else the digest, read in chunks, with
// Size and BeforeUnavailable saying why the content is not there. A file
// it cannot read leaves c as it is, as before.
func (e *Executor) recordContent(h *hostfs.Root, name string, size int64, b *budget, c *tool.FileChange) {
	if size <= e.maxBytes() && size <= b.left {
		data, err := h.ReadFile(name, e.maxBytes())
		if err != nil || int64(len(data)) > b.left {
			if err == nil || errors.Is(err, hostfs.ErrTooLarge) {
				e.recordDigest(h, name, max(size, int64(len(data))), b, c)
			}
			return
		}
		b.left -= int64(len(data))
		c.Before, c.BeforeData = tool.Digest(data), data
		return
	}
	e.recordDigest(h, name, size, b, c)
}

func (e *Executor) recordDigest(h *hostfs.Root, name string, size int64, b *budget, c *tool.FileChange) {
	d, n, err := streamDigest(h, name)
	if err != nil {
		return
	}
	c.Before, c.Size = d, n
	bound := e.maxBytes()
	if n <= bound {
		bound = b.max // within the file bound: past what the call carries
	}
	c.BeforeUnavailable = notKept(n, bound)
}

// streamDigest hashes the regular file name beneath h, 64 KiB at a time,
// and returns its digest and length.
func streamDigest(h *hostfs.Root, name string) (string, int64, error) {
	f, err := h.Open(filepath.ToSlash(name))
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	s := sha256.New()
	n, err := io.CopyBuffer(s, f, make([]byte, 64<<10))
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(s.Sum(nil)), n, nil
}

// history is an executor's undo history: the content each file had before
// each of its edits, newest last, bounded by bytes over every file.
type history struct {
	files   map[string][]histEntry // by resolved path
	order   []histRef              // every entry kept, oldest first
	bytes   int64
	seq     uint64
	dropped map[string]bool // files whose oldest entries were dropped
}

type histEntry struct {
	seq  uint64
	data *[]byte // nil: the file did not exist
}

type histRef struct {
	path string
	seq  uint64
}

// push adds the content path had before an edit (nil: none), dropping the
// oldest entries, of any file, until the history holds at most max bytes.
// A content larger than max is not kept, and neither is anything older of
// that file, which an undo could no longer reach in order.
func (h *history) push(path string, prev *[]byte, max int64) {
	if h.files == nil {
		h.files, h.dropped = map[string][]histEntry{}, map[string]bool{}
	}
	size := int64(0)
	if prev != nil {
		size = int64(len(*prev))
	}
	if size > max {
		h.bytes -= h.sizeOf(path)
		delete(h.files, path)
		h.dropped[path] = true
		return
	}
	h.seq++
	h.files[path] = append(h.files[path], histEntry{seq: h.seq, data: prev})
	h.order = append(h.order, histRef{path, h.seq})
	h.bytes += size
	for h.bytes > max && len(h.order) > 0 {
		ref := h.order[0]
		h.order = h.order[1:]
		es := h.files[ref.path]
		if len(es) == 0 || es[0].seq != ref.seq {
			continue // already undone, or dropped with its file
		}
		if es[0].data != nil {
			h.bytes -= int64(len(*es[0].data))
		}
		es[0] = histEntry{} // let the content go
		h.files[ref.path] = es[1:]
		h.dropped[ref.path] = true
	}
	if len(h.order) > 1024 && len(h.order) > 2*h.count() {
		// Entries undone since stay listed until dropped: list only the kept.
		kept := h.order[:0]
		for _, ref := range h.order {
			if slices.ContainsFunc(h.files[ref.path], func(e histEntry) bool { return e.seq == ref.seq }) {
				kept = append(kept, ref)
			}
		}
		h.order = kept
	}
}

func (h *history) count() int {
	n := 0
	for _, es := range h.files {
		n += len(es)
	}
	return n
}

func (h *history) sizeOf(path string) int64 {
	var n int64
	for _, e := range h.files[path] {
		if e.data != nil {
			n += int64(len(*e.data))
		}
	}
	return n
}

// last returns path's newest entry, taking it off with pop; ok is false
// when there is none.
func (h *history) last(path string, pop bool) (data *[]byte, ok bool) {
	es := h.files[path]
	if len(es) == 0 {
		return nil, false
	}
	e := es[len(es)-1]
	if pop {
		es[len(es)-1] = histEntry{} // let the content go
		h.files[path] = es[:len(es)-1]
		if e.data != nil {
			h.bytes -= int64(len(*e.data))
		}
	}
	return e.data, true
}

func (e *Executor) maxHistory() int64 {
	if e.Opts.MaxHistoryBytes > 0 {
		return e.Opts.MaxHistoryBytes
	}
	return DefaultMaxHistoryBytes
}

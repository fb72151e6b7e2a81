package fs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"path/filepath"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/tool"
)

// DefaultMaxViewBytes is the most content one view returns when
// Options.MaxViewBytes is 0: more than any binding shows of one view.
const DefaultMaxViewBytes = 1 << 20

// scanned is what one pass over a file gives a view.
type scanned struct {
	head      []byte // the first bytes, a character past tool.BinarySniffLen
	size      int64
	total     int    // lines split on '\n'
	digest    string // of the whole file, for the stale-edit check
	content   []byte // lines start..end, at most the view limit
	truncated bool   // content stopped at the limit
	finalNL   bool
	partial   bool // the file is longer than the bytes read
}

// scanFile reads the regular file at p once, in fixed-size chunks, and
// keeps only what a view of lines start..end (end -1 = the last line)
// needs: the head for the binary test, the line count, the digest, and
// the selected lines up to limit bytes. Host memory is bounded by limit
// and the chunk, whatever the file's size. It reads at most most bytes:
// of a longer file, partial is set and what it gives (lines, digest,
// size) is that of those first bytes.
func (p Resolved) scanFile(start, end int, limit, most int64) (*scanned, error) {
	file, err := p.root.h.Open(filepath.ToSlash(p.Rel))
	if err != nil {
		return nil, refusal(p.Display(), err)
	}
	defer file.Close()
	f := io.LimitReader(file, most+1)
	s := &scanned{total: 1}
	h := sha256.New()
	buf := make([]byte, 64<<10)
	line := 1
	var last byte
	keep := func(b []byte) {
		if s.truncated || len(b) == 0 {
			return
		}
		if room := limit - int64(len(s.content)); int64(len(b)) > room {
			b, s.truncated = b[:room], true
		}
		s.content = append(s.content, b...)
	}
	in := func(l int) bool { return l >= start && (end == -1 || l <= end) }
	for {
		n, rerr := f.Read(buf)
		if s.size+int64(n) > most {
			n, rerr, s.partial = int(most-s.size), io.EOF, true
		}
		c := buf[:n]
		if n > 0 {
			h.Write(c)
			s.size += int64(n)
			last = c[n-1]
			if room := tool.BinarySniffLen + utf8.UTFMax - len(s.head); room > 0 {
				s.head = append(s.head, c[:min(room, n)]...)
			}
		}
		for pos := 0; pos < len(c); {
			j := bytes.IndexByte(c[pos:], '\n')
			stop := len(c)
			if j >= 0 {
				stop = pos + j
			}
			if in(line) {
				keep(c[pos:stop])
			}
			if j < 0 {
				break
			}
			if in(line) && line != end {
				keep(c[stop : stop+1])
			}
			line++
			s.total++
			pos = stop + 1
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return nil, ioErr("read", p.Display(), rerr)
		}
	}
	s.digest = hex.EncodeToString(h.Sum(nil))
	s.finalNL = s.size > 0 && last == '\n'
	return s, nil
}

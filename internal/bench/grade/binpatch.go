package grade

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/sandbox"
)

// git apply runs on the host, outside the sandbox's disk and memory
// limits, and a small patch can make it write a great deal: a `GIT binary
// patch` hunk is deflated (a few hundred kilobytes inflate to hundreds of
// megabytes of zeros, which git holds in memory and writes), a binary
// delta's copy instructions can repeat a large base file, and a `copy
// from` header duplicates a file for the price of three lines. Text hunks
// write no more than the patch holds. What these can write is declared
// before anything is applied: a literal hunk gives its size (`literal N`,
// the inflated size git checks it against), a delta's inflated header
// gives its result's, and a copy's source is in the checkout. A patch
// whose declared writes pass maxPatchWrites is refused, a failed patch,
// before git sees it; under the bound it applies as before (binary files
// in patches are images, fonts, small archives). Applying in the sandbox
// instead would put the checkout's git and GNU patch under its limits too,
// but needs git in every task's image; the sizes are in the patch.

// maxPatchWrites bounds the bytes a patch's binary hunks and copies may
// make git apply write on the host.
const maxPatchWrites = 64 << 20

// patchWrites is what a patch declares it makes git apply write beyond
// its own text: the sum of its binary hunks' results and its copies'
// sources, and the largest item (for the message). base gives the size
// of a file in the checkout (0 when it has none).
type patchWrites struct {
	total   int64
	largest string
	size    int64
}

func (w *patchWrites) add(what string, n int64) {
	if n < 0 || w.total > math.MaxInt64-n {
		w.total = math.MaxInt64
	} else {
		w.total += n
	}
	if n > w.size || n < 0 {
		w.largest, w.size = what, n
	}
}

// declaredWrites reads patch's binary hunks and copies. Only the forward
// hunk of a binary patch is applied (the reverse one is for git apply
// -R). A delta whose result size cannot be read is an error: git could
// not apply it either.
func declaredWrites(patch string, base func(name string) int64) (patchWrites, error) {
	var w patchWrites
	lines := strings.Split(patch, "\n")
	var file string // the current diff's name, for messages
	var binaryMax int64
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSuffix(lines[i], "\r")
		if rest, ok := strings.CutPrefix(line, "diff --git "); ok {
			file = rest
			continue
		}
		if src, ok := strings.CutPrefix(line, "copy from "); ok {
			name := src
			if strings.HasPrefix(src, `"`) {
				if u, err := strconv.Unquote(src); err == nil {
					name = u
				}
			}
			// A copy's source may be a file the patch itself made or
			// changed: its base size, and at most the patch's own text or
			// its largest binary result more.
			w.add("copy from "+src, base(name)+int64(len(patch))+binaryMax)
			continue
		}
		if line != "GIT binary patch" || i+1 >= len(lines) {
			continue
		}
		i++
		hunk := strings.TrimSuffix(lines[i], "\r")
		var n int64
		switch {
		case strings.HasPrefix(hunk, "literal "):
			n = gitSize(hunk[len("literal "):])
		case strings.HasPrefix(hunk, "delta "):
			n = gitSize(hunk[len("delta "):])
			var data []string
			for j := i + 1; j < len(lines) && strings.TrimSuffix(lines[j], "\r") != ""; j++ {
				data = append(data, strings.TrimSuffix(lines[j], "\r"))
			}
			result, err := deltaResultSize(data)
			if err != nil {
				return w, fmt.Errorf("%s: a binary delta whose result size cannot be read: %v", file, err)
			}
			n = max(n, result)
		default:
			continue
		}
		w.add(strings.TrimSpace(file)+" ("+hunk+")", n)
		binaryMax = max(binaryMax, n)
	}
	return w, nil
}

// gitSize reads a binary hunk's size as git does (strtoul, base 10:
// leading blanks, a sign, digits, anything after ignored); a negative or
// overflowing one is unbounded.
func gitSize(s string) int64 {
	s = strings.TrimLeft(s, " \t\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == 0 {
		return 0
	}
	n, err := strconv.ParseInt(s[:end], 10, 64)
	if err != nil || (neg && n != 0) {
		return math.MaxInt64
	}
	return n
}

// deltaResultSize reads the result size from a binary delta hunk's data
// lines (git's base 85, each line led by its decoded length), inflating
// no more than the delta's header.
func deltaResultSize(lines []string) (int64, error) {
	var raw []byte
	for _, l := range lines {
		if l == "" {
			continue
		}
		var n int
		switch c := l[0]; {
		case c >= 'A' && c <= 'Z':
			n = int(c-'A') + 1
		case c >= 'a' && c <= 'z':
			n = int(c-'a') + 27
		default:
			return 0, errors.New("a data line with no length")
		}
		dec, err := decode85(l[1:], n)
		if err != nil {
			return 0, err
		}
		raw = append(raw, dec...)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	defer zr.Close()
	head := make([]byte, 20) // two varints of at most 10 bytes each
	k, err := io.ReadFull(zr, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, err
	}
	head = head[:k]
	// The source size, then the result size: 7 bits a byte, low first.
	var sizes [2]uint64
	for s := range sizes {
		var v uint64
		shift := 0
		for {
			if len(head) == 0 || shift > 63 {
				return 0, errors.New("a truncated delta header")
			}
			b := head[0]
			head = head[1:]
			v |= uint64(b&0x7f) << shift
			shift += 7
			if b&0x80 == 0 {
				break
			}
		}
		sizes[s] = v
	}
	if sizes[1] > math.MaxInt64 {
		return math.MaxInt64, nil
	}
	return int64(sizes[1]), nil
}

// git85 is git's base 85 alphabet.
const git85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// decode85 decodes n bytes from s in git's base 85 (groups of five
// characters for four bytes).
func decode85(s string, n int) ([]byte, error) {
	var out []byte
	for len(out) < n {
		if len(s) < 5 {
			return nil, errors.New("a short base 85 line")
		}
		var acc uint64
		for _, c := range []byte(s[:5]) {
			d := strings.IndexByte(git85, c)
			if d < 0 {
				return nil, fmt.Errorf("%q is not base 85", c)
			}
			acc = acc*85 + uint64(d)
		}
		if acc > math.MaxUint32 {
			return nil, errors.New("a base 85 group out of range")
		}
		s = s[5:]
		out = append(out, byte(acc>>24), byte(acc>>16), byte(acc>>8), byte(acc))
	}
	return out[:n], nil
}

// checkPatchWrites refuses patch when what it declares it makes git apply
// write passes maxPatchWrites; ws is the checkout, whose files are a
// copy's sources.
func checkPatchWrites(ws, patch string) error {
	if !strings.Contains(patch, "GIT binary patch") && !strings.Contains(patch, "copy from ") {
		return nil
	}
	root, err := hostfs.OpenRoot(ws)
	if err != nil {
		return err
	}
	defer root.Close()
	w, err := declaredWrites(patch, func(name string) int64 {
		if info, err := root.Lstat(name); err == nil {
			return info.Size
		}
		return 0
	})
	if err != nil {
		return &applyError{msg: "not applied: " + err.Error()}
	}
	if w.total > maxPatchWrites {
		return &applyError{msg: fmt.Sprintf("not applied: its binary hunks and copies would have git apply write %s on the host, outside the sandbox's limits (the largest: %s, %s), past the grader's bound of %s",
			writeSize(w.total), w.largest, writeSize(w.size), sandbox.FormatSize(maxPatchWrites))}
	}
	return nil
}

// writeSize formats a declared size, which can be unbounded.
func writeSize(n int64) string {
	if n == math.MaxInt64 || n < 0 {
		return "an unbounded size"
	}
	return sandbox.FormatSize(n)
}

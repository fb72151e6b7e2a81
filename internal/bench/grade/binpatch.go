package grade

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/sandbox"
)

// git apply runs on the host, outside the sandbox's disk and memory
// limits, and a small patch can make it write a great deal: a `GIT binary
// patch` hunk is deflated (a few hundred kilobytes inflate to hundreds of
// megabytes of zeros, which git holds in memory and writes), a binary
// delta's copy instructions can repeat a large base file, a `copy
// from` header duplicates a file for the price of three lines, a "Binary
// files … differ" diff with a full index line has git write a blob of the
// object store, and each diff's preimage is read whole (N diffs of one
// base file hold N copies of it in git's memory). What these can write is declared
// before anything is applied: a literal hunk gives its size (`literal N`,
// the inflated size git checks it against), a delta's inflated header
// gives its result's, a copy's source and a diff's preimage are in the
// checkout, a stored postimage in its object store. A patch
// whose declared writes pass maxPatchWrites is refused, a failed patch,
// before git sees it; under the bound it applies as before (binary files
// in patches are images, fonts, small archives). Applying in the sandbox
// instead would put the checkout's git and GNU patch under its limits too,
// but needs git in every task's image; the sizes are in the patch.

// maxPatchWrites bounds the bytes a patch's diffs may make git apply
// write or hold on the host.
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

// declaredWrites reads what patch makes git apply write or hold: its
// binary hunks' results, its copies' sources, the blob of the object store
// a "Binary files … differ" diff with a full index line names as its
// postimage (git takes it from the store: blob gives its size, 0 when the
// store does not have it), and every diff's preimage, which git reads
// into memory whole (base gives a checkout file's size, 0 when it has
// none): N diffs of one base file hold N copies of it. Only the forward
// hunk of a binary patch is applied (the reverse one is for git apply
// -R). A delta whose result size cannot be read is an error: git could
// not apply it either.
func declaredWrites(patch string, base func(name string) int64, blob func(oid string) int64) (patchWrites, error) {
	var w patchWrites
	lines := strings.Split(patch, "\n")
	var file string // the current diff's name, for messages
	var changes map[string]int64
	if strings.Contains(patch, "copy from ") {
		changes = changeSizes(lines)
	}
	// The current diff --git block: its name (when both sides name the
	// same path), whether its preimage was counted, whether it is a new
	// file, its index line's postimage, and whether it says "Binary
	// files … differ" or holds a binary patch.
	var blk struct {
		name                 string
		counted, created     bool
		to                   string
		binaryFiles, literal bool
	}
	endBlock := func() {
		if blk.name != "" && !blk.counted && !blk.created {
			w.add(blk.name+" (read by its diff)", base(blk.name))
		}
		if blk.binaryFiles && !blk.literal && fullOID(blk.to) {
			w.add(strings.TrimSpace(file)+" (the stored blob "+blk.to+")", blob(blk.to))
		}
		blk.name, blk.counted, blk.created, blk.to, blk.binaryFiles, blk.literal = "", false, false, "", false, false
	}
	for i := 0; i < len(lines); i++ {
		line := line2(lines, i)
		if rest, ok := strings.CutPrefix(line, "diff --git "); ok {
			endBlock()
			file, blk.name = rest, samePath(rest)
			continue
		}
		switch {
		case strings.HasPrefix(line, "new file mode "):
			blk.created = true
		case strings.HasPrefix(line, "index "):
			if _, to, ok := strings.Cut(strings.Fields(line)[1], ".."); ok {
				blk.to = to
			}
		case strings.HasPrefix(line, "Binary files ") && strings.HasSuffix(line, " differ"):
			blk.binaryFiles = true
		case strings.HasPrefix(line, "rename from "):
			name := unquoteName(line[len("rename from "):])
			w.add("rename from "+name, base(name))
			blk.counted = true
		case strings.HasPrefix(line, "--- ") && strings.HasPrefix(line2(lines, i+1), "+++ ") && strings.HasPrefix(line2(lines, i+2), "@@"):
			// A file header: the file its hunks are applied to, by
			// either name (a traditional diff's may differ).
			from, to := diffName(line[len("--- "):]), diffName(line2(lines, i+1)[len("+++ "):])
			if base(to) > base(from) {
				from = to
			}
			if from != "" {
				w.add(from+" (read by its diff)", base(from))
			}
			blk.counted = true
		}
		if src, ok := strings.CutPrefix(line, "copy from "); ok {
			name := unquoteName(src)
			// git apply refuses a copy whose source the patch itself
			// made: the source is a base file, perhaps changed by the
			// patch's own diffs of it, which can make it that much larger.
			w.add("copy from "+src, base(name)+changes[name])
			blk.counted = true
			continue
		}
		if line != "GIT binary patch" || i+1 >= len(lines) {
			continue
		}
		blk.literal = true
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
	}
	endBlock()
	return w, nil
}

// changeSizes returns, for each file a patch's diffs change (lines, the
// patch's), how much larger they can make it: their text's length and
// their binary hunks' declared results.
func changeSizes(lines []string) map[string]int64 {
	sizes := map[string]int64{}
	name := ""
	for i := 0; i < len(lines); i++ {
		line := line2(lines, i)
		if rest, ok := strings.CutPrefix(line, "diff --git "); ok {
			name = samePath(rest)
		} else if rest, ok := strings.CutPrefix(line, "+++ "); ok && name == "" {
			name = diffName(rest)
		}
		if name == "" {
			continue
		}
		n := int64(len(lines[i]) + 1)
		if line == "GIT binary patch" && i+1 < len(lines) {
			hunk := line2(lines, i+1)
			if size, ok := strings.CutPrefix(hunk, "literal "); ok {
				n += gitSize(size)
			} else if size, ok := strings.CutPrefix(hunk, "delta "); ok {
				var data []string
				for j := i + 2; j < len(lines) && line2(lines, j) != ""; j++ {
					data = append(data, line2(lines, j))
				}
				result, _ := deltaResultSize(data)
				n += max(gitSize(size), result)
			}
		}
		if sizes[name] > math.MaxInt64-n {
			sizes[name] = math.MaxInt64
		} else {
			sizes[name] += n
		}
	}
	return sizes
}

// line2 is lines[i] without its CR, "" past the end.
func line2(lines []string, i int) string {
	if i >= len(lines) {
		return ""
	}
	return strings.TrimSuffix(lines[i], "\r")
}

// unquoteName is a header's path as git writes it, unquoted when quoted.
func unquoteName(s string) string {
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

// diffName is the path of a "--- " or "+++ " header's name (its a/ or b/
// prefix and a timestamp after a tab cut), "" for /dev/null.
func diffName(s string) string {
	s, _, _ = strings.Cut(s, "\t")
	s = unquoteName(strings.TrimSpace(s))
	if s == "/dev/null" {
		return ""
	}
	if _, rest, ok := strings.Cut(s, "/"); ok && (strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/")) {
		return rest
	}
	return s
}

// samePath is the path a "diff --git a/P b/P" line names on both sides,
// "" when they differ (a rename or copy, read from its own lines) or the
// line cannot be split.
func samePath(rest string) string {
	if strings.HasPrefix(rest, `"`) {
		return ""
	}
	n := len(rest)
	if n%2 == 0 || !strings.HasPrefix(rest, "a/") {
		return ""
	}
	a, b := rest[:n/2], rest[n/2+1:]
	if rest[n/2] != ' ' || !strings.HasPrefix(b, "b/") || a[2:] != b[2:] {
		return ""
	}
	return a[2:]
}

// fullOID reports whether s is a full object name (SHA-1 or SHA-256)
// other than the null one.
func fullOID(s string) bool {
	if len(s) != 40 && len(s) != 64 || strings.Trim(s, "0") == "" {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
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

// checkPatchWrites refuses patch when what it declares it makes git
// apply write or hold (declaredWrites) passes maxPatchWrites; g runs in
// the checkout, whose files are the diffs' preimages and the copies'
// sources and whose object store holds the stored blobs.
func checkPatchWrites(ctx context.Context, g gitsafe.Git, patch string) error {
	root, err := hostfs.OpenRoot(g.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	sizes, err := storedSizes(ctx, g, patch)
	if err != nil {
		return err
	}
	w, err := declaredWrites(patch, func(name string) int64 {
		if info, err := root.Lstat(name); err == nil && info.Mode.IsRegular() {
			return info.Size
		}
		return 0
	}, func(oid string) int64 { return sizes[oid] })
	if err != nil {
		return &applyError{msg: "not applied: " + err.Error()}
	}
	if w.total > maxPatchWrites {
		return &applyError{msg: fmt.Sprintf("not applied: its diffs would have git apply write or hold %s on the host, outside the sandbox's limits (the largest: %s, %s), past the grader's bound of %s",
			writeSize(w.total), w.largest, writeSize(w.size), sandbox.FormatSize(maxPatchWrites))}
	}
	return nil
}

// fullIndex is an index line's full postimage object name.
var fullIndex = regexp.MustCompile(`(?m)^index [0-9a-f]+\.\.([0-9a-f]{64}|[0-9a-f]{40})\b`)

// storedSizes returns the sizes of the objects patch's full index lines
// name as postimages that the object store of the checkout where g runs
// holds (git cat-file --batch-check, one command).
func storedSizes(ctx context.Context, g gitsafe.Git, patch string) (map[string]int64, error) {
	sizes := map[string]int64{}
	var in strings.Builder
	for _, m := range fullIndex.FindAllStringSubmatch(patch, -1) {
		if _, ok := sizes[m[1]]; !ok && fullOID(m[1]) {
			sizes[m[1]] = 0
			in.WriteString(m[1] + "\n")
		}
	}
	if in.Len() == 0 {
		return sizes, nil
	}
	out, err := g.Plumbing(ctx, strings.NewReader(in.String()), "cat-file", "--batch-check")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(out, "\n") {
		// "OID TYPE SIZE", or "OID missing".
		f := strings.Fields(line)
		if len(f) == 3 {
			if n, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				sizes[f[0]] = n
			}
		}
	}
	return sizes, nil
}

// writeSize formats a declared size, which can be unbounded.
func writeSize(n int64) string {
	if n == math.MaxInt64 || n < 0 {
		return "an unbounded size"
	}
	return sandbox.FormatSize(n)
}

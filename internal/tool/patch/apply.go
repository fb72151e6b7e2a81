package patch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"unicode"

	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
)

// Error is a patch that parsed but cannot be applied; Message is Codex's.
type Error struct{ Message string }

func (e *Error) Error() string { return e.Message }

// NoFilesModified is the message of a patch without any file operation.
// Codex reports it from applying the patch, not from verifying it.
const NoFilesModified = "No files were modified."

// Plan is every file a patch changes, with its new content, computed
// before anything is written.
type Plan struct {
	// Files in the order the patch first touches them; Content nil deletes.
	Files   []PlannedFile
	Summary string
}

// PlannedFile is one file's planned state.
type PlannedFile struct {
	Path    string // as the patch names it
	Content []byte // nil: delete
	Before  []byte // nil: the file did not exist, or is deleted unread
	// Existed reports that the file existed before the patch: a file the
	// patch deletes is not read (its Before is nil), the delete records
	// what it takes away.
	Existed bool
}

// Engine plans and applies patches in a workspace.
type Engine struct {
	W  *tfs.Workspace
	FX *tfs.Executor
}

// state is the overlay of the plan: each touched file's content (nil when
// it is deleted) by resolved path. It reads a file only when the patch
// needs its content (an update, or an add over an existing file, which
// the rollback restores), each at most the file tools' bound
// (FX.MaxFileBytes), and holds at most FX.MaxKeptBytes of contents read
// and planned over the whole patch.
type state struct {
	e       *Engine
	order   []string
	names   map[string]string
	content map[string][]byte
	exists  map[string]bool
	before  map[string][]byte
	existed map[string]bool
	held    int64
}

func newState(e *Engine) *state {
	return &state{e: e, names: map[string]string{}, content: map[string][]byte{}, exists: map[string]bool{},
		before: map[string][]byte{}, existed: map[string]bool{}}
}

func (s *state) key(path string) (string, error) {
	p, err := s.e.W.Resolve(path)
	if err != nil {
		return "", err
	}
	if _, ok := s.names[p.Abs]; !ok {
		s.order = append(s.order, p.Abs)
		s.names[p.Abs] = path
		if fi, err := p.Stat(); err == nil && !fi.IsDir() {
			s.existed[p.Abs] = true
		}
	}
	return p.Abs, nil
}

// reasonTooMuch is the tool.Error Reason of a patch past what it holds.
const reasonTooMuch = "patch_too_large"

// hold counts n more bytes of content against the patch's bound.
func (s *state) hold(n int) error {
	s.held += int64(n)
	if max := s.e.FX.MaxKeptBytes(); s.held > max {
		return &tool.Error{Kind: tool.ErrInvalidInput, Reason: reasonTooMuch, Limit: int(max),
			Message: fmt.Sprintf("the files this patch reads and writes add up to more than the %s a patch holds at once; split it into smaller patches, or change the largest files with a shell command", tfs.MiB(max))}
	}
	return nil
}

// disk reads path's content from disk, bounded, as its before content
// the first time.
func (s *state) disk(path, k string) ([]byte, error) {
	p, _ := s.e.W.Resolve(path)
	fi, err := p.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, errIsDir
	}
	max := s.e.FX.MaxFileBytes()
	if fi.Size() > max {
		return nil, tfs.TooLarge(path, fi.Size(), max)
	}
	if b, ok := s.before[k]; ok {
		return b, nil
	}
	b, err := p.ReadFileMax(max)
	if tool.KindOf(err) == tool.ErrInvalidInput {
		return nil, tfs.TooLarge(path, max+1, max) // it grew since the stat
	}
	if err != nil {
		return nil, err
	}
	if err := s.hold(len(b)); err != nil {
		return nil, err
	}
	s.before[k] = b
	return b, nil
}

// read returns a file's current content in the plan.
func (s *state) read(path string) ([]byte, error) {
	k, err := s.key(path)
	if err != nil {
		return nil, err
	}
	if b, ok := s.content[k]; ok {
		if !s.exists[k] {
			return nil, fs.ErrNotExist
		}
		return b, nil
	}
	return s.disk(path, k)
}

// present checks that a file the patch deletes exists in the plan, as a
// file, without reading it.
func (s *state) present(path string) error {
	k, err := s.key(path)
	if err != nil {
		return err
	}
	if _, ok := s.content[k]; ok {
		if !s.exists[k] {
			return fs.ErrNotExist
		}
		return nil
	}
	p, _ := s.e.W.Resolve(path)
	fi, err := p.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errIsDir
	}
	return p.Open()
}

func (s *state) set(path string, b []byte) error {
	k, err := s.key(path)
	if err != nil {
		return err
	}
	if b != nil {
		if _, read := s.before[k]; s.existed[k] && !read {
			// An add over an existing file: the rollback restores it. One
			// that cannot be read is left to the write, which fails on it
			// as it always did.
			if _, err := s.disk(path, k); err != nil {
				if te := (*tool.Error)(nil); errors.As(err, &te) && te.Reason == reasonTooMuch {
					return err
				}
			}
		}
		if err := s.hold(len(b)); err != nil {
			return err
		}
	}
	s.content[k], s.exists[k] = b, b != nil
	return nil
}

// PlanPatch computes the new content of every file the patch touches.
func (e *Engine) PlanPatch(p *Patch) (*Plan, error) {
	if len(p.Hunks) == 0 {
		return nil, &Error{NoFilesModified}
	}
	s := newState(e)
	var added, modified, deleted []string
	for _, h := range p.Hunks {
		switch h.Kind {
		case Add:
			if err := s.set(h.Path, []byte(h.Contents)); err != nil {
				return nil, err
			}
			added = append(added, h.Path)
		case Delete:
			if err := s.present(h.Path); err != nil {
				if kindOf(err) != "" {
					return nil, err
				}
				return nil, &Error{fmt.Sprintf("Failed to delete file %s", h.Path)}
			}
			s.set(h.Path, nil)
			deleted = append(deleted, h.Path)
		case Update:
			old, err := s.read(h.Path)
			if err != nil {
				if tool.KindOf(err) == tool.ErrOutsideRoot {
					return nil, err
				}
				return nil, &Error{fmt.Sprintf("Failed to read file to update %s: %s", h.Path, osMessage(err))}
			}
			nb, err := applyChunks(old, h.Chunks, h.Path)
			if err != nil {
				return nil, err
			}
			if h.MoveTo != "" {
				if err := s.set(h.MoveTo, nb); err != nil {
					return nil, err
				}
				s.set(h.Path, nil)
				modified = append(modified, h.MoveTo)
			} else {
				if err := s.set(h.Path, nb); err != nil {
					return nil, err
				}
				modified = append(modified, h.Path)
			}
		}
	}
	var sb strings.Builder
	sb.WriteString("Success. Updated the following files:\n")
	for _, g := range []struct {
		tag   string
		paths []string
	}{{"A", added}, {"M", modified}, {"D", deleted}} {
		for _, path := range g.paths {
			fmt.Fprintf(&sb, "%s %s\n", g.tag, path)
		}
	}
	plan := &Plan{Summary: sb.String()}
	for _, k := range s.order {
		if _, touched := s.content[k]; !touched {
			continue
		}
		c := s.content[k]
		if !s.exists[k] {
			c = nil
			if !s.existed[k] {
				continue // added and deleted again: nothing to do
			}
		}
		plan.Files = append(plan.Files, PlannedFile{Path: s.names[k], Content: c, Before: s.before[k], Existed: s.existed[k]})
	}
	return plan, nil
}

// errIsDir is reading a directory as a file to update.
var errIsDir = errors.New("is a directory")

// osMessage renders an I/O error as Codex's messages do.
func osMessage(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "No such file or directory (os error 2)"
	case errors.Is(err, errIsDir):
		return "Is a directory (os error 21)"
	}
	var te *tool.Error
	if errors.As(err, &te) {
		return te.Message
	}
	return err.Error()
}

// Apply writes a plan. When a write fails, the files already written are
// restored, so that a patch changes all of its files or none. A file the
// plan deletes without having read it is deleted after every write, so
// that a failed write finds it still there; the rollback of such a delete
// restores the content the delete's change carries (a file past the file
// tools' bounds is recorded by digest only and stays deleted).
func (e *Engine) Apply(ctx context.Context, plan *Plan) ([]tool.FileChange, error) {
	var changes []tool.FileChange
	type done struct {
		f   PlannedFile
		old []byte // what a delete took away, as its change carries it
	}
	var dones []done
	undo := func() {
		for i := len(dones) - 1; i >= 0; i-- {
			f, old := dones[i].f, dones[i].f.Before
			if old == nil {
				old = dones[i].old
			}
			switch {
			case old != nil:
				e.FX.Write(&tool.CreateArgs{Path: f.Path, Content: string(old)}, false)
			case !f.Existed:
				e.FX.Delete(&tool.DeleteArgs{Path: f.Path})
			}
		}
	}
	order := make([]int, 0, len(plan.Files))
	var late []int
	for i, f := range plan.Files {
		if f.Content == nil && f.Before == nil {
			late = append(late, i)
		} else {
			order = append(order, i)
		}
	}
	made := make([][]tool.FileChange, len(plan.Files)) // reported in the plan's order
	for _, i := range append(order, late...) {
		f := plan.Files[i]
		var r tool.Result
		var err error
		if f.Content == nil {
			r, err = e.FX.Delete(&tool.DeleteArgs{Path: f.Path})
		} else {
			r, err = e.FX.Write(&tool.CreateArgs{Path: f.Path, Content: string(f.Content)}, false)
		}
		if err != nil {
			undo()
			return nil, err
		}
		d := done{f: f}
		if f.Content == nil && len(r.Changes) == 1 {
			d.old = r.Changes[0].BeforeData
		}
		dones = append(dones, d)
		made[i] = r.Changes
	}
	for _, cs := range made {
		changes = append(changes, cs...)
	}
	return changes, nil
}

// line is one line of a file with its terminator.
type line struct {
	text string
	term string // "\n", "\r\n", "\r" or "" (the last line, unterminated)
}

// splitLines splits on LF, CRLF and lone CR, keeping each terminator.
func splitLines(b []byte) []line {
	var out []line
	start := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\n':
			out = append(out, line{string(b[start:i]), "\n"})
			start = i + 1
		case '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				out = append(out, line{string(b[start:i]), "\r\n"})
				i++
			} else {
				out = append(out, line{string(b[start:i]), "\r"})
			}
			start = i + 1
		}
	}
	if start < len(b) {
		out = append(out, line{string(b[start:]), ""})
	}
	return out
}

type replacement struct {
	start, oldLen int
	ops           []Op
}

// applyChunks applies an Update hunk's chunks to content.
func applyChunks(content []byte, chunks []Chunk, path string) ([]byte, error) {
	lines := splitLines(content)
	texts := make([]string, len(lines))
	term := "\n"
	for i, l := range lines {
		texts[i] = l.text
	}
	for _, l := range lines {
		if l.term != "" {
			term = l.term
			break
		}
	}
	var repls []replacement
	cursor := 0
	for _, c := range chunks {
		if c.Context != "" {
			idx := seek(texts, []string{c.Context}, cursor, false)
			if idx < 0 {
				return nil, &Error{fmt.Sprintf("Failed to find context '%s' in %s", c.Context, path)}
			}
			cursor = idx + 1
		}
		ops := c.Ops
		old := c.Old()
		if len(old) == 0 {
			// A chunk that only adds lines goes at the end of the file.
			repls = append(repls, replacement{start: len(lines), ops: ops})
			continue
		}
		idx := seek(texts, old, cursor, c.EOF)
		if idx < 0 && old[len(old)-1] == "" {
			// A blank line before the end of the patch: try without it.
			for j := len(ops) - 1; j >= 0; j-- {
				if ops[j].Kind != Insert {
					if ops[j].Text == "" {
						ops = append(append([]Op(nil), ops[:j]...), ops[j+1:]...)
					}
					break
				}
			}
			old = Chunk{Ops: ops}.Old()
			idx = seek(texts, old, cursor, c.EOF)
		}
		if idx < 0 {
			return nil, &Error{fmt.Sprintf("Failed to find expected lines in %s:\n%s", path, strings.Join(c.Old(), "\n"))}
		}
		repls = append(repls, replacement{start: idx, oldLen: len(old), ops: ops})
		cursor = idx + len(old)
	}
	sort.SliceStable(repls, func(i, j int) bool { return repls[i].start < repls[j].start })
	var out bytes.Buffer
	out.Grow(len(content) + 256)
	emit := func(text, t string) {
		if t == "" {
			t = term // every line ends with a terminator
		}
		out.WriteString(text)
		out.WriteString(t)
	}
	pos := 0
	for _, r := range repls {
		for ; pos < r.start && pos < len(lines); pos++ {
			emit(lines[pos].text, lines[pos].term)
		}
		j := r.start
		for _, o := range r.ops {
			switch o.Kind {
			case Context:
				if j < len(lines) {
					emit(lines[j].text, lines[j].term) // context keeps its bytes
				} else {
					emit(o.Text, term)
				}
				j++
			case Remove:
				j++
			case Insert:
				emit(o.Text, term)
			}
		}
		if j > pos {
			pos = j
		}
	}
	for ; pos < len(lines); pos++ {
		emit(lines[pos].text, lines[pos].term)
	}
	return out.Bytes(), nil
}

// seek finds pattern in lines at or after start, trying Codex's passes in
// order: exact, trailing whitespace trimmed, trimmed, and trimmed with
// typographic punctuation normalized. With eof only the position that ends
// at the last line (or the cursor, if later) is tried.
func seek(lines, pattern []string, start int, eof bool) int {
	return seekPasses(lines, pattern, start, eof, 4)
}

// seekPasses is seek with only the first n passes.
func seekPasses(lines, pattern []string, start int, eof bool, n int) int {
	if len(pattern) == 0 {
		return start
	}
	if len(pattern) > len(lines) {
		return -1
	}
	first, last := start, len(lines)-len(pattern)
	if eof {
		first = max(len(lines)-len(pattern), start)
		if first > len(lines)-len(pattern) {
			return -1 // the cursor is already past the only place it could go
		}
		last = first
	}
	for _, eq := range passes[:n] {
	positions:
		for i := first; i <= last; i++ {
			for k, p := range pattern {
				if !eq(lines[i+k], p) {
					continue positions
				}
			}
			return i
		}
	}
	return -1
}

// passes are the matching passes, strictest first.
var passes = []func(a, b string) bool{
	func(a, b string) bool { return a == b },
	func(a, b string) bool {
		return strings.TrimRightFunc(a, unicode.IsSpace) == strings.TrimRightFunc(b, unicode.IsSpace)
	},
	func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) },
	func(a, b string) bool { return normalize(a) == normalize(b) },
}

// normalize trims s and maps typographic punctuation to ASCII.
func normalize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0x2010 && r <= 0x2015, r == 0x2212:
			return '-'
		case r >= 0x2018 && r <= 0x201B:
			return '\''
		case r >= 0x201C && r <= 0x201F:
			return '"'
		case r == 0xA0, r >= 0x2002 && r <= 0x200A, r == 0x202F, r == 0x205F, r == 0x3000:
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
}

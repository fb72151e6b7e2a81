package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/tool"
)

// Options bound what the executor reads and set what it creates.
type Options struct {
	// MaxFileBytes is the largest file the executor reads whole — to edit
	// or overwrite it, to record what a delete, a rename or an undo takes
	// away — and the most of a file a view reads; 0 means
	// DefaultMaxFileBytes. An edit of a larger file is refused with its
	// size, the bound and what to do instead; a view of one shows lines
	// from its first MaxFileBytes bytes only, with a note (FileView.Note).
	MaxFileBytes int64
	// MaxHistoryBytes bounds the file contents the undo history keeps
	// (Options.History), over every file; 0 means DefaultMaxHistoryBytes.
	// Past it the oldest entries are dropped, and an undo that reaches
	// them says so.
	MaxHistoryBytes int64
	// MaxKeptBytes bounds the contents one delete or rename carries in its
	// changes (BeforeData, AfterData) over all its files; 0 means
	// DefaultMaxKeptBytes. A file past it, or past MaxFileBytes, is
	// recorded by its digest and size only, with BeforeUnavailable saying
	// so.
	MaxKeptBytes int64
	// MaxViewBytes bounds the content one view returns; 0 means
	// DefaultMaxViewBytes. A longer selection is cut there and the result
	// is marked Truncated; the line count stays the file's.
	MaxViewBytes int64
	// MaxEntries bounds a directory listing; 0 means 10,000 entries.
	MaxEntries int
	// FileMode and DirMode are the modes of new files and directories;
	// 0 means 0644 and 0755 (less the umask).
	FileMode, DirMode fs.FileMode
	// History keeps each file's content before its edits, for OpUndo,
	// at most MaxHistoryBytes over every file.
	History bool
	// NoStaleCheck turns the refusal of stale edits off, for a store that
	// also writes its files by other means and has a single writer (the
	// memory tool's directory).
	NoStaleCheck bool
}

// Executor runs the file operations of package tool. Its zero Options are
// usable; set them before the first call.
type Executor struct {
	W    *Workspace
	Opts Options

	mu   sync.Mutex
	hist history
	// seen is each file's state when this executor last viewed or
	// changed it, by display path (see Execute).
	seen map[string]seenState
}

// seenState is a file's content digest, or its absence, as an executor
// last saw it.
type seenState struct {
	digest string
	exists bool
}

// Ops lists the operations Executor handles.
var Ops = []tool.Op{tool.OpView, tool.OpCreate, tool.OpWrite, tool.OpReplace, tool.OpInsert, tool.OpList, tool.OpDelete, tool.OpRename, tool.OpUndo}

// reads reports whether op only reads: a view or a listing.
func reads(op tool.Op) bool { return op == tool.OpView || op == tool.OpList }

// Concurrent implements tool.ConcurrentExecutor: views and listings may
// run at once with other concurrent calls.
func (e *Executor) Concurrent(call tool.Call) bool { return reads(call.Op) }

// Mutates implements tool.MutatingExecutor: every operation but a view and
// a listing may change files.
func (e *Executor) Mutates(call tool.Call) bool { return !reads(call.Op) }

// Execute implements tool.Executor.
//
// A call that changes files holds the workspace's lock (Workspace.Lock),
// so that the changes of executors sharing a workspace — parallel agents
// — never interleave, and is refused with an ErrStale error when a file it
// would change exists and differs from what this executor last saw of it:
// the content a view read, or the content (or absence) its own last change
// left. A file this executor never viewed nor changed may be changed (an
// agent's own new file, or one it edits without viewing it first); so may
// a file that does not exist now. The methods called directly do not
// check, but do note what they read and write.
func (e *Executor) Execute(ctx context.Context, call tool.Call) tool.Result {
	var r tool.Result
	var err error
	if e.Mutates(call) {
		defer e.W.Lock()()
		if !e.Opts.NoStaleCheck {
			if err := e.fresh(call); err != nil {
				return tool.Failed(call, err)
			}
		}
	}
	switch a := call.Args.(type) {
	case *tool.ViewArgs:
		r, err = e.View(a)
	case *tool.CreateArgs:
		r, err = e.Write(a, call.Op == tool.OpCreate)
	case *tool.ReplaceArgs:
		r, err = e.Replace(a)
	case *tool.InsertArgs:
		r, err = e.Insert(a)
	case *tool.ListArgs:
		r, err = e.List(a)
	case *tool.DeleteArgs:
		r, err = e.Delete(a)
	case *tool.RenameArgs:
		r, err = e.Rename(a)
	case *tool.UndoArgs:
		r, err = e.Undo(a)
	default:
		err = tool.Errorf(tool.ErrInvalidInput, "operation %s got arguments of type %T", call.Op, call.Args)
	}
	if err != nil {
		return tool.Failed(call, err)
	}
	r.CallID, r.Op = call.ID, call.Op
	return r
}

func (e *Executor) maxBytes() int64 {
	if e.Opts.MaxFileBytes > 0 {
		return e.Opts.MaxFileBytes
	}
	return DefaultMaxFileBytes
}

// read reads a regular file, with typed errors for a missing file or a directory.
func (e *Executor) read(p Resolved, name string) ([]byte, fs.FileInfo, error) {
	fi, err := p.Stat()
	if err != nil {
		return nil, nil, ioErr("read", name, err)
	}
	if fi.IsDir() {
		return nil, fi, isDir(name)
	}
	if fi.Size() > e.maxBytes() {
		return nil, fi, TooLarge(name, fi.Size(), e.maxBytes())
	}
	b, err := p.ReadFileMax(e.maxBytes())
	if errors.Is(err, hostfs.ErrTooLarge) {
		return nil, fi, TooLarge(name, max(fi.Size(), e.maxBytes()+1), e.maxBytes()) // it grew since the stat
	}
	if err != nil {
		return nil, fi, ioErr("read", name, err)
	}
	return b, fi, nil
}

// readForEdit resolves a file that an edit will rewrite and reads it.
func (e *Executor) readForEdit(name string) (Resolved, []byte, error) {
	p, err := e.W.Resolve(name)
	if err != nil {
		return Resolved{}, nil, err
	}
	if err := p.writable(); err != nil {
		return Resolved{}, nil, err
	}
	b, _, err := e.read(p, name)
	return p, b, err
}

// CountLines returns the number of lines of b as an editor shows them: the
// text split on '\n', so "a\nb\n" has three lines, the last one empty.
func CountLines(b []byte) int { return bytes.Count(b, []byte{'\n'}) + 1 }

// View reads a file or a line range of it, or lists a directory two levels
// deep. Lines are split on '\n' only, so "\r" stays part of its line. Of
// a file past Options.MaxFileBytes it reads only that many bytes: the
// lines and the count are those of the whole lines in them, a range past
// them is clipped to them (an error when it starts past them), and the
// result is Truncated with FileView.Note saying so and how to read on.
func (e *Executor) View(a *tool.ViewArgs) (tool.Result, error) {
	p, err := e.W.Resolve(a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	fi, err := p.Stat()
	if err != nil {
		return tool.Result{}, ioErr("read", a.Path, err)
	}
	if fi.IsDir() {
		if a.Start != 0 || a.End != 0 {
			return tool.Result{}, &tool.Error{Kind: tool.ErrInvalidInput, Path: a.Path, Reason: "range_on_directory",
				Message: fmt.Sprintf("a line range cannot be used when %s is a directory", a.Path)}
		}
		return e.List(&tool.ListArgs{Path: a.Path, Depth: 2})
	}
	start, end := a.Start, a.End
	if start == 0 && end == 0 {
		start, end = 1, -1
	}
	limit := e.Opts.MaxViewBytes
	if limit <= 0 {
		limit = DefaultMaxViewBytes
	}
	sc, err := p.scanFile(start, end, limit, e.maxBytes())
	if err != nil {
		return tool.Result{}, err
	}
	var note string
	if sc.partial {
		// Not the whole file's digest: an edit is refused anyway.
		size := max(fi.Size(), sc.size+1)
		sc.finalNL = false
		if sc.total > 1 {
			sc.total-- // the last line read may be cut
		}
		note = fmt.Sprintf("%s is %d bytes, more than the %s the file tools read: this view reads only its first %s, lines 1-%d, "+
			"and counts no further. Read the rest with a shell command (sed -n '%d,%dp', tail, grep -n); the file tools do not edit a file this large.",
			a.Path, size, MiB(e.maxBytes()), MiB(e.maxBytes()), sc.total, sc.total+1, sc.total+100)
	} else {
		e.noteDigest(p, sc.digest)
	}
	if bin := Sniff(sc.head); bin != nil {
		bin.Size = max(sc.size, fi.Size())
		return tool.Result{File: &tool.FileView{Path: a.Path, Binary: bin}}, nil
	}
	total := sc.total
	// The checks and their order are the reference editor's.
	rangeErr := func(reason, msg string) error {
		if note != "" {
			msg += ": " + note
			reason = "past_bound"
		}
		return &tool.Error{Kind: tool.ErrInvalidRange, Path: a.Path, Limit: total, Reason: reason, Message: msg}
	}
	// The window ends where the bytes read do, the last line read left
	// out (it may be cut).
	cutTail := note != "" && (end == -1 || end > total) && !sc.truncated
	if note != "" && end > total {
		end = total
	}
	switch {
	case start < 1 || start > total:
		return tool.Result{}, rangeErr("start", fmt.Sprintf("the start line %d is outside the file's lines [1, %d]", start, total))
	case end > total:
		return tool.Result{}, rangeErr("end_past", fmt.Sprintf("the end line %d is past the file's last line %d", end, total))
	case end != -1 && end < start:
		return tool.Result{}, rangeErr("end_before", fmt.Sprintf("the end line %d is before the start line %d", end, start))
	}
	if cutTail {
		if i := bytes.LastIndexByte(sc.content, '\n'); i >= 0 {
			sc.content = sc.content[:i]
		} else {
			sc.content = nil
		}
	}
	content := string(sc.content)
	return tool.Result{Output: content, Truncated: sc.truncated || note != "", File: &tool.FileView{Path: a.Path, Content: content, StartLine: start, TotalLines: total,
		FinalNewline: sc.finalNL, Note: note}}, nil
}

// Sniff returns what makes b, a whole file, binary — a NUL byte or invalid
// UTF-8 in its first tool.BinarySniffLen bytes (a character cut at that
// bound does not count) — with its size and detected type, or nil when b
// is text. An empty file is text.
func Sniff(b []byte) *tool.Binary {
	head := b
	if len(head) > tool.BinarySniffLen {
		head = head[:tool.BinarySniffLen]
		// Drop a last character that the bound cut in two.
		for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
			if utf8.RuneStart(head[i]) {
				if !utf8.FullRune(head[i:]) {
					head = head[:i]
				}
				break
			}
		}
	}
	var reason string
	switch {
	case bytes.IndexByte(head, 0) >= 0:
		reason = tool.BinaryNUL
	case !utf8.Valid(head):
		reason = tool.BinaryInvalidUTF8
	default:
		return nil
	}
	mt, _, _ := strings.Cut(http.DetectContentType(b), ";")
	return &tool.Binary{Size: int64(len(b)), MediaType: mt, Reason: reason}
}

// Write creates (mustNotExist) or overwrites a file.
func (e *Executor) Write(a *tool.CreateArgs, mustNotExist bool) (tool.Result, error) {
	p, change, err := e.planWrite(a, mustNotExist)
	if err != nil {
		return tool.Result{}, err
	}
	if err := e.write(p, change.AfterData, change.Kind == tool.ChangeAdd, change.BeforeData); err != nil {
		return tool.Result{}, err
	}
	e.note([]tool.FileChange{change})
	verb := "Created"
	if change.Kind == tool.ChangeUpdate {
		verb = "Overwrote"
	}
	return tool.Result{Output: fmt.Sprintf("%s %s (%d bytes)", verb, a.Path, len(a.Content)), Changes: []tool.FileChange{change}}, nil
}

// planWrite is what Write would do, without writing: the target and the
// change (BeforeData the content it replaces, nil when it creates the
// file).
func (e *Executor) planWrite(a *tool.CreateArgs, mustNotExist bool) (Resolved, tool.FileChange, error) {
	p, err := e.W.Resolve(a.Path)
	if err != nil {
		return Resolved{}, tool.FileChange{}, err
	}
	data := []byte(a.Content)
	change := tool.FileChange{Path: p.Display(), Kind: tool.ChangeAdd, After: tool.Digest(data), AfterData: data}
	if fi, err := p.Stat(); err == nil {
		if fi.IsDir() {
			return Resolved{}, tool.FileChange{}, isDir(a.Path)
		}
		if mustNotExist {
			return Resolved{}, tool.FileChange{}, &tool.Error{Kind: tool.ErrExists, Path: a.Path, Message: fmt.Sprintf("a file already exists at %s", a.Path)}
		}
		old, _, err := e.read(p, a.Path)
		if err != nil {
			return Resolved{}, tool.FileChange{}, err
		}
		change.Kind, change.Before, change.BeforeData = tool.ChangeUpdate, tool.Digest(old), old
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Resolved{}, tool.FileChange{}, ioErr("write", a.Path, err)
	}
	return p, change, nil
}

// Replace replaces Old by New. Old must occur exactly once unless All is set;
// several matches are refused with the lines that contain one.
func (e *Executor) Replace(a *tool.ReplaceArgs) (tool.Result, error) {
	p, b, nb, first, n, err := e.planReplace(a)
	if err != nil {
		return tool.Result{}, err
	}
	before, after := digestAsync(b), digestAsync(nb)
	if err := e.write(p, nb, false, b); err != nil {
		return tool.Result{}, err
	}
	msg := fmt.Sprintf("Replaced 1 occurrence in %s", a.Path)
	if n != 1 {
		msg = fmt.Sprintf("Replaced %d occurrences in %s", n, a.Path)
	}
	changes := []tool.FileChange{{Path: p.Display(), Kind: tool.ChangeUpdate, Before: <-before, After: <-after, BeforeData: b, AfterData: nb}}
	e.note(changes)
	return tool.Result{
		Output:  msg,
		Edit:    editSpan(nb, first, strings.Count(a.New, "\n")+1),
		Changes: changes,
	}, nil
}

// planReplace is what Replace would do, without writing: the file, its
// content b and new content nb, where the first replacement starts in nb,
// and how many occurrences are replaced.
func (e *Executor) planReplace(a *tool.ReplaceArgs) (p Resolved, b, nb []byte, first, n int, err error) {
	if a.Old == "" {
		return Resolved{}, nil, nil, 0, 0, tool.Errorf(tool.ErrInvalidInput, "the text to replace is empty; to write a whole file use the write operation")
	}
	p, b, err = e.readForEdit(a.Path)
	if err != nil {
		return Resolved{}, nil, nil, 0, 0, err
	}
	old := []byte(a.Old)
	first = bytes.Index(b, old)
	if first < 0 {
		return Resolved{}, nil, nil, 0, 0, &tool.Error{Kind: tool.ErrNoMatch, Path: a.Path,
			Message: fmt.Sprintf("the text to replace was not found in %s; it must match the file exactly, whitespace and indentation included", a.Path)}
	}
	n = 1
	if !a.All {
		if second := bytes.Index(b[first+len(old):], old); second >= 0 {
			lines := matchLines(b, old)
			return Resolved{}, nil, nil, 0, 0, &tool.Error{Kind: tool.ErrMultipleMatches, Path: a.Path, Lines: lines, Containing: containing(b, old),
				Message: fmt.Sprintf("the text to replace occurs %d times in %s, starting on lines %s; include more surrounding lines to make it unique", len(lines), a.Path, joinInts(lines))}
		}
	}
	if a.All {
		n = bytes.Count(b, old)
		// Bounded before it is made: a short text replaced by a long one
		// everywhere would multiply the file.
		if size := int64(len(b)) + int64(n)*(int64(len(a.New))-int64(len(old))); size > e.maxBytes() {
			return Resolved{}, nil, nil, 0, 0, &tool.Error{Kind: tool.ErrInvalidInput, Path: a.Path, Reason: "too_large", Limit: int(e.maxBytes()),
				Message: fmt.Sprintf("replacing the %d occurrences would make %s %d bytes, more than the %s the file tools write whole; make the change with a shell command instead", n, a.Path, size, MiB(e.maxBytes()))}
		}
		nb = bytes.ReplaceAll(b, old, []byte(a.New))
	} else {
		nb = make([]byte, 0, len(b)-len(old)+len(a.New))
		nb = append(append(append(nb, b[:first]...), a.New...), b[first+len(old):]...)
	}
	return p, b, nb, first, n, nil
}

// digestAsync hashes b on another goroutine; large files hash while the new
// content is built and written.
func digestAsync(b []byte) <-chan string {
	ch := make(chan string, 1)
	if len(b) < 1<<20 {
		ch <- tool.Digest(b)
		return ch
	}
	go func() { ch <- tool.Digest(b) }()
	return ch
}

// editSpan cuts the snippet window around an edit that starts at byte off of
// nb and spans n lines.
func editSpan(nb []byte, off, n int) *tool.EditSpan {
	line := bytes.Count(nb[:off], []byte{'\n'})
	// Walk back SnippetContext lines from the start of the edit's line.
	start := bytes.LastIndexByte(nb[:off], '\n') + 1
	ws := line
	for ws > 0 && line-ws < tool.SnippetContext {
		start = bytes.LastIndexByte(nb[:start-1], '\n') + 1
		ws--
	}
	// Walk forward past the edit's lines and SnippetContext more.
	end, eof := start, false
	for i := ws; i < line+n+tool.SnippetContext; i++ {
		j := bytes.IndexByte(nb[end:], '\n')
		if j < 0 {
			end, eof = len(nb), true
			break
		}
		end += j + 1
	}
	w := string(nb[start:end])
	if !eof {
		w = strings.TrimSuffix(w, "\n")
	}
	return &tool.EditSpan{Line: line, NewLines: n, WindowStart: ws, Window: w, EOF: eof}
}

// matchLines returns the 1-based lines on which each (non-overlapping)
// occurrence of old starts.
func matchLines(b, old []byte) []int {
	var lines []int
	line, off := 1, 0
	for {
		i := bytes.Index(b[off:], old)
		if i < 0 {
			return lines
		}
		line += bytes.Count(b[off:off+i], []byte{'\n'})
		lines = append(lines, line)
		line += bytes.Count(old, []byte{'\n'})
		off += i + len(old)
	}
}

// containing returns the 1-based lines of b that contain old.
func containing(b, old []byte) []int {
	var lines []int
	for i, l := range bytes.Split(b, []byte{'\n'}) {
		if bytes.Contains(l, old) {
			lines = append(lines, i+1)
		}
	}
	return lines
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// Insert inserts Text after line Line (0 = before the first line). The file
// and the text are split on '\n' and re-joined, as the editors do.
func (e *Executor) Insert(a *tool.InsertArgs) (tool.Result, error) {
	p, b, nb, off, err := e.planInsert(a)
	if err != nil {
		return tool.Result{}, err
	}
	before, after := digestAsync(b), digestAsync(nb)
	if err := e.write(p, nb, false, b); err != nil {
		return tool.Result{}, err
	}
	at := off
	changes := []tool.FileChange{{Path: p.Display(), Kind: tool.ChangeUpdate, Before: <-before, After: <-after, BeforeData: b, AfterData: nb}}
	e.note(changes)
	return tool.Result{
		Output:  fmt.Sprintf("Inserted %d line(s) after line %d of %s", strings.Count(a.Text, "\n")+1, a.Line, a.Path),
		Edit:    editSpan(nb, min(at, len(nb)), strings.Count(a.Text, "\n")+1),
		Changes: changes,
	}, nil
}

// planInsert is what Insert would do, without writing: the file, its
// content b and new content nb, and the offset in b where the text goes
// (len(b)+1 after a last line without a newline).
func (e *Executor) planInsert(a *tool.InsertArgs) (p Resolved, b, nb []byte, off int, err error) {
	p, b, err = e.readForEdit(a.Path)
	if err != nil {
		return Resolved{}, nil, nil, 0, err
	}
	n := CountLines(b)
	if a.Line < 0 || a.Line > n {
		return Resolved{}, nil, nil, 0, &tool.Error{Kind: tool.ErrInvalidRange, Path: a.Path, Limit: n,
			Message: fmt.Sprintf("the line %d is outside the file's lines [0, %d]", a.Line, n)}
	}
	// Split on '\n', put the text's lines after line a.Line, re-join: after
	// the last line of a file that ends with a newline comes the empty piece
	// that newline leaves, as the editors number it.
	off = 0 // where line a.Line+1 starts
	for i := 0; i < a.Line; i++ {
		j := bytes.IndexByte(b[off:], '\n')
		if j < 0 {
			off = len(b) + 1 // after the last line: joined with a newline
			break
		}
		off += j + 1
	}
	nb = make([]byte, 0, len(b)+len(a.Text)+1)
	if off > len(b) {
		nb = append(append(append(nb, b...), '\n'), a.Text...)
	} else {
		nb = append(append(append(append(nb, b[:off]...), a.Text...), '\n'), b[off:]...)
	}
	return p, b, nb, off, nil
}

// List lists a directory up to Depth levels deep (default 2), leaving out
// hidden entries (any path component starting with '.'), sorted by path.
func (e *Executor) List(a *tool.ListArgs) (tool.Result, error) {
	name := a.Path
	if name == "" {
		name = "."
	}
	p, err := e.W.Resolve(name)
	if err != nil {
		return tool.Result{}, err
	}
	fi, err := p.Stat()
	if err != nil {
		return tool.Result{}, ioErr("list", name, err)
	}
	if !fi.IsDir() {
		return tool.Result{}, &tool.Error{Kind: tool.ErrNotDir, Path: name, Message: fmt.Sprintf("the path %s is not a directory", name)}
	}
	depth := a.Depth
	if depth <= 0 {
		depth = 2
	}
	limit := e.Opts.MaxEntries
	if limit <= 0 {
		limit = 10000
	}
	base := strings.TrimPrefix(pathSlash(p.Rel), "./")
	var entries []tool.Entry
	truncated := false
	errStop := errors.New("stop")
	err = p.walk(func(fp string, info hostfs.Info, err error) error {
		if fp == base {
			return err
		}
		rel := strings.TrimPrefix(fp, base+"/")
		if base == "." {
			rel = fp
		}
		if strings.HasPrefix(path.Base(rel), ".") {
			if err == nil && info.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err != nil {
			return nil // unreadable subdirectory: list what can be read
		}
		if len(entries) >= limit {
			truncated = true
			return errStop
		}
		entries = append(entries, tool.Entry{Path: rel, IsDir: info.IsDir(), Size: info.Size})
		if info.IsDir() && strings.Count(rel, "/")+1 >= depth {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return tool.Result{}, ioErr("list", name, err)
	}
	// WalkDir's lexical pre-order: each directory is followed by its contents.
	return tool.Result{Entries: entries, Truncated: truncated}, nil
}

func pathSlash(p string) string { return strings.ReplaceAll(p, "\\", "/") }

// write writes data to p with the executor's modes, remembering the previous
// content (nil with created) for OpUndo.
func (e *Executor) write(p Resolved, data []byte, created bool, prev []byte) error {
	if err := p.WriteFileMode(data, e.Opts.FileMode, e.Opts.DirMode); err != nil {
		return err
	}
	if e.Opts.History {
		var h *[]byte
		if !created {
			if int64(len(prev)) <= e.maxHistory() {
				c := bytes.Clone(prev)
				h = &c
			} else {
				h = &prev // not kept: push drops it at once
			}
		}
		e.mu.Lock()
		e.hist.push(p.Abs, h, e.maxHistory())
		e.mu.Unlock()
	}
	return nil
}

// Undo restores the content a file had before its last edit (removing a file
// the executor created). It needs Options.History.
func (e *Executor) Undo(a *tool.UndoArgs) (tool.Result, error) {
	p, last, change, err := e.planUndo(a, true)
	if err != nil {
		return tool.Result{}, err
	}
	if last == nil {
		if err := p.root.r.Remove(p.Rel); err != nil {
			return tool.Result{}, ioErr("remove", a.Path, err)
		}
		e.note([]tool.FileChange{change})
		return tool.Result{Output: fmt.Sprintf("Removed %s, which the undone edit had created", a.Path), Changes: []tool.FileChange{change}}, nil
	}
	if err := p.WriteFileMode(*last, e.Opts.FileMode, e.Opts.DirMode); err != nil {
		return tool.Result{}, err
	}
	e.note([]tool.FileChange{change})
	return tool.Result{Output: string(*last), File: &tool.FileView{Path: a.Path, Content: string(*last), StartLine: 1,
		TotalLines: CountLines(*last), FinalNewline: bytes.HasSuffix(*last, []byte{'\n'})}, Changes: []tool.FileChange{change}}, nil
}

// planUndo is what Undo would do: the file, the content it gets back (nil:
// the undone edit created it, and it is removed) and the change. With pop
// the history's last entry is taken off; without, nothing changes.
func (e *Executor) planUndo(a *tool.UndoArgs, pop bool) (Resolved, *[]byte, tool.FileChange, error) {
	p, err := e.W.Resolve(a.Path)
	if err != nil {
		return Resolved{}, nil, tool.FileChange{}, err
	}
	if err := p.writable(); err != nil {
		return Resolved{}, nil, tool.FileChange{}, err
	}
	e.mu.Lock()
	last, ok := e.hist.last(p.Abs, pop)
	dropped := e.hist.dropped[p.Abs]
	e.mu.Unlock()
	if !ok {
		if dropped {
			return Resolved{}, nil, tool.FileChange{}, &tool.Error{Kind: tool.ErrNotFound, Path: a.Path, Reason: "history_dropped",
				Message: fmt.Sprintf("No edit history left for %s: the undo history keeps at most %s of file contents (its oldest entries, and a file larger than that, are dropped), and this file's earlier edits are gone from it. Restore an earlier version with git or a shell command instead.", a.Path, MiB(e.maxHistory()))}
		}
		return Resolved{}, nil, tool.FileChange{}, &tool.Error{Kind: tool.ErrNotFound, Path: a.Path, Message: fmt.Sprintf("no edit history found for %s", a.Path)}
	}
	change := tool.FileChange{Path: p.Display(), Kind: tool.ChangeUpdate}
	if fi, err := p.Stat(); err == nil && fi.Mode().IsRegular() {
		e.recordContent(p.root.h, filepath.ToSlash(p.Rel), fi.Size(), e.keptBudget(), &change)
	}
	if change.Before == "" && change.BeforeUnavailable == "" {
		change.Before = tool.Digest(nil)
	}
	if last == nil {
		change.Kind = tool.ChangeDelete
	} else {
		change.After, change.AfterData = tool.Digest(*last), *last
	}
	return p, last, change, nil
}

// Delete deletes a file, or a directory with everything in it when
// Recursive is set. The root of a workspace cannot be deleted.
func (e *Executor) Delete(a *tool.DeleteArgs) (tool.Result, error) {
	p, fi, changes, err := e.planDelete(a)
	if err != nil {
		return tool.Result{}, err
	}
	if fi.IsDir() {
		err = p.root.r.RemoveAll(p.Rel)
	} else {
		err = p.root.r.Remove(p.Rel)
	}
	if err != nil {
		return tool.Result{}, ioErr("delete", a.Path, err)
	}
	e.note(changes)
	return tool.Result{Output: fmt.Sprintf("Deleted %s", a.Path), Changes: changes}, nil
}

// planDelete is what Delete would do, without deleting: the path, what it
// is, and the changes (one per regular file beneath a directory).
func (e *Executor) planDelete(a *tool.DeleteArgs) (Resolved, fs.FileInfo, []tool.FileChange, error) {
	p, err := e.W.Resolve(a.Path)
	if err != nil {
		return Resolved{}, nil, nil, err
	}
	if err := p.writable(); err != nil {
		return Resolved{}, nil, nil, err
	}
	if p.Rel == "." {
		return Resolved{}, nil, nil, tool.Errorf(tool.ErrInvalidInput, "the root %s cannot be deleted", a.Path)
	}
	fi, err := p.root.r.Lstat(p.Rel)
	if err != nil {
		return Resolved{}, nil, nil, ioErr("delete", a.Path, err)
	}
	var changes []tool.FileChange
	if fi.IsDir() {
		if !a.Recursive {
			return Resolved{}, nil, nil, isDir(a.Path)
		}
		b := e.keptBudget()
		p.walk(func(fp string, info hostfs.Info, err error) error {
			if err == nil && info.IsRegular() {
				rel := fp
				if !p.primary {
					rel = p.root.dir + "/" + fp
				}
				c := tool.FileChange{Path: rel, Kind: tool.ChangeDelete}
				if e.recordContent(p.root.h, fp, info.Size, b, &c); c.Before != "" {
					changes = append(changes, c)
				}
			}
			return nil
		})
	} else {
		change := tool.FileChange{Path: p.Display(), Kind: tool.ChangeDelete}
		if fi.Mode().IsRegular() {
			e.recordContent(p.root.h, filepath.ToSlash(p.Rel), fi.Size(), e.keptBudget(), &change)
		}
		changes = []tool.FileChange{change}
	}
	return p, fi, changes, nil
}

// Rename renames From to To within one root, creating To's parent
// directories. It never overwrites: an existing To is an ErrExists error.
func (e *Executor) Rename(a *tool.RenameArgs) (tool.Result, error) {
	from, to, changes, err := e.planRename(a)
	if err != nil {
		return tool.Result{}, err
	}
	if dir := filepath.Dir(to.Rel); dir != "." {
		if err := to.root.r.MkdirAll(dir, e.dirMode()); err != nil {
			return tool.Result{}, ioErr("create the directory for", a.To, err)
		}
	}
	if err := from.root.r.Rename(from.Rel, to.Rel); err != nil {
		return tool.Result{}, ioErr("rename", a.From, err)
	}
	e.note(changes)
	return tool.Result{Output: fmt.Sprintf("Renamed %s to %s", a.From, a.To), Changes: changes}, nil
}

// planRename is what Rename would do, without renaming or creating a
// directory: both paths and the changes.
func (e *Executor) planRename(a *tool.RenameArgs) (from, to Resolved, changes []tool.FileChange, err error) {
	fail := func(err error) (Resolved, Resolved, []tool.FileChange, error) {
		return Resolved{}, Resolved{}, nil, err
	}
	if from, err = e.W.Resolve(a.From); err != nil {
		return fail(err)
	}
	if to, err = e.W.Resolve(a.To); err != nil {
		return fail(err)
	}
	if err := from.writable(); err != nil {
		return fail(err)
	}
	if err := to.writable(); err != nil {
		return fail(err)
	}
	if from.root != to.root {
		return fail(tool.Errorf(tool.ErrUnsupported, "cannot rename %s to %s: they are in different roots", a.From, a.To))
	}
	fi, err := from.root.r.Lstat(from.Rel)
	if err != nil {
		return fail(ioErr("rename", a.From, err))
	}
	if _, err := to.root.r.Lstat(to.Rel); err == nil {
		return fail(&tool.Error{Kind: tool.ErrExists, Path: a.To, Message: fmt.Sprintf("the destination %s already exists", a.To)})
	}
	return from, to, e.moves(from, to, fi), nil
}

func (e *Executor) dirMode() fs.FileMode {
	if e.Opts.DirMode != 0 {
		return e.Opts.DirMode
	}
	return 0o755
}

// moves returns the changes of renaming from to to: one for a file (its
// content under both names; none for a symlink or another special file),
// one for each regular file below a directory.
// A file past the executor's bounds is recorded by digest and size only
// (recordContent), on both sides.
func (e *Executor) moves(from, to Resolved, fi fs.FileInfo) []tool.FileChange {
	b := e.keptBudget()
	move := func(name string, size int64, c *tool.FileChange) bool {
		e.recordContent(from.root.h, name, size, b, c)
		if c.Before == "" {
			return false
		}
		c.After, c.AfterData, c.AfterUnavailable = c.Before, c.BeforeData, c.BeforeUnavailable
		return true
	}
	if !fi.IsDir() {
		c := tool.FileChange{Path: from.Display(), Kind: tool.ChangeUpdate, MovedTo: to.Display()}
		if fi.Mode().IsRegular() {
			move(filepath.ToSlash(from.Rel), fi.Size(), &c)
		}
		return []tool.FileChange{c}
	}
	var changes []tool.FileChange
	base := pathSlash(from.Rel)
	from.walk(func(fp string, info hostfs.Info, err error) error {
		if err != nil || !info.IsRegular() {
			return nil
		}
		sub := strings.TrimPrefix(fp, base)
		c := tool.FileChange{Path: from.Display() + sub, Kind: tool.ChangeUpdate, MovedTo: to.Display() + sub}
		if move(fp, info.Size, &c) {
			changes = append(changes, c)
		}
		return nil
	})
	if len(changes) == 0 {
		// An empty directory: the move itself.
		changes = append(changes, tool.FileChange{Path: from.Display(), Kind: tool.ChangeUpdate, MovedTo: to.Display()})
	}
	return changes
}

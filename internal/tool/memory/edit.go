package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
)

// The memory commands follow the reference implementation of the memory
// tool in Anthropic's SDK helpers (BetaLocalFilesystemMemoryTool), so that
// the files, and the texts the binding renders from these results, are the
// ones the models were trained on:
//
//   - a file is read as Python reads text: "\r\n" and "\r" become "\n";
//   - str_replace counts occurrences of old_str (not overlapping); when
//     there are several, the error lists the line of each match, found
//     overlapping, in order; the one match is replaced and the snippet is
//     the new content's lines two before to two after the changed line;
//   - insert splits the file as Python's str.splitlines does, inserts the
//     text without its trailing newlines after line insert_line (0 = the
//     top), rejoins the lines with "\n" and ends the file with a newline.

// SnippetBefore and SnippetAfter are how many lines a str_replace snippet
// shows before and after the changed line.
const (
	SnippetBefore = 2
	SnippetAfter  = 2
)

// ReadText translates line endings as Python's text mode reads them.
func ReadText(b []byte) string {
	s := string(b)
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// SplitLines splits s as Python's str.splitlines does: at "\n", "\r",
// "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", U+0085, U+2028 and U+2029,
// without an empty piece after a final line break.
func SplitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			out = append(out, s[start:i])
			start = i + w
		case '\r':
			out = append(out, s[start:i])
			if i+1 < len(s) && s[i+1] == '\n' {
				w = 2
			}
			start = i + w
		}
		i += w
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// MatchLines returns the 1-based line of every match of old in s, matches
// found overlapping (each search starts one character after the last
// match), as the reference lists them.
func MatchLines(s, old string) []int {
	var lines []int
	// The line of each position, counted on from the last one: matches
	// come in order, so the whole search stays linear.
	last, n := 0, 1
	line := func(pos int) int {
		n += strings.Count(s[last:pos], "\n")
		last = pos
		return n
	}
	if old == "" {
		for i := range s {
			lines = append(lines, line(i))
		}
		return append(lines, line(len(s)))
	}
	for start := 0; start <= len(s); {
		j := strings.Index(s[start:], old)
		if j < 0 {
			break
		}
		pos := start + j
		lines = append(lines, line(pos))
		_, w := utf8.DecodeRuneInString(s[pos:])
		start = pos + max(w, 1)
	}
	return lines
}

// readFile resolves a virtual file for an edit and reads it as text.
func (s *Store) readFile(virt, rel string) (tfs.Resolved, []byte, error) {
	p, err := s.ws.Resolve(rel)
	if err != nil {
		return p, nil, err
	}
	fi, err := p.Stat()
	if err != nil {
		return p, nil, statErr(virt, err)
	}
	if !fi.Mode().IsRegular() {
		return p, nil, &tool.Error{Kind: tool.ErrIsDir, Path: virt, Message: fmt.Sprintf("The path %s is not a file.", virt)}
	}
	b, err := p.ReadFile()
	if err != nil {
		return p, nil, statErr(virt, err)
	}
	return p, b, nil
}

func statErr(virt string, err error) error {
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return &tool.Error{Kind: tool.ErrNotFound, Path: virt, Message: fmt.Sprintf("The path %s does not exist. Please provide a valid path.", virt)}
	case strings.Contains(err.Error(), "path escapes from parent"):
		return escape(virt)
	}
	return &tool.Error{Kind: tool.ErrIO, Path: virt, Err: err, Message: fmt.Sprintf("cannot read %s: %v", virt, err)}
}

// write writes a memory file atomically and reports the change.
func (s *Store) write(p tfs.Resolved, virt string, before []byte, after string) ([]tool.FileChange, error) {
	if err := p.WriteFileMode([]byte(after), 0o600, 0o700); err != nil {
		return nil, err
	}
	a := []byte(after)
	return []tool.FileChange{{Path: virt, Kind: tool.ChangeUpdate, Before: tool.Digest(before), After: tool.Digest(a),
		BeforeData: before, AfterData: a}}, nil
}

// replace runs str_replace on the virtual file virt (rel in the store).
func (s *Store) replace(virt, rel string, a *tool.ReplaceArgs) (tool.Result, error) {
	p, b, err := s.readFile(virt, rel)
	if err != nil {
		return tool.Result{}, err
	}
	content := ReadText(b)
	switch n := strings.Count(content, a.Old); {
	case n == 0:
		return tool.Result{}, &tool.Error{Kind: tool.ErrNoMatch, Path: virt,
			Message: fmt.Sprintf("No replacement was performed, old_str `%s` did not appear verbatim in %s.", a.Old, virt)}
	case n > 1:
		lines := MatchLines(content, a.Old)
		return tool.Result{}, &tool.Error{Kind: tool.ErrMultipleMatches, Path: virt, Lines: lines, Containing: lines,
			Message: fmt.Sprintf("No replacement was performed. Multiple occurrences of old_str `%s` in lines: %s. Please ensure it is unique", a.Old, JoinInts(lines))}
	}
	changed := strings.Count(content[:strings.Index(content, a.Old)], "\n")
	after := strings.Replace(content, a.Old, a.New, 1)
	changes, err := s.write(p, virt, b, after)
	if err != nil {
		return tool.Result{}, err
	}
	lines := strings.Split(after, "\n")
	from := max(0, changed-SnippetBefore)
	to := min(len(lines), changed+SnippetAfter+1)
	return tool.Result{Output: fmt.Sprintf("Replaced one occurrence in %s", virt), Changes: changes,
		Edit: &tool.EditSpan{Line: changed, NewLines: strings.Count(a.New, "\n") + 1, WindowStart: from,
			Window: strings.Join(lines[from:to], "\n"), EOF: to == len(lines)}}, nil
}

// insert runs insert on the virtual file virt (rel in the store).
func (s *Store) insert(virt, rel string, a *tool.InsertArgs) (tool.Result, error) {
	p, b, err := s.readFile(virt, rel)
	if err != nil {
		return tool.Result{}, err
	}
	lines := SplitLines(ReadText(b))
	if a.Line < 0 || a.Line > len(lines) {
		return tool.Result{}, &tool.Error{Kind: tool.ErrInvalidRange, Path: virt, Limit: len(lines),
			Message: fmt.Sprintf("Invalid `insert_line` parameter: %d. It should be within the range [0, %d].", a.Line, len(lines))}
	}
	lines = append(lines[:a.Line], append([]string{strings.TrimRight(a.Text, "\n")}, lines[a.Line:]...)...)
	after := strings.Join(lines, "\n")
	if !strings.HasSuffix(after, "\n") {
		after += "\n"
	}
	changes, err := s.write(p, virt, b, after)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Output: fmt.Sprintf("Inserted after line %d of %s", a.Line, virt), Changes: changes,
		Edit: &tool.EditSpan{Line: a.Line, NewLines: strings.Count(strings.TrimRight(a.Text, "\n"), "\n") + 1}}, nil
}

// view reads a virtual file whole, as text, or lists a virtual directory two
// levels deep with the directory itself first (Path "."). A file view's
// range is not applied here: the binding selects the lines as the
// reference does (a Python slice), which can select none.
func (s *Store) view(virt, rel string) (tool.Result, error) {
	p, err := s.ws.Resolve(rel)
	if err != nil {
		return tool.Result{}, err
	}
	fi, err := p.Stat()
	if err != nil {
		return tool.Result{}, statErr(virt, err)
	}
	if fi.IsDir() {
		r, err := s.fx.List(&tool.ListArgs{Path: rel, Depth: 2})
		if err != nil {
			return tool.Result{}, err
		}
		r.Entries = append([]tool.Entry{{Path: ".", IsDir: true, Size: fi.Size()}}, r.Entries...)
		return r, nil
	}
	r, err := s.fx.View(&tool.ViewArgs{Path: rel})
	if err != nil {
		return tool.Result{}, err
	}
	if r.File != nil && r.File.Binary != nil {
		r.File.Path = virt // the facts of a binary file, not its bytes
		return r, nil
	}
	if r.File != nil {
		text := ReadText([]byte(r.File.Content))
		r.Output = text
		r.File = &tool.FileView{Path: virt, Content: text, StartLine: 1, TotalLines: strings.Count(text, "\n") + 1,
			FinalNewline: strings.HasSuffix(text, "\n")}
	}
	return r, nil
}

// JoinInts joins numbers with ", ", as Python's ", ".join(map(str, xs)).
func JoinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

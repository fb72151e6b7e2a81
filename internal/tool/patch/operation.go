package patch

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/tool"
)

// The Responses API's apply_patch tool sends one operation per call —
// create_file, update_file or delete_file — with a V4A diff without the
// envelope. Its semantics are those of OpenAI's reference applier
// (apply_diff.py in openai-agents-python), which differ from Codex's
// envelope on purpose:
//
//   - a create diff is "+" lines joined with the diff's newline, the empty
//     element after a final newline dropped: "+a\n" and "+a" both create
//     "a", and a final bare "+" gives the file its trailing newline;
//   - an update diff is "@@ [anchor]" sections; anchors may be stacked (each
//     found after the previous); a single anchor that is not found is
//     advisory, a stack with one that is not found is an error;
//   - lines match exactly, then without trailing whitespace, then trimmed
//     (no punctuation pass); a section without context inserts after its
//     anchors; "*** End of File" anchors a section at the end;
//   - the file is the lines between its newlines: a file without a final
//     newline keeps having none, one with it keeps it; the result uses
//     CRLF when the file had any, else LF, and a file without any newline
//     takes the diff's.

// OpCreate, OpUpdate and OpDelete are the operation types.
const (
	OpCreate = "create_file"
	OpUpdate = "update_file"
	OpDelete = "delete_file"
)

// PlanOperation plans one Responses apply_patch operation.
func (e *Engine) PlanOperation(typ, path, diff string) (*Plan, error) {
	s := newState(e)
	var tag string
	switch typ {
	case OpCreate:
		content, err := CreateContent(diff)
		if err != nil {
			return nil, err
		}
		if err := s.set(path, []byte(content)); err != nil {
			return nil, err
		}
		tag = "A"
	case OpUpdate:
		old, err := s.read(path)
		if err != nil {
			if k := kindOf(err); k != "" {
				return nil, err
			}
			return nil, &Error{fmt.Sprintf("Failed to read file to update %s: %s", path, osMessage(err))}
		}
		nb, err := UpdateContent(string(old), diff)
		if err != nil {
			return nil, err
		}
		if err := s.set(path, []byte(nb)); err != nil {
			return nil, err
		}
		tag = "M"
	case OpDelete:
		if err := s.present(path); err != nil {
			if k := kindOf(err); k != "" {
				return nil, err
			}
			return nil, &Error{fmt.Sprintf("Failed to delete file %s", path)}
		}
		s.set(path, nil)
		tag = "D"
	default:
		return nil, &Error{fmt.Sprintf("unknown operation type %q: expected create_file, update_file or delete_file", typ)}
	}
	k, _ := s.key(path)
	return &Plan{Summary: fmt.Sprintf("Success. Updated the following files:\n%s %s\n", tag, path),
		Files: []PlannedFile{{Path: path, Content: s.content[k], Before: s.before[k], Existed: s.existed[k]}}}, nil
}

// CreateContent returns the content of a create_file diff, as the
// reference applier computes it: the diff is split on CRLF or LF, trailing
// carriage returns are dropped from each line, and so is the empty element
// after a final newline ("+hello\n" is the one line "hello"); every line
// up to one that starts a new patch section ("*** End Patch", "*** Add
// File:", ...) must start with "+", and the lines are joined with CRLF when
// the diff has any, else LF. A file gets a trailing newline from a final
// bare "+".
func CreateContent(diff string) (string, error) {
	nl := "\n"
	if strings.Contains(diff, "\r\n") {
		nl = "\r\n"
	}
	lines := strings.Split(diff, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r")
	}
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if sectionStart(l) {
			break
		}
		if !strings.HasPrefix(l, "+") {
			return "", &Error{fmt.Sprintf("Invalid Add File Line: %s", l)}
		}
		out = append(out, l[1:])
	}
	return strings.Join(out, nl), nil
}

// sectionStart reports whether a line starts a new section of a patch,
// which ends a create diff.
func sectionStart(l string) bool {
	for _, p := range []string{"*** End Patch", "*** Update File:", "*** Delete File:", "*** Add File:"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// updateChunk is one change of an update diff: at line origIndex of the
// file (after the file's CRLFs became LFs), del lines are replaced by ins.
type updateChunk struct {
	origIndex int
	del, ins  []string
}

// diffLines splits a diff into lines as the reference applier does: on CRLF
// or LF, every trailing carriage return dropped, and the empty element
// after a final newline dropped.
func diffLines(diff string) []string {
	lines := strings.Split(diff, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r")
	}
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	return lines
}

// UpdateContent applies an update_file diff to content, as the reference
// applier's default mode does. The content is split at its newlines (CRLF
// read as LF) without dropping the empty element after a final one, so the
// result ends with a newline exactly when the content did, unless the diff
// itself edits that last, empty element. The lines are joined again with
// CRLF when the content has any CRLF, with LF when it has other newlines,
// and with the diff's newline (CRLF when the diff has any) when the content
// has none. A diff that does not apply is an *Error; content is never
// partly changed.
func UpdateContent(content, diff string) (string, error) {
	nl := "\n"
	if strings.Contains(content, "\n") {
		if strings.Contains(content, "\r\n") {
			nl = "\r\n"
		}
	} else if strings.Contains(diff, "\r\n") {
		nl = "\r\n"
	}
	lines := strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n")
	chunks, err := parseUpdate(append(diffLines(diff), endPatch), lines)
	if err != nil {
		return "", err
	}
	out := make([]string, 0, len(lines)+8)
	cursor := 0
	for _, c := range chunks {
		if c.origIndex > len(lines) {
			return "", &Error{fmt.Sprintf("applyDiff: chunk.origIndex %d > input length %d", c.origIndex, len(lines))}
		}
		if cursor > c.origIndex {
			return "", &Error{fmt.Sprintf("applyDiff: overlapping chunk at %d (cursor %d)", c.origIndex, cursor)}
		}
		out = append(out, lines[cursor:c.origIndex]...)
		out = append(out, c.ins...)
		cursor = c.origIndex + len(c.del)
	}
	if cursor < len(lines) {
		out = append(out, lines[cursor:]...)
	}
	return strings.Join(out, nl), nil
}

// sectionEnds are the lines that end the update diff when a section would
// start.
var sectionEnds = []string{endPatch, "*** Update File:", "*** Delete File:", "*** Add File:", endOfFile}

// parseUpdate reads the sections of an update diff (its lines, ending with
// "*** End Patch") and finds each in the file's lines.
func parseUpdate(dl, lines []string) ([]updateChunk, error) {
	var chunks []updateChunk
	i, cursor := 0, 0
	for i < len(dl) && !hasAnyPrefix(dl[i], sectionEnds) {
		var anchors []string
		count := 0
		for i < len(dl) {
			if a, ok := strings.CutPrefix(dl[i], "@@ "); ok {
				if strings.TrimFunc(a, pyspace) != "" {
					anchors = append(anchors, a)
				}
			} else if dl[i] != "@@" {
				break
			}
			count++
			i++
		}
		if count == 0 && cursor != 0 {
			return nil, &Error{fmt.Sprintf("Invalid Line:\n%s", dl[i])}
		}
		for k, a := range anchors {
			var found bool
			cursor, found = seekAnchor(lines, a, cursor, k > 0)
			if !found && count > 1 {
				return nil, &Error{fmt.Sprintf("Invalid Anchor:\n%s", a)}
			}
		}
		sec, err := readSection(dl, i)
		if err != nil {
			return nil, err
		}
		at := findContext(lines, sec.context, cursor, sec.eof)
		if at < 0 {
			if sec.eof {
				return nil, &Error{fmt.Sprintf("Invalid EOF Context:\n%s", strings.Join(sec.context, "\n"))}
			}
			return nil, &Error{fmt.Sprintf("Invalid Context:\n%s", strings.Join(sec.context, "\n"))}
		}
		cursor = at + len(sec.context)
		i = sec.end
		for _, c := range sec.chunks {
			c.origIndex += at
			chunks = append(chunks, c)
		}
	}
	return chunks, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// seekAnchor moves the cursor past the anchor's line: the first at or
// after the cursor equal to it, else the first equal to it trimmed. The
// first anchor of a section that equals a line before the cursor is found
// where it is, and the cursor stays (a later section may name the class an
// earlier one was in); the anchors stacked after it are searched forward
// only.
func seekAnchor(lines []string, anchor string, cursor int, forward bool) (int, bool) {
	for _, eq := range []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool { return pyTrim(a) == pyTrim(b) },
	} {
		if !forward && slices.ContainsFunc(lines[:cursor], func(l string) bool { return eq(l, anchor) }) {
			return cursor, true
		}
		for i := cursor; i < len(lines); i++ {
			if eq(lines[i], anchor) {
				return i + 1, true
			}
		}
	}
	return cursor, false
}

// section is one "@@" section of an update diff: the lines it expects
// (context and removed), its changes relative to them, where the diff goes
// on, and whether "*** End of File" anchors it at the end.
type section struct {
	context []string
	chunks  []updateChunk
	end     int
	eof     bool
}

// readSection reads the section's lines from dl[start:]. An empty line is
// an empty context line.
func readSection(dl []string, start int) (section, error) {
	var s section
	var del, ins []string
	mode, i := byte(' '), start
	flush := func() {
		if len(del) > 0 || len(ins) > 0 {
			s.chunks = append(s.chunks, updateChunk{origIndex: len(s.context) - len(del), del: del, ins: ins})
			del, ins = nil, nil
		}
	}
	for ; i < len(dl); i++ {
		raw := dl[i]
		if strings.HasPrefix(raw, "@@") || hasAnyPrefix(raw, sectionEnds) || raw == "***" {
			break
		}
		if strings.HasPrefix(raw, "***") {
			return s, &Error{fmt.Sprintf("Invalid Line: %s", raw)}
		}
		line := raw
		if line == "" {
			line = " "
		}
		last := mode
		switch mode = line[0]; mode {
		case '+', '-', ' ':
		default:
			return s, &Error{fmt.Sprintf("Invalid Line: %s", line)}
		}
		if mode == ' ' && last != ' ' {
			flush()
		}
		switch mode {
		case '-':
			del = append(del, line[1:])
			s.context = append(s.context, line[1:])
		case '+':
			ins = append(ins, line[1:])
		default:
			s.context = append(s.context, line[1:])
		}
	}
	flush()
	if i < len(dl) && dl[i] == endOfFile {
		s.end, s.eof = i+1, true
		return s, nil
	}
	if i == start {
		next := ""
		if i < len(dl) {
			next = dl[i]
		}
		return s, &Error{fmt.Sprintf("Nothing in this section - index=%d %s", i, next)}
	}
	s.end = i
	return s, nil
}

// findContext returns where context starts in lines, at or after start;
// with eof it tries the end of the file first. -1 when it is not found.
func findContext(lines, context []string, start int, eof bool) int {
	if eof {
		if at := findContextAt(lines, context, max(0, len(lines)-len(context))); at >= 0 {
			return at
		}
	}
	return findContextAt(lines, context, start)
}

// findContextAt tries the reference applier's three passes in order, each
// over every position: exact, trailing whitespace dropped, trimmed.
func findContextAt(lines, context []string, start int) int {
	if len(context) == 0 {
		return start
	}
	for _, f := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRightFunc(s, pyspace) },
		pyTrim,
	} {
	positions:
		for i := start; i+len(context) <= len(lines); i++ {
			for k, c := range context {
				if f(lines[i+k]) != f(c) {
					continue positions
				}
			}
			return i
		}
	}
	return -1
}

// pyspace reports whether Python's str.strip would strip r: Unicode white
// space and the information separators U+001C to U+001F.
func pyspace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// pyTrim is Python's str.strip().
func pyTrim(s string) string { return strings.TrimFunc(s, pyspace) }

// kindOf returns the kind of an error that passes through as it is: a
// confinement error, or the workspace's refusal of a file it does not
// open (a FIFO, socket or device, a file lease, a file over the size a
// tool reads; see tfs.Resolved.ReadFileMax); "" for the others.
func kindOf(err error) tool.ErrorKind {
	if k := tool.KindOf(err); k == tool.ErrOutsideRoot || k != "" && hostfs.Refused(err) {
		return k
	}
	return ""
}

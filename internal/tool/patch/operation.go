package patch

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/tool"
)

// The Responses API's apply_patch tool sends one operation per call —
// create_file, update_file or delete_file — with a V4A diff without the
// envelope. Its semantics are those of OpenAI's reference applier, which
// differ from Codex's envelope on purpose:
//
//   - a create diff is "+" lines joined with the diff's newline, the empty
//     element after a final newline dropped: "+a\n" and "+a" both create
//     "a", and a final bare "+" gives the file its trailing newline;
//   - an update diff is "@@ [anchor]" sections; anchors may be stacked (each
//     found after the previous); a single anchor that is not found is
//     advisory, a partly found stack is an error;
//   - lines match exactly, then without trailing whitespace, then trimmed
//     (no punctuation pass); a section without context inserts after its
//     anchors;
//   - the result uses CRLF when the input had any, else LF, and ends with a
//     newline.

// OpCreate, OpUpdate and OpDelete are the operation types.
const (
	OpCreate = "create_file"
	OpUpdate = "update_file"
	OpDelete = "delete_file"
)

// PlanOperation plans one Responses apply_patch operation.
func (e *Engine) PlanOperation(typ, path, diff string) (*Plan, error) {
	s := &state{e: e, names: map[string]string{}, content: map[string][]byte{}, exists: map[string]bool{}, before: map[string][]byte{}}
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
		s.set(path, []byte(nb))
		tag = "M"
	case OpDelete:
		if _, err := s.read(path); err != nil {
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
		Files: []PlannedFile{{Path: path, Content: s.content[k], Before: s.before[k]}}}, nil
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

type section struct {
	anchors []string
	ops     []Op
}

func parseSections(diff string) ([]section, error) {
	var out []section
	for _, l := range strings.Split(strings.TrimSuffix(diff, "\n"), "\n") {
		l = strings.TrimSuffix(l, "\r")
		switch {
		case l == "@@" || strings.HasPrefix(l, "@@ "):
			if len(out) == 0 || len(out[len(out)-1].ops) > 0 {
				out = append(out, section{})
			}
			if a := strings.TrimPrefix(strings.TrimPrefix(l, "@@"), " "); a != "" {
				out[len(out)-1].anchors = append(out[len(out)-1].anchors, a)
			}
		default:
			if len(out) == 0 {
				out = append(out, section{})
			}
			o := Op{Kind: Context}
			if l != "" {
				switch l[0] {
				case ' ', '+', '-':
					o = Op{Kind: OpKind(l[0]), Text: l[1:]}
				default:
					return nil, &Error{fmt.Sprintf("Invalid Line: %s", l)}
				}
			}
			out[len(out)-1].ops = append(out[len(out)-1].ops, o)
		}
	}
	return out, nil
}

// UpdateContent applies an update_file diff to content.
func UpdateContent(content, diff string) (string, error) {
	nl := "\n"
	if strings.Contains(content, "\r\n") {
		nl = "\r\n"
	}
	lines := strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	secs, err := parseSections(diff)
	if err != nil {
		return "", err
	}
	var out []string
	cursor, copied := 0, 0 // where the search resumes; how far lines were copied
	for _, sec := range secs {
		for _, a := range sec.anchors {
			idx := seekPasses(lines, []string{a}, cursor, false, 3)
			switch {
			case idx >= 0:
				cursor = idx + 1
			case len(sec.anchors) > 1:
				return "", &Error{fmt.Sprintf("Invalid Anchor: %s", a)}
			}
		}
		at := cursor
		if old := (Chunk{Ops: sec.ops}).Old(); len(old) > 0 {
			if at = seekPasses(lines, old, cursor, false, 3); at < 0 {
				return "", &Error{fmt.Sprintf("Invalid Context:\n%s", strings.Join(old, "\n"))}
			}
		}
		out = append(out, lines[copied:at]...)
		j := at
		for _, o := range sec.ops {
			switch o.Kind {
			case Context:
				out = append(out, lines[j])
				j++
			case Remove:
				j++
			case Insert:
				out = append(out, o.Text)
			}
		}
		cursor, copied = j, j
	}
	out = append(out, lines[copied:]...)
	var buf bytes.Buffer
	for _, l := range out {
		buf.WriteString(l)
		buf.WriteString(nl)
	}
	return buf.String(), nil
}

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

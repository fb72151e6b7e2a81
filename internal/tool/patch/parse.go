// Package patch parses and applies patches in the V4A format that OpenAI's
// models write: the whole envelope of Codex's apply_patch tool
//
//	*** Begin Patch
//	*** Add File: <path>          followed by "+" lines
//	*** Delete File: <path>
//	*** Update File: <path>       optionally "*** Move to: <path>", then chunks:
//	@@ [context line]             then " " context, "-" removed, "+" added lines,
//	*** End of File               optionally, anchoring the chunk at the end
//	*** End Patch
//
// with Codex's parser leniency (a heredoc wrapper, padded markers, a first
// chunk without "@@") and its error messages.
//
// One engine serves every front end: Parse turns text into a Patch; Plan
// computes every file's new content in memory, matching each chunk with
// Codex's four passes (exact, trailing whitespace, trimmed, Unicode
// punctuation normalized); Apply writes the plan. A patch is applied all
// or nothing: when any hunk fails, no file is changed (stricter than Codex,
// which leaves the hunks before the failure applied). Line endings are
// preserved: context lines keep their bytes, added lines take the file's
// first line ending (LF when it has none), and every line ends with one.
//
// The Responses API's single operations (PlanOperation) share the plan and
// Apply, but compute a file's content by OpenAI's reference applier's rules
// instead (CreateContent, UpdateContent): among other differences, an
// updated file keeps the final newline it had, or its absence.
package patch

import (
	"fmt"
	"strings"
)

// Kind is a hunk's operation.
type Kind int

// The hunk kinds.
const (
	Add Kind = iota
	Delete
	Update
)

// Patch is a parsed patch.
type Patch struct {
	Hunks []Hunk
	// EnvironmentID is the optional "*** Environment ID:" preamble.
	EnvironmentID string
}

// Hunk is one file operation.
type Hunk struct {
	Kind     Kind
	Path     string
	MoveTo   string  // Update: the new path, if moved
	Contents string  // Add: the file's content
	Chunks   []Chunk // Update
	Line     int     // 1-based line of the hunk's header
}

// OpKind is a chunk line's kind.
type OpKind byte

// The chunk line kinds.
const (
	Context OpKind = ' '
	Remove  OpKind = '-'
	Insert  OpKind = '+'
)

// Op is one line of a chunk.
type Op struct {
	Kind OpKind
	Text string
}

// Chunk is one "@@" section of an Update hunk.
type Chunk struct {
	// Context is the "@@ <line>" anchor, empty for a bare "@@".
	Context string
	Ops     []Op
	// EOF anchors the chunk at the end of the file.
	EOF bool
}

// Old returns the lines the chunk expects (context and removed).
func (c Chunk) Old() []string {
	var out []string
	for _, o := range c.Ops {
		if o.Kind != Insert {
			out = append(out, o.Text)
		}
	}
	return out
}

// New returns the lines the chunk leaves (context and added).
func (c Chunk) New() []string {
	var out []string
	for _, o := range c.Ops {
		if o.Kind != Remove {
			out = append(out, o.Text)
		}
	}
	return out
}

// ParseError is a malformed patch. Line is 1-based, 0 when the error is not
// a hunk's.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("Invalid patch hunk on line %d: %s", e.Line, e.Msg)
	}
	return "Invalid patch: " + e.Msg
}

const (
	beginPatch = "*** Begin Patch"
	endPatch   = "*** End Patch"
	addFile    = "*** Add File: "
	deleteFile = "*** Delete File: "
	updateFile = "*** Update File: "
	moveTo     = "*** Move to: "
	endOfFile  = "*** End of File"
	envID      = "*** Environment ID:"
)

const unexpected = "Unexpected line found in update hunk: '%s'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"

// Parse parses a whole patch envelope.
func Parse(text string) (*Patch, error) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	// A heredoc wrapper (<<EOF ... EOF) around the patch is dropped.
	if len(lines) >= 4 {
		switch strings.TrimSpace(lines[0]) {
		case "<<EOF", "<<'EOF'", `<<"EOF"`:
			if strings.HasSuffix(strings.TrimSpace(lines[len(lines)-1]), "EOF") {
				lines = lines[1 : len(lines)-1]
			}
		}
	}
	if strings.TrimSpace(lines[0]) != beginPatch {
		return nil, &ParseError{Msg: "The first line of the patch must be '*** Begin Patch'"}
	}
	if len(lines) < 2 || strings.TrimSpace(lines[len(lines)-1]) != endPatch {
		return nil, &ParseError{Msg: "The last line of the patch must be '*** End Patch'"}
	}
	p := &Patch{}
	body := lines[1 : len(lines)-1]
	lineNo := func(i int) int { return i + 2 }
	i := 0
	sawEnv := false
	for i < len(body) {
		t := strings.TrimSpace(body[i])
		switch {
		case strings.HasPrefix(t, envID):
			if sawEnv || len(p.Hunks) > 0 {
				return nil, &ParseError{Line: lineNo(i), Msg: "apply_patch environment_id cannot be specified more than once"}
			}
			sawEnv = true
			p.EnvironmentID = strings.TrimSpace(strings.TrimPrefix(t, envID))
			if p.EnvironmentID == "" {
				return nil, &ParseError{Line: lineNo(i), Msg: "apply_patch environment_id cannot be empty"}
			}
			i++
		case strings.HasPrefix(t, addFile):
			h := Hunk{Kind: Add, Path: strings.TrimPrefix(t, addFile), Line: lineNo(i)}
			i++
			var sb strings.Builder
			for i < len(body) && strings.HasPrefix(body[i], "+") {
				sb.WriteString(body[i][1:])
				sb.WriteByte('\n')
				i++
			}
			h.Contents = sb.String()
			p.Hunks = append(p.Hunks, h)
		case strings.HasPrefix(t, deleteFile):
			p.Hunks = append(p.Hunks, Hunk{Kind: Delete, Path: strings.TrimPrefix(t, deleteFile), Line: lineNo(i)})
			i++
		case strings.HasPrefix(t, updateFile):
			h := Hunk{Kind: Update, Path: strings.TrimPrefix(t, updateFile), Line: lineNo(i)}
			i++
			if i < len(body) && strings.HasPrefix(strings.TrimSpace(body[i]), moveTo) {
				h.MoveTo = strings.TrimPrefix(strings.TrimSpace(body[i]), moveTo)
				i++
			}
			var err error
			if i, err = parseChunks(body, i, &h, lineNo); err != nil {
				return nil, err
			}
			p.Hunks = append(p.Hunks, h)
		default:
			return nil, &ParseError{Line: lineNo(i), Msg: fmt.Sprintf("'%s' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", t)}
		}
	}
	return p, nil
}

// isHeader reports whether a line (trailing space trimmed) ends an Update
// hunk: another hunk header.
func isHeader(t string) bool {
	return strings.HasPrefix(t, addFile) || strings.HasPrefix(t, deleteFile) || strings.HasPrefix(t, updateFile) || strings.HasPrefix(t, envID)
}

// parseChunks reads an Update hunk's chunks from body[i:] and returns the
// index after them.
func parseChunks(body []string, i int, h *Hunk, lineNo func(int) int) (int, error) {
	afterEOF := false
	for i < len(body) {
		t := strings.TrimRight(body[i], " \t")
		if isHeader(t) {
			break
		}
		var c Chunk
		switch {
		case t == "@@" || strings.HasPrefix(t, "@@ "):
			c.Context = strings.TrimPrefix(strings.TrimPrefix(t, "@@"), " ")
			i++
		case afterEOF && strings.TrimSpace(t) == "":
			i++ // blank lines after an "*** End of File" chunk
			continue
		case len(h.Chunks) == 0 && !afterEOF && (t == "" || t[0] == ' ' || t[0] == '+' || t[0] == '-'):
			// The first chunk may omit its "@@".
		default:
			return i, &ParseError{Line: lineNo(i), Msg: fmt.Sprintf("Expected update hunk to start with a @@ context marker, got: '%s'", body[i])}
		}
		n := 0
	lines:
		for ; i < len(body); i++ {
			l := body[i]
			t := strings.TrimRight(l, " \t")
			switch {
			case t == endOfFile:
				if n == 0 {
					return i, &ParseError{Line: lineNo(i), Msg: "Update hunk does not contain any lines"}
				}
				c.EOF = true
				i++
				break lines
			case t == "@@" || strings.HasPrefix(t, "@@ ") || isHeader(t):
				if n == 0 {
					return i, &ParseError{Line: lineNo(i), Msg: fmt.Sprintf(unexpected, l)}
				}
				break lines
			case l == "":
				c.Ops = append(c.Ops, Op{Kind: Context})
			case l[0] == ' ' || l[0] == '+' || l[0] == '-':
				c.Ops = append(c.Ops, Op{Kind: OpKind(l[0]), Text: l[1:]})
			default:
				if n == 0 {
					return i, &ParseError{Line: lineNo(i), Msg: fmt.Sprintf(unexpected, l)}
				}
				break lines
			}
			n++
		}
		if n == 0 {
			return i, &ParseError{Line: lineNo(i), Msg: "Update hunk does not contain any lines"}
		}
		h.Chunks = append(h.Chunks, c)
		afterEOF = c.EOF
	}
	if len(h.Chunks) == 0 {
		return i, &ParseError{Line: h.Line, Msg: fmt.Sprintf("Update file hunk for path '%s' is empty", h.Path)}
	}
	return i, nil
}

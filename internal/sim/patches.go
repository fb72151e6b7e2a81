package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/trussdev/truss/internal/hostfs"
)

// The simulated model writes patches the way OpenAI's models do: it reads
// the file it edits (as a model would have viewed it) and rewrites the
// whole lines that hold the old text, with three lines of context. Without
// the file, or when the old text is not in it, it writes the old and new
// text as whole lines, without context.

// contextLines is the number of context lines around a change.
const contextLines = 3

// hunkBody renders the " ", "-" and "+" lines that replace the first
// occurrence of old with new in the file at path, as str_replace would: the
// changed span is the whole lines that hold old (the line it starts in to
// the line it ends in), and grows by the lines that follow while the
// replaced text no longer ends a line, so old text inside a line, across
// lines, with or without its newline, and at either end of the file all
// become whole-line changes. Lines are written without their terminators
// ("\n" or "\r\n"): the patch's applier keeps the file's own.
func hunkBody(root, path, old, new string) string {
	var sb strings.Builder
	content, err := readIn(root, path)
	i := strings.Index(content, old)
	if err != nil || old == "" || i < 0 {
		for _, l := range hunkLines(old) {
			sb.WriteString("-" + l + "\n")
		}
		for _, l := range hunkLines(new) {
			sb.WriteString("+" + l + "\n")
		}
		return sb.String()
	}
	j := i + len(old)
	start := strings.LastIndexByte(content[:i], '\n') + 1
	end := lineEnd(content, j)
	if content[j-1] == '\n' {
		end = j // old ends its last line
	}
	newSpan := content[start:i] + new + content[j:end]
	for !strings.HasSuffix(newSpan, "\n") && end < len(content) {
		// The replacement joins the next line to the changed one.
		e := lineEnd(content, end)
		newSpan += content[end:e]
		end = e
	}
	before := hunkLines(content[:start])
	after := hunkLines(content[end:])
	for _, l := range before[max(0, len(before)-contextLines):] {
		sb.WriteString(" " + l + "\n")
	}
	for _, l := range hunkLines(content[start:end]) {
		sb.WriteString("-" + l + "\n")
	}
	for _, l := range hunkLines(newSpan) {
		sb.WriteString("+" + l + "\n")
	}
	for _, l := range after[:min(len(after), contextLines)] {
		sb.WriteString(" " + l + "\n")
	}
	return sb.String()
}

// lineEnd is the end of the line of content that holds offset i: past its
// newline, or the end of content.
func lineEnd(content string, i int) int {
	if k := strings.IndexByte(content[i:], '\n'); k >= 0 {
		return i + k + 1
	}
	return len(content)
}

// insertBody renders the lines that insert text after line n (0 = at the
// top) of the file at path: the lines before it as context.
func insertBody(root, path string, n int, text string) string {
	var sb strings.Builder
	content, _ := readIn(root, path)
	lines := hunkLines(content)
	n = min(max(n, 0), len(lines))
	for _, l := range lines[max(0, n-contextLines):n] {
		sb.WriteString(" " + l + "\n")
	}
	for _, l := range hunkLines(text) {
		sb.WriteString("+" + l + "\n")
	}
	for _, l := range lines[n:min(len(lines), n+contextLines)] {
		sb.WriteString(" " + l + "\n")
	}
	return sb.String()
}

// splitLines splits text into lines without their newlines; a final newline
// ends the last line rather than starting an empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// hunkLines splits text into lines as splitLines does, without their
// terminators ("\n" or "\r\n"): a hunk's lines name a file's lines by
// their text, and the patch's applier keeps the file's terminators.
func hunkLines(s string) []string {
	lines := splitLines(s)
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// rootSentence is how Truss's system prompt names the workspace on the
// machine the tools run on (agent.NewPrompt): "The workspace root is ROOT;
// the shell starts there." A workspace in a container is named otherwise,
// by a path this machine does not hold.
const (
	rootSentence = "The workspace root is "
	rootEnd      = "; the shell starts there."
)

// workspaceRoot is the absolute workspace root a request's text names, as a
// model learns it from its prompt, or "" when it names none: the first
// string of the JSON body, in the body's order, that holds the sentence.
func workspaceRoot(body []byte) string {
	if !bytes.Contains(body, []byte(rootSentence)) {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		s, ok := tok.(string)
		if !ok {
			continue
		}
		_, rest, ok := strings.Cut(s, rootSentence)
		if !ok {
			continue
		}
		if root, _, ok := strings.Cut(rest, rootEnd); ok && filepath.IsAbs(root) {
			return root
		}
	}
}

func readIn(root, path string) (string, error) {
	// Commands of the session being played may have put anything at the
	// path (a FIFO, a link, a huge file): it is read through the host's
	// file layer, which refuses those without waiting.
	switch {
	case root == "" && !filepath.IsAbs(path):
		return "", fmt.Errorf("no workspace")
	case root == "":
		root, path = filepath.Dir(path), filepath.Base(path)
	case filepath.IsAbs(path):
		rel, err := hostfs.Split(root, path)
		if err != nil {
			return "", err
		}
		path = rel
	}
	b, err := hostfs.ReadFileIn(root, path, maxPatchedFile)
	return string(b), err
}

// maxPatchedFile is the largest file a replace reads to write its patch.
const maxPatchedFile = 16 << 20

// envelope wraps file operations in Codex's patch envelope.
func envelope(ops ...string) string {
	return "*** Begin Patch\n" + strings.Join(ops, "") + "*** End Patch"
}

// addFile is an envelope's Add File operation.
func addFile(path, content string) string {
	var sb strings.Builder
	sb.WriteString("*** Add File: " + path + "\n")
	for _, l := range splitLines(content) {
		sb.WriteString("+" + l + "\n")
	}
	return sb.String()
}

// createDiff is a Responses create_file diff: "+" lines joined by newlines,
// a final bare "+" when the content ends with a newline.
func createDiff(content string) string {
	lines := strings.Split(content, "\n")
	for i, l := range lines {
		lines[i] = "+" + l
	}
	return strings.Join(lines, "\n")
}

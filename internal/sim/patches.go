package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The simulated model writes patches the way OpenAI's models do: it reads
// the file it edits (as a model would have viewed it) to give each change
// three lines of context. Without a workspace, or when the old text is not
// in the file, it writes the old and new text as whole lines, without
// context.

// context is the number of context lines around a change.
const contextLines = 3

// hunkBody renders the " ", "-" and "+" lines that replace old with new in
// the file at path.
func hunkBody(root, path, old, new string) string {
	var sb strings.Builder
	content, err := readIn(root, path)
	i := strings.Index(content, old)
	if err != nil || old == "" || i < 0 {
		for _, l := range splitLines(old) {
			sb.WriteString("-" + l + "\n")
		}
		for _, l := range splitLines(new) {
			sb.WriteString("+" + l + "\n")
		}
		return sb.String()
	}
	// The changed span grows to whole lines.
	start := strings.LastIndexByte(content[:i], '\n') + 1
	end := i + len(old)
	if end > start && content[end-1] == '\n' {
		end--
	}
	if j := strings.IndexByte(content[end:], '\n'); j >= 0 {
		end += j
	} else {
		end = len(content)
	}
	before := splitLines(content[:start])
	oldSpan := content[start:end]
	newSpan := (content[:i] + new + content[i+len(old):])[start : end+len(new)-len(old)]
	after := splitLines(strings.TrimPrefix(content[end:], "\n"))
	for _, l := range before[max(0, len(before)-contextLines):] {
		sb.WriteString(" " + l + "\n")
	}
	for _, l := range splitLines(oldSpan) {
		sb.WriteString("-" + l + "\n")
	}
	for _, l := range splitLines(newSpan) {
		sb.WriteString("+" + l + "\n")
	}
	for _, l := range after[:min(len(after), contextLines)] {
		sb.WriteString(" " + l + "\n")
	}
	return sb.String()
}

// insertBody renders the lines that insert text after line n (0 = at the
// top) of the file at path: the lines before it as context.
func insertBody(root, path string, n int, text string) string {
	var sb strings.Builder
	content, _ := readIn(root, path)
	lines := splitLines(content)
	n = min(max(n, 0), len(lines))
	for _, l := range lines[max(0, n-contextLines):n] {
		sb.WriteString(" " + l + "\n")
	}
	for _, l := range splitLines(text) {
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

func readIn(root, path string) (string, error) {
	if root == "" && !filepath.IsAbs(path) {
		return "", fmt.Errorf("no workspace")
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	b, err := os.ReadFile(p)
	return string(b), err
}

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

package approval

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
)

// describe returns the paths an edit changes, as the model named them, and
// a one-line summary of it for the person asked, each path in it shown by
// termsafe.Name (every byte of it, escaped where it cannot be shown).
func describe(call tool.Call) ([]string, string) {
	n := termsafe.Name
	switch a := call.Args.(type) {
	case *tool.CreateArgs:
		verb := "write"
		if call.Op == tool.OpCreate {
			verb = "create"
		}
		return []string{a.Path}, fmt.Sprintf("%s %s (%s)", verb, n(a.Path), bytesOf(len(a.Content)))
	case *tool.ReplaceArgs:
		if a.All {
			return []string{a.Path}, "replace every occurrence of a text in " + n(a.Path)
		}
		return []string{a.Path}, "replace text in " + n(a.Path)
	case *tool.InsertArgs:
		lines := strings.Count(a.Text, "\n") + 1
		return []string{a.Path}, fmt.Sprintf("insert %d line%s after line %d of %s", lines, plural(lines), a.Line, n(a.Path))
	case *tool.DeleteArgs:
		if a.Recursive {
			return []string{a.Path}, "delete " + n(a.Path) + " and everything in it"
		}
		return []string{a.Path}, "delete " + n(a.Path)
	case *tool.RenameArgs:
		return []string{a.From, a.To}, "rename " + n(a.From) + " to " + n(a.To)
	case *tool.UndoArgs:
		return []string{a.Path}, "undo the last edit of " + n(a.Path)
	case *tool.PatchOpArgs:
		return []string{a.Path}, fmt.Sprintf("apply a patch operation: %s %s", a.Type, n(a.Path))
	case *tool.PatchArgs:
		paths := patchPaths(a.Text)
		if len(paths) == 0 {
			return nil, "apply a patch"
		}
		shown := make([]string, len(paths))
		for i, p := range paths {
			shown[i] = n(p)
		}
		return paths, "apply a patch to " + strings.Join(shown, ", ")
	}
	return nil, fmt.Sprintf("%s (arguments of type %T)", call.Op, call.Args)
}

// patchPaths returns the paths an apply_patch envelope names in its file
// headers (Codex's "*** Add File: ", "*** Update File: ", "*** Delete
// File: ", "*** Move to: "), in order, each once. It reads the headers
// only, so that a patch that does not parse still says what it touches.
func patchPaths(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		for _, h := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if p, ok := strings.CutPrefix(l, h); ok {
				if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// detail is an edit's arguments as text, for a question without a diff:
// the content written, the replaced text as "-" lines and its replacement
// as "+" lines, the inserted lines, the patch as sent; "" when the summary
// says everything (a delete, a rename, an undo). At most DetailMax bytes.
func detail(call tool.Call) string {
	var s string
	switch a := call.Args.(type) {
	case *tool.CreateArgs:
		s = a.Content
	case *tool.ReplaceArgs:
		s = prefixed("-", a.Old) + prefixed("+", a.New)
	case *tool.InsertArgs:
		s = prefixed("+", a.Text)
	case *tool.PatchOpArgs:
		s = a.Diff
	case *tool.PatchArgs:
		s = a.Text
	}
	return cut(s, DetailMax)
}

// prefixed is each line of s with p before it, each ending in a newline.
func prefixed(p, s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		b.WriteString(p)
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// cut is s, or its first max bytes (not splitting a character) with a
// line saying how much was left out.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("\n… (%s more not shown)\n", bytesOf(len(s)-n))
}

func bytesOf(n int) string { return fmt.Sprintf("%d byte%s", n, plural(n)) }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

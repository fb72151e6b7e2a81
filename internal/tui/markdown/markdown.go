// Package markdown draws CommonMark text for a terminal: headings,
// paragraphs, emphasis, inline code, code blocks, lists, block quotes,
// links (with their target shown as text) and rules, word-wrapped to a
// width. It parses with goldmark and styles with Lip Gloss.
//
// Every text the source holds, after entity and escape resolution, passes
// through termsafe, so "&#27;" in a model's answer cannot become an escape
// sequence. Without colour the lines hold no escape sequence at all, and
// the markers that carry meaning stay visible (`code`, **strong**, # heading).
// No line is wider than the width asked for (wider than it only when a
// nesting leaves less than minWidth columns).
package markdown

import (
	"bytes"
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/trussdev/truss/internal/termsafe"
)

// minWidth is the narrowest column text is wrapped to.
const minWidth = 12

// Renderer draws markdown. It is not safe for concurrent use.
type Renderer struct {
	color  bool
	parser parser.Parser
	styles map[inline]lipgloss.Style
}

// New returns a renderer, with colour or without.
func New(color bool) *Renderer {
	return &Renderer{color: color, parser: parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(parser.DefaultInlineParsers()...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
	), styles: map[inline]lipgloss.Style{}}
}

// Render draws src as lines of at most width cells.
func (r *Renderer) Render(src string, width int) []string {
	source := []byte(src)
	doc := r.parser.Parse(text.NewReader(source))
	d := &drawer{r: r, src: source}
	return d.blocks(doc, max(width, minWidth))
}

type drawer struct {
	r   *Renderer
	src []byte
}

// blocks draws the block children of n, separated by blank lines (none
// between the paragraphs of a tight list's items).
func (d *drawer) blocks(n ast.Node, width int) []string {
	var out []string
	tight := false
	if l, ok := n.Parent().(*ast.List); ok && l.IsTight {
		tight = true
	}
	if _, ok := n.(*ast.ListItem); !ok {
		tight = false
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		ls := d.block(c, width)
		if len(ls) == 0 {
			continue
		}
		if len(out) > 0 && !tight {
			out = append(out, "")
		}
		out = append(out, ls...)
	}
	return out
}

func (d *drawer) block(n ast.Node, width int) []string {
	switch n := n.(type) {
	case *ast.Heading:
		marker := strings.Repeat("#", n.Level) + " "
		st := inline{bold: true, heading: true}
		return d.wrap(d.paint(st, marker)+d.inlines(n, st), width)
	case *ast.Paragraph, *ast.TextBlock:
		if t := d.table(n, width); t != nil {
			return t
		}
		return d.wrap(d.inlines(n, inline{}), width)
	case *ast.ThematicBreak:
		return []string{d.paint(inline{faint: true}, strings.Repeat("─", min(width, 40)))}
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		return d.code(n, width)
	case *ast.HTMLBlock:
		var b strings.Builder
		d.segments(&b, n.Lines())
		if n.HasClosure() {
			b.Write(n.ClosureLine.Value(d.src))
		}
		return d.wrap(termsafe.String(strings.TrimRight(b.String(), "\n")), width)
	case *ast.Blockquote:
		bar := d.paint(inline{faint: true}, "│ ")
		var out []string
		for _, l := range d.blocks(n, width-2) {
			out = append(out, bar+l)
		}
		return out
	case *ast.List:
		return d.list(n, width)
	}
	return nil
}

// list draws a list's items with their bullet or number; an item's lines
// after its first are indented under its text.
func (d *drawer) list(l *ast.List, width int) []string {
	var out []string
	num := l.Start
	for it := l.FirstChild(); it != nil; it = it.NextSibling() {
		marker := "• "
		if l.IsOrdered() {
			marker = fmt.Sprintf("%d. ", num)
			num++
		}
		mw := ansi.StringWidth(marker)
		body := d.blocks(it, width-mw)
		if len(body) == 0 {
			body = []string{""}
		}
		if !l.IsTight && len(out) > 0 {
			out = append(out, "")
		}
		for i, b := range body {
			if i == 0 {
				out = append(out, d.paint(inline{faint: !l.IsOrdered()}, marker)+b)
			} else if b == "" {
				out = append(out, "")
			} else {
				out = append(out, strings.Repeat(" ", mw)+b)
			}
		}
	}
	return out
}

// table draws a paragraph whose every line starts with a pipe (a GFM
// table, which CommonMark reads as one paragraph) line by line as it was
// written, each line cut to the width, instead of joining its lines.
func (d *drawer) table(n ast.Node, width int) []string {
	segs := n.Lines()
	if segs.Len() < 2 {
		return nil
	}
	var out []string
	for i := range segs.Len() {
		seg := segs.At(i)
		l := strings.TrimSpace(string(seg.Value(d.src)))
		if !strings.HasPrefix(l, "|") {
			return nil
		}
		// termsafe turns a lone carriage return into a newline: a row
		// holding one is drawn as the lines it would show as.
		for _, r := range strings.Split(termsafe.String(strings.ReplaceAll(l, "\t", "    ")), "\n") {
			out = append(out, cut(r, width))
		}
	}
	return out
}

// code draws a code block as it is, indented, each line cut to the width.
func (d *drawer) code(n ast.Node, width int) []string {
	var b strings.Builder
	d.segments(&b, n.Lines())
	src := termsafe.String(strings.TrimRight(b.String(), "\n"))
	var out []string
	if fc, ok := n.(*ast.FencedCodeBlock); ok && !d.r.color {
		// The language is the info's first word; goldmark ends it at a
		// space only, so a tab or a lone carriage return would otherwise
		// carry the rest of the info into this line.
		lang, _, _ := strings.Cut(termsafe.Line(string(fc.Language(d.src))), " ")
		out = append(out, cut("```"+lang, width))
	}
	for _, l := range strings.Split(strings.ReplaceAll(src, "\t", "    "), "\n") {
		out = append(out, d.paint(inline{code: true, block: true}, cut("  "+l, width)))
	}
	if _, ok := n.(*ast.FencedCodeBlock); ok && !d.r.color {
		out = append(out, "```")
	}
	return out
}

// cut shortens l to width columns, ending it with an ellipsis when
// anything was left out.
func cut(l string, width int) string {
	if ansi.StringWidth(l) > width {
		return ansi.Truncate(l, width-1, "") + "…"
	}
	return l
}

func (d *drawer) segments(b *strings.Builder, segs *text.Segments) {
	for i := range segs.Len() {
		s := segs.At(i)
		b.Write(s.Value(d.src))
	}
}

// inline is the styling of a run of inline text.
type inline struct {
	bold, italic, code, link, heading, faint, block bool
}

// paint styles s; without colour it is returned as it is.
func (d *drawer) paint(st inline, s string) string {
	if !d.r.color || s == "" || st == (inline{}) {
		return s
	}
	style, ok := d.r.styles[st]
	if !ok {
		style = lipgloss.NewStyle()
		if st.bold {
			style = style.Bold(true)
		}
		if st.italic {
			style = style.Italic(true)
		}
		if st.faint {
			style = style.Faint(true)
		}
		switch {
		case st.heading:
			style = style.Foreground(lipgloss.Color("6"))
		case st.code && st.block:
			style = style.Foreground(lipgloss.Color("3"))
		case st.code:
			style = style.Foreground(lipgloss.Color("3"))
		case st.link:
			style = style.Foreground(lipgloss.Color("4")).Underline(true)
		}
		d.r.styles[st] = style
	}
	return style.Render(s)
}

// inlines draws n's inline children as one styled string; a hard line
// break is a newline.
func (d *drawer) inlines(n ast.Node, st inline) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		d.inline(&b, c, st)
	}
	return b.String()
}

func (d *drawer) inline(b *strings.Builder, n ast.Node, st inline) {
	switch n := n.(type) {
	case *ast.Text:
		b.WriteString(d.paint(st, d.text(n.Value(d.src), true)))
		switch {
		case n.HardLineBreak():
			b.WriteByte('\n')
		case n.SoftLineBreak():
			b.WriteByte(' ')
		}
	case *ast.String:
		b.WriteString(d.paint(st, d.text(n.Value, !n.IsCode())))
	case *ast.CodeSpan:
		var cb bytes.Buffer
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				cb.Write(c.Value(d.src))
			case *ast.String:
				cb.Write(c.Value)
			}
		}
		code := termsafe.String(cb.String())
		if !d.r.color {
			code = "`" + code + "`"
		}
		st.code = true
		b.WriteString(d.paint(st, code))
	case *ast.Emphasis:
		mark := "*"
		if n.Level >= 2 {
			st.bold, mark = true, "**"
		} else {
			st.italic = true
		}
		if d.r.color {
			mark = ""
		}
		b.WriteString(mark)
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			d.inline(b, c, st)
		}
		b.WriteString(mark)
	case *ast.Link:
		label := inline{link: true, bold: st.bold, italic: st.italic}
		var lb strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			d.inline(&lb, c, label)
		}
		b.WriteString(lb.String())
		dest := termsafe.String(string(n.Destination))
		if dest != "" && ansi.Strip(lb.String()) != dest {
			b.WriteString(d.paint(inline{faint: true}, " ("+dest+")"))
		}
	case *ast.AutoLink:
		b.WriteString(d.paint(inline{link: true}, termsafe.String(string(n.URL(d.src)))))
	case *ast.Image:
		var lb strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			d.inline(&lb, c, st)
		}
		b.WriteString(d.paint(inline{faint: true}, fmt.Sprintf("[image: %s] (%s)", ansi.Strip(lb.String()), termsafe.String(string(n.Destination)))))
	case *ast.RawHTML:
		var hb strings.Builder
		d.segments(&hb, n.Segments)
		b.WriteString(d.paint(st, termsafe.String(hb.String())))
	default:
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			d.inline(b, c, st)
		}
	}
}

// text resolves a text's backslash escapes and entities, then makes it
// safe to print.
func (d *drawer) text(v []byte, resolve bool) string {
	if resolve {
		v = util.UnescapePunctuations(v)
		v = util.ResolveNumericReferences(v)
		v = util.ResolveEntityNames(v)
	}
	return termsafe.String(string(v))
}

// wrap word-wraps a styled string to width; its newlines are kept.
func (d *drawer) wrap(s string, width int) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if ansi.StringWidth(l) <= width {
			out = append(out, l)
			continue
		}
		for _, w := range strings.Split(ansi.Wrap(l, width, ""), "\n") {
			// Wrap can leave a line a column over where a space
			// precedes a word longer than the width; cut it hard.
			if ansi.StringWidth(w) > width {
				out = append(out, strings.Split(ansi.Hardwrap(w, width, true), "\n")...)
				continue
			}
			out = append(out, w)
		}
	}
	return out
}

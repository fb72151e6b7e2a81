package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/trussdev/truss/internal/agent"
	pluralpkg "github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
)

// blockKind says what a transcript block holds.
type blockKind int

const (
	blockUser blockKind = iota
	blockAssistant
	blockReasoning
	blockTool
	blockNote     // the UI's own messages and command reports
	blockError    // a failed turn or command
	blockOutcome  // how a run ended
	blockDiff     // a unified diff shown by /diff
	blockApproval // an answered approval request
	blockChild    // a sub-agent's call or end
	blockRule     // where a new or resumed session starts (inline)
)

// block is one entry of the transcript. Its text is already sanitised.
// Rendered lines are cached per width, block version and display
// generation (the expand/collapse toggles), so a frame renders only the
// blocks that changed.
type block struct {
	kind blockKind
	text strings.Builder
	done bool // an assistant block's stream ended: it is drawn as markdown
	tool *card

	// stream holds the wrapped lines of a streaming block's complete
	// lines, so that each delta wraps only the line it extends.
	stream streamWrap

	ver                    int
	cacheW, cacheV, cacheG int
	lines                  []string
}

// card is a tool call.
type card struct {
	id, name, summary, result string
	lines                     int // the whole result's lines, when result was cut
	done, failed              bool
	output                    bool // its result is output shown beside its diffs (a command's)
	waiting                   bool // its approval question waits for the user's answer
	diffs                     []fileDiff
	// live is the tail of a running command's output (at most
	// liveBytes), drawn under it until its result replaces it.
	live []byte
}

// liveBytes is how much of a running command's output a card keeps;
// liveLines how many of its last lines it shows.
const (
	liveBytes = 8 << 10
	liveLines = 5
)

// addLive appends output to a running card's tail.
func (c *card) addLive(text string) {
	c.live = append(c.live, text...)
	if n := len(c.live); n > liveBytes {
		c.live = append(c.live[:0], c.live[n-liveBytes:]...)
	}
}

// liveTail returns the last lines of the running output, made safe for
// the terminal (a carriage return shows what was written after it, as a
// progress bar would).
func (c *card) liveTail() []string {
	lines := strings.Split(strings.TrimRight(string(c.live), "\n"), "\n")
	var out []string
	for i := max(len(lines)-liveLines, 0); i < len(lines); i++ {
		l := lines[i]
		if j := strings.LastIndexByte(strings.TrimRight(l, "\r"), '\r'); j >= 0 {
			l = l[j+1:]
		}
		if l = termsafe.Line(l); strings.TrimSpace(l) != "" || len(out) > 0 {
			out = append(out, l)
		}
	}
	return out
}

func (b *block) touch() { b.ver++ }

// renderer turns blocks into lines.
type renderer struct {
	st            styles
	md            markdown
	showDiffs     bool
	showReasoning bool
	gen           int // bumped when a toggle changes
}

// lines returns b drawn at width, each line at most width cells.
func (r *renderer) lines(b *block, width int) []string {
	if b.lines != nil && b.cacheW == width && b.cacheV == b.ver && b.cacheG == r.gen {
		return b.lines
	}
	b.lines = r.draw(b, width)
	b.cacheW, b.cacheV, b.cacheG = width, b.ver, r.gen
	return b.lines
}

func (r *renderer) draw(b *block, width int) []string {
	st := &r.st
	var out []string
	switch b.kind {
	case blockUser:
		out = append(out, "")
		for i, l := range wrap(b.text.String(), width-2) {
			p := "  "
			if i == 0 {
				p = "› "
			}
			out = append(out, st.paint(st.user, p+l))
		}
	case blockAssistant:
		text := strings.TrimSpace(b.text.String())
		if text == "" {
			return nil
		}
		out = append(out, "")
		if b.done {
			if md := r.md.render(text, width); md != nil {
				return append(out, md...)
			}
		}
		return append(out, b.stream.lines(b.text.String(), width)...)
	case blockReasoning:
		text := strings.TrimSpace(b.text.String())
		if text == "" {
			return nil
		}
		ls := wrap(text, width-4)
		if !r.showReasoning {
			n := len(ls)
			unit := "lines"
			if n == 1 {
				unit = "line"
			}
			return []string{"", trunc(st.paint(st.reasoning, fmt.Sprintf("  ∴ thinking · %d %s", n, unit))+st.paint(st.dim, " (ctrl+t shows)"), width)}
		}
		out = append(out, "", st.paint(st.reasoning, "  ∴ thinking"))
		for _, l := range ls {
			out = append(out, st.paint(st.reasoning, "    "+l))
		}
	case blockTool:
		out = append(out, "")
		out = append(out, r.drawCard(b.tool, width)...)
	case blockNote:
		out = append(out, "")
		for _, l := range wrap(b.text.String(), width-2) {
			out = append(out, st.paint(st.note, "  "+l))
		}
	case blockError:
		out = append(out, "")
		for i, l := range wrap(b.text.String(), width-2) {
			p := "  "
			if i == 0 {
				p = "✗ "
			}
			out = append(out, st.paint(st.errText, p+l))
		}
	case blockOutcome:
		out = append(out, "")
		for _, l := range wrap(b.text.String(), width-2) {
			out = append(out, st.paint(st.dim, "  "+l))
		}
	case blockChild:
		for _, l := range wrap(b.text.String(), width-4) {
			out = append(out, st.paint(st.dim, "    "+l))
		}
	case blockDiff:
		out = append(out, "")
		for _, l := range strings.Split(strings.TrimSuffix(b.text.String(), "\n"), "\n") {
			out = append(out, r.diffLine(l, "  ", width))
		}
	case blockRule:
		head := trunc("── "+b.text.String()+" ", width)
		out = append(out, "", st.paint(st.dim, head+strings.Repeat("─", max(width-ansi.StringWidth(head), 0))))
	case blockApproval:
		out = append(out, "")
		for i, l := range wrap(b.text.String(), width-2) {
			p := "  "
			if i == 0 {
				p = "? "
			}
			out = append(out, st.paint(st.approval, p)+st.paint(st.dim, l))
		}
	}
	return out
}

// resultHead and resultTail are how many lines of a result a card shows
// when it has more than resultHead+resultTail+1.
const (
	resultHead = 4
	resultTail = 3
)

func (r *renderer) drawCard(c *card, width int) []string {
	st := &r.st
	mark := st.paint(st.dim, "○")
	switch {
	case c.done && c.failed:
		mark = st.paint(st.fail, "●")
	case c.done:
		mark = st.paint(st.ok, "●")
	}
	head := c.summary
	if rest, ok := strings.CutPrefix(head, c.name); ok && c.name != "" {
		head = st.paint(st.toolName, c.name) + rest
	}
	out := []string{trunc(mark+" "+head, width)}
	if !c.done {
		for _, l := range c.liveTail() {
			out = append(out, st.paint(st.dim, trunc("  ┊ "+l, width)))
		}
		if c.waiting {
			return append(out, st.paint(st.approval, "  ⎿ waiting for your answer…"))
		}
		return append(out, st.paint(st.dim, "  ⎿ running…"))
	}
	var diffs []string
	for _, d := range c.diffs {
		diffs = append(diffs, r.drawFileDiff(d, width)...)
	}
	if len(diffs) > 0 && !c.failed && !c.output {
		return append(out, diffs...) // an edit: its diff says it all
	}
	// A command's output, then the changes it made (a failed edit's
	// error, then any change it made all the same).
	text := strings.TrimRight(c.result, "\n")
	if text == "" && len(diffs) == 0 {
		return append(out, st.paint(st.dim, "  ⎿ (no output)"))
	}
	return append(append(out, r.resultLines(c, text, width)...), diffs...)
}

// resultLines draws a call's result text: its first and last lines with
// how many were left out between them.
func (r *renderer) resultLines(c *card, text string, width int) []string {
	if text == "" {
		return nil
	}
	st := &r.st
	ls := strings.Split(expandTabs(text), "\n")
	if len(ls) > resultHead+resultTail+1 {
		cut := max(len(ls), c.lines) - resultHead - resultTail // the whole's, not what was kept of it
		tail := ls[len(ls)-resultTail:]
		ls = append(append(ls[:resultHead:resultHead], fmt.Sprintf("… %d lines …", cut)), tail...)
	}
	resultStyle := st.dim
	if c.failed {
		resultStyle = st.fail
	}
	out := make([]string, 0, len(ls))
	for i, l := range ls {
		p := "    "
		if i == 0 {
			p = "  ⎿ "
		}
		out = append(out, st.paint(resultStyle, trunc(p+l, width)))
	}
	return out
}

func (r *renderer) drawFileDiff(d fileDiff, width int) []string {
	st := &r.st
	verb := map[tool.ChangeKind]string{tool.ChangeAdd: "added", tool.ChangeUpdate: "updated", tool.ChangeDelete: "deleted"}[d.kind]
	head := fmt.Sprintf("  ⎿ %s %s ", verb, d.path) + st.paint(st.add, fmt.Sprintf("+%d", d.adds)) + " " + st.paint(st.del, fmt.Sprintf("−%d", d.dels))
	switch {
	case d.note != "":
		return []string{trunc(fmt.Sprintf("  ⎿ %s %s (%s)", verb, d.path, d.note), width)}
	case d.binary:
		return []string{trunc(fmt.Sprintf("  ⎿ %s %s (binary)", verb, d.path), width)}
	case d.large > 0:
		return []string{trunc(fmt.Sprintf("  ⎿ %s %s (%.1f MB, too large to draw; /diff shows it)", verb, d.path, float64(d.large)/(1<<20)), width)}
	case d.unreadable:
		return []string{trunc(fmt.Sprintf("  ⎿ %s %s (contents not readable)", verb, d.path), width)}
	case !r.showDiffs:
		return []string{trunc(head+st.paint(st.dim, " (ctrl+o shows)"), width)}
	}
	out := []string{trunc(head, width)}
	for _, l := range d.lines {
		out = append(out, r.diffLine(l, "    ", width))
	}
	if d.more > 0 {
		out = append(out, st.paint(st.dim, fmt.Sprintf("    … %d more lines (/diff shows all)", d.more)))
	}
	return out
}

// diffLine colours one line of a unified diff.
func (r *renderer) diffLine(l, indent string, width int) string {
	st := &r.st
	line := trunc(indent+expandTabs(l), width)
	switch {
	case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "diff "):
		return st.paint(st.bold, line)
	case strings.HasPrefix(l, "+"):
		return st.paint(st.add, line)
	case strings.HasPrefix(l, "-"):
		return st.paint(st.del, line)
	case strings.HasPrefix(l, "@@"):
		return st.paint(st.hunk, line)
	}
	return line
}

// outcomeText says how a run ended, in one line.
func outcomeText(o *agent.Outcome) string {
	mark := "✓"
	if o.Status != agent.StatusCompleted {
		mark = "■"
	}
	// This task's numbers, all of them (the status line has the session's).
	u := o.RunUsage
	s := fmt.Sprintf("%s %s · %s · %s · %s tokens", mark, o.Status, plural(o.Turns, "turn"), plural(o.Calls, "tool call"),
		tokens(u.Total()))
	if u.CostUSD > 0.00005 {
		s += fmt.Sprintf(" · $%.4f", u.CostUSD)
	}
	if o.Reason != "" && o.Status != agent.StatusCompleted && o.Reason != string(o.Status) {
		s += " · " + o.Reason
	}
	return s
}

// tokens writes a token count short: 950, 12.3k, 1.2M.
func tokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/1_000_000)
	}
}

// wrap splits plain text into lines of at most width cells, breaking at
// spaces where it can.
func wrap(s string, width int) []string {
	width = max(width, 8)
	s = expandTabs(s)
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if ansi.StringWidth(l) <= width {
			out = append(out, l)
			continue
		}
		out = append(out, strings.Split(ansi.Wrap(l, width, ""), "\n")...)
	}
	return out
}

// trunc cuts a line (which may hold the UI's own styles) to width cells.
func trunc(s string, width int) string {
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width-1, "") + "…"
}

func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	return strings.ReplaceAll(s, "\t", "    ")
}

// plural writes a count with its noun: "1 turn", "2 turns".
func plural(n int, noun string) string { return pluralpkg.Count(n, noun) }

// percent writes part of whole as a percentage, "<1%" for a little.
func percent(part, whole int64) string {
	if whole <= 0 {
		return ""
	}
	p := part * 100 / whole
	if p == 0 && part > 0 {
		return "<1%"
	}
	return fmt.Sprintf("%d%%", p)
}

// streamWrap wraps text that only grows: the lines before its last
// newline are wrapped once and kept; only the last line is wrapped anew.
type streamWrap struct {
	width int
	upto  int      // bytes of the text wrapped into done
	done  []string // wrapped, indented lines of text[:upto]
}

// lines returns text wrapped to width, indented by two spaces, without
// leading or trailing blank lines.
func (s *streamWrap) lines(text string, width int) []string {
	if s.width != width || s.upto > len(text) {
		*s = streamWrap{width: width}
	}
	if i := strings.LastIndexByte(text, '\n'); i >= s.upto {
		for _, l := range wrap(text[s.upto:i], width-2) {
			if len(s.done) == 0 && strings.TrimSpace(l) == "" {
				continue
			}
			s.done = append(s.done, "  "+l)
		}
		s.upto = i + 1
	}
	out := s.done
	if last := text[s.upto:]; strings.TrimSpace(last) != "" {
		out = out[:len(out):len(out)]
		for _, l := range wrap(last, width-2) {
			out = append(out, "  "+l)
		}
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	return out
}

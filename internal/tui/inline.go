package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// Inline rendering. On the normal screen (the default; Options.AltScreen
// false) the transcript goes into the terminal's scrollback: each block,
// once it can no longer change, is printed once above the live view
// (tea.Println) and dropped; the view holds only what may still change —
// a running call, streaming text, and everything from the first of those
// on — with the queue, an approval card, the input, the menu and the
// status line under it. Blocks are printed in order: a finished block
// after a running one waits until that one is printed. After the program
// exits, the transcript stays in the terminal's scrollback.

// printedMsg says that the first n blocks were printed (a print runs as
// a command; the next waits for it, so that prints keep their order).
type printedMsg struct{ n int }

// printable reports whether b can no longer change, so that it may be
// printed into the scrollback.
func (m *uiModel) printable(b *block) bool {
	switch b.kind {
	case blockAssistant, blockReasoning:
		return b.done || (b != m.curText && b != m.curReason)
	case blockTool:
		return b.tool.done
	}
	return true
}

// output prints the finished blocks at the head of the transcript into
// the scrollback (inline), and quits once everything was printed when
// the UI is to quit. It is called after every update.
func (m *uiModel) output() tea.Cmd {
	if !m.inline {
		if m.quitNow {
			return tea.Quit
		}
		return nil
	}
	if m.printing > 0 || m.width == 0 {
		return nil // the next print waits for the one on its way
	}
	for {
		n := 0
		for n < len(m.blocks) && (m.quitNow || m.printable(m.blocks[n])) {
			n++
		}
		if n == 0 {
			if m.quitNow {
				m.ended = true // the last frame is empty: the scrollback ends the screen
				return tea.Quit
			}
			return nil
		}
		var ls []string
		for _, b := range m.blocks[:n] {
			ls = append(ls, m.r.lines(b, m.width)...)
		}
		m.printing = n
		cmds := m.printChunks(ls)
		if cmds == nil { // nothing to print, or printed at once
			m.printing = 0
			m.dropPrinted(n)
			continue
		}
		return tea.Sequence(append(cmds, func() tea.Msg { return printedMsg{n: n} })...)
	}
}

// printChunks returns the commands that print ls above the view, nil if
// each was printed at once. Bubble Tea inserts printed text by scrolling
// the screen and moving the cursor up over it and over the frame the
// terminal shows, so a print taller than the screen less that frame would
// land in the wrong place; and which frame the terminal shows (the last
// one flushed) is not known here. So each line is printed on its own: the
// frame is kept one line short of the screen (renderInline), so one line
// always fits.
func (m *uiModel) printChunks(ls []string) []tea.Cmd {
	var cmds []tea.Cmd
	for _, l := range ls {
		if c := m.print(l); c != nil {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// dropPrinted drops the first n blocks, which are in the scrollback now.
func (m *uiModel) dropPrinted(n int) {
	clear(m.blocks[:n])
	m.blocks = m.blocks[n:]
}

// separator starts the transcript anew (/new, /resume): on the normal
// screen what was printed stays in the scrollback, under a rule that
// names what follows; on the alternate screen the transcript is cleared.
func (m *uiModel) separator(text string) {
	m.calls = make(map[string]*block)
	m.curText, m.curReason = nil, nil
	m.scroll = 0
	if !m.inline {
		m.blocks = nil
		return
	}
	m.add(blockRule, text)
}

// renderInline draws the live view: the blocks not yet printed, cut to
// their last lines so that the frame fits the terminal's height, then
// the queue, an approval card, the rule, the input, the menu and the
// status line. It says on which line the input starts.
func (m *uiModel) renderInline() (string, int) {
	if m.ended || m.width == 0 || m.height == 0 {
		return "", 0
	}
	w := m.width
	var bottom []string
	bottom = append(bottom, m.queuedLines()...)
	bottom = append(bottom, m.approvalLines()...)
	bottom = append(bottom, m.r.st.paint(m.r.st.dim, strings.Repeat("─", w)))
	inputAt := len(bottom)
	bottom = append(bottom, m.input()...)
	bottom = append(bottom, m.menuLines()...)
	bottom = append(bottom, m.statusLineCached())
	room := max(m.height-1-len(bottom), 0) // one line short of the screen: see printChunks

	// The live blocks' last room lines, from the bottom up; the blocks
	// on their way to the scrollback are not drawn again.
	var rev [][]string
	have := 0
	for i := len(m.blocks) - 1; i >= m.printing && have < room; i-- {
		ls := m.r.lines(m.blocks[i], w)
		rev = append(rev, ls)
		have += len(ls)
	}
	live := make([]string, 0, have)
	for i := len(rev) - 1; i >= 0; i-- {
		live = append(live, rev[i]...)
	}
	live = live[max(len(live)-room, 0):]
	lines := append(live, bottom...)
	return strings.Join(lines, "\n"), len(live) + inputAt
}

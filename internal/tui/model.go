package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"charm.land/bubbles/v2/spinner"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/termsafe"
)

// Messages the model receives besides keys and sizes.
type (
	batchMsg    []item // what the session reported since the last batch
	turnDoneMsg struct {
		out agent.Outcome
		err error
	}
	cmdDoneMsg struct {
		kind   blockKind // how to draw report (blockNote or blockDiff)
		report string
		err    error
		items  []model.Item // a resumed session's transcript
		clear  bool         // the transcript starts anew, under title (inline)
		title  string
		// choices are the sessions /resume listed, which /resume N picks.
		choices []ResumeChoice
		// models are the models /model listed, which /model N picks.
		models []string
	}
)

// approval is a pending ApprovalRequest.
type approval struct {
	id    int
	req   ApprovalRequest
	reply chan Decision // buffered: an answer never blocks the UI
}

// uiModel is the Bubble Tea model of an interactive session.
type uiModel struct {
	ctx  context.Context
	sess Session
	q    *queue
	fly  *inflight
	r    renderer
	// first is Options.Task, sent once the session is drawn.
	first string

	width, height int
	blocks        []*block
	// choices are the sessions the last /resume listed (/resume N);
	// models the models the last /model listed (/model N).
	choices []ResumeChoice
	models  []string
	scroll  int // lines scrolled up from the bottom

	ta   textarea.Model
	hist history
	// menu completes what is typed at the input's end (nil: not shown);
	// comp tracks the lookups of @paths.
	menu *menu
	comp completion

	spin     spinner.Model
	spinning bool // a tick is on its way

	busy     string             // what runs ("" when idle): "turn" or a command's name
	cancel   context.CancelFunc // cancels what runs; nil once cancelled
	quitting bool               // quit once nothing runs
	quitNow  bool               // quit once the transcript is printed (output)
	ended    bool               // quit: the last frame is empty (inline)

	// inline: the transcript goes into the terminal's scrollback, the
	// view is only its live part (inline.go); else the whole screen is
	// the view (the alternate screen). print prints text above the view
	// (tea.Println; a nil command means it was printed at once), printing
	// counts the blocks whose print is on its way.
	inline   bool
	print    func(text string) tea.Cmd
	printing int

	// queued holds what was sent while the session was busy (tasks, and
	// commands that talk to the session), oldest first; it is sent when
	// the session is idle again (see sendQueued), and dropped on quit.
	queued []string

	status    Status
	approvals []*approval

	// The blocks the current turn streams into, and which kinds it
	// streamed (a response's text is shown only when it was not).
	curText, curReason      *block
	streamed, streamedThink bool
	calls                   map[string]*block

	// The input's and the status line's last drawing, redrawn only when
	// what they show changed.
	inputKey   inputKey
	inputLines []string
	statusKey  statusKey
	statusText string
}

type inputKey struct {
	value                    string
	line, col, width, height int
}

type statusKey struct {
	s     Status
	busy  string
	spin  string
	width int
}

func newModel(ctx context.Context, s Session, q *queue, color bool) *uiModel {
	m := &uiModel{
		ctx:   ctx,
		sess:  s,
		q:     q,
		fly:   newInflight(),
		r:     renderer{st: newStyles(color), md: markdown{color: color}, showDiffs: true},
		calls: make(map[string]*block),
		print: func(text string) tea.Cmd {
			if text == "" {
				text = " " // Bubble Tea prints nothing for ""
			}
			return tea.Println(text)
		},
	}
	// A start header: where, which session, and how it runs.
	if st := s.Status(); st.SessionID != "" || st.Workspace != "" {
		m.add(blockNote, startHeader(st))
	}
	// A resumed session starts with its conversation drawn.
	if t, ok := s.(Transcripter); ok {
		if items := t.Transcript(); len(items) > 0 {
			m.replay(items)
			m.add(blockNote, fmt.Sprintf("Resumed session %s: the conversation so far is above.", termsafe.Line(s.Status().SessionID)))
		}
	}
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = 8
	ta.Placeholder = "Ask Truss to do something · /help"
	ta.SetVirtualCursor(false)
	ta.SetPromptFunc(2, func(pi textarea.PromptInfo) string {
		if pi.LineNumber == 0 {
			return "› "
		}
		return "  "
	})
	ta.KeyMap.InsertNewline.SetKeys("alt+enter", "ctrl+j")
	ta.KeyMap.DeleteCharacterForward.SetKeys("delete")
	ta.KeyMap.PageUp.SetEnabled(false)
	ta.KeyMap.PageDown.SetEnabled(false)
	if color {
		st := textarea.DefaultDarkStyles()
		st.Focused.CursorLine = st.Focused.Text
		ta.SetStyles(st)
	} else {
		ta.SetStyles(textarea.Styles{})
	}
	ta.Focus()
	m.ta = ta
	m.spin = spinner.New(spinner.WithSpinner(spinner.MiniDot))
	m.status = s.Status()
	return m
}

// Init implements tea.Model.
func (m *uiModel) Init() tea.Cmd {
	cmds := []tea.Cmd{m.next(), m.output()}
	if m.first != "" {
		first := m.first
		cmds = append(cmds, func() tea.Msg { return firstTaskMsg(first) })
	}
	return tea.Batch(cmds...)
}

// firstTaskMsg is Options.Task, entered as the first input.
type firstTaskMsg string

// next waits for what the session reports.
func (m *uiModel) next() tea.Cmd {
	return func() tea.Msg {
		its := m.q.take(m.ctx)
		if its == nil {
			return nil
		}
		return batchMsg(its)
	}
}

// Update implements tea.Model. After every message, what was queued is
// sent if the session became idle, and the spinner is started if
// something runs.
func (m *uiModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := m.update(msg)
	if m.busy == "" {
		cmd = tea.Batch(cmd, m.sendQueued())
	}
	if m.busy != "" && !m.spinning {
		m.spinning = true
		cmd = tea.Batch(cmd, m.spin.Tick)
	}
	return m, tea.Batch(cmd, m.output())
}

func (m *uiModel) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.ta.SetWidth(max(msg.Width, 10))
		return m, nil
	case batchMsg:
		m.apply(msg)
		return m, m.next()
	case firstTaskMsg:
		m.ta.SetValue(string(msg))
		return m, m.submit()
	case turnDoneMsg:
		m.apply(m.q.drain())
		m.busy, m.cancel = "", nil
		// Run has returned: nothing it started still streams or runs.
		m.endStream()
		for id, b := range m.calls {
			b.tool.done, b.tool.failed, b.tool.result = true, true, "(no result)"
			b.touch()
			delete(m.calls, id)
		}
		if msg.err != nil && !errors.Is(msg.err, context.Canceled) {
			m.add(blockError, termsafe.String(msg.err.Error()))
		}
		m.status = m.sess.Status()
		m.quitNow = m.quitting
		return m, nil
	case cmdDoneMsg:
		m.busy, m.cancel = "", nil
		m.finishCommand(msg)
		m.status = m.sess.Status()
		m.quitNow = m.quitting
		return m, nil
	case printedMsg:
		m.dropPrinted(msg.n)
		m.printing = 0
		return m, nil
	case spinner.TickMsg:
		if m.busy == "" {
			m.spinning = false
			return m, nil
		}
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	case tea.PasteMsg:
		var cmd tea.Cmd
		m.ta, cmd = m.ta.Update(msg)
		return m, tea.Batch(cmd, m.refreshMenu())
	case filesMsg:
		m.gotFiles(msg)
		return m, nil
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m *uiModel) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	s := k.String()
	if len(m.approvals) > 0 {
		// A command cut to fit the screen cannot be allowed: the user
		// would allow what they did not see.
		_, cut := m.approvalCard()
		switch s {
		case "y", "Y":
			if !cut {
				m.answer(Allow)
			}
		case "a", "A":
			if !cut {
				m.answer(AllowAlways)
			}
		case "n", "N", "esc":
			m.answer(Deny)
		case "ctrl+c":
			m.answer(Deny)
			m.interrupt()
		case "ctrl+d": // quits, as everywhere: the question is denied first
			m.answer(Deny)
			return m, m.quit()
		}
		return m, nil
	}
	if m.menu != nil {
		if cmd, took := m.menuKey(s); took {
			return m, cmd
		}
	}
	switch s {
	case "tab":
		return m, nil
	case "esc":
		m.escape()
		return m, nil
	case "ctrl+c":
		switch {
		case m.busy != "":
			m.interrupt()
		case m.ta.Value() != "":
			m.ta.Reset()
		default:
			m.add(blockNote, "Ctrl-D or /quit exits.")
		}
		return m, nil
	case "ctrl+d":
		if m.ta.Value() == "" {
			return m, m.quit()
		}
	case "enter":
		return m, m.submit()
	case "pgup":
		if !m.inline { // inline, the terminal scrolls its scrollback
			m.scroll += max(m.regionHeight()/2, 1)
		}
		return m, nil
	case "pgdown":
		m.scroll = max(m.scroll-max(m.regionHeight()/2, 1), 0)
		return m, nil
	case "ctrl+o":
		m.r.showDiffs = !m.r.showDiffs
		m.r.gen++
		return m, nil
	case "ctrl+t":
		m.r.showReasoning = !m.r.showReasoning
		m.r.gen++
		return m, nil
	case "up":
		if n := len(m.queued); n > 0 && m.ta.Value() == "" {
			// The last queued message comes back to be edited (Enter
			// queues it again) or removed (Ctrl+U, then Enter on nothing).
			m.ta.SetValue(m.queued[n-1])
			m.queued = m.queued[:n-1]
			m.menu = nil
			return m, nil
		}
		if m.ta.Line() == 0 {
			if v, ok := m.hist.prev(m.ta.Value()); ok {
				m.ta.SetValue(v)
				m.menu = nil
				return m, nil
			}
		}
	case "down":
		if m.ta.Line() == m.ta.LineCount()-1 {
			if v, ok := m.hist.next(); ok {
				m.ta.SetValue(v)
				m.menu = nil
				return m, nil
			}
		}
	}
	// The menu follows what is typed (not what history recalls), and
	// closes when the cursor leaves the input's end.
	before := m.ta.Value()
	var cmd tea.Cmd
	m.ta, cmd = m.ta.Update(k)
	if m.ta.Value() != before || m.menu != nil {
		cmd = tea.Batch(cmd, m.refreshMenu())
	}
	return m, cmd
}

// interrupt cancels what runs; what is queued is sent when it has ended.
func (m *uiModel) interrupt() {
	if m.cancel != nil {
		m.cancel()
		if len(m.queued) > 0 {
			m.add(blockNote, "Cancelling… what is queued is sent when it has ended.")
		} else {
			m.add(blockNote, "Cancelling…")
		}
		m.cancel = nil
	}
}

// escape is Esc: it cancels what runs (interrupt), so that what is queued
// is sent at once (steering the session), and what the input holds (a
// task, not a command) goes with it: typed while a turn runs, Esc sends
// it now instead of after the turn. Pressed again before the cancelled
// turn has ended, it does the same with what was typed since.
func (m *uiModel) escape() {
	raw := m.ta.Value()
	if text := strings.TrimSpace(raw); m.busy != "" && text != "" && !strings.HasPrefix(text, "/") {
		m.hist.add(raw)
		m.ta.Reset()
		m.menu = nil
		m.queued = append(m.queued, text)
	}
	if m.cancel != nil {
		m.interrupt()
	}
}

// quit ends the UI once nothing runs: what runs is cancelled and the UI
// quits when it has ended, so the session is saved whole.
func (m *uiModel) quit() tea.Cmd {
	m.quitting = true
	if m.busy == "" {
		m.quitNow = true // output quits once the transcript is printed
		return nil
	}
	m.interrupt()
	return nil
}

// waiting marks the card of call id (if it is drawn) as waiting for the
// user's answer, or no longer.
func (m *uiModel) waiting(id string, on bool) {
	if b := m.calls[id]; id != "" && b != nil {
		b.tool.waiting = on
		b.touch()
	}
}

func (m *uiModel) answer(d Decision) {
	a := m.approvals[0]
	m.approvals = m.approvals[1:]
	a.reply <- d
	m.waiting(a.req.CallID, false)
	b := &block{kind: blockApproval}
	b.text.WriteString(fmt.Sprintf("%s → %s", approvalSubject(a.req), d))
	// Before the card of the call that asked, which is still running (so
	// not printed yet): the answer comes before what the call did.
	if c := m.calls[a.req.CallID]; a.req.CallID != "" && c != nil {
		if i := slices.Index(m.blocks, c); i >= m.printing {
			m.blocks = slices.Insert(m.blocks, i, b)
			return
		}
	}
	m.blocks = append(m.blocks, b)
}

// submit sends the input: a slash command, or a task. While the session
// is busy a task, and a command that talks to the session, is queued
// instead (mustWait).
func (m *uiModel) submit() tea.Cmd {
	raw := m.ta.Value()
	text := strings.TrimSpace(raw)
	if text == "" {
		return nil
	}
	m.hist.add(raw)
	m.ta.Reset()
	m.menu = nil
	m.scroll = 0
	if m.busy != "" && m.mustWait(text) {
		m.queued = append(m.queued, text)
		return nil
	}
	return m.send(text)
}

// mustWait reports whether text, sent while the session is busy, waits
// until it is idle: a task does, and a command that talks to the session;
// /help, /cost, /quit, an unknown command, and /surface or /sandbox
// without an argument (which show the status) are answered at once, as is
// /model without an argument when the session cannot list its models.
func (m *uiModel) mustWait(text string) bool {
	if !strings.HasPrefix(text, "/") {
		return true
	}
	name, arg := parseCommand(text)
	c, ok := lookupCommand(name)
	if !ok || !c.idle {
		return false
	}
	if arg == "" && c.show {
		_, lists := m.sess.(ModelLister)
		return c.name == "model" && lists
	}
	return true
}

// sendQueued sends what was queued, the session being idle: the queued
// messages up to the first command, joined by blank lines, as one task;
// or, when a command comes first, that command. A command that ends at
// once (or a task that could not start) is followed by the next.
func (m *uiModel) sendQueued() tea.Cmd {
	for m.busy == "" && !m.quitting && len(m.queued) > 0 {
		n := 1
		if !strings.HasPrefix(m.queued[0], "/") {
			for n < len(m.queued) && !strings.HasPrefix(m.queued[n], "/") {
				n++
			}
		}
		text := strings.Join(m.queued[:n], "\n\n")
		m.queued = m.queued[n:]
		if cmd := m.send(text); cmd != nil {
			return cmd
		}
	}
	return nil
}

// send draws text as the user's and runs it: a slash command, or a task.
// The session must be idle for a task.
func (m *uiModel) send(text string) tea.Cmd {
	m.add(blockUser, termsafe.String(text))
	if strings.HasPrefix(text, "/") {
		return m.command(text)
	}
	paths := attachments(text)
	att, canAttach := m.sess.(Attacher)
	if len(paths) > 0 && !canAttach {
		m.add(blockError, "This session cannot attach files; the task was not sent.")
		return nil
	}
	ctx, cancel := context.WithCancel(m.ctx)
	m.busy, m.cancel = "turn", cancel
	sess, q := m.sess, m.q
	fly := m.fly
	return func() tea.Msg {
		defer cancel()
		if !fly.begin() {
			return turnDoneMsg{err: context.Canceled}
		}
		defer fly.end()
		// Every file is attached before any is said to be: one refused
		// sends nothing, and says so alone.
		var notes []item
		for _, p := range paths {
			rep, err := att.Attach(ctx, p)
			if err != nil {
				named := p + ": " // unless the error names the path itself
				if strings.HasPrefix(err.Error(), p) {
					named = ""
				}
				if d, ok := att.(Detacher); ok {
					d.Detach()
				}
				return turnDoneMsg{err: fmt.Errorf("attach %s%w; the task was not sent", named, err)}
			}
			notes = append(notes, item{note: "Attached " + rep})
		}
		for _, n := range notes {
			q.push(n)
		}
		out, err := sess.Run(ctx, text)
		return turnDoneMsg{out: out, err: err}
	}
}

// add appends a block holding text.
func (m *uiModel) add(kind blockKind, text string) *block {
	b := &block{kind: kind}
	b.text.WriteString(text)
	m.blocks = append(m.blocks, b)
	return b
}

// apply draws what the session reported.
func (m *uiModel) apply(its []item) {
	refresh := false
	for _, it := range its {
		switch {
		case it.ev != nil:
			if m.event(it.ev) {
				refresh = true
			}
		case it.approval != nil:
			m.approvals = append(m.approvals, it.approval)
			m.waiting(it.approval.req.CallID, true)
		case it.withdrawn != 0:
			for i, a := range m.approvals {
				if a.id == it.withdrawn {
					m.approvals = append(m.approvals[:i], m.approvals[i+1:]...)
					m.waiting(a.req.CallID, false)
					m.add(blockApproval, approvalSubject(a.req)+" → withdrawn")
					break
				}
			}
		case it.note != "":
			m.add(blockNote, it.note)
			refresh = true // a background check's verdict comes as one
		}
	}
	if refresh {
		m.status = m.sess.Status()
	}
}

// event draws one event and reports whether the status changed.
func (m *uiModel) event(e *event) bool {
	switch e.typ {
	case agent.EventTurnStarted:
		m.endStream()
		m.streamed, m.streamedThink = false, false
	case agent.EventDelta:
		if e.text == "" {
			return false
		}
		if e.deltaKind == model.KindReasoning {
			if m.curReason == nil {
				m.curReason = m.add(blockReasoning, "")
			}
			m.curReason.text.WriteString(e.text)
			m.curReason.touch()
			m.streamedThink = true
			return false
		}
		if m.curText == nil {
			m.curText = m.add(blockAssistant, "")
		}
		m.curText.text.WriteString(e.text)
		m.curText.touch()
		m.streamed = true
	case agent.EventResponse:
		if !m.streamedThink && e.reasoning != "" {
			m.add(blockReasoning, e.reasoning)
		}
		if !m.streamed && e.answer != "" {
			m.add(blockAssistant, e.answer)
		}
		m.endStream()
		return true // the session's usage grew
	case agent.EventCallStarted:
		m.endStream()
		b := &block{kind: blockTool, tool: &card{id: e.callID, name: e.name, summary: e.summary}}
		m.blocks = append(m.blocks, b)
		m.calls[e.callID] = b
	case agent.EventCallOutput:
		if b := m.calls[e.callID]; b != nil {
			b.tool.addLive(e.text)
			b.touch()
		}
	case agent.EventCallCompleted:
		b := m.calls[e.callID]
		if b == nil {
			b = &block{kind: blockTool, tool: &card{id: e.callID, name: e.name, summary: e.summary}}
			m.blocks = append(m.blocks, b)
		}
		delete(m.calls, e.callID)
		c := b.tool
		c.done, c.failed, c.output, c.result, c.lines, c.live = true, e.failed, e.output, e.result, e.lines, nil
		for _, ch := range e.changes {
			c.diffs = append(c.diffs, diffOf(ch))
		}
		e.changes = nil
		b.touch()
	case agent.EventTurnCompleted:
		m.endStream()
		return true
	case childEvent:
		m.add(blockChild, e.text)
	case agent.EventTurnFailed:
		m.endStream()
		m.add(blockError, e.text)
	case agent.EventRunCompleted:
		m.endStream()
		for id, b := range m.calls {
			b.tool.done, b.tool.failed, b.tool.result = true, true, "(no result)"
			b.touch()
			delete(m.calls, id)
		}
		m.add(blockOutcome, outcomeText(e.outcome))
		return true
	}
	return false
}

// endStream ends the blocks the turn streamed into: the text is drawn as
// markdown from now on.
func (m *uiModel) endStream() {
	for _, b := range []*block{m.curText, m.curReason} {
		if b != nil {
			b.done = true
			b.touch()
		}
	}
	m.curText, m.curReason = nil, nil
}

// regionHeight is how many lines the transcript gets.
func (m *uiModel) regionHeight() int {
	return max(m.height-m.ta.Height()-2-len(m.approvalLines())-len(m.queuedLines())-len(m.menuLines()), 1)
}

// maxQueuedShown bounds the queued messages drawn, one line each.
const maxQueuedShown = 4

// queuedLines draws what is queued, under the transcript: one line per
// message (its first line), and a line that says how to change it.
func (m *uiModel) queuedLines() []string {
	if len(m.queued) == 0 {
		return nil
	}
	st := &m.r.st
	var out []string
	for i, q := range m.queued {
		if i == maxQueuedShown {
			out = append(out, st.paint(st.dim, fmt.Sprintf("  … %d more queued", len(m.queued)-i)))
			break
		}
		out = append(out, trunc(st.paint(st.dim, "  queued ")+st.paint(st.user, "› ")+termsafe.Line(firstLine(q)), m.width))
	}
	hint := "  sent when the turn ends · esc: now · ↑ takes it back"
	if m.busy != "" && m.cancel == nil {
		hint = "  sent when the turn has ended · ↑ takes it back"
	}
	return append(out, st.paint(st.dim, trunc(hint, m.width)))
}

// View implements tea.Model.
func (m *uiModel) View() tea.View {
	var content string
	var cursorY int
	if !m.inline {
		content, cursorY = m.render()
	} else {
		content, cursorY = m.renderInline()
	}
	v := tea.NewView(content)
	v.AltScreen = !m.inline
	if c := m.ta.Cursor(); c != nil && len(m.approvals) == 0 {
		c.Position.Y += cursorY
		v.Cursor = c
	}
	return v
}

// render draws the frame and says on which line the input starts.
func (m *uiModel) render() (string, int) {
	if m.width == 0 || m.height == 0 {
		return "", 0
	}
	w := m.width
	appr := m.approvalLines()
	region := m.regionHeight()

	// The transcript's last region+scroll lines, from the bottom up, so
	// that a frame costs what it shows, not the transcript's length.
	need := region + m.scroll
	var rev [][]string
	have := 0
	for i := len(m.blocks) - 1; i >= 0 && have < need; i-- {
		ls := m.r.lines(m.blocks[i], w)
		rev = append(rev, ls)
		have += len(ls)
	}
	all := make([]string, 0, have)
	for i := len(rev) - 1; i >= 0; i-- {
		all = append(all, rev[i]...)
	}
	if m.scroll > max(len(all)-region, 0) {
		m.scroll = max(len(all)-region, 0)
	}
	end := len(all) - m.scroll
	start := max(end-region, 0)
	lines := make([]string, 0, m.height)
	for range region - (end - start) {
		lines = append(lines, "")
	}
	lines = append(lines, all[start:end]...)
	lines = append(lines, m.queuedLines()...)
	lines = append(lines, appr...)
	rule := strings.Repeat("─", w)
	if m.scroll > 0 {
		rule = trunc(fmt.Sprintf("── %d lines below · PgDn ", m.scroll)+rule, w)
	}
	lines = append(lines, m.r.st.paint(m.r.st.dim, rule))
	inputY := len(lines)
	lines = append(lines, m.input()...)
	lines = append(lines, m.menuLines()...)
	lines = append(lines, m.statusLineCached())
	return strings.Join(lines, "\n"), inputY
}

// statusLineCached is statusLine, drawn again only when what it shows
// changed.
func (m *uiModel) statusLineCached() string {
	if k := (statusKey{m.status, m.busy, m.spin.View(), m.width}); k != m.statusKey || m.statusText == "" {
		m.statusKey, m.statusText = k, m.statusLine()
	}
	return m.statusText
}

// input draws the input box, each line at most the width.
func (m *uiModel) input() []string {
	k := inputKey{m.ta.Value(), m.ta.Line(), m.ta.Column(), m.width, m.ta.Height()}
	if k == m.inputKey && m.inputLines != nil {
		return m.inputLines
	}
	ls := strings.Split(m.ta.View(), "\n")
	for i, l := range ls {
		if ansi.StringWidth(l) > m.width {
			ls[i] = ansi.Truncate(l, m.width, "")
		}
	}
	m.inputKey, m.inputLines = k, ls
	return ls
}

// approvalLines draws the first pending approval request as a card.
func (m *uiModel) approvalLines() []string {
	ls, _ := m.approvalCard()
	return ls
}

// approvalCard draws the first pending approval request as a card that
// fits the screen with the input, the status line and a line of the
// transcript; cut reports that the request's text did not fit whole, in
// which case the card says so and it cannot be allowed.
func (m *uiModel) approvalCard() (out []string, cut bool) {
	if len(m.approvals) == 0 {
		return nil, false
	}
	st := &m.r.st
	w := m.width
	r := m.approvals[0].req
	bar := st.paint(st.approval, "│ ")
	title, always := "╭─ Allow this command? ", " always (this session)"
	if r.Edit {
		title, always = "╭─ Allow this edit? ", " always (every edit, this session)"
	}
	out = []string{st.paint(st.approval, trunc(title+strings.Repeat("─", max(w-utf8.RuneCountInString(title), 0)), w))}
	var body []string
	add := func(s string) {
		for _, l := range wrap(s, w-2) {
			body = append(body, bar+l)
		}
	}
	cmd := r.Command
	if r.Tool != "" {
		cmd = r.Tool + " · " + cmd
	}
	add(cmd)
	var needs []string
	if r.Network {
		needs = append(needs, "network access")
	}
	for _, p := range r.Paths {
		needs = append(needs, "access to "+p)
	}
	if len(needs) > 0 {
		add("needs " + strings.Join(needs, ", ") + " (beyond the sandbox)")
	}
	if r.Reason != "" {
		add("why: " + r.Reason)
	}
	keys := st.paint(st.key, "y") + " yes  " + st.paint(st.key, "n") + " no  " + st.paint(st.key, "a") + always
	if n := len(m.approvals) - 1; n > 0 {
		keys += fmt.Sprintf("  · %d more waiting", n)
	}
	// Room for the card: the screen less the input, the rule, the status
	// line and one line of the transcript, less the card's frame and keys.
	room := m.height - m.ta.Height() - 3 - 3 - len(m.queuedLines())
	if len(body) > room {
		cut = true
		hidden := len(body) - max(room-1, 0)
		body = append(body[:max(room-1, 0)], bar+st.paint(st.key, fmt.Sprintf("⋮ %d more lines do not fit: enlarge the terminal to allow it whole, or n to refuse", hidden)))
		keys = st.paint(st.key, "n") + " no"
	} else if diff := strings.TrimRight(r.Diff, "\n"); diff != "" {
		// The proposed change, coloured as the transcript's diffs, cut to
		// what fits (at most maxApprovalDiff lines) with a count of the
		// rest. Only a preview: the edit is what the command line says.
		ls := strings.Split(diff, "\n")
		fit := min(maxApprovalDiff, room-len(body)-1)
		if len(ls) <= fit+1 {
			fit = len(ls)
		}
		for _, l := range ls[:max(fit, 0)] {
			body = append(body, bar+m.r.diffLine(l, "", w-2))
		}
		if n := len(ls) - max(fit, 0); n > 0 {
			body = append(body, bar+st.paint(st.dim, fmt.Sprintf("⋮ %d more lines of the diff", n)))
		}
	}
	out = append(out, body...)
	out = append(out, bar+keys, st.paint(st.approval, trunc("╰"+strings.Repeat("─", max(w-1, 0)), w)))
	return out, cut
}

// maxApprovalDiff bounds the diff lines an edit's approval card shows.
const maxApprovalDiff = 16

// statusLine shows what runs, the model, surface, sandbox, approval
// policy, tokens, cost and how full the context is. When the width is
// short it leaves out, in this order, the approval policy, the hint to
// cancel, the surface and the cost, then cuts what is left.
func (m *uiModel) statusLine() string {
	st := &m.r.st
	s := m.status
	u := s.Usage
	f := map[string]string{
		"model": termsafe.String(s.Model), "surface": termsafe.String(s.Surface),
		"sandbox": termsafe.String(s.Sandbox), "approval": termsafe.String(s.Approval),
		"tokens": tokens(u.Total()) + " tok",
	}
	if m.busy != "" {
		what := "working"
		if m.busy != "turn" {
			what = m.busy
		}
		f["busy"], f["hint"] = m.spin.View()+" "+what, "esc cancels"
	} else if s.Checking != "" {
		f["busy"], f["hint"] = "checks running", "a new task cancels them"
	}
	if u.CostUSD > 0 {
		f["cost"] = fmt.Sprintf("$%.4f", u.CostUSD)
	}
	if s.ContextWindow > 0 {
		f["ctx"] = "ctx " + percent(s.ContextTokens, s.ContextWindow)
	}
	join := func(keys ...string) string {
		var parts []string
		for _, k := range keys {
			if f[k] != "" {
				parts = append(parts, f[k])
			}
		}
		return strings.Join(parts, " · ")
	}
	var line string
	for _, drop := range []string{"", "approval", "hint", "surface", "cost"} {
		delete(f, drop)
		left, right := " "+join("busy", "hint", "model", "surface", "sandbox", "approval"), join("tokens", "cost", "ctx")+" "
		pad := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
		line = left + strings.Repeat(" ", max(pad, 1)) + right
		if pad >= 1 {
			break
		}
	}
	return st.paint(st.status, trunc(line, m.width))
}

// approvalSubject names a request in one line.
func approvalSubject(r ApprovalRequest) string {
	s := "allow " + firstLine(r.Command)
	var with []string
	if r.Network {
		with = append(with, "network")
	}
	with = append(with, r.Paths...)
	if len(with) > 0 {
		s += " with " + strings.Join(with, " and ")
	}
	return s
}

func firstLine(s string) string {
	l, rest, _ := strings.Cut(s, "\n")
	if rest != "" {
		l += " …"
	}
	return l
}

// startHeader is the first block: the directory, the session, the model,
// the surface, the sandbox mode and the approval policy.
func startHeader(st Status) string {
	var b strings.Builder
	b.WriteString("truss")
	if st.Workspace != "" {
		b.WriteString(" · " + termsafe.Name(st.Workspace))
	}
	if st.SessionID != "" {
		b.WriteString(" · session " + termsafe.Line(st.SessionID))
	}
	fmt.Fprintf(&b, "\nmodel %s · surface %s · sandbox %s · approval %s", termsafe.Line(st.Model), termsafe.Line(st.Surface),
		termsafe.Line(st.Sandbox), termsafe.Line(st.Approval))
	b.WriteString("\n/help lists the commands · Esc cancels a turn · Ctrl-D quits")
	return b.String()
}

package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/trussdev/truss/internal/termsafe"
)

// menuKind says what a completion menu completes.
type menuKind int

const (
	menuCommand menuKind = iota + 1 // a slash command's name (/mo)
	menuFile                        // an @path (@internal/tu)
)

// menu is the completion menu drawn under the input while what is typed
// at the input's end is a slash command's name or an @path: the matches,
// one selected. Tab replaces token with the selected item's insert.
type menu struct {
	kind  menuKind
	token string // what the completion replaces, at the input's end
	items []menuItem
	sel   int
}

type menuItem struct {
	label, about string
	insert       string // what replaces the token
}

// maxMenuShown bounds the menu's lines; Up and Down scroll it.
const maxMenuShown = 6

// filesMsg is a FileLister's answer for the request numbered seq.
type filesMsg struct {
	seq    int
	prefix string
	files  []string
}

// completion tracks @path lookups: the last request (a newer one makes an
// older one's answer stale), and the last answer, which the menu filters
// while a newer lookup is on its way.
type completion struct {
	seq      int
	asked    string // the prefix last asked for
	cancel   context.CancelFunc
	answered string   // the prefix the files answer
	files    []string // sanitised
}

// tokenAtEnd returns what the input holds after its last space, when the
// cursor is at its end; ok is false otherwise (completion works at the
// end of the input only).
func (m *uiModel) tokenAtEnd() (tok string, ok bool) {
	v := m.ta.Value()
	lines := strings.Split(v, "\n")
	if m.ta.Line() != len(lines)-1 || m.ta.Column() != len([]rune(lines[len(lines)-1])) {
		return "", false
	}
	i := strings.LastIndexAny(v, " \t\n")
	return v[i+1:], true
}

// refreshMenu recomputes the menu after the input changed, and starts a
// lookup of the workspace's files when an @path is being typed and the
// session can list them.
func (m *uiModel) refreshMenu() tea.Cmd {
	m.menu = nil
	tok, ok := m.tokenAtEnd()
	if !ok || tok == "" {
		return nil
	}
	v := m.ta.Value()
	if strings.HasPrefix(v, "/") && tok == v {
		name := strings.ToLower(strings.TrimPrefix(tok, "/"))
		mn := &menu{kind: menuCommand, token: tok}
		for _, c := range commandTable {
			if strings.HasPrefix(c.name, name) {
				ins := "/" + c.name
				if c.args != "" {
					ins += " "
				}
				if c.name == name {
					mn.sel = len(mn.items)
				}
				mn.items = append(mn.items, menuItem{label: c.usage(), about: c.about, insert: ins})
			}
		}
		if len(mn.items) > 0 {
			m.menu = mn
		}
		return nil
	}
	prefix, isPath := strings.CutPrefix(tok, "@")
	lister, can := m.sess.(FileLister)
	if !isPath || !can {
		return nil
	}
	m.fileMenu(tok, prefix)
	if prefix == m.comp.asked && m.comp.seq > 0 {
		return nil // asked already
	}
	if m.comp.cancel != nil {
		m.comp.cancel()
	}
	m.comp.seq++
	m.comp.asked = prefix
	ctx, cancel := context.WithCancel(m.ctx)
	m.comp.cancel = cancel
	seq, fly := m.comp.seq, m.fly
	return func() tea.Msg {
		defer cancel()
		if !fly.begin() {
			return nil
		}
		defer fly.end()
		files, err := lister.Files(ctx, prefix)
		if err != nil {
			return nil // no completion; the path can still be typed
		}
		return filesMsg{seq: seq, prefix: prefix, files: files}
	}
}

// fileMenu draws the menu of the known files that begin with prefix.
func (m *uiModel) fileMenu(tok, prefix string) {
	if !strings.HasPrefix(prefix, m.comp.answered) || m.comp.files == nil {
		return
	}
	mn := &menu{kind: menuFile, token: tok}
	for _, f := range m.comp.files {
		if !strings.HasPrefix(f, prefix) || f == prefix {
			continue // what is typed already adds nothing
		}
		ins := "@" + f
		if !strings.HasSuffix(f, "/") {
			ins += " "
		}
		mn.items = append(mn.items, menuItem{label: "@" + f, insert: ins})
	}
	if len(mn.items) > 0 {
		m.menu = mn
	}
}

// gotFiles takes a FileLister's answer, unless a newer lookup made it
// stale.
func (m *uiModel) gotFiles(msg filesMsg) {
	if msg.seq != m.comp.seq {
		return
	}
	m.comp.cancel = nil
	files := make([]string, 0, min(len(msg.files), MaxFiles))
	for _, f := range msg.files[:min(len(msg.files), MaxFiles)] {
		// A name that cannot be shown as it is (a control, an escape
		// sequence, a bidi override, a space at an end) is not offered:
		// inserted as shown it would name another file, and inserted as
		// it is it would act on the terminal.
		if termsafe.Name(f) == f {
			files = append(files, f)
		}
	}
	m.comp.answered, m.comp.files = msg.prefix, files
	if tok, ok := m.tokenAtEnd(); ok {
		if prefix, isPath := strings.CutPrefix(tok, "@"); isPath {
			m.fileMenu(tok, prefix)
		}
	}
}

// menuKey handles a key while the menu is shown: Tab completes the
// selected item, Up and Down move the selection, Esc closes the menu, and
// Enter on a command's name typed in part runs the selected command. It
// reports whether it took the key.
func (m *uiModel) menuKey(s string) (tea.Cmd, bool) {
	mn := m.menu
	switch s {
	case "tab":
		v := m.ta.Value()
		m.ta.SetValue(v[:len(v)-len(mn.token)] + mn.items[mn.sel].insert)
		m.ta.CursorEnd()
		if mn.kind == menuCommand {
			m.menu = nil // done: what follows is the argument, or Enter
			return nil, true
		}
		return m.refreshMenu(), true // a directory goes on
	case "up":
		mn.sel = (mn.sel + len(mn.items) - 1) % len(mn.items)
		return nil, true
	case "down":
		mn.sel = (mn.sel + 1) % len(mn.items)
		return nil, true
	case "esc":
		m.menu = nil
		return nil, true
	case "enter":
		if mn.kind == menuCommand {
			if name := strings.TrimPrefix(mn.token, "/"); !strings.EqualFold(strings.TrimSpace(mn.items[mn.sel].insert), "/"+name) {
				m.ta.SetValue(strings.TrimSpace(mn.items[mn.sel].insert))
			}
			m.menu = nil
		}
	}
	return nil, false
}

// menuLines draws the menu: at most maxMenuShown items around the
// selected one, which is marked.
func (m *uiModel) menuLines() []string {
	mn := m.menu
	if mn == nil || len(m.approvals) > 0 {
		return nil
	}
	st := &m.r.st
	start := 0
	if mn.sel >= maxMenuShown {
		start = mn.sel - maxMenuShown + 1
	}
	end := min(start+maxMenuShown, len(mn.items))
	labelW := 0
	for _, it := range mn.items[start:end] {
		labelW = max(labelW, len([]rune(it.label)))
	}
	var out []string
	for i := start; i < end; i++ {
		it := mn.items[i]
		line := it.label
		if it.about != "" {
			line += strings.Repeat(" ", labelW-len([]rune(it.label))) + "  " + st.paint(st.dim, it.about)
		}
		if i == mn.sel {
			out = append(out, trunc(st.paint(st.key, "› ")+st.paint(st.bold, it.label)+strings.TrimPrefix(line, it.label), m.width))
		} else {
			out = append(out, trunc("  "+line, m.width))
		}
	}
	if n := len(mn.items) - end; n > 0 {
		out = append(out, st.paint(st.dim, trunc(fmt.Sprintf("  … %d more · tab completes · ↑↓ choose", n), m.width)))
	} else {
		out = append(out, st.paint(st.dim, trunc("  tab completes · ↑↓ choose", m.width)))
	}
	return out
}

package tui

import (
	"charm.land/lipgloss/v2"

	md "github.com/trussdev/truss/internal/tui/markdown"
)

// styles are the UI's own colours. Without colour every style is the
// identity: the frame then holds no escape sequence at all.
type styles struct {
	color bool

	user, prompt, dim, bold, toolName, ok, fail, add, del, hunk, note, errText,
	status, approval, key, reasoning lipgloss.Style
}

func newStyles(color bool) styles {
	s := styles{color: color}
	if !color {
		return s
	}
	c := lipgloss.Color
	s.user = lipgloss.NewStyle().Foreground(c("6")).Bold(true)
	s.prompt = lipgloss.NewStyle().Foreground(c("6"))
	s.dim = lipgloss.NewStyle().Faint(true)
	s.bold = lipgloss.NewStyle().Bold(true)
	s.toolName = lipgloss.NewStyle().Foreground(c("5")).Bold(true)
	s.ok = lipgloss.NewStyle().Foreground(c("2"))
	s.fail = lipgloss.NewStyle().Foreground(c("1"))
	s.add = lipgloss.NewStyle().Foreground(c("2"))
	s.del = lipgloss.NewStyle().Foreground(c("1"))
	s.hunk = lipgloss.NewStyle().Foreground(c("6"))
	s.note = lipgloss.NewStyle().Foreground(c("4"))
	s.errText = lipgloss.NewStyle().Foreground(c("1")).Bold(true)
	s.status = lipgloss.NewStyle().Reverse(true)
	s.approval = lipgloss.NewStyle().Foreground(c("3")).Bold(true)
	s.key = lipgloss.NewStyle().Foreground(c("3")).Bold(true)
	s.reasoning = lipgloss.NewStyle().Faint(true).Italic(true)
	return s
}

// paint renders s in st, or returns it unchanged without colour.
func (s *styles) paint(st lipgloss.Style, text string) string {
	if !s.color || text == "" {
		return text
	}
	return st.Render(text)
}

// markdown renders assistant text, one renderer made on first use.
type markdown struct {
	color bool
	r     *md.Renderer
}

// render returns text drawn as markdown in lines of at most width cells,
// indented by two.
func (m *markdown) render(text string, width int) []string {
	if m.r == nil {
		m.r = md.New(m.color)
	}
	lines := m.r.Render(text, width-2)
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return lines
}

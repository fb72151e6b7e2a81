package tui

import (
	"regexp"
	"strings"

	"charm.land/glamour/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
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

// markdown renders assistant text with Glamour, one renderer per width,
// made on first use (so that the first frame does not wait for it).
type markdown struct {
	color bool
	width int
	r     *glamour.TermRenderer
	err   error
}

// osc matches the operating-system commands Glamour writes for links
// (OSC 8 hyperlinks). The UI draws no hyperlinks: a link's target is shown
// as text beside it, never hidden behind it.
var osc = regexp.MustCompile("\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)")

// trailingBlank matches the styled spaces Glamour pads each line with.
var trailingBlank = regexp.MustCompile("(?:\x1b\\[[0-9;]*m| )+$")

// render returns md as lines of at most width cells, or nil when Glamour
// fails (the caller then shows the plain text).
func (m *markdown) render(md string, width int) []string {
	if m.r == nil || m.width != width {
		style := "dark"
		if !m.color {
			style = "notty"
		}
		m.r, m.err = glamour.NewTermRenderer(glamour.WithStandardStyle(style), glamour.WithWordWrap(max(width-4, 10)))
		m.width = width
	}
	if m.err != nil {
		return nil
	}
	out, err := m.r.Render(md)
	if err != nil {
		return nil
	}
	out = osc.ReplaceAllString(out, "")
	if !m.color {
		out = ansi.Strip(out)
	}
	lines := strings.Split(strings.Trim(out, "\n"), "\n")
	for i, l := range lines {
		if ansi.StringWidth(l) > width {
			lines[i] = ansi.Truncate(l, width, "")
		}
		if strings.HasSuffix(lines[i], " ") || strings.HasSuffix(lines[i], "m") {
			if loc := trailingBlank.FindStringIndex(lines[i]); loc != nil {
				lines[i] = lines[i][:loc[0]]
				if m.color && strings.Contains(lines[i], "\x1b[") {
					lines[i] += "\x1b[m"
				}
			}
		}
	}
	return lines
}

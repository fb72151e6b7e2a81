package tui

// history is the input's history: Up walks back through what was sent,
// Down forward and, past the newest, back to the text being written.
type history struct {
	entries []string
	pos     int // index of the entry shown; len(entries) when none is
	draft   string
}

// maxHistory bounds the history kept.
const maxHistory = 1000

func (h *history) add(s string) {
	if n := len(h.entries); n == 0 || h.entries[n-1] != s {
		h.entries = append(h.entries, s)
		if len(h.entries) > maxHistory {
			h.entries = h.entries[len(h.entries)-maxHistory:]
		}
	}
	h.pos = len(h.entries)
	h.draft = ""
}

// prev returns the entry before the one shown, keeping cur as the draft
// when leaving it.
func (h *history) prev(cur string) (string, bool) {
	if h.pos == 0 {
		return "", false
	}
	if h.pos == len(h.entries) {
		h.draft = cur
	}
	h.pos--
	return h.entries[h.pos], true
}

// next returns the entry after the one shown, or the draft past the
// newest.
func (h *history) next() (string, bool) {
	if h.pos >= len(h.entries) {
		return "", false
	}
	h.pos++
	if h.pos == len(h.entries) {
		return h.draft, true
	}
	return h.entries[h.pos], true
}

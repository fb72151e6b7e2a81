package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
)

// TestInline: drawn inline, each finished block is printed into the
// scrollback once, in order, and leaves the live frame; what still runs
// stays live; a long live block shows its tail within the screen; the
// toggles change only live blocks; /new prints a separator; quitting
// prints what is left and then quits with an empty frame.
func TestInline(t *testing.T) {
	printed := func(d *driver) string { return strings.Join(d.printed, "\n") }
	for _, tc := range []struct {
		name  string
		drive func(t *testing.T, d *driver)
	}{
		{"a finished task is printed once", func(t *testing.T, d *driver) {
			d.send("fix the failing test in calc.go")
			d.wait()
			d.frame()
			p := printed(d)
			for _, w := range []string{"› fix the failing test in calc.go", "+    return a + b", "✓ completed"} {
				if strings.Count(p, w) != 1 {
					t.Errorf("%q printed %d times:\n%s", w, strings.Count(p, w), p)
				}
			}
			if f := d.frame(); strings.Contains(f, "completed") || strings.Count(f, "\n") != 2 {
				t.Errorf("the live frame holds more than the input:\n%s", f)
			}
			if len(d.m.blocks) != 0 {
				t.Errorf("%d printed blocks are kept", len(d.m.blocks))
			}
		}},
		{"a running call stays live, what follows it waits", func(t *testing.T, d *driver) {
			d.send("run the slow suite")
			d.waitCall()
			d.press("esc")
			if p, f := printed(d), d.m.View().Content; strings.Contains(p, "sleep 600") || strings.Contains(p, "Cancelling") ||
				!strings.Contains(f, "sleep 600") || !strings.Contains(f, "Cancelling…") {
				t.Errorf("printed:\n%s\nframe:\n%s", p, f)
			}
			d.wait()
			d.frame()
			if p := printed(d); !strings.Contains(p, "● bash · $ sleep 600\n  ⎿ the command was cancelled") || !strings.Contains(p, "■ canceled") ||
				strings.Index(p, "Cancelling") > strings.Index(p, "■ canceled") {
				t.Errorf("printed after the cancel:\n%s", p)
			}
		}},
		{"a long live block shows its tail", func(t *testing.T, d *driver) {
			d.u.Observe(agent.Event{Type: agent.EventTurnStarted, Turn: 1})
			for i := range 100 {
				d.u.Observe(agent.Event{Type: agent.EventDelta, Turn: 1, Delta: &model.Delta{Kind: model.KindAssistant, Text: fmt.Sprintf("line %d\n", i)}})
			}
			f := d.frame()
			if n := strings.Count(f, "\n") + 1; n != 19 || !strings.Contains(f, "line 99") || strings.Contains(f, "line 0\n") {
				t.Errorf("frame of %d lines:\n%s", n, f)
			}
			if strings.Contains(printed(d), "line") {
				t.Errorf("streaming text was printed")
			}
		}},
		{"toggles change live blocks only", func(t *testing.T, d *driver) {
			d.send("fix the failing test in calc.go")
			d.wait()
			d.frame()
			before := printed(d)
			d.press("ctrl+o")
			d.press("ctrl+t")
			d.frame()
			if printed(d) != before || !strings.Contains(before, "-    return a - b") {
				t.Errorf("a toggle reprinted:\n%s", printed(d))
			}
		}},
		{"/new prints a separator", func(t *testing.T, d *driver) {
			r := &richSession{fakeSession: d.f}
			d.m.sess = r
			d.send("fix it")
			d.wait()
			d.send("/new")
			d.wait()
			d.frame()
			p := printed(d)
			if i, j := strings.Index(p, "✓ completed"), strings.Index(p, "── new session ──"); i < 0 || j < i || !strings.Contains(p[j:], "New session.") {
				t.Errorf("printed:\n%s", p)
			}
		}},
		{"quit prints what is left, then quits with an empty frame", func(t *testing.T, d *driver) {
			d.send("run the slow suite")
			d.waitCall()
			d.press("ctrl+d")
			d.wait()
			d.waitFor("the quit", d.quit.Load)
			if p := printed(d); !strings.Contains(p, "■ canceled") {
				t.Errorf("printed:\n%s", p)
			}
			if f := d.frame(); f != "" {
				t.Errorf("the last frame is not empty:\n%s", f)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newInlineDriver(t, 80, 20, false)
			tc.drive(t, d)
		})
	}
}

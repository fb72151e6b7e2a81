package tui

import (
	"slices"
	"strings"
	"testing"
)

// TestQueueWhileATurnRuns: what is sent while a turn runs is queued,
// drawn as such, and sent when the session is idle again; Esc steers
// (cancels the turn and sends the queue at once); Up takes the last queued
// message back; commands that only show the status run at once, those that
// talk to the session wait their turn.
func TestQueueWhileATurnRuns(t *testing.T) {
	for _, tc := range []struct {
		name string
		// drive runs with a gated turn running; it ends with the session
		// idle and nothing left queued.
		drive func(d *driver)
		tasks []string // what reached the session, after the gated task
		want  []string // in the frame at the end
	}{
		{"sent when the turn ends", func(d *driver) {
			d.send("then fix calc.go")
			d.send("and run the tests")
			if len(d.f.tasks) != 1 {
				t.Fatalf("a queued message was sent while the turn ran: %q", d.f.tasks)
			}
			f := d.frame()
			for _, w := range []string{"queued › then fix calc.go", "queued › and run the tests", "esc: now"} {
				if !strings.Contains(f, w) {
					t.Errorf("the frame lacks %q:\n%s", w, f)
				}
			}
			close(d.f.gate)
			d.wait() // the gated turn
			d.wait() // the queued messages, one task
		}, []string{"then fix calc.go\n\nand run the tests"}, []string{"› then fix calc.go", "  and run the tests"}},
		{"esc steers", func(d *driver) {
			d.send("no, fix calc.go instead")
			d.press("esc")
			if f := d.frame(); !strings.Contains(f, "what is queued is sent when it has ended") {
				t.Errorf("Esc with a queue does not say it will be sent:\n%s", f)
			}
			d.wait() // the cancelled turn
			d.wait() // the queued message
		}, []string{"no, fix calc.go instead"}, []string{"■ canceled", "› no, fix calc.go instead", "✓ completed"}},
		{"esc sends the draft", func(d *driver) {
			d.typeText("use the other test")
			d.press("esc")
			if v := d.m.ta.Value(); v != "" {
				t.Errorf("Esc left %q in the input", v)
			}
			if f := d.frame(); !strings.Contains(f, "what is queued is sent when it has ended") {
				t.Errorf("Esc with a draft does not say it will be sent:\n%s", f)
			}
			d.wait()
			d.wait()
		}, []string{"use the other test"}, []string{"■ canceled", "› use the other test"}},
		{"esc esc sends the draft", func(d *driver) {
			d.typeText("use the other test")
			d.press("esc")
			d.press("esc")
			if v := d.m.ta.Value(); v != "" {
				t.Errorf("the second Esc left %q in the input", v)
			}
			d.wait()
			d.wait()
		}, []string{"use the other test"}, []string{"■ canceled", "› use the other test"}},
		{"up takes it back", func(d *driver) {
			d.send("first thought")
			d.send("second thought")
			d.press("up")
			if v := d.m.ta.Value(); v != "second thought" {
				t.Fatalf("Up on an empty input recalled %q", v)
			}
			if strings.Contains(d.frame(), "queued › second thought") {
				t.Errorf("the recalled message is still drawn as queued")
			}
			d.press("ctrl+u") // erased: no longer sent
			d.press("enter")
			close(d.f.gate)
			d.wait()
			d.wait()
		}, []string{"first thought"}, []string{"› first thought"}},
		{"display commands run at once, others wait", func(d *driver) {
			d.send("/cost")
			d.send("/surface")
			if f := d.frame(); !strings.Contains(f, "Cost $") || !strings.Contains(f, "Surface: generic") {
				t.Errorf("/cost or /surface did not answer during the turn:\n%s", f)
			}
			d.send("/compact")
			d.send("then more")
			if d.f.compacts != 0 || !strings.Contains(d.frame(), "queued › /compact") {
				t.Fatalf("/compact ran during the turn (%d) or is not queued:\n%s", d.f.compacts, d.frame())
			}
			close(d.f.gate)
			d.wait() // the gated turn
			d.wait() // /compact
			if d.f.compacts != 1 {
				t.Errorf("/compact ran %d times", d.f.compacts)
			}
			d.wait() // then more
		}, []string{"then more"}, []string{"Compacted: 6 items", "› then more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, 100, 60, false)
			d.send("gated work")
			d.waitTask()
			tc.drive(d)
			d.f.mu.Lock()
			tasks := slices.Clone(d.f.tasks[1:])
			d.f.mu.Unlock()
			if !slices.Equal(tasks, tc.tasks) {
				t.Errorf("tasks after the gated one: %q, want %q", tasks, tc.tasks)
			}
			f := d.frame()
			for _, w := range tc.want {
				if !strings.Contains(f, w) {
					t.Errorf("the frame lacks %q:\n%s", w, f)
				}
			}
			if len(d.m.queued) != 0 || d.m.busy != "" || strings.Contains(f, "queued ›") {
				t.Errorf("queue %q, busy %q at the end:\n%s", d.m.queued, d.m.busy, f)
			}
		})
	}
}

// TestQuitDropsTheQueue: Ctrl-D during a turn cancels it and quits; what
// was queued is not sent.
func TestQuitDropsTheQueue(t *testing.T) {
	d := newDriver(t, 80, 24, false)
	d.send("gated work")
	d.send("never sent")
	d.m.Update(keyOf("ctrl+d"))
	d.wait()
	if len(d.f.tasks) != 1 {
		t.Fatalf("tasks %q", d.f.tasks)
	}
}

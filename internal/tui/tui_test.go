package tui

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
)

var update = flag.Bool("update", false, "rewrite the golden frames under testdata/")

// driver drives a uiModel the way a Bubble Tea program does, without a
// terminal: keys go to Update, what the session reports is applied in
// batches, and the commands the model starts (a turn, a slash command)
// run on goroutines whose messages are fed back.
type driver struct {
	t    testing.TB
	u    *UI
	f    *fakeSession
	m    *uiModel
	msgs chan tea.Msg
	// side carries the messages settle applies as they come (a
	// completion's answer), not waited for one by one.
	side chan tea.Msg
	quit atomic.Bool // the model quit
	// printed is what an inline model printed into the scrollback, a
	// print a string.
	printed []string
}

// terminal is what an inline model leaves in the terminal: what it
// printed into the scrollback, then the live frame.
func (d *driver) terminal() string {
	f := d.frame()
	if len(d.printed) == 0 {
		return f
	}
	return strings.Join(d.printed, "\n") + "\n" + f
}

func newDriver(t testing.TB, width, height int, color bool) *driver {
	return newDriverWith(t, width, height, color, nil)
}

// newInlineDriver is newDriver drawing inline: what the model prints
// into the scrollback is collected in printed, at once.
func newInlineDriver(t testing.TB, width, height int, color bool) *driver {
	return newDriverOpts(t, width, height, color, true, nil)
}

// newDriverWith is newDriver with the fake session adjusted before the UI
// opens on it.
func newDriverWith(t testing.TB, width, height int, color bool, adjust func(*fakeSession)) *driver {
	return newDriverOpts(t, width, height, color, false, adjust)
}

func newDriverOpts(t testing.TB, width, height int, color, inline bool, adjust func(*fakeSession)) *driver {
	u := New(Options{})
	f := newFake(u)
	if adjust != nil {
		adjust(f)
	}
	d := &driver{t: t, u: u, f: f, msgs: make(chan tea.Msg, 16), side: make(chan tea.Msg, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d.m = newModel(ctx, f, u.q, color)
	if inline {
		d.m.inline = true
		d.m.print = func(text string) tea.Cmd {
			d.printed = append(d.printed, text)
			return nil
		}
	}
	d.m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	return d
}

// keyOf returns the key press a name stands for ("enter", "ctrl+c", "a").
func keyOf(name string) tea.KeyPressMsg {
	switch name {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "alt+enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt}
	}
	if c, ok := strings.CutPrefix(name, "ctrl+"); ok {
		return tea.KeyPressMsg{Code: rune(c[0]), Mod: tea.ModCtrl}
	}
	r := []rune(name)[0]
	return tea.KeyPressMsg{Code: r, Text: string(r)}
}

// press sends a key; a command it starts runs in the background.
func (d *driver) press(name string) {
	_, cmd := d.m.Update(keyOf(name))
	if cmd != nil {
		d.run(cmd)
	}
}

// run runs a command in the background and feeds its message back; the
// spinner's ticks are dropped (frames stay the same from run to run).
func (d *driver) run(cmd tea.Cmd) {
	go func() {
		switch msg := cmd().(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				if c != nil {
					d.run(c)
				}
			}
		case spinner.TickMsg:
		case tea.QuitMsg:
			d.quit.Store(true)
		case filesMsg:
			d.side <- msg
		default:
			d.msgs <- msg
		}
	}()
}

// typeText types s key by key; a command a key starts (a completion's
// lookup) runs in the background.
func (d *driver) typeText(s string) {
	for _, r := range s {
		d.press(string(r))
	}
}

// send types a line and presses Enter.
func (d *driver) send(s string) {
	d.typeText(s)
	d.press("enter")
}

// wait feeds back the next message of a background command, applying
// what the session reported before it.
func (d *driver) wait() tea.Msg {
	d.t.Helper()
	select {
	case msg := <-d.msgs:
		if _, cmd := d.m.Update(msg); cmd != nil {
			d.run(cmd)
		}
		return msg
	case <-time.After(10 * time.Second):
		d.t.Fatal("no command finished")
		return nil
	}
}

// waitFor applies reports until cond holds.
func (d *driver) waitFor(what string, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			d.t.Fatalf("waited in vain for %s", what)
		}
		d.settle()
		time.Sleep(time.Millisecond)
	}
}

// waitApproval applies reports until an approval request is pending.
func (d *driver) waitApproval() {
	d.t.Helper()
	d.waitFor("an approval request", func() bool { return len(d.m.approvals) > 0 })
}

// askEdit asks to approve an edit of calc.go whose diff is diff, as the
// session does, and waits for the card; the request is withdrawn when
// the test ends.
func (d *driver) askEdit(diff string) chan Decision {
	d.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d.t.Cleanup(cancel)
	got := make(chan Decision, 1)
	go func() {
		dec, _ := d.u.Approve(ctx, ApprovalRequest{Tool: "edit_file", Command: "edit calc.go", Edit: true, Diff: diff,
			Reason: "to make Add add"})
		got <- dec
	}()
	d.waitApproval()
	return got
}

// editDiff is a unified diff of calc.go with n changed functions.
func editDiff(n int) string {
	var b strings.Builder
	b.WriteString("--- a/calc.go\n+++ b/calc.go\n")
	for i := range n {
		fmt.Fprintf(&b, "@@ -%d,4 +%d,4 @@\n // F%d returns a result.\n func F%d(a, b int) int {\n-\treturn a - b\n+\treturn a + b\n }\n", 3+6*i, 3+6*i, i, i)
	}
	return b.String()
}

// waitTask waits until the session runs a task.
func (d *driver) waitTask() {
	d.t.Helper()
	d.waitFor("a running task", func() bool {
		d.f.mu.Lock()
		defer d.f.mu.Unlock()
		return d.f.active > 0
	})
}

// waitCall applies reports until a call is running.
func (d *driver) waitCall() {
	d.t.Helper()
	d.waitFor("a running call", func() bool { return len(d.m.calls) > 0 })
}

// waitLive applies reports until a running call's output shows want.
func (d *driver) waitLive(want string) {
	d.t.Helper()
	d.waitFor("a running call's output", func() bool {
		for _, b := range d.m.calls {
			if strings.Contains(string(b.tool.live), want) {
				return true
			}
		}
		return false
	})
}

// settle applies what the session reported, and the answers to
// completions.
func (d *driver) settle() {
	for len(d.side) > 0 {
		d.m.Update(<-d.side)
	}
	if its := d.u.q.drain(); len(its) > 0 {
		d.m.Update(batchMsg(its))
	}
}

func (d *driver) frame() string {
	d.settle()
	return d.m.View().Content
}

// golden compares got with testdata/frames/name, or rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "frames", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("frame %s differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, path, visibleEsc(got), visibleEsc(string(want)))
	}
}

func visibleEsc(s string) string { return strings.ReplaceAll(s, "\x1b", "␛") }

// sgrOnly matches a frame's escape sequences that may appear in colour:
// select graphic rendition only.
var anyEscape = regexp.MustCompile("\x1b(\\[[0-9;:]*m)?")

// checkFrame checks what every frame must satisfy: no line wider than
// the terminal, the height of the terminal, and no escape sequence but
// colours (none at all without colour).
func checkFrame(t *testing.T, frame string, width, height int, color bool) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) != height {
		t.Errorf("frame has %d lines, want %d", len(lines), height)
	}
	for i, l := range lines {
		if w := displayWidth(l); w > width {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i, w, width, l)
		}
	}
	if !color && strings.ContainsRune(frame, 0x1b) {
		t.Errorf("frame without colour holds an escape sequence: %q", frame)
	}
	for _, m := range anyEscape.FindAllStringSubmatch(frame, -1) {
		if m[1] == "" {
			t.Errorf("frame holds an escape that is not a colour: %q", frame)
			break
		}
	}
}

// scenarios drive the model into the states the golden frames show.
var scenarios = []struct {
	name   string
	height int
	drive  func(d *driver)
}{
	{"task", 48, func(d *driver) {
		d.send("fix the failing test in calc.go")
		d.wait()
	}},
	{"task-collapsed", 30, func(d *driver) {
		d.send("fix the failing test in calc.go")
		d.wait()
		d.press("ctrl+o")
		d.press("ctrl+t")
	}},
	{"running", 20, func(d *driver) {
		d.send("run the slow suite")
		d.waitCall()
	}},
	{"cancelled", 20, func(d *driver) {
		d.send("run the slow suite")
		d.waitCall()
		d.press("esc")
		d.wait()
	}},
	{"approval", 24, func(d *driver) {
		d.send("check the net for versions")
		d.waitApproval()
	}},
	{"approved", 24, func(d *driver) {
		d.send("check the net for versions")
		d.waitApproval()
		d.press("a")
		d.wait()
	}},
	{"commands", 40, func(d *driver) {
		d.send("/help")
		d.send("/frobnicate now")
		d.send("/model")
		d.send("/ledger")
		d.send("/diff")
		d.wait()
	}},
	{"streaming", 16, func(d *driver) {
		d.send("stream the build")
		d.waitLive("build")
	}},
	{"streamed", 16, func(d *driver) {
		d.send("stream the build")
		d.waitLive("build")
		d.press("esc")
		d.wait()
	}},
	{"resume-list", 16, func(d *driver) {
		d.send("/resume")
		d.wait()
		d.send("/resume 3")
	}},
	{"resume", 30, func(d *driver) {
		d.send("/resume")
		d.wait()
		d.send("/resume 3")
		d.send("/resume 2")
		d.wait()
	}},
	{"background-check", 30, func(d *driver) {
		d.send("fix the add function, checks in the background")
		d.wait()
	}},
	{"check", 24, func(d *driver) {
		d.send("fix the add function, checks in the background")
		d.wait()
		d.send("/check")
		d.wait()
	}},
	{"queued", 16, func(d *driver) {
		d.send("gated: fix the failing test")
		d.waitTask()
		d.send("then add a test for negative numbers")
		d.send("/diff")
	}},
	{"menu-commands", 16, func(d *driver) {
		d.typeText("/s")
		d.press("down")
	}},
	{"menu-files", 16, func(d *driver) {
		d.m.sess = &fileSession{fakeSession: d.f}
		d.typeText("explain @internal/t")
		d.waitFor("the files", func() bool { return d.m.menu != nil })
	}},
	{"approval-edit", 30, func(d *driver) {
		d.askEdit(editDiff(3))
	}},
	{"models", 16, func(d *driver) {
		d.m.sess = &modelSession{fakeSession: d.f}
		d.send("/model")
		d.wait()
	}},
	{"multiline", 12, func(d *driver) {
		d.typeText("first line")
		d.press("alt+enter")
		d.typeText("second line")
		d.press("ctrl+j")
		d.typeText("third")
	}},
}

// TestGoldenFramesInline: the same scenarios drawn inline; each golden
// holds what was printed into the scrollback followed by the live frame,
// which fits the screen less a line.
func TestGoldenFramesInline(t *testing.T) {
	for _, sc := range scenarios {
		for _, width := range []int{60, 100} {
			for _, color := range []bool{true, false} {
				name := fmt.Sprintf("inline-%s-w%d", sc.name, width)
				if !color {
					name += "-nocolor"
				}
				t.Run(name, func(t *testing.T) {
					d := newInlineDriver(t, width, sc.height, color)
					sc.drive(d)
					f := d.frame()
					if n := strings.Count(f, "\n") + 1; n > sc.height-1 {
						t.Errorf("the live frame has %d lines on a screen of %d", n, sc.height)
					}
					all := d.terminal()
					checkFrame(t, all, width, strings.Count(all, "\n")+1, color)
					golden(t, name, all)
				})
			}
		}
	}
}

func TestGoldenFrames(t *testing.T) {
	for _, sc := range scenarios {
		for _, width := range []int{60, 100} {
			for _, color := range []bool{true, false} {
				name := fmt.Sprintf("%s-w%d", sc.name, width)
				if !color {
					name += "-nocolor"
				}
				t.Run(name, func(t *testing.T) {
					d := newDriver(t, width, sc.height, color)
					sc.drive(d)
					f := d.frame()
					checkFrame(t, f, width, sc.height, color)
					golden(t, name, f)
				})
			}
		}
	}
}

func displayWidth(s string) int { return ansiWidth(s) }

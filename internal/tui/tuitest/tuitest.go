// Package tuitest runs a terminal program in a pseudo-terminal and reads
// its screen through a terminal emulator, for end-to-end tests of an
// interactive command: type into it, wait until the screen shows what a
// person would see, and check how it exits.
package tuitest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
)

// Timeout bounds each wait of a Terminal, so that a test whose program
// never draws what it waits for fails with the screen instead of hanging.
const Timeout = 20 * time.Second

// Terminal is a program running in a pseudo-terminal.
type Terminal struct {
	t    testing.TB
	cmd  *exec.Cmd
	pty  *os.File
	done chan error

	mu  sync.Mutex
	emu *vt.Emulator
	raw strings.Builder
}

// Start starts cmd in a pseudo-terminal of cols×rows. The program is
// killed when the test ends if it is still running.
func Start(t testing.TB, cmd *exec.Cmd, cols, rows int) *Terminal {
	t.Helper()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		t.Fatalf("start %s in a pseudo-terminal: %v", cmd.Path, err)
	}
	term := &Terminal{t: t, cmd: cmd, pty: f, done: make(chan error, 1), emu: vt.NewEmulator(cols, rows)}
	go func() { _, _ = io.Copy(term, f) }()     // what the program draws
	go func() { _, _ = io.Copy(f, term.emu) }() // the terminal's answers to its queries
	go func() { term.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
		f.Close()
	})
	return term
}

// Write feeds the emulator what the program wrote.
func (term *Terminal) Write(p []byte) (int, error) {
	term.mu.Lock()
	defer term.mu.Unlock()
	term.raw.Write(p)
	return term.emu.Write(p)
}

// Screen returns the text on the screen now, one line a row.
func (term *Terminal) Screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.emu.String()
}

// Scrollback returns the lines that scrolled off the top of the main
// screen (not the alternate screen's), oldest first, one a row, without
// trailing spaces; Scrollback followed by Screen is all a person can
// scroll back through.
func (term *Terminal) Scrollback() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	var b strings.Builder
	for _, l := range term.emu.Scrollback().Lines() {
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// Output returns every byte the program has written so far.
func (term *Terminal) Output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.raw.String()
}

// Type writes s to the program as if typed ("\r" is Enter, "\x1b" Esc,
// "\x04" Ctrl-D).
func (term *Terminal) Type(s string) {
	term.t.Helper()
	if _, err := io.WriteString(term.pty, s); err != nil {
		term.t.Fatalf("type %q: %v", s, err)
	}
}

// Resize changes the terminal's size, as a person resizing the window.
func (term *Terminal) Resize(cols, rows int) {
	term.t.Helper()
	term.mu.Lock()
	term.emu.Resize(cols, rows)
	term.mu.Unlock()
	if err := pty.Setsize(term.pty, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		term.t.Fatal(err)
	}
}

// WaitFor waits until the screen shows every one of want at once, and
// fails the test with the screen after Timeout.
func (term *Terminal) WaitFor(want ...string) {
	term.t.Helper()
	term.WaitWithin(Timeout, want...)
}

// WaitForText is WaitFor on what the terminal holds: its scrollback and
// its screen, for a program that prints what is done above its live part
// (which then scrolls off the screen as it goes on).
func (term *Terminal) WaitForText(want ...string) {
	term.t.Helper()
	term.wait(Timeout, term.Text, want)
}

// WaitWithinText is WaitForText with a bound of its own (WaitWithin).
func (term *Terminal) WaitWithinText(bound time.Duration, want ...string) {
	term.t.Helper()
	term.wait(bound, term.Text, want)
}

// Text is all a person can scroll back through: Scrollback, then Screen.
func (term *Terminal) Text() string { return term.Scrollback() + term.Screen() }

// WaitWithin is WaitFor with a bound of its own, for a wait on real work
// (a cold build) that takes longer than a screen update. The bound only
// ends a test that would hang; it measures nothing.
func (term *Terminal) WaitWithin(bound time.Duration, want ...string) {
	term.t.Helper()
	term.wait(bound, term.Screen, want)
}

func (term *Terminal) wait(bound time.Duration, text func() string, want []string) {
	term.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		scr := text()
		missing := ""
		for _, w := range want {
			if !strings.Contains(scr, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the screen never showed %q; it shows:\n%s", missing, scr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Exit waits for the program to exit and returns its exit status; it
// fails the test with the screen after Timeout.
func (term *Terminal) Exit() int {
	term.t.Helper()
	select {
	case err := <-term.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			term.t.Fatal(err)
		}
		// Let the last bytes the program wrote reach the emulator.
		time.Sleep(50 * time.Millisecond)
		return 0
	case <-time.After(Timeout):
		term.t.Fatalf("the program did not exit; the screen shows:\n%s", term.Screen())
		return -1
	}
}

// String describes the terminal for failure messages.
func (term *Terminal) String() string { return fmt.Sprintf("%s in a pseudo-terminal", term.cmd.Path) }

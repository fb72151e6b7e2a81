package tui

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/testenv"
	"github.com/trussdev/truss/internal/tui/tuitest"
)

// demoEnv makes the test binary run the UI with the fake session on its
// terminal instead of the tests (see TestMain).
const demoEnv = "TRUSS_TUI_DEMO"

// demoAltEnv set to 1 makes the demo draw on the alternate screen.
const demoAltEnv = "TRUSS_TUI_DEMO_ALT"

func TestMain(m *testing.M) {
	if os.Getenv(demoEnv) == "1" {
		os.Exit(runDemo())
	}
	os.Exit(testenv.Run(m))
}

// runDemo runs the interactive UI on the process's terminal with the fake
// session; it exits 0 when the user quits.
func runDemo() int {
	u := New(Options{AltScreen: os.Getenv(demoAltEnv) == "1"})
	f := newFake(u)
	if err := u.Run(context.Background(), f); err != nil {
		fmt.Fprintln(os.Stderr, "tuidemo:", err)
		return 1
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Printf("tasks sent: %d\n", len(f.tasks))
	return 0
}

// TestPTY runs the UI in a pseudo-terminal as a person uses it: type a
// task, watch its calls and its diff, start a long command and cancel it,
// then /quit; the program exits 0.
func TestPTY(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process in a pseudo-terminal")
	}
	for _, noColor := range []bool{false, true} {
		t.Run(fmt.Sprintf("NO_COLOR=%v", noColor), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), demoEnv+"=1", "TERM=xterm-256color", "COLORTERM=")
			if noColor {
				cmd.Env = append(cmd.Env, "NO_COLOR=1")
			}
			term := tuitest.Start(t, cmd, 100, 45)
			term.WaitFor("Ask Truss to do something", "sim-model", "workspace-write")
			term.Type("fix the failing test in calc.go\r")
			// What is done is printed above the live part and may have
			// scrolled off the screen by the time the turn ends (a slow
			// machine sees the whole turn at once): the scrollback counts.
			term.WaitForText("› fix the failing test in calc.go", "edit_file · edit calc.go", "-    return a - b", "+    return a + b",
				"bash · $ go test ./...", "✓ completed · 2 turns", "ctx <1%")

			term.Type("run the slow suite\r")
			term.WaitFor("$ sleep 600", "running…", "esc cancels")
			term.Type("\x1b")
			term.WaitForText("■ canceled")

			// A resize redraws the live part at the new width (the status
			// line leaves the surface out at 60 columns); what was printed
			// into the scrollback stays as it was.
			term.Resize(60, 30)
			term.WaitFor("sim-model · workspace-write")

			term.Type("/quit\r")
			if code := term.Exit(); code != 0 {
				t.Fatalf("the program exited %d; the screen shows:\n%s", code, term.Screen())
			}
			raw := term.Output()
			if !strings.Contains(raw, "tasks sent: 2") {
				t.Errorf("the program did not report its two tasks; it wrote %q", tail(raw, 300))
			}
			if noColor && sgrColor.MatchString(raw) {
				t.Errorf("with NO_COLOR the program wrote a colour: %q", sgrColor.FindString(raw))
			}
		})
	}
}

// TestPTYQueueAndSteer: in a pseudo-terminal, a message typed while a
// command runs is queued and drawn so; Esc cancels the turn and the queued
// message is sent at once.
func TestPTYQueueAndSteer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process in a pseudo-terminal")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), demoEnv+"=1", "TERM=xterm-256color", "COLORTERM=", "NO_COLOR=1")
	term := tuitest.Start(t, cmd, 100, 40)
	term.WaitFor("Ask Truss to do something")
	term.Type("run the slow suite\r")
	term.WaitFor("$ sleep 600", "running…")
	term.Type("no, fix calc.go instead\r")
	term.WaitFor("queued › no, fix calc.go instead")
	term.Type("\x1b")
	term.WaitForText("■ canceled", "› no, fix calc.go instead", "✓ completed · 2 turns")
	term.Type("/quit\r")
	if code := term.Exit(); code != 0 {
		t.Fatalf("the program exited %d; the screen shows:\n%s", code, term.Screen())
	}
	if raw := term.Output(); !strings.Contains(raw, "tasks sent: 2") {
		t.Errorf("the program did not report its two tasks; it wrote %q", tail(raw, 300))
	}
}

// TestPTYScrollback: drawn inline (the default), the transcript is in
// the terminal's scrollback and on its screen after the program exits, in
// order, and the live part (input, status line) is gone; on the alternate
// screen (Options.AltScreen) nothing of it is left.
func TestPTYScrollback(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process in a pseudo-terminal")
	}
	for _, alt := range []bool{false, true} {
		t.Run(fmt.Sprintf("AltScreen=%v", alt), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), demoEnv+"=1", "TERM=xterm-256color", "COLORTERM=", "NO_COLOR=1")
			if alt {
				cmd.Env = append(cmd.Env, demoAltEnv+"=1")
			}
			// 24 rows: the transcript of two tasks does not fit, so
			// its head goes into the scrollback while the session runs.
			term := tuitest.Start(t, cmd, 80, 24)
			term.WaitFor("Ask Truss to do something")
			term.Type("fix the failing test in calc.go\r")
			term.WaitFor("✓ completed · 2 turns")
			term.Type("fix it again\r")
			term.WaitFor("5.4k tok")
			term.Type("/quit\r")
			if code := term.Exit(); code != 0 {
				t.Fatalf("the program exited %d; the screen shows:\n%s", code, term.Screen())
			}
			all := term.Scrollback() + term.Screen()
			order := []string{"truss · session s-1", "› fix the failing test in calc.go", "-    return a - b", "+    return a + b",
				"✓ completed · 2 turns", "› fix it again", "✓ completed · 2 turns", "› /quit", "tasks sent: 2"}
			at := 0
			for _, w := range order {
				i := strings.Index(all[at:], w)
				if alt {
					if i >= 0 && w != "tasks sent: 2" {
						t.Errorf("on the alternate screen %q is left after the exit:\n%s", w, all)
					}
					continue
				}
				if i < 0 {
					t.Fatalf("after the exit the terminal does not hold %q (after what came before it):\n%s", w, all)
				}
				at += i + len(w)
			}
			if !alt && (strings.Contains(all, "Ask Truss to do something") || strings.Contains(all, "esc cancels")) {
				t.Errorf("the live part is left on the screen after the exit:\n%s", all)
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// sgrColor matches a select-graphic-rendition sequence that sets a
// foreground or background colour.
var sgrColor = regexp.MustCompile(`\x1b\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m`)

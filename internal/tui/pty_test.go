package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
)

// demoEnv makes the test binary run the UI with the fake session on its
// terminal instead of the tests (see TestMain).
const demoEnv = "TRUSS_TUI_DEMO"

func TestMain(m *testing.M) {
	if os.Getenv(demoEnv) == "1" {
		os.Exit(runDemo())
	}
	os.Exit(m.Run())
}

// runDemo runs the interactive UI on the process's terminal with the fake
// session; it exits 0 when the user quits.
func runDemo() int {
	u := New(Options{})
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

// screen is a terminal emulator fed by the pty: what a person would see.
type screen struct {
	mu  sync.Mutex
	emu *vt.Emulator
	raw strings.Builder
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw.Write(p)
	return s.emu.Write(p)
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.String()
}

// waitFor waits until the screen shows every one of want.
func (s *screen) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		txt := s.text()
		missing := ""
		for _, w := range want {
			if !strings.Contains(txt, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q; it shows:\n%s", missing, txt)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
			const cols, rows = 100, 45
			ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: cols, Rows: rows})
			if err != nil {
				t.Fatal(err)
			}
			defer ptmx.Close()
			scr := &screen{emu: vt.NewEmulator(cols, rows)}
			go io.Copy(scr, ptmx)     // what the program draws
			go io.Copy(ptmx, scr.emu) // the terminal's answers to its queries
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			defer func() {
				if cmd.ProcessState == nil {
					cmd.Process.Kill()
				}
			}()

			scr.waitFor(t, "Ask Truss to do something", "sim-model", "workspace-write")
			io.WriteString(ptmx, "fix the failing test in calc.go\r")
			scr.waitFor(t, "› fix the failing test in calc.go", "edit_file · edit calc.go", "-    return a - b", "+    return a + b",
				"bash · $ go test ./...", "✓ completed · 2 turns", "ctx <1%")

			io.WriteString(ptmx, "run the slow suite\r")
			scr.waitFor(t, "$ sleep 600", "running…", "esc cancels")
			io.WriteString(ptmx, "\x1b")
			scr.waitFor(t, "■ canceled")

			io.WriteString(ptmx, "/quit\r")
			select {
			case err := <-done:
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					t.Fatalf("the program exited %d; the screen shows:\n%s", ee.ExitCode(), scr.text())
				}
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the program did not exit after /quit; the screen shows:\n%s", scr.text())
			}
			// Drain what the program wrote last.
			time.Sleep(50 * time.Millisecond)
			scr.mu.Lock()
			raw := scr.raw.String()
			scr.mu.Unlock()
			if !strings.Contains(raw, "tasks sent: 2") {
				t.Errorf("the program did not report its two tasks; it wrote %q", tail(raw, 300))
			}
			if noColor && sgrColor.MatchString(raw) {
				t.Errorf("with NO_COLOR the program wrote a colour: %q", sgrColor.FindString(raw))
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

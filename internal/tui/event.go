package tui

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/ui"
)

// maxDiffLines bounds the diff kept for one file change; /diff shows the
// workspace's whole diff.
const maxDiffLines = 400

// maxDiffInput bounds the contents a call's diff is computed from (a
// diff of a file this large takes tens of milliseconds).
const maxDiffInput = 1 << 20

// maxResultBytes bounds the tool output kept for one call: a card shows
// its head and tail only, so keeping a huge output would only cost memory.
const maxResultBytes = 64 << 10

// childEvent is the type of a sub-agent's line (see UI.Child).
const childEvent agent.EventType = "tui_child"

// event is an agent.Event reduced to what the UI draws, copied out of the
// loop's values and with every text that came from a model, a file, a
// command or a tool already passed through termsafe. It is built on the
// loop's goroutine, so the UI never holds the loop's pointers.
type event struct {
	typ  agent.EventType
	turn int

	// text is the user's task (EventUser), the streamed text (EventDelta)
	// or the error (EventTurnFailed).
	text      string
	deltaKind model.ItemKind

	// A response's text and reasoning, for providers that do not stream.
	answer, reasoning string

	// A call: its id, one-line summary, and (completed) its result.
	callID  string
	name    string // the surface's tool name
	summary string
	result  string
	lines   int // the whole result's lines (result may be cut)
	failed  bool
	// changes are the call's file changes; their diffs are computed on
	// the UI's goroutine, never on the agent loop's, and the contents
	// dropped once they are (the executor never modifies them).
	changes []tool.FileChange
	// output marks a call whose result is output to show (a command's),
	// beside its changes; an editor's result only says what its diff shows.
	output bool

	usage   model.Usage
	outcome *agent.Outcome
}

// fileDiff is one file change of a call, as a unified diff.
type fileDiff struct {
	path       string
	kind       tool.ChangeKind
	lines      []string // the hunks, without the ---/+++ header
	adds       int
	dels       int
	more       int // lines left out past maxDiffLines
	binary     bool
	large      int  // the contents' size, when over maxDiffInput (no diff drawn)
	unreadable bool // the executor could not read the contents
	// note, when set, is drawn in place of a diff: a change whose bytes
	// are not one file's text (a bulk change's manifest, a link, a FIFO,
	// a directory too large to track).
	note string
}

// convert reduces ev to an event.
func convert(ev agent.Event) *event {
	e := &event{typ: ev.Type, turn: ev.Turn}
	switch ev.Type {
	case agent.EventUser:
		var parts []string
		for _, it := range ev.Items {
			if it.Kind == model.KindUser && it.Text != "" {
				parts = append(parts, it.Text)
			}
		}
		e.text = termsafe.String(strings.Join(parts, "\n"))
	case agent.EventDelta:
		if ev.Delta == nil {
			return nil
		}
		if ev.Delta.Kind != model.KindAssistant && ev.Delta.Kind != model.KindReasoning {
			return nil
		}
		e.deltaKind = ev.Delta.Kind
		e.text = termsafe.String(ev.Delta.Text)
	case agent.EventResponse:
		if ev.Response == nil {
			return nil
		}
		var ans, rsn []string
		for _, it := range ev.Response.Items {
			switch it.Kind {
			case model.KindAssistant:
				ans = append(ans, it.Text)
			case model.KindReasoning:
				if it.Text != "" {
					rsn = append(rsn, it.Text)
				}
			}
		}
		e.answer = termsafe.String(strings.Join(ans, ""))
		e.reasoning = termsafe.String(strings.Join(rsn, "\n"))
	case agent.EventCallOutput:
		if ev.Call == nil || ev.Output == nil {
			return nil
		}
		e.callID, e.text = ev.Call.ID, ev.Output.Text // sanitised when drawn, whole lines at a time
	case agent.EventCallStarted, agent.EventCallCompleted:
		if ev.Call == nil {
			return nil
		}
		e.callID = ev.Call.ID
		e.name = termsafe.Line(ev.Call.Name)
		e.summary = termsafe.Line(ui.Summary(ev.Call, ev.Ops))
		if ev.Type == agent.EventCallCompleted {
			text := ev.FullText
			if text == "" && ev.Result != nil {
				text = ev.Result.Text
			}
			e.lines = strings.Count(strings.TrimRight(text, "\n"), "\n") + 1 // of the whole, before any cut
			if len(text) > maxResultBytes {
				text = headTailBytes(text, maxResultBytes)
			}
			e.result = termsafe.String(text)
			e.failed = ev.Result != nil && ev.Result.IsError
			e.output = slices.ContainsFunc(ev.Ops, func(c tool.Call) bool { return c.Op == tool.OpExec })
			for _, r := range ev.Results {
				if r.Err != nil {
					e.failed = true
				}
				e.changes = append(e.changes, r.Changes...)
			}
		}
	case agent.EventTurnCompleted:
		e.usage = ev.Usage
	case agent.EventTurnFailed:
		if ev.Err != nil {
			e.text = termsafe.String(ev.Err.Error())
		}
	case agent.EventRunCompleted:
		if ev.Outcome == nil {
			return nil
		}
		o := *ev.Outcome
		o.Reason = termsafe.String(o.Reason)
		o.Text = ""
		o.Err = nil
		e.outcome = &o
	default:
		return nil
	}
	return e
}

// headTailBytes keeps the first and last half of n bytes of s, cut at line
// boundaries where it can.
func headTailBytes(s string, n int) string {
	head, tail := s[:n/2], s[len(s)-n/2:]
	if i := strings.LastIndexByte(head, '\n'); i > 0 {
		head = head[:i+1]
	}
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	}
	return head + fmt.Sprintf("… %d bytes left out …\n", len(s)-len(head)-len(tail)) + tail
}

// diffOf renders one file change as a unified diff of the bytes the
// executor read and wrote.
func diffOf(c tool.FileChange) fileDiff {
	d := fileDiff{path: termsafe.Name(c.Path), kind: c.Kind}
	if c.MovedTo != "" {
		d.path += " → " + termsafe.Name(c.MovedTo)
	}
	if d.note = termsafe.Line(c.Note()); d.note != "" {
		return d
	}
	if (c.Before != "" && c.BeforeData == nil) || (c.After != "" && c.AfterData == nil) {
		d.unreadable = true
		return d
	}
	if n := max(len(c.BeforeData), len(c.AfterData)); n > maxDiffInput {
		d.large = n
		return d
	}
	if isBinary(c.BeforeData) || isBinary(c.AfterData) {
		d.binary = true
		return d
	}
	text := udiff.Unified("a", "b", string(c.BeforeData), string(c.AfterData))
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for len(lines) > 0 && (strings.HasPrefix(lines[0], "--- ") || strings.HasPrefix(lines[0], "+++ ")) {
		lines = lines[1:]
	}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "+"):
			d.adds++
		case strings.HasPrefix(l, "-"):
			d.dels++
		}
	}
	if len(lines) > maxDiffLines {
		d.more = len(lines) - maxDiffLines
		lines = lines[:maxDiffLines]
	}
	for i, l := range lines {
		lines[i] = termsafe.String(l)
	}
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	d.lines = lines
	return d
}

func isBinary(b []byte) bool {
	n := min(len(b), tool.BinarySniffLen)
	return bytes.IndexByte(b[:n], 0) >= 0 || !utf8.Valid(b)
}

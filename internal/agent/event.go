package agent

import (
	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// EventType names a loop event.
type EventType string

// The events, in the order a turn produces them.
const (
	EventUser          EventType = "user"           // the task was added (Items)
	EventTurnStarted   EventType = "turn_started"   // a request is about to be sent
	EventDelta         EventType = "delta"          // streamed text (Delta)
	EventResponse      EventType = "response"       // the turn's complete response (Response)
	EventCallStarted   EventType = "call_started"   // a tool call is about to be decoded and run (Call)
	EventCallOutput    EventType = "call_output"    // a running call's output as it arrives (Call, Output); from any goroutine
	EventCallCompleted EventType = "call_completed" // its result (Call, Ops, Results, Result, FullText; Err)
	EventTurnCompleted EventType = "turn_completed" // the turn's new transcript items (Items, Usage)
	EventTurnFailed    EventType = "turn_failed"    // the provider failed (Err)
	EventRunCompleted  EventType = "run_completed"  // the run ended (Outcome)

	// Before a turn's request (Turn) or when asked (Turn 0, Agent.Compact):
	EventCompacted     EventType = "compacted"      // the conversation was compacted (Compaction, Items: the new transcript, Usage: the summary turn's)
	EventCompactFailed EventType = "compact_failed" // a compaction failed, the conversation is unchanged (Err; Compaction holds only Reason and TokensBefore)
)

// Event is one thing the loop did. Which fields are set depends on Type.
type Event struct {
	Type     EventType
	Turn     int
	Delta    *model.Delta
	Response *model.Response
	Call     *model.ToolCall
	// Ops are the normalized operations decoded from Call (nil when the
	// call could not be decoded); Results their full, untruncated results.
	Ops     []tool.Call
	Results []tool.Result
	// Result is the tool result as the model receives it (cut to the
	// result budget); FullText is its text before the cut, followed, for a
	// call whose binding or executor panicked, by each panic and its stack.
	Result   *model.ToolResult
	FullText string
	// Output is a piece of a running command's output (EventCallOutput),
	// for people watching: the result alone is what the model reads and
	// what is recorded.
	Output  *CallOutput
	Items   []model.Item
	Usage   model.Usage
	Outcome *Outcome
	// Compaction is what a compaction replaced (EventCompacted): the
	// replaced items' bytes and digest, the summary, the summary turn
	// with its wire bytes (Compaction.Response).
	Compaction *compact.Record
	// Err is the provider's failure (EventTurnFailed), the compaction's
	// (EventCompactFailed), or the panics recovered in a call
	// (EventCallCompleted: *PanicError, joined with errors.Join when more
	// than one).
	Err error
}

// CallOutput is a piece of a running call's output: Stream is "stdout"
// or "stderr".
type CallOutput struct {
	Stream string
	Text   string
}

// Observer is told of every event, synchronously, from the loop's goroutine
// (EventDelta may come from the provider's, EventCallOutput from the
// goroutine reading the command's output; the calls of a turn are
// reported in call order from the loop's goroutine, whatever order they
// ran in).
//
// An event is immutable once reported: neither the loop nor any other
// observer changes it, or anything it points to (the response, the calls,
// the results with their file contents, the items, the outcome), after
// Observe is called, so an observer may keep the event and everything it
// references, and read it later from another goroutine, without copying.
// An observer must not change an event either. Observe should return
// quickly: the loop waits for it (a recorder queues the event and writes
// it on its own goroutine).
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f.
func (f ObserverFunc) Observe(e Event) { f(e) }

// Observers fans events out to several observers, in order.
type Observers []Observer

// Observe implements Observer.
func (os Observers) Observe(e Event) {
	for _, o := range os {
		o.Observe(e)
	}
}

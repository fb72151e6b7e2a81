// Package sim is the simulated model: a scripted model behind a local HTTP
// server that speaks each supported API dialect as the real service does
// (status codes, headers, streaming format, usage fields).
//
// A Script is provider-neutral: each Step is one model turn, with optional
// text and actions such as "view file X", "replace A with B in X" or "run
// this command". The server reads the tools each request declares and
// renders every action as a call of the matching tool of that surface (a
// replace becomes edit_file on the generic surface). The step a request
// answers is the number of assistant turns already in its history, so a
// retried request gets the same step. Faults injected by a step (an HTTP
// error with Retry-After, an error event in the middle of the stream, a cut
// stream) fail its first attempts, after which the step is served normally.
// A step may name alternatives played instead when the previous turn's tool
// results contain a text (Step.OnResult).
//
// A script may hold the scripts of sub-agents (Script.Agents): a request
// whose first user message contains an agent's key follows that agent's
// steps, counted in its own history, so that a parent and the children it
// spawns each play their part.
//
// The server never executes a tool; it only records what it was sent.
package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Script is a sequence of model turns.
type Script struct {
	Steps []Step `json:"steps"`
	// Agents are the scripts of sub-agents, keyed by a text their task
	// contains: a request whose first user message contains a key is
	// answered from that script (the longest matching key wins), so that
	// a parent and its children each follow their own steps.
	Agents map[string]*Script `json:"agents,omitempty"`
	// LatencyMS is how long the model takes before it answers each
	// request: the time to the response's first byte, 0 for at once.
	LatencyMS int `json:"latency_ms,omitempty"`
	// Compaction answers the requests that ask for a summary of the
	// conversation (a compaction), with or without it set; see Compaction.
	Compaction *Compaction `json:"compaction,omitempty"`
	// Models are the models the server's model lists name (GET /v1/models
	// in Anthropic's and OpenAI's shapes, GET /api/tags in Ollama's);
	// DefaultModels when there are none.
	Models []Model `json:"models,omitempty"`
	// ModelFaults fail the first model list requests (each page is one),
	// in order: status faults only.
	ModelFaults []Fault `json:"model_faults,omitempty"`
}

// Compaction is how the simulated model answers a summary request: a
// request whose text after its last assistant turn contains Prompt. Such a
// request is not a step of the script: it is answered with Say (or a
// default summary) followed by the marker "[simulated summary of N model
// turns]", N the model turns the request's history holds. A later request
// whose history holds that marker counts those N turns as played, so that
// the script goes on where it was after its history was compacted (the
// summary replaced N turns; the turns kept after it are counted as usual).
type Compaction struct {
	// Prompt is the text that marks a summary request; default
	// DefaultCompactionPrompt.
	Prompt string `json:"prompt,omitempty"`
	// Say is the summary; default DefaultSummary.
	Say string `json:"say,omitempty"`
	// Faults fail the first attempts of every summary request, as a
	// step's do.
	Faults []Fault `json:"faults,omitempty"`
}

// DefaultCompactionPrompt is how a summary request starts (Codex's
// compaction prompt, and Truss's).
const DefaultCompactionPrompt = "CONTEXT CHECKPOINT COMPACTION"

// DefaultSummary is the summary the simulated model gives when its script
// sets none.
const DefaultSummary = "Summary of the conversation so far: the task is in progress; the turns kept below show the latest state."

// Step is one model turn.
type Step struct {
	// Say is assistant text sent before the actions (or alone, to finish).
	Say string `json:"say,omitempty"`
	// Actions become tool calls, all in this turn (parallel calls).
	Actions []Action `json:"actions,omitempty"`
	// Faults fail the first len(Faults) attempts of this step, in order.
	Faults []Fault `json:"faults,omitempty"`
	// Think is reasoning sent before the text (a thinking block with a
	// signature in the Messages dialect).
	Think string `json:"think,omitempty"`
	// Stop overrides the stop reason ("pause_turn", "max_tokens", "refusal").
	Stop string `json:"stop,omitempty"`
	// OnResult replaces the step with another when the results of the
	// previous turn's calls, as the request carries them, contain a key
	// (the longest matching key wins): a script that reacts to what its
	// commands printed, such as a test run that still fails.
	OnResult map[string]*Step `json:"on_result,omitempty"`
}

// ActionKind names a provider-neutral action.
type ActionKind string

// The actions.
const (
	ActView    ActionKind = "view"
	ActReplace ActionKind = "replace"
	ActCreate  ActionKind = "create"
	ActInsert  ActionKind = "insert"
	ActRun     ActionKind = "run"
	ActList    ActionKind = "list"
	// ActPatch sends Content, a whole "*** Begin Patch" envelope, to a
	// freeform apply_patch tool.
	ActPatch ActionKind = "patch"
	// ActSpawn calls the spawn tool with Content as the task (and Agent,
	// when set, as the defined agent).
	ActSpawn ActionKind = "spawn"
	// ActCall calls the tool named Tool with Content as its input (an MCP
	// server's tool, for instance).
	ActCall ActionKind = "call"
)

// Action is one tool use.
type Action struct {
	Kind    ActionKind `json:"kind"`
	Path    string     `json:"path,omitempty"`
	Start   int        `json:"start,omitempty"`
	End     int        `json:"end,omitempty"`
	Line    int        `json:"line,omitempty"`
	Old     string     `json:"old,omitempty"`
	New     string     `json:"new,omitempty"`
	Content string     `json:"content,omitempty"`
	Command string     `json:"command,omitempty"`
	// Tool overrides the rendered tool name (an unknown tool, to test that path).
	Tool string `json:"tool,omitempty"`
	// Agent names the defined agent of a spawn.
	Agent string `json:"agent,omitempty"`
	// RawInput overrides the rendered input verbatim (malformed arguments).
	RawInput *string `json:"raw_input,omitempty"`
}

// FaultKind names an injected failure.
type FaultKind string

// The faults.
const (
	// FaultStatus answers with an HTTP error status (429, 500, 503, 529...)
	// and, when RetryAfterMS is set, Retry-After headers.
	FaultStatus FaultKind = "status"
	// FaultMidStream starts a normal stream and then sends the dialect's
	// error event.
	FaultMidStream FaultKind = "mid_stream_error"
	// FaultTruncate starts a normal stream and cuts the connection.
	FaultTruncate FaultKind = "truncate"
	// FaultFailed starts a normal stream and ends it with the dialect's
	// failed-response event (the Responses API's response.failed, with
	// Code as its error code); other dialects send their error event.
	FaultFailed FaultKind = "response_failed"
)

// Fault is one failed attempt.
type Fault struct {
	Kind         FaultKind `json:"kind"`
	Status       int       `json:"status,omitempty"`
	RetryAfterMS int       `json:"retry_after_ms,omitempty"`
	Message      string    `json:"message,omitempty"`
	// Code is the error code of a failed response or an error event
	// (default server_error).
	Code string `json:"code,omitempty"`
}

// LoadScript reads a JSON script file.
func LoadScript(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseScript(b)
}

// ParseScript parses a JSON script and checks every step.
func ParseScript(b []byte) (*Script, error) {
	var s Script
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("sim script: %s%w", position(b, err), err)
	}
	if err := s.check(""); err != nil {
		return nil, err
	}
	return &s, nil
}

// position says where in b a decoding error is ("line 3, column 7: "),
// or "" when the error does not say; an input that ends too early is at
// its end.
func position(b []byte, err error) string {
	var off int64
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset - 1 // the offset is after the byte at fault
	case errors.As(err, &typ):
		off = typ.Offset - 1
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(b))
	default:
		return ""
	}
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Sprintf("line %d, column %d: the script ends before a bracket or string is closed: ", line, col)
	}
	return fmt.Sprintf("line %d, column %d: ", line, col)
}

func (s *Script) check(where string) error {
	if err := s.checkModels(where); err != nil {
		return err
	}
	for key, sub := range s.Agents {
		if key == "" || sub == nil {
			return fmt.Errorf("sim script%s: an agent script needs a non-empty key and steps", where)
		}
		if err := sub.check(where + " agent " + fmt.Sprintf("%q", key)); err != nil {
			return err
		}
	}
	if c := s.Compaction; c != nil {
		if c.Prompt == "" && c.Say == "" && len(c.Faults) == 0 {
			return fmt.Errorf("sim script%s: compaction needs a prompt, a summary or faults", where)
		}
		sub := &Script{Steps: []Step{{Say: c.Say, Faults: c.Faults}}}
		if err := sub.check(where + " compaction"); err != nil {
			return err
		}
	}
	for i, st := range s.Steps {
		for key, alt := range st.OnResult {
			if key == "" || alt == nil || len(alt.OnResult) > 0 {
				return fmt.Errorf("sim script%s: step %d: on_result needs non-empty keys and steps without on_result of their own", where, i+1)
			}
			sub := &Script{Steps: []Step{*alt}}
			if err := sub.check(fmt.Sprintf("%s step %d on_result %q", where, i+1, key)); err != nil {
				return err
			}
		}
		for j, a := range st.Actions {
			if err := a.check(); err != nil {
				return fmt.Errorf("sim script%s: step %d action %d: %w", where, i+1, j+1, err)
			}
		}
		for j, f := range st.Faults {
			switch f.Kind {
			case FaultStatus:
				if f.Status < 400 {
					return fmt.Errorf("sim script%s: step %d fault %d: status fault needs a status >= 400", where, i+1, j+1)
				}
			case FaultMidStream, FaultTruncate, FaultFailed:
			default:
				return fmt.Errorf("sim script%s: step %d fault %d: unknown fault kind %q", where, i+1, j+1, f.Kind)
			}
		}
	}
	return nil
}

func (a Action) check() error {
	need := func(ok bool, what string) error {
		if !ok {
			return fmt.Errorf("%s action needs %s", a.Kind, what)
		}
		return nil
	}
	switch a.Kind {
	case ActView, ActCreate, ActInsert:
		return need(a.Path != "", "a path")
	case ActReplace:
		return need(a.Path != "" && a.Old != "", "a path and old text")
	case ActRun:
		return need(a.Command != "" || a.RawInput != nil, "a command")
	case ActList:
		return nil
	case ActPatch:
		return need(a.Content != "" || a.RawInput != nil, "content (the patch)")
	case ActSpawn:
		return need(a.Content != "" || a.RawInput != nil, "content (the task)")
	case ActCall:
		return need(a.Tool != "", "a tool")
	}
	return fmt.Errorf("unknown action kind %q", a.Kind)
}

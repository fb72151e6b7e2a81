// Package surface presents Truss's capabilities to a model.
//
// A surface is a way of presenting tools ("generic", "anthropic", "openai",
// "codex"). It is made of bindings, one per tool: a Binding declares its tool
// for a request, decodes the model's call into tool.Calls (one call item may
// hold several operations) and encodes the tool.Results into the text and
// structure that surface's model was trained to read. Adding a surface never
// touches the agent loop or an executor.
package surface

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// Binding binds one tool of one surface.
type Binding interface {
	// Spec declares the tool.
	Spec() model.ToolSpec
	// Decode turns a call of this tool into one or more tool.Calls. A
	// malformed call returns an error (a *tool.Error of kind
	// ErrInvalidInput, naming what is wrong) and no calls.
	Decode(call model.ToolCall) ([]tool.Call, error)
	// Encode renders the results of the calls Decode returned, in order, as
	// the tool result the model reads.
	Encode(call model.ToolCall, results []tool.Result) model.ToolResult
}

// Set is the tools of one session: the bindings, by tool name. Tools may be
// added while a session runs (an MCP server that became ready): Add is safe
// for concurrent use with the other methods, and a tool added during a turn
// is declared from the next turn on.
type Set struct {
	Surface  string
	mu       sync.RWMutex
	bindings []Binding
	specs    []model.ToolSpec // computed once: declarations do not change
	byName   map[string]Binding
}

// NewSet returns a set of bindings; names must be unique.
func NewSet(surface string, bs ...Binding) (*Set, error) {
	s := &Set{Surface: surface, byName: make(map[string]Binding)}
	for _, b := range bs {
		if err := s.Add(b); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add adds a binding.
func (s *Set) Add(b Binding) error {
	spec := b.Spec()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byName[spec.Name]; dup {
		return fmt.Errorf("surface %s: two tools named %q", s.Surface, spec.Name)
	}
	s.bindings = append(s.bindings, b)
	s.specs = append(s.specs, spec)
	s.byName[spec.Name] = b
	return nil
}

// Specs returns the tool declarations, in binding order. The slice is
// shared: callers must not change it.
func (s *Set) Specs() []model.ToolSpec {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.specs
}

// Lookup returns the binding for a tool name.
func (s *Set) Lookup(name string) (Binding, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.byName[name]
	return b, ok
}

// Names returns the tool names, sorted.
func (s *Set) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.byName))
	for n := range s.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// UnknownTool returns the result for a call naming a tool that is not in the
// set.
func (s *Set) UnknownTool(call model.ToolCall) model.ToolResult {
	return model.ToolResult{CallID: call.ID, Name: call.Name, IsError: true,
		Text: fmt.Sprintf("Error: there is no tool named %q. The available tools are: %s.", call.Name, strings.Join(s.Names(), ", "))}
}

// DecodeJSON decodes a JSON-object tool input into v and checks that every
// name in required is present. Unknown fields are ignored. Errors are
// *tool.Error of kind ErrInvalidInput with a message naming the tool and the
// field.
func DecodeJSON(toolName, input string, v any, required ...string) error {
	in := strings.TrimSpace(input)
	if in == "" {
		in = "{}"
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(in), &fields); err != nil {
		return tool.Errorf(tool.ErrInvalidInput, "%s: the arguments are not a valid JSON object (%v); send the arguments as one JSON object", toolName, err)
	}
	for _, r := range required {
		if raw, ok := fields[r]; !ok || string(raw) == "null" {
			return tool.Errorf(tool.ErrInvalidInput, "%s: missing required parameter %q", toolName, r)
		}
	}
	if err := json.Unmarshal([]byte(in), v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return tool.Errorf(tool.ErrInvalidInput, "%s: parameter %q must be of type %s, got %s", toolName, te.Field, jsonType(te.Type.Kind().String()), te.Value)
		}
		return tool.Errorf(tool.ErrInvalidInput, "%s: invalid arguments: %v", toolName, err)
	}
	return nil
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	}
	return "number"
}

// Schema builds a JSON schema object for function tools.
func Schema(props map[string]any, required ...string) json.RawMessage {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// ErrorText renders a failed result's error as "Error: <message>".
func ErrorText(r tool.Result) string {
	if r.Err == nil {
		return ""
	}
	return "Error: " + r.Err.Message
}

// ErrorEncoder is implemented by bindings that render their own decode
// errors (in the words their model was trained on).
type ErrorEncoder interface {
	EncodeError(call model.ToolCall, err error) model.ToolResult
}

// DecodeFailure returns the result for a call that b could not decode.
func DecodeFailure(b Binding, call model.ToolCall, err error) model.ToolResult {
	if ee, ok := b.(ErrorEncoder); ok {
		r := ee.EncodeError(call, err)
		r.CallID, r.Name, r.IsError = call.ID, call.Name, true
		return r
	}
	return model.ToolResult{CallID: call.ID, Name: call.Name, IsError: true, Text: "Error: " + err.Error()}
}

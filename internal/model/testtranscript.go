package model

// SampleRequest is a request with every kind of item a generic-surface
// transcript holds, for adapters' golden tests: user text, assistant text
// with two parallel calls, their results (one an error), a call whose input
// was not valid JSON, and a follow-up.
func SampleRequest() *Request {
	return &Request{
		Model:     "m",
		System:    "You are a test.",
		MaxTokens: 1024,
		Items: []Item{
			{Kind: KindUser, Text: "Fix the bug."},
			{Kind: KindReasoning, Text: "Look first."},
			{Kind: KindAssistant, Text: "Reading two files."},
			{Kind: KindToolCall, Call: &ToolCall{ID: "call_1", Name: "read_file", Kind: ToolFunction, Input: `{"path":"a.go"}`}},
			{Kind: KindToolCall, Call: &ToolCall{ID: "call_2", Name: "read_file", Kind: ToolFunction, Input: `{"path":"b.go"}`}},
			{Kind: KindToolResult, Result: &ToolResult{CallID: "call_1", Name: "read_file", Text: "     1\tpackage a"}},
			{Kind: KindToolResult, Result: &ToolResult{CallID: "call_2", Name: "read_file", Text: "Error: the path b.go does not exist", IsError: true}},
			{Kind: KindToolCall, Call: &ToolCall{ID: "call_3", Name: "bash", Kind: ToolFunction, Input: `{"command": "go te`}},
			{Kind: KindToolResult, Result: &ToolResult{CallID: "call_3", Name: "bash", Text: "Error: bash: the arguments are not a valid JSON object", IsError: true}},
			{Kind: KindAssistant, Text: "Done."},
			{Kind: KindUser, Text: "Thanks — now the tests?"},
		},
		Tools: []ToolSpec{{Kind: ToolFunction, Name: "read_file", Description: "Read a file.",
			Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}},
	}
}

package sim

import "testing"

func TestBranch(t *testing.T) {
	s, err := ParseScript([]byte(`{"steps": [
	 {"say": "The tests pass.", "on_result": {"FAIL": {"say": "The tests still fail."}, "FAIL: TestMedianPanics": {"say": "It still panics."}}}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	step := &s.Steps[0]
	for _, tc := range []struct {
		name, body, want string
	}{
		{"anthropic passing", `{"messages":[{"role":"user","content":"fix"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{"command":"go test"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok  \tstats\t0.01s"}]}]}`, "The tests pass."},
		{"anthropic failing", `{"messages":[{"role":"user","content":"fix"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{"command":"go test"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"--- FAIL: TestMedian\nFAIL"}],"is_error":true}]}]}`, "The tests still fail."},
		{"longest key wins", `{"messages":[{"role":"assistant","content":"x"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"--- FAIL: TestMedianPanics"}]}]}`, "It still panics."},
		{"an earlier failure does not count", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t0","content":"FAIL"}]},{"role":"assistant","content":"x"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`, "The tests pass."},
		{"chat failing", `{"messages":[{"role":"user","content":"fix"},{"role":"assistant","tool_calls":[{"id":"c1"}]},{"role":"tool","tool_call_id":"c1","content":"FAIL\tstats"}]}`, "The tests still fail."},
		{"ollama passing", `{"messages":[{"role":"user","content":"fix"},{"role":"assistant","content":""},{"role":"tool","content":"ok"}]}`, "The tests pass."},
		{"responses failing", `{"input":[{"type":"message","role":"user","content":"fix"},{"type":"function_call","call_id":"c1","name":"bash","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"FAIL\tstats"}]}`, "The tests still fail."},
		{"responses, the failure before the last call", `{"input":[{"type":"function_call_output","call_id":"c0","output":"FAIL"},{"type":"function_call","call_id":"c1","name":"bash","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`, "The tests pass."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := branch(step, []byte(tc.body)).Say; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	for _, bad := range []string{
		`{"steps":[{"on_result":{"":{"say":"x"}}}]}`,
		`{"steps":[{"on_result":{"FAIL":null}}]}`,
		`{"steps":[{"on_result":{"FAIL":{"actions":[{"kind":"view"}]}}}]}`,
		`{"steps":[{"on_result":{"FAIL":{"on_result":{"x":{}}}}}]}`,
	} {
		if _, err := ParseScript([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

package sim

import "testing"

func TestFirstUserText(t *testing.T) {
	for body, want := range map[string]string{
		`{"messages":[{"role":"system","content":"sys"},{"role":"user","content":"TASK one"}]}`:                  "TASK one",
		`{"messages":[{"role":"user","content":[{"type":"text","text":"TASK "},{"type":"text","text":"two"}]}]}`: "TASK two",
		`{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"TASK three"}]}]}`:     "TASK three",
		`{"input":"TASK four"}`: "TASK four",
		`{"input":[{"type":"function_call_output","call_id":"c","output":"x"}]}`: "",
		`not json`: "",
	} {
		if got := firstUserText([]byte(body)); got != want {
			t.Errorf("%s: got %q, want %q", body, got, want)
		}
	}
}

func TestRouteLongestKey(t *testing.T) {
	s, err := ParseScript([]byte(`{"steps":[{"say":"main"}],"agents":{"TASK":{"steps":[{"say":"short"}]},"TASK two":{"steps":[{"say":"long"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := New(s)
	for body, want := range map[string]string{
		`{"messages":[{"role":"user","content":"TASK two, please"}]}`: "TASK two",
		`{"messages":[{"role":"user","content":"TASK one"}]}`:         "TASK",
		`{"messages":[{"role":"user","content":"other"}]}`:            "",
	} {
		if key, _ := srv.route([]byte(body)); key != want {
			t.Errorf("%s: routed to %q, want %q", body, key, want)
		}
	}
	if _, err := ParseScript([]byte(`{"steps":[],"agents":{"":{"steps":[]}}}`)); err == nil {
		t.Error("an empty agent key was accepted")
	}
	if _, err := ParseScript([]byte(`{"steps":[],"agents":{"A":{"steps":[{"actions":[{"kind":"spawn"}]}]}}}`)); err == nil {
		t.Error("a spawn without a task was accepted")
	}
}

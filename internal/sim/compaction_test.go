package sim

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCompactionSteps: a summary request is answered with the summary and
// the marker of the turns it summarizes, and is not a step; a history
// compacted under that marker goes on with the step after the turns it
// replaced plus those it kept; the latest marker wins.
func TestCompactionSteps(t *testing.T) {
	s, err := ParseScript([]byte(`{"steps":[{"say":"0"},{"say":"1"},{"say":"2"},{"say":"3"},{"say":"4"},{"say":"5"}],
		"compaction":{"say":"We fixed the parser.","faults":[{"kind":"status","status":500}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := strict(s)
	req := httptest.NewRequest("POST", "/v1/messages", nil)
	msgs := func(parts ...string) []byte {
		return []byte(`{"messages":[` + strings.Join(parts, ",") + `]}`)
	}
	user := func(text string) string { return `{"role":"user","content":` + jsonInput(text) + `}` }
	asst := `{"role":"assistant","content":"x"}`
	tests := []struct {
		name      string
		body      []byte
		turns     int
		summary   bool
		say       string
		faultedAt int // the attempt that gets the fault (0: none)
	}{
		{"plain", msgs(user("task"), asst, user("go on")), 1, false, "1", 0},
		{"summary request", msgs(user("task"), asst, asst, user("You are performing a CONTEXT CHECKPOINT COMPACTION.")), 2, true,
			"We fixed the parser.\n\n[simulated summary of 2 model turns]", 1},
		{"after compaction", msgs(user("task"), user("Summary: We fixed the parser.\n\n[simulated summary of 2 model turns]"), asst, user("r")), 3, false, "3", 0},
		{"second compaction", msgs(user("task"), user("[simulated summary of 2 model turns]"), asst, asst, user("CONTEXT CHECKPOINT COMPACTION")), 4, true,
			"We fixed the parser.\n\n[simulated summary of 4 model turns]", 1},
		{"after the second", msgs(user("task"), user("[simulated summary of 4 model turns]"), asst), 5, false, "5", 0},
	}
	for _, tc := range tests {
		tr := srv.record("anthropic", req, tc.body, time.Now(), assistantTurns(tc.body), "", s)
		if tr.index != tc.turns || tr.step == nil || tr.step.Say != tc.say {
			t.Errorf("%s: turn %d step %+v", tc.name, tr.index, tr.step)
			continue
		}
		if got := srv.Requests()[tr.rec].Summary; got != tc.summary {
			t.Errorf("%s: recorded as summary %v", tc.name, got)
		}
		if (tr.fault != nil) != (tc.faultedAt == 1) {
			t.Errorf("%s: fault %+v on attempt %d", tc.name, tr.fault, tr.attempt)
		}
		if tc.summary {
			// A retry is the second attempt of the same summary request.
			again := srv.record("anthropic", req, tc.body, time.Now(), assistantTurns(tc.body), "", s)
			if again.attempt != 2 || again.fault != nil || again.step.Say != tc.say {
				t.Errorf("%s: retry %+v", tc.name, again)
			}
		}
	}
	// Without a compaction in the script, the default prompt and summary.
	plain, _ := ParseScript([]byte(`{"steps":[{"say":"0"}]}`))
	body := msgs(user("t"), asst, user(DefaultCompactionPrompt))
	tr := New(plain).record("anthropic", req, body, time.Now(), 1, "", plain)
	if tr.step == nil || tr.step.Say != DefaultSummary+"\n\n[simulated summary of 1 model turns]" {
		t.Errorf("default summary: %+v", tr.step)
	}
	for _, bad := range []string{`{"steps":[],"compaction":{}}`, `{"steps":[],"compaction":{"faults":[{"kind":"status","status":200}]}}`} {
		if _, err := ParseScript([]byte(bad)); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

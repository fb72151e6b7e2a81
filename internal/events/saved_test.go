package events

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/agent"
)

// TestSessionSaved: a run's end names the session and its ledger when the
// session is kept, and says it is not, naming neither, when it is not.
func TestSessionSaved(t *testing.T) {
	for _, tc := range []struct {
		name  string
		saved func() bool
		want  string
		not   []string
	}{
		{"kept", func() bool { return true }, `"session_id":"s1","ledger":"/l/s1/ledger"`, []string{"session_saved"}},
		{"no Saved", nil, `"session_id":"s1","ledger":"/l/s1/ledger"`, []string{"session_saved"}},
		{"not kept", func() bool { return false }, `"session_saved":false`, []string{"session_id", "ledger"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			e := New(&buf)
			e.Session, e.Ledger, e.Saved = "s1", "/l/s1/ledger", tc.saved
			e.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusFailed, Reason: "chat: HTTP 404: not the API"}})
			got := buf.String()
			if !strings.Contains(got, `"type":"turn.failed"`) || !strings.Contains(got, tc.want) {
				t.Errorf("%s lacks %s", got, tc.want)
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%s holds %s", got, n)
				}
			}
		})
	}
}
